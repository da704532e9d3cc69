"""The tray icon in a real system tray: trayer on Xvfb embeds one icon per state, on light and dark
panels, in both looks, at scale 1 and 2 (tests/screenshots/tray_screenshots.py makes the shots)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.xvfb, pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("Xvfb", "trayer", "xdotool", "import")),
    reason="needs Xvfb, trayer, xdotool and imagemagick")]


def _icon_columns(path: Path) -> list[tuple[int, int]]:
    """The runs of columns that hold something other than the panel's background."""
    from PySide6.QtGui import QColor, QImage

    image = QImage(str(path))
    background = QColor(image.pixel(0, 0))

    def differs(x: int) -> bool:
        for y in range(image.height()):
            pixel = QColor(image.pixel(x, y))
            if max(abs(pixel.red() - background.red()), abs(pixel.green() - background.green()),
                   abs(pixel.blue() - background.blue())) > 40:
                return True
        return False

    runs: list[tuple[int, int]] = []
    start = None
    for x in range(image.width()):
        if differs(x) and start is None:
            start = x
        elif not differs(x) and start is not None:
            runs.append((start, x))
            start = None
    if start is not None:
        runs.append((start, image.width()))
    return runs


def test_every_state_is_embedded_and_drawn_on_every_panel(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "screenshots"))
    try:
        import tray_screenshots
    finally:
        sys.path.remove(str(ROOT / "tests" / "screenshots"))
    shots = tray_screenshots.main(tmp_path)
    assert [shot.stem for shot in shots] == [panel.name for panel in tray_screenshots.PANELS]
    for panel, shot in zip(tray_screenshots.PANELS, shots, strict=True):
        runs = _icon_columns(shot)
        assert len(runs) == len(tray_screenshots.SHOWN), (shot.name, runs)
        for start, end in runs:  # each icon fills most of its slot: drawn at the panel's size, not tiny
            assert end - start >= panel.height * 0.6, (shot.name, start, end)
