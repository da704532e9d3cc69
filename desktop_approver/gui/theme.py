"""Light or dark: follow the desktop (Qt's colour scheme hint, else the palette), or what the person chose.

The rest of the GUI asks :func:`is_dark` when it paints its own colours (badges, code panes, diff
and JSON colours); :func:`apply` decides once at start and again when the desktop switches.
"""

from __future__ import annotations

from typing import Literal

Choice = Literal["auto", "light", "dark"]
CHOICES: tuple[str, ...] = ("auto", "light", "dark")

_dark = False


def is_dark() -> bool:
    return _dark


def set_dark(dark: bool) -> None:
    """Switch the colours every pane paints with (the renderers included)."""
    global _dark
    _dark = dark
    from ..render import highlight

    highlight.set_dark(dark)
