"""A one-line label that cuts its text to the width it gets, with the whole text in its tooltip.

A 500-character agent or tool name must not make a window wider than the screen: the label asks
for a small minimum width, shows as much as fits with an ellipsis, and keeps the whole text for
the tooltip, :meth:`ElidedLabel.text` and accessibility.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MIN_CHARS = 12      # the least it asks for, in average characters
PREFERRED_CHARS = 90  # what it asks for at most when there is room


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as written: Qt would take ``<b>…`` from an agent for markup."""
    return f'<p style="white-space:pre-wrap">{html.escape(text)}</p>' if text else ""


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None,
                 elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(parent)
        self._full = ""
        self._elide = elide
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def text(self) -> str:  # the whole text, not the cut one shown
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def setText(self, text: str) -> None:  # keeps the whole text
        self._full = text
        self.setAccessibleName(text)
        self._cut()
        self.updateGeometry()

    def minimumSizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        return QSize(metrics.averageCharWidth() * MIN_CHARS, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        width = min(metrics.horizontalAdvance(self._full), metrics.averageCharWidth() * PREFERRED_CHARS)
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right() + 2, super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._cut()

    def _cut(self) -> None:
        margins = self.contentsMargins()
        width = max(0, self.width() - margins.left() - margins.right())
        shown = self.fontMetrics().elidedText(self._full, self._elide, width)
        super().setText(shown)
        self.setToolTip(plain_tooltip(self._full) if shown != self._full else "")
