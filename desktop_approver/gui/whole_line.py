"""One long line of a diff, all of it: its row in the diff draws only its start (Qt lays a long
line out in quadratic time), and links here. Plain text, wrapped, read only, hidden characters
shown as the markers the diff uses."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


class WholeLine(QDialog):
    """A window with one line of text, wrapped to its width."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("wholeLine")
        self.setWindowTitle(f"The whole line — {title}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        layout = QVBoxLayout(self)
        about = QLabel(f"{title}: {len(text):,} characters as they will be written, wrapped to the window")
        about.setTextFormat(Qt.TextFormat.PlainText)
        about.setWordWrap(True)
        layout.addWidget(about)
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setWordWrapMode(self.view.wordWrapMode().WrapAnywhere)
        self.view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.view.setPlainText(text)
        layout.addWidget(self.view, 1)
        self.resize(800, 500)
