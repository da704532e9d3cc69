"""Where the dialog goes and how big it may be (Qt-free, so it is tested with plain numbers).

Sizes are in the screen's device-independent pixels, the ones Qt reports with any
``QT_SCALE_FACTOR``: at scale 2 a 1280x800 screen is 640x400 of them, and the dialog must fit.
"""

from __future__ import annotations

from typing import NamedTuple


class Rect(NamedTuple):
    x: int
    y: int
    width: int
    height: int

    @property
    def right(self) -> int:
        return self.x + self.width

    @property
    def bottom(self) -> int:
        return self.y + self.height

    def intersects(self, other: Rect) -> bool:
        return self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom

    def overlap(self, other: Rect) -> int:
        width = min(self.right, other.right) - max(self.x, other.x)
        height = min(self.bottom, other.bottom) - max(self.y, other.y)
        return max(0, width) * max(0, height)


class Corner(NamedTuple):
    """Room kept free for desktop notifications: ``width`` x ``height`` at one screen corner."""

    where: str  # "top-right" | "top-left" | "bottom-right" | "bottom-left"
    width: int
    height: int

    def rect(self, area: Rect) -> Rect:
        x = area.right - self.width if self.where.endswith("right") else area.x
        y = area.y if self.where.startswith("top") else area.bottom - self.height
        return Rect(x, y, self.width, self.height)


NOTIFICATION_AREA = Corner("top-right", 440, 360)
"""Where most notification servers stack their popups (dunst, xfce4-notifyd, mako); one per agent
keeps the stack short."""

FRAME = (16, 48)
"""Room left for the window manager's frame and title bar (width, height), so the frame fits too."""
MIN_SIZE = (320, 240)


def fit_size(width: int, height: int, area: Rect) -> tuple[int, int]:
    """``width`` x ``height``, shrunk to what fits in ``area`` with its frame."""
    return (max(min(MIN_SIZE[0], area.width - FRAME[0]), min(width, area.width - FRAME[0])),
            max(min(MIN_SIZE[1], area.height - FRAME[1]), min(height, area.height - FRAME[1])))


def clamp(box: Rect, area: Rect) -> Rect:
    """A remembered geometry made to fit the screen as it is now (another screen, another scale)."""
    width, height = fit_size(box.width, box.height, area)
    inner = Rect(area.x, area.y, area.width - FRAME[0], area.height - FRAME[1])
    x = min(max(box.x, inner.x), inner.right - width)
    y = min(max(box.y, inner.y), inner.bottom - height)
    return Rect(x, y, width, height)


def place_away_from(area: Rect, width: int, height: int, corner: Corner) -> tuple[int, int]:
    """A top-left position for a ``width`` x ``height`` window inside ``area`` that keeps out of ``corner``.

    Tries, in order: centred; centred but below (or above) the corner; beside it; then whichever
    candidate covers the least of it. The window always stays inside the area, frame included.
    """
    inner = Rect(area.x, area.y, area.width - FRAME[0], area.height - FRAME[1])
    reserved = corner.rect(area)
    gap = 12

    def inside(x: int, y: int) -> tuple[int, int]:
        return (min(max(x, inner.x), inner.right - width), min(max(y, inner.y), inner.bottom - height))

    centre_x = inner.x + (inner.width - width) // 2
    centre_y = inner.y + (inner.height - height) // 2
    below = reserved.bottom + gap if corner.where.startswith("top") else reserved.y - gap - height - FRAME[1]
    beside = reserved.x - gap - width - FRAME[0] if corner.where.endswith("right") else reserved.right + gap
    candidates = [inside(centre_x, centre_y),
                  inside(centre_x, max(centre_y, below) if corner.where.startswith("top") else min(centre_y, below)),
                  inside(beside, centre_y),
                  inside(beside, below)]
    for x, y in candidates:
        framed = Rect(x, y, width + FRAME[0], height + FRAME[1])
        if not framed.intersects(reserved):
            return x, y
    return min(candidates, key=lambda xy: Rect(xy[0], xy[1], width + FRAME[0], height + FRAME[1]).overlap(reserved))
