"""Text that is quieter than the rest but still readable: WCAG 2 contrast, computed from the palette.

A hint line (the dialog's key legend) should look secondary, yet a disabled label's colour is about
1.6:1 on its window in Fusion's palettes, well under WCAG AA (4.5:1 for normal text). A
:class:`MutedLabel` blends the window's text colour toward its background only as far as AA allows,
in whatever theme is in force, and follows the theme when it changes.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QLabel, QWidget

from . import theme

AA_NORMAL_TEXT = 4.5


def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def relative_luminance(colour: QColor) -> float:
    """WCAG 2's relative luminance of an sRGB colour (0 black, 1 white)."""
    return 0.2126 * _linear(colour.redF()) + 0.7152 * _linear(colour.greenF()) + 0.0722 * _linear(colour.blueF())


def contrast_ratio(first: QColor, second: QColor) -> float:
    """WCAG 2's contrast ratio, 1 (none) to 21 (black on white)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def blend(foreground: QColor, background: QColor, weight: float) -> QColor:
    """``weight`` of ``foreground`` over ``background`` (1: the foreground itself)."""
    front = (foreground.redF(), foreground.greenF(), foreground.blueF())
    back = (background.redF(), background.greenF(), background.blueF())
    red, green, blue = (weight * f + (1 - weight) * b for f, b in zip(front, back, strict=True))
    return QColor.fromRgbF(red, green, blue)


def muted_text(palette: QPalette, minimum: float = AA_NORMAL_TEXT) -> QColor:
    """The palette's window text blended toward the window as far as ``minimum`` contrast allows."""
    text = palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText)
    window = palette.color(QPalette.ColorGroup.Active, QPalette.ColorRole.Window)
    for step in range(50, 101, 5):  # from half-way toward the text itself
        colour = blend(text, window, step / 100)
        if contrast_ratio(colour, window) >= minimum + 0.1:  # a margin for rounding to 8-bit channels
            return colour
    return text


class MutedLabel(QLabel):
    """A secondary line (a key legend, a hint) at WCAG AA contrast in every theme."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        theme.signals().changed.connect(self._restyle)
        self._restyle()

    def _restyle(self, _dark: bool = False) -> None:
        palette = self.palette()
        colour = muted_text(QGuiApplication.palette())
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            palette.setColor(group, QPalette.ColorRole.WindowText, colour)
        self.setPalette(palette)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.ApplicationPaletteChange:
            self._restyle()
