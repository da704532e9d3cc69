"""What "Allow for session" remembers right now, and a way to take it back.

Remembered approvals that nobody can see are how "don't ask again" goes wrong; this window lists
each one (the app's verdict on the call approved first, then session, agent, tool, exact call or
whole tool, how often it answered) and revokes one, a session, or everything. It follows the memory
live.

Revoking reaches the app's memory only. Claude Code keeps its own session rule for a ``Bash``
command approved for the session (adapters/claude_code_rules.py) until its session ends, and
nothing can take a rule back from it; so while a ``Bash`` approval is listed, the window says so
where the person revokes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from ..adapters.claude_code_rules import REVOKE_NOTE, RULE_TOOL
from ..core.decisions.memory import WHOLE_TOOL, MemoryEntry, SessionMemory
from ..render.claims import NAME_CHARS, claimed
from .badges import risk_colours, risk_text
from .keys import close_on_escape
from .review_text import visible

# The app's verdict first, as in the inbox and the history; the agent's words quoted (render/claims.py).
RISK = 0
COLUMNS = ("Risk", "Session (as claimed)", "Agent (as claimed)", "Tool (as claimed)", "Covers", "Answered", "Since")


class SessionsWindow(QWidget):
    def __init__(self, memory: SessionMemory, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sessionsWindow")
        self.setWindowTitle("desktop-approver — remembered approvals")
        close_on_escape(self)
        self.resize(900, 420)
        self.memory = memory
        self.shown: list[MemoryEntry] = []
        self.shown_state: list[tuple[object, int]] = []

        layout = QVBoxLayout(self)
        hours = memory.idle_seconds / 3600
        intro = QLabel(f"“Allow for session” answers these calls without asking, until the session ends or has "
                       f"been idle for {hours:g} h. A timeout never adds anything here.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.table = QTreeWidget()
        self.table.setObjectName("sessionsTable")
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(COLUMNS))
        self.table.setSelectionMode(QTreeWidget.SelectionMode.ExtendedSelection)
        for column, width in enumerate((120, 140, 110, 110, 260, 70)):
            self.table.setColumnWidth(column, width)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        layout.addWidget(self.table, 1)
        self.empty = QLabel("Nothing is remembered.")
        self.empty.setObjectName("sessionsEmpty")
        layout.addWidget(self.empty)
        self.claude_code_note = QLabel(REVOKE_NOTE)
        self.claude_code_note.setObjectName("claudeCodeNote")
        self.claude_code_note.setWordWrap(True)
        layout.addWidget(self.claude_code_note)

        buttons = QHBoxLayout()
        self.revoke_selected = QPushButton("&Revoke selected")
        self.revoke_selected.setObjectName("revokeSelected")
        self.revoke_session = QPushButton("Revoke whole &session")
        self.revoke_session.setObjectName("revokeSession")
        self.revoke_all = QPushButton("Revoke &all")
        self.revoke_all.setObjectName("revokeAll")
        for button in (self.revoke_selected, self.revoke_session, self.revoke_all):
            button.setAutoDefault(False)
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.revoke_selected.clicked.connect(self._revoke_selected)
        self.revoke_session.clicked.connect(self._revoke_sessions)
        self.revoke_all.clicked.connect(lambda: self.memory.revoke())
        # Answers from memory change the counts without a change to the entries: look every second
        # while shown, so "answered" agrees with `desktop-approver sessions`.
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._refresh_if_changed)
        self._clock.start()
        memory.listeners.append(self.refresh)
        self.destroyed.connect(lambda *_: memory.listeners.remove(self.refresh) if self.refresh in memory.listeners
                               else None)
        self.refresh()

    def _refresh_if_changed(self) -> None:
        if self.isVisible() and [(e.key, e.hits) for e in self.memory.entries()] != self.shown_state:
            self.refresh()

    def showEvent(self, event: Any) -> None:
        self.refresh()
        super().showEvent(event)

    def refresh(self) -> None:
        self.shown = self.memory.entries()
        self.shown_state = [(entry.key, entry.hits) for entry in self.shown]
        self.table.clear()
        for entry in self.shown:
            covers = "any arguments (whole tool)" if entry.scope == WHOLE_TOOL else (entry.args_json or "")
            covers = visible(covers)
            # The session, agent and tool are the agent's words: quoted as its claims (render/claims.py).
            level = entry.risk or "not understood"  # never recorded: no level is claimed for it
            item = QTreeWidgetItem([risk_text(level), claimed(entry.session, NAME_CHARS),
                                    claimed(entry.agent or "?", NAME_CHARS), claimed(entry.tool, NAME_CHARS), covers,
                                    str(entry.hits),
                                    datetime.fromtimestamp(entry.created).strftime("%H:%M:%S")])
            item.setToolTip(COLUMNS.index("Covers"), covers)
            item.setToolTip(RISK, "The app's verdict on the call you approved"
                            + (" (the whole tool covers other arguments too)" if entry.scope == WHOLE_TOOL else ""))
            item.setForeground(RISK, QColor(risk_colours(level)[0]))
            item.setData(0, Qt.ItemDataRole.UserRole, entry.key)
            self.table.addTopLevelItem(item)
        self.empty.setVisible(not self.shown)
        self.claude_code_note.setVisible(any(entry.tool == RULE_TOOL for entry in self.shown))
        self.revoke_all.setEnabled(bool(self.shown))
        self._update_buttons()

    def selected(self) -> list[MemoryEntry]:
        keys = {item.data(0, Qt.ItemDataRole.UserRole) for item in self.table.selectedItems()}
        return [entry for entry in self.shown if entry.key in keys]

    def _update_buttons(self) -> None:
        chosen = bool(self.table.selectedItems())
        self.revoke_selected.setEnabled(chosen)
        self.revoke_session.setEnabled(chosen)

    def _revoke_selected(self) -> None:
        for entry in self.selected():
            self.memory.revoke_entry(entry)

    def _revoke_sessions(self) -> None:
        for agent, session in {entry.owner for entry in self.selected()}:
            self.memory.revoke(session=session, agent=agent)  # that agent's session, not a namesake's
