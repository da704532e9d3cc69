"""Light or dark: follow the desktop (Qt's colour scheme hint, else the palette), or what the person chose.

The rest of the GUI asks :func:`is_dark` when it paints its own colours (badges, code panes, the
warning bar), and the renderers switch their diff colours and Pygments style with it. ``auto``
follows the desktop as it changes; ``light`` and ``dark`` set a matching Fusion palette, so a
forced theme reads the same on any desktop. Views that paint their own colours connect to
``signals().changed`` (a connection ends with its widget, so a closed window is not kept alive).
"""

from __future__ import annotations

import sys
from typing import Literal

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette

Choice = Literal["auto", "light", "dark"]
CHOICES: tuple[str, ...] = ("auto", "light", "dark")

_dark = False
_choice: str = "auto"
_following = False


class ThemeSignals(QObject):
    changed = Signal(bool)  # the theme in use changed: dark or not


_signals: ThemeSignals | None = None


def signals() -> ThemeSignals:
    """The one object that tells the views the theme changed."""
    global _signals
    if _signals is None:
        _signals = ThemeSignals()
    return _signals


def is_dark() -> bool:
    return _dark


def choice() -> str:
    return _choice


def desktop_is_dark() -> bool:
    """What the desktop asks for: its colour scheme hint, or else how dark its window colour is."""
    app = QGuiApplication.instance()
    if app is None:
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def apply(selected: str = "auto") -> bool:
    """Use ``selected`` ("auto", "light" or "dark") from now on; returns whether the theme is dark."""
    global _choice, _following
    if selected not in CHOICES:
        raise ValueError(f"theme must be one of {', '.join(CHOICES)}, not {selected!r}")
    _choice = selected
    app = QGuiApplication.instance()
    if selected == "auto":
        if app is not None and not _following:
            QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _scheme: _follow())
            _following = True
        dark = desktop_is_dark()
    else:
        dark = selected == "dark"
        if app is not None:
            _force_palette(dark)
    set_dark(dark)
    return dark


def _follow() -> None:
    if _choice == "auto":
        set_dark(desktop_is_dark())


def set_dark(dark: bool) -> None:
    """Switch the colours every pane paints with (the renderers included), and tell the views."""
    global _dark
    changed = dark != _dark
    _dark = dark
    highlight = sys.modules.get("desktop_approver.render.highlight")
    if highlight is not None:  # not yet imported: :mod:`.preview_view` passes the theme on when it imports it
        highlight.set_dark(dark)
    if changed:
        signals().changed.emit(dark)


def _force_palette(dark: bool) -> None:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    app.setStyle("Fusion")
    if not dark:
        app.setPalette(app.style().standardPalette())
        return
    palette = QPalette()
    colours = {
        QPalette.ColorRole.Window: "#1f2328", QPalette.ColorRole.WindowText: "#e6edf3",
        QPalette.ColorRole.Base: "#0d1117", QPalette.ColorRole.AlternateBase: "#161b22",
        QPalette.ColorRole.ToolTipBase: "#30363d", QPalette.ColorRole.ToolTipText: "#e6edf3",
        QPalette.ColorRole.Text: "#e6edf3", QPalette.ColorRole.Button: "#2d333b",
        QPalette.ColorRole.ButtonText: "#e6edf3", QPalette.ColorRole.BrightText: "#ff7b72",
        QPalette.ColorRole.Highlight: "#1f6feb", QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Link: "#58a6ff", QPalette.ColorRole.PlaceholderText: "#8d96a0",
    }
    for role, colour in colours.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor("#6e7681"))
    app.setPalette(palette)
