"""Keys every secondary window shares: Escape closes it, as it does a dialog.

The tray app never quits when its last window closes (``setQuitOnLastWindowClosed(False)``), so
closing a secondary window only hides it; it is opened again from the tray, the same as before.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget


def close_on_escape(window: QWidget) -> QShortcut:
    """Escape anywhere in ``window`` closes it (a dialog inside it takes its own Escape first)."""
    shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), window)
    shortcut.setContext(Qt.ShortcutContext.WindowShortcut)
    shortcut.activated.connect(window.close)
    return shortcut
