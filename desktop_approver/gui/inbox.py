"""The inbox: every waiting request from every agent in one window, grouped by agent and session.

New arrivals are appended, never inserted above, and never take focus or the selection: the row
under the person's cursor stays put. Several rows can be selected and decided together; the
review on the right is the same widget the dialog uses.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QPushButton, QSplitter, QTreeWidget,
                               QTreeWidgetItem, QVBoxLayout, QWidget)

from ..core.tickets import Ticket
from . import batch
from .badges import RISK_STYLE, risk_text
from .decider import GuiDecider
from .dialog import verdicts_for
from .review import ReviewPanel, summarise_args, visible

TICKET_ROLE = Qt.ItemDataRole.UserRole + 1


def group_key(ticket: Ticket) -> tuple[str, str]:
    return (ticket.identity.label, ticket.session)


def group_title(ticket: Ticket) -> str:
    who = ticket.identity
    parts = [who.label, f"session {ticket.session}"]
    if who.peer_pid:
        parts.append(f"pid {who.peer_pid}")
    if who.git_branch:
        parts.append(f"branch {who.git_branch}")
    if who.cwd:
        parts.append(who.cwd)
    return "  ·  ".join(parts)


def waited(ticket: Ticket) -> str:
    seconds = int(time.time() - ticket.created)
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"


class InboxWindow(QWidget):
    def __init__(self, decider: GuiDecider, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inbox")
        self.setWindowTitle("desktop-approver — inbox")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.resize(1200, 720)
        self.decider = decider
        self._groups: dict[tuple[str, str], QTreeWidgetItem] = {}
        self._rows: dict[str, QTreeWidgetItem] = {}

        layout = QVBoxLayout(self)
        self.summary = QLabel()
        self.summary.setObjectName("inboxSummary")
        layout.addWidget(self.summary)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.tree = QTreeWidget()
        self.tree.setObjectName("inboxTree")
        self.tree.setHeaderLabels(["Request", "Risk", "Waiting"])
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemSelectionChanged.connect(self._selection_changed)
        splitter.addWidget(self.tree)
        self.review = ReviewPanel()
        self.review.ticks_changed.connect(self._update_buttons)
        splitter.addWidget(self.review)
        splitter.setSizes([480, 720])
        layout.addWidget(splitter, 1)

        buttons = QHBoxLayout()
        self.selected_label = QLabel()
        self.allow_once = QPushButton("Allow &once")
        self.allow_once.setObjectName("inboxAllowOnce")
        self.allow_session = QPushButton("Allow for &session")
        self.allow_session.setObjectName("inboxAllowSession")
        self.deny = QPushButton("&Deny")
        self.deny.setObjectName("inboxDeny")
        for button in (self.allow_once, self.allow_session, self.deny):
            button.setAutoDefault(False)
        buttons.addWidget(self.selected_label)
        buttons.addStretch(1)
        buttons.addWidget(self.allow_once)
        buttons.addWidget(self.allow_session)
        buttons.addWidget(self.deny)
        layout.addLayout(buttons)
        self.allow_once.clicked.connect(lambda: self.decide_selected("allow_once"))
        self.allow_session.clicked.connect(lambda: self.decide_selected("allow_session"))
        self.deny.clicked.connect(lambda: self.decide_selected("deny"))
        QShortcut(QKeySequence(Qt.Key.Key_Delete), self, activated=lambda: self.decide_selected("deny"))

        decider.ticket_added.connect(self.add_ticket)
        decider.ticket_removed.connect(self.remove_ticket)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        self._clock.start()
        for ticket in decider.tickets():
            self.add_ticket(ticket)
        self._update_summary()

    # -- rows -------------------------------------------------------------------------------

    def add_ticket(self, ticket: Ticket) -> None:
        if ticket.key in self._rows:
            return
        key = group_key(ticket)
        group = self._groups.get(key)
        if group is None:
            group = QTreeWidgetItem([visible(group_title(ticket))])
            group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            font = group.font(0)
            font.setBold(True)
            group.setFont(0, font)
            self.tree.addTopLevelItem(group)  # appended: rows above the cursor never move
            group.setFirstColumnSpanned(True)
            group.setToolTip(0, visible(group_title(ticket)))
            group.setExpanded(True)
            self._groups[key] = group
        first = ticket.calls[0]
        label = f"{visible(first.tool)}  {summarise_args(first.args, 60)}"
        if len(ticket.calls) > 1:
            label = f"batch of {len(ticket.calls)}: {label} …"
        row = QTreeWidgetItem([label, risk_text(ticket.risk_level), waited(ticket)])
        row.setData(0, TICKET_ROLE, ticket.key)
        row.setForeground(1, _colour(ticket.risk_level))
        row.setToolTip(0, visible(ticket.summary()))
        group.addChild(row)
        self._rows[ticket.key] = row
        self._update_summary()

    def remove_ticket(self, ticket: Ticket) -> None:
        row = self._rows.pop(ticket.key, None)
        if row is None:
            return
        group = row.parent()
        group.removeChild(row)
        if group.childCount() == 0:
            self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(group))
            self._groups = {k: g for k, g in self._groups.items() if g is not group}
        if self.review.ticket is ticket:
            self.review.ticket = None
            self._selection_changed()
        self._update_summary()

    def selected_tickets(self) -> list[Ticket]:
        waiting = {t.key: t for t in self.decider.tickets()}
        keys = [item.data(0, TICKET_ROLE) for item in self.tree.selectedItems()]
        return [waiting[key] for key in keys if key in waiting]

    def select(self, ticket: Ticket) -> None:
        row = self._rows.get(ticket.key)
        if row is not None:
            self.tree.clearSelection()
            row.setSelected(True)
            self.tree.setCurrentItem(row)

    # -- deciding ---------------------------------------------------------------------------

    def decide_selected(self, choice: str) -> int:
        """Decide every selected request; returns how many (0 when the button would not allow it)."""
        tickets = self.selected_tickets()
        if not tickets:
            return 0
        single = len(tickets) == 1 and self.review.ticket is tickets[0]
        if choice != "deny":
            allowed = self.choice_for(choice, tickets)
            if not allowed.enabled or (single and not self.review.edits_valid()):
                return 0
        note = self.review.note.text().strip() or None
        for ticket in tickets:
            if single:
                verdicts = verdicts_for(ticket, choice, self.review.allowed_mask(), self.review.edited_args(), note,
                                        "tool" if self.review.whole_tool.isChecked() else "exact")
            else:
                verdicts = verdicts_for(ticket, choice, [True] * len(ticket.calls), {}, note, "exact")
            self.decider.answer(ticket, verdicts)
        return len(tickets)

    def choice_for(self, choice: str, tickets: list[Ticket]) -> batch.Choice:
        """The allow button for the selection: one request reads its ticks; several, never a destructive call."""
        if len(tickets) == 1 and self.review.ticket is tickets[0]:
            ticked = self.review.allowed_mask()
            chooser = batch.allow_once_choice if choice == "allow_once" else batch.allow_session_choice
            return chooser(tickets[0].calls, ticked)
        how = "&once" if choice == "allow_once" else "for &session"
        label = f"Allow {len(tickets)} {how}"
        if any(t.risk_level == "destructive" for t in tickets):
            return batch.Choice(label, False, "a selected request is destructive: review and allow it on its own")
        return batch.Choice(label, bool(tickets))

    def _selection_changed(self) -> None:
        tickets = self.selected_tickets()
        self.selected_label.setText(f"{len(tickets)} selected" if tickets else "select requests to decide")
        if tickets and self.review.ticket is not tickets[0]:
            self.review.load(tickets[0])
        self.review.setEnabled(bool(tickets))
        self._update_buttons()

    def _update_buttons(self) -> None:
        """Labels that say what a click does to the selection ("Allow 2 once", "Deny 3")."""
        tickets = self.selected_tickets()
        for button, choice in ((self.allow_once, "allow_once"), (self.allow_session, "allow_session")):
            allowed = self.choice_for(choice, tickets) if tickets else batch.Choice(
                "Allow &once" if choice == "allow_once" else "Allow for &session", False)
            button.setText(allowed.label)
            button.setEnabled(allowed.enabled)
            button.setToolTip(allowed.why_not)
        self.deny.setText(f"&Deny {len(tickets)}" if len(tickets) > 1 else "&Deny")
        self.deny.setEnabled(bool(tickets))

    def _tick(self) -> None:
        waiting = {t.key: t for t in self.decider.tickets()}
        for key, row in self._rows.items():
            if key in waiting:
                row.setText(2, waited(waiting[key]))

    def _update_summary(self) -> None:
        tickets = self.decider.tickets()
        agents = len({t.identity.label for t in tickets})
        calls = sum(len(t.calls) for t in tickets)
        self.summary.setText(f"{calls} waiting from {agents} agent{'s' if agents != 1 else ''}" if tickets
                             else "Nothing is waiting. New requests appear here without taking focus.")
        self._selection_changed()


def _colour(level: str):  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(RISK_STYLE.get(level, RISK_STYLE["moderate"])[2]))
