"""The history window: every request and its decision, searchable, each one re-openable.

It reads the same audit log as ``desktop-approver history`` (in the app's thread, so it sees
every committed row at once) and shows an entry with the same preview widget the dialog used,
so the person can see again exactly what they were shown.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.calls.risk.findings import NOT_UNDERSTOOD
from ..core.policy.automatic import not_understood
from ..core.store.audit import AuditLog, HistoryEntry
from ..render.claims import claimed
from ..render.headline import shorten
from ..render.preview_check import preview_mismatch
from . import theme
from .badges import risk_colours, risk_text
from .elided import plain_tooltip
from .keys import close_on_escape
from .preview_view import PreviewView
from .review_text import in_app_voice, summarise_args, visible
from .statistics_view import StatisticsView

PERIODS = (("Any time", None), ("Last hour", 3600), ("Last 24 hours", 86400), ("Last 7 days", 7 * 86400),
           ("Last 30 days", 30 * 86400))
DECISIONS = (("Any decision", None), ("Allowed", "allow"), ("Allowed once", "allow_once"),
             ("Allowed for session", "allow_session"), ("Denied", "deny"), ("Never answered", "pending"))
DECIDERS = (("Anyone", None), ("You", "user"), ("A policy rule", "policy"), ("Session memory", "session"),
            ("The mode", "mode"), ("Timeout", "timeout"), ("Cancelled", "cancelled"))
# As the dialog's badge said (HistoryEntry.shown_level): "Safe" finds no call the reader did not understand.
RISKS = (("Any risk", None), ("Safe", "safe"), ("Moderate", "moderate"), ("Destructive", "destructive"),
         ("Not understood", "not understood"))
# The app's verdict first, in view at every width; the agent's words quoted (render/claims.py).
COLUMNS = ("Risk", "When", "Agent (as claimed)", "Tool (as claimed)", "Call", "Decision", "Decided by")


class HistoryWindow(QWidget):
    def __init__(self, audit: AuditLog, parent: QWidget | None = None, limit: int = 500) -> None:
        super().__init__(parent)
        self.setObjectName("historyWindow")
        self.setWindowTitle("desktop-approver — history")
        close_on_escape(self)
        self.resize(1100, 700)
        self.audit = audit
        self.limit = limit
        self.entries: list[HistoryEntry] = []

        history_page = QWidget()
        layout = QVBoxLayout(history_page)
        filters = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setObjectName("historySearch")
        self.search.setPlaceholderText("Search arguments, tool, description, note…")
        self.search.setClearButtonEnabled(True)
        self.agent = QLineEdit()
        self.agent.setObjectName("historyAgent")
        self.agent.setPlaceholderText("agent")
        self.agent.setMaximumWidth(140)
        self.tool = QLineEdit()
        self.tool.setObjectName("historyTool")
        self.tool.setPlaceholderText("tool")
        self.tool.setMaximumWidth(140)
        self.decision = _combo("historyDecision", DECISIONS)
        self.decided_by = _combo("historyDecidedBy", DECIDERS)
        self.risk = _combo("historyRisk", RISKS)
        self.period = _combo("historyPeriod", PERIODS)
        for widget in (self.search, self.agent, self.tool, self.decision, self.decided_by, self.risk, self.period):
            filters.addWidget(widget, 2 if widget is self.search else 0)
        refresh = QPushButton("&Refresh")
        refresh.setAutoDefault(False)
        refresh.clicked.connect(self.refresh)
        filters.addWidget(refresh)
        layout.addLayout(filters)

        self.count = QLabel()
        self.count.setObjectName("historyCount")
        layout.addWidget(self.count)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.table = QTreeWidget()
        self.table.setObjectName("historyTable")
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setHeaderLabels(list(COLUMNS))
        for column, width in enumerate((120, 150, 130, 130, 380, 110, 120)):
            self.table.setColumnWidth(column, width)
        self.table.currentItemChanged.connect(lambda *_: self._show_selected())
        splitter.addWidget(self.table)
        detail = QWidget()
        detail_layout = QVBoxLayout(detail)
        detail_layout.setContentsMargins(0, 0, 0, 0)
        self.detail = QLabel()
        self.detail.setObjectName("historyDetail")
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        detail_layout.addWidget(self.detail)
        # What the agent wrote (its name, session, directory, description), framed as its words.
        self.agent_frame = QFrame()
        self.agent_frame.setObjectName("agentFrame")
        paper, edge, ink = ("#161b22", "#6e7681", "#8d96a0") if theme.is_dark() else ("#f3f1ec", "#8c8577", "#5c564a")
        self.agent_frame.setStyleSheet(
            f"QFrame#agentFrame{{background:{paper};border:1px dashed {edge};border-radius:6px;}}"
            f"QLabel#agentFrameTitle{{color:{ink};font-style:italic;font-size:8pt;}}"
            "QLabel#historyAgentText{font-style:italic;}")
        frame_layout = QVBoxLayout(self.agent_frame)
        frame_layout.setContentsMargins(8, 4, 8, 6)
        title = QLabel("From the agent (as claimed): its own words, not checked by desktop-approver")
        title.setObjectName("agentFrameTitle")
        title.setWordWrap(True)
        self.agent_text = QLabel()
        self.agent_text.setObjectName("historyAgentText")
        self.agent_text.setWordWrap(True)
        self.agent_text.setTextFormat(Qt.TextFormat.PlainText)
        self.agent_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        frame_layout.addWidget(title)
        frame_layout.addWidget(self.agent_text)
        detail_layout.addWidget(self.agent_frame)
        self.preview = PreviewView()
        detail_layout.addWidget(self.preview, 1)
        splitter.addWidget(detail)
        splitter.setSizes([330, 370])
        layout.addWidget(splitter, 1)

        self.statistics = StatisticsView(audit.path)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("historyTabs")
        self.tabs.addTab(history_page, "&History")
        self.tabs.addTab(self.statistics, "S&tatistics")
        self.tabs.currentChanged.connect(lambda index: index == 1 and self.statistics.refresh())
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.tabs)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(200)
        self._debounce.timeout.connect(lambda: self.refresh() if self.isVisible() else None)
        for line in (self.search, self.agent, self.tool):
            line.textChanged.connect(lambda _t: self._debounce.start())
        for combo in (self.decision, self.decided_by, self.risk, self.period):
            combo.currentIndexChanged.connect(lambda _i: self.refresh())

    def show_timed_out(self, within: float = 86400) -> None:
        """The requests that timed out (denied by nobody) in the last day: what do-not-disturb let go."""
        for line in (self.search, self.agent, self.tool):
            line.clear()
        for combo, value in ((self.decision, None), (self.risk, None), (self.decided_by, "timeout"),
                             (self.period, within)):
            combo.setCurrentIndex(max(0, combo.findData(value)))
        self.refresh()

    def show_statistics(self) -> None:
        self.tabs.setCurrentWidget(self.statistics)
        self.statistics.refresh()

    def showEvent(self, event: Any) -> None:
        self.refresh()
        super().showEvent(event)

    def filters(self) -> dict[str, Any]:
        period = self.period.currentData()
        return {"text": self.search.text().strip() or None, "agent": self.agent.text().strip() or None,
                "tool": self.tool.text().strip() or None, "decision": self.decision.currentData(),
                "decided_by": self.decided_by.currentData(), "risk": self.risk.currentData(),
                "since": time.time() - period if period else None}

    def refresh(self) -> None:
        selected = self.selected_entry()
        self.entries = self.audit.history(limit=self.limit, **self.filters())
        self.table.clear()
        for entry in self.entries:
            item = QTreeWidgetItem([
                risk_text(entry.shown_level or "not understood"),
                datetime.fromtimestamp(entry.created).strftime("%Y-%m-%d %H:%M:%S"),
                claimed(entry.agent or "?", CLAIM_CHARS), claimed(entry.tool, CLAIM_CHARS),
                summarise_args(entry.args), entry.decision or "never answered", _decider_text(entry)])
            item.setData(0, Qt.ItemDataRole.UserRole, entry.id)
            item.setForeground(0, QColor(risk_colours(entry.shown_level or "not understood")[0]))
            self.table.addTopLevelItem(item)
            if selected is not None and entry.id == selected.id:
                self.table.setCurrentItem(item)
        total = self.audit.count()
        more = f" (showing the newest {self.limit})" if len(self.entries) >= self.limit else ""
        self.count.setText(f"{len(self.entries)} of {total} requests match{more}")
        if self.table.currentItem() is None and self.entries:
            first = self.table.topLevelItem(0)
            assert first is not None  # one row per entry
            self.table.setCurrentItem(first)
        elif not self.entries:
            self.detail.setText("")
            self.agent_text.setText("")
            self.preview.set_content("", {}, None, None)

    def selected_entry(self) -> HistoryEntry | None:
        item = self.table.currentItem()
        if item is None:
            return None
        wanted = item.data(0, Qt.ItemDataRole.UserRole)
        return next((e for e in self.entries if e.id == wanted), None)

    def _show_selected(self) -> None:
        entry = self.selected_entry()
        if entry is None:
            return
        mismatch = preview_mismatch(entry.tool, entry.args, entry.preview, entry.cwd)
        # As in the dialog: when the agent's picture is of another call, say so and show the arguments.
        self.detail.setText(entry_details(entry) + (f"\n{mismatch}" if mismatch else ""))
        self.agent_text.setText(agent_details(entry))
        self.agent_text.setToolTip(plain_tooltip(visible(entry.description or "", multiline=True)))
        self.preview.set_content(entry.tool, entry.args, None if mismatch else entry.preview, entry.cwd)


CLAIM_CHARS = 32         # an agent's or tool's name in the table (the detail pane has more)
AGENT_CHARS = 120        # an agent's name, session or directory in the detail pane
DESCRIPTION_CHARS = 600  # its description (the whole one is in the tooltip)


def entry_details(entry: HistoryEntry) -> str:
    """The app's facts of one entry as plain text lines: when, risk, decision, rule.

    Nothing the agent wrote is in it (see :func:`agent_details`): a description "✔ Safe –
    approved by policy" must not stand above "Decision: deny by You" in the same voice.
    """
    when = datetime.fromtimestamp(entry.created).strftime("%Y-%m-%d %H:%M:%S")
    lines = [f"#{entry.id} {when} · pid {entry.peer_pid}"]
    reasons = "; ".join(entry.risk_reasons) or "no risk found in the content"
    shown = entry.shown_level
    if shown is None:
        lines.append("Risk: not read")
    elif shown == NOT_UNDERSTOOD:  # as the dialog said it: no guessed level stands for the verdict
        lines.append(f"Risk: not understood — {in_app_voice(not_understood(entry.risk_gaps), entry.tool)}")
        if entry.risk_reasons:  # what the reader did find, without the level it would have guessed
            lines.append(f"Also found: {visible(reasons)}")
    else:
        lines.append(f"Risk: {shown} — {visible(reasons)}")
    if entry.risk_understood is None and shown is not None:
        lines.append("(an older log: whether the reader understood the call was not recorded)")
    if entry.decision is None:
        lines.append("Decision: never answered (the app stopped first)")
    else:
        decided = datetime.fromtimestamp(entry.decided).strftime("%H:%M:%S") if entry.decided else "?"
        lines.append(f"Decision: {entry.decision} by {_decider_text(entry)} at {decided}"
                     + (f" — note: {visible(entry.note)}" if entry.note else ""))
    if entry.rule:
        lines.append(f"Rule: {visible(entry.rule)}")
    if entry.updated_args is not None:
        lines.append("Edited arguments sent back: "
                     + shorten(visible(json.dumps(entry.updated_args, ensure_ascii=False)), DESCRIPTION_CHARS))
    return "\n".join(lines)


def agent_details(entry: HistoryEntry) -> str:
    """What the agent said about itself and the call, one escaped, cut line each, for its frame."""
    lines = [f"agent {claimed(entry.agent or '?', AGENT_CHARS)} · session {claimed(entry.session or '', AGENT_CHARS)}"]
    if entry.cwd:
        lines.append(f"in {claimed(entry.cwd, AGENT_CHARS)}")
    if entry.description:
        lines.append(f"description {claimed(entry.description, DESCRIPTION_CHARS)}")
    return "\n".join(lines)


def _decider_text(entry: HistoryEntry) -> str:
    if entry.decided_by is None:
        return ""
    names = dict((value, label) for label, value in DECIDERS if value)
    text = names.get(entry.decided_by, entry.decided_by)
    return text + (" (blocked)" if entry.blocked else "")


def _combo(name: str, choices: tuple[tuple[str, Any], ...]) -> QComboBox:
    combo = QComboBox()
    combo.setObjectName(name)
    for label, value in choices:
        combo.addItem(label, value)
    return combo
