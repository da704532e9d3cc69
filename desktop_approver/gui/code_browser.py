"""The read-only rich-text pane that every part of a preview is shown in (diff, command, text, arguments)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QFontDatabase, QFontMetricsF, QPaintEvent, QTextOption
from PySide6.QtWidgets import QTextBrowser, QWidget

from ..render import highlight
from . import theme


class CodeBrowser(QTextBrowser):
    """A read-only rich-text view on white paper that reports its paints.

    It never follows links or loads resources itself: a preview comes from an agent, and an
    ``<img src=file:///...>`` in its markdown must not make the app read files.
    """

    painted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setUndoRedoEnabled(False)
        self.restyle()
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.setFont(font)
        self.document().setDefaultFont(font)
        self.setTabStopDistance(4 * QFontMetricsF(font).horizontalAdvance(" "))
        option = self.document().defaultTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().setDefaultTextOption(option)
        self.document().setDocumentMargin(2)
        self.setMinimumSize(120, 36)  # a one-line command may ask for little; the dialog sizes to content

    def restyle(self) -> None:
        """The paper and ink of the current theme (the renderers colour the rest)."""
        selection = "#264f78" if theme.is_dark() else "#b6e3ff"
        self.setStyleSheet(f"QTextBrowser{{background:{highlight.PAPER};color:{highlight.INK};"
                           f"selection-background-color:{selection};selection-color:{highlight.INK}}}")

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        self.painted.emit()

    def loadResource(self, kind: int, name: QUrl | str) -> Any:
        return None
