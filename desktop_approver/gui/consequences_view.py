""""What this touches": the facts of a call on this machine (issue 32), in the app's voice.

Calm by design: one line when nothing is lost ("Nothing is lost: ..."); otherwise the summary and
a few lines, most telling first (what is lost and whether git or a build can bring it back, the
changes a git command would discard as a short diff, secrets found in what it reads, named and
never shown, links resolved, archive members landing outside the project), the rest in the
tooltip. For an agent elsewhere it says that facts are unavailable. Plain text only: every path
came from the agent or its files.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QVBoxLayout, QWidget

from ..render.reveal import reveal

if TYPE_CHECKING:   # the facts' package (tar, zip, git) loads in the core's executor, not with the dialog
    from ..core.calls.facts import Facts

__all__ = ["MAX_LINES", "ConsequencesView", "touch_lines"]

MAX_LINES = 6
MAX_TOOLTIP_LINES = 40
"""Lines shown under the summary; the rest are in the tooltip."""


def touch_lines(facts: Facts) -> tuple[str, list[str]]:
    """The summary and the detail lines the view shows (the lines that lose something first)."""
    lines = facts.lines()
    lost = [loss.describe() for loss in facts.losses if loss.lost]
    ordered = lost + [line for line in lines if line not in lost]
    return facts.summary(), [reveal(line).text for line in ordered]


class ConsequencesView(QFrame):
    """The part of the review that says what the selected call would touch."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("consequences")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(1)
        self.summary = self._label("touchesSummary")
        self.details = self._label("touchesDetails")
        self.diff = self._label("touchesDiff")
        self.diff.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        for label in (self.summary, self.details, self.diff):
            layout.addWidget(label)
        self.hide()

    @staticmethod
    def _label(name: str) -> QLabel:
        label = QLabel()
        label.setObjectName(name)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.PlainText)  # paths come from the agent: never markup
        label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        return label

    def show_facts(self, facts: Facts | None, compact: bool = False) -> None:
        """Show ``facts`` (None: the call touches nothing on the file system, and the part hides).

        ``compact`` (a short screen): the summary alone (the lines in its tooltip), and only when
        something is lost or a secret read, so the call itself stays in the first view."""
        if facts is None:
            self.hide()
            return
        summary, lines = touch_lines(facts)
        if compact and not facts.secrets and not any(loss.lost for loss in facts.losses):
            self.hide()  # a short screen keeps its room for the call: only a loss or a secret is told here
            return
        self.summary.setText(f"What this touches: {summary}")
        calm = facts.available and facts.complete and facts.nothing_lost and not facts.problems \
            and not facts.secrets
        shown = [] if calm or compact else lines[:MAX_LINES]
        more = len(lines) - len(shown)
        self.details.setText("\n".join(f"• {line}" for line in shown) + (f"\n… and {more} more" if more and shown
                                                                           else ""))
        self.details.setVisible(bool(shown))
        diffs = [loss.diff for loss in facts.losses if loss.diff]
        self.diff.setText(reveal("\n".join(diffs), multiline=True).text if diffs else "")
        self.diff.setVisible(bool(diffs) and not calm and not compact)
        # every line, escaped: a tooltip renders markup, and paths are the agent's (a file named
        # ``<b>fine</b><!--`` must not hide the lines after it); bounded, for a call with 10,000 members
        tip = lines[:MAX_TOOLTIP_LINES] + ([f"… and {len(lines) - MAX_TOOLTIP_LINES:,} more"]
                                           if len(lines) > MAX_TOOLTIP_LINES else [])
        self.setToolTip("<qt>" + "<br>".join(html.escape(line[:300]) for line in tip) + "</qt>")
        self.show()
