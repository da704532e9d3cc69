"""Render the app icon's PNGs from its SVG: ``python packaging/render_icons.py``.

Writes ``resources/icons/hicolor/<N>x<N>/apps/desktop-approver.png`` for every size the
freedesktop icon theme and the app use. ``tests/test_resources.py`` fails when a PNG is missing
or no longer matches the SVG; run this after changing the artwork.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parent.parent
ICONS = ROOT / "resources" / "icons" / "hicolor"
SIZES = (16, 22, 24, 32, 48, 64, 128, 256)


def render(svg: Path, size: int) -> QImage:
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(svg)).render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # QSvgRenderer needs one
    svg = ICONS / "scalable" / "apps" / "desktop-approver.svg"
    for size in SIZES:
        target = ICONS / f"{size}x{size}" / "apps" / "desktop-approver.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not render(svg, size).save(str(target), "PNG"):
            print(f"could not write {target}", file=sys.stderr)
            return 1
        print(target.relative_to(ROOT))
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
