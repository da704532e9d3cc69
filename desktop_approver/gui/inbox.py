"""The inbox: every waiting request from every agent in one window, in the queue's order.

The rows follow the same queue as the dialog (most urgent first, :mod:`desktop_approver.core.decisions.queue`),
each with its place, agent and session, risk, how long it has waited and how long it has left.
A decided request leaves at once. New arrivals never take focus or the selection: the selected
rows stay selected wherever the queue puts them. Several rows can be selected and decided
together, with buttons that say how many; the review on the right is the dialog's widget. A click
(or key) answers only what the buttons last said they act on: when a selected request left or the
review moved on since, it answers nothing and the buttons say what they act on now (issue 31).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QBoxLayout,
    QFrame,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..client.vocabulary import DecisionName
from ..core.decisions.queue import count_text, time_left_text, waited_text
from ..core.decisions.tickets import Ticket
from ..render.claims import as_claimed, claimed
from ..render.headline import headline
from . import batch, placement, theme
from .badges import risk_colours, risk_text
from .decider import GuiDecider
from .dialog import COMPACT_BELOW, READING_REASON, arrange_row, verdicts_for
from .elided import plain_tooltip
from .keys import close_on_escape
from .notifications import needs_the_dialog
from .review import ReviewPanel
from .review_text import summarise_args, visible

if TYPE_CHECKING:
    from PySide6.QtGui import QBrush

TICKET_ROLE = Qt.ItemDataRole.UserRole + 1
# The app's verdict first, so it is in view at every width; then what is asked, and the agent's
# words after it, quoted, in a column of bounded width: long names never squeeze the request out.
COLUMNS = ("#", "Risk", "Request", "Agent (as claimed)", "Waiting", "Left")
PLACE, RISK, REQUEST, AGENT, WAITED, LEFT = range(len(COLUMNS))
AGENT_COLUMN_CHARS = 18  # the agent column is at most this many average characters wide (the tooltip has all)
WIDE_ENOUGH = 1000  # narrower than this, the list goes above the review instead of beside it


AGENT_CHARS = 40    # the agent column's text is cut to this (the tooltip has it all)
DETAIL_CHARS = 200  # each of the agent's words in the agent column's tooltip


def agent_text(ticket: Ticket) -> str:
    """“codex” · “s1”: the agent's name and session, each its claim (:mod:`~desktop_approver.render.claims`)."""
    return f"{claimed(ticket.identity.label, AGENT_CHARS * 2 // 3)} · {claimed(ticket.session, AGENT_CHARS // 3)}"


def agent_details(ticket: Ticket) -> str:
    who = ticket.identity
    parts = [as_claimed(who.label, DETAIL_CHARS), f"session {as_claimed(ticket.session, DETAIL_CHARS)}"]
    if who.peer_pid:
        parts.append(f"pid {who.peer_pid}")
    if who.host:
        parts.append(f"host {as_claimed(who.host, DETAIL_CHARS)}")
    if who.git_branch:
        parts.append(f"branch {as_claimed(who.git_branch, DETAIL_CHARS)}")
    if who.cwd:
        parts.append(f"in {as_claimed(who.cwd, DETAIL_CHARS)}")
    return "  ·  ".join(parts)


def request_text(ticket: Ticket) -> str:
    """The call's tool and what it does, the dangerous part first (:func:`.headline`)."""
    first = ticket.calls[0]
    label = f"{claimed(first.tool, 30)}  {headline(first.tool, first.args, 60)}"
    if len(ticket.calls) > 1:
        worst = batch.riskiest(ticket.calls)
        label = (f"batch of {len(ticket.calls)}: {claimed(worst.tool, 30)}  "
                 f"{headline(worst.tool, worst.args, 50)} …")
    return label


def waited(ticket: Ticket) -> str:
    return waited_text(time.time() - ticket.created)


class InboxWindow(QWidget):
    def __init__(self, decider: GuiDecider, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inbox")
        self.setWindowTitle("desktop-approver — inbox")
        close_on_escape(self)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.decider = decider
        self._rows: dict[str, QTreeWidgetItem] = {}
        self._offered: tuple[str | None, ...] = ()  # what the buttons were last labelled for (see decide_selected)

        layout = QVBoxLayout(self)
        self.summary = QLabel()
        self.summary.setObjectName("inboxSummary")
        layout.addWidget(self.summary)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter = splitter
        self.tree = QTreeWidget()
        self.tree.setObjectName("inboxTree")
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        for column in range(len(COLUMNS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch if column == REQUEST
                                        else QHeaderView.ResizeMode.Interactive if column == AGENT
                                        else QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemSelectionChanged.connect(self._selection_changed)
        splitter.addWidget(self.tree)
        self.review = ReviewPanel()
        self.review.ticks_changed.connect(self._update_buttons)
        self.review.edit_validity_changed.connect(lambda _ok: self._update_buttons())  # an edit read again
        self.review.preview.warnings_changed.connect(lambda _warnings: self._update_buttons())  # a long diff read
        self.review_scroll = QScrollArea()  # the review scrolls: it never sets the window's minimum size
        self.review_scroll.setObjectName("inboxReviewScroll")
        self.review_scroll.setWidgetResizable(True)
        self.review_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.review_scroll.setWidget(self.review)
        splitter.addWidget(self.review_scroll)
        splitter.setSizes([560, 640])
        layout.addWidget(splitter, 1)

        buttons = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.button_row = buttons
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
        QShortcut(QKeySequence(Qt.Key.Key_Delete), self).activated.connect(lambda: self.decide_selected("deny"))

        decider.ticket_added.connect(self.add_ticket)
        decider.ticket_removed.connect(self.remove_ticket)
        decider.queue_changed.connect(self.follow_queue)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        self._clock.start()
        for ticket in decider.tickets():
            self.add_ticket(ticket)
        self._update_summary()
        theme.signals().changed.connect(self._recolour)
        self.fit()

    def fit(self) -> None:
        """As large as the screen allows up to 1200x720, placed in the middle; side by side only when wide.

        At scale 2 on a 1280x800 screen the available area is about 640x380: the list goes above
        the review, and the review scrolls.
        """
        screen = self.screen() or QApplication.primaryScreen()
        area = screen.availableGeometry()
        limit = placement.Rect(area.x(), area.y(), area.width(), area.height())
        width, height = placement.fit_size(1200, 720, limit)
        wide = width >= WIDE_ENOUGH
        self.review.set_compact(area.height() < COMPACT_BELOW)
        self.splitter.setOrientation(Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical)
        self.splitter.setSizes([width * 9 // 20, width * 11 // 20] if wide else [height // 3, height * 2 // 3])
        self.resize(width, height)
        self.move(area.x() + (area.width() - placement.FRAME[0] - width) // 2,
                  area.y() + (area.height() - placement.FRAME[1] - height) // 2)
        arrange_row(self.button_row, width)

    def _recolour(self, _dark: bool) -> None:
        waiting = {t.key: t for t in self.decider.tickets()}
        for key, row in self._rows.items():
            if key in waiting:
                row.setForeground(RISK, _colour(waiting[key].shown_level))

    # -- rows -------------------------------------------------------------------------------

    def add_ticket(self, ticket: Ticket) -> None:
        if ticket.key in self._rows:
            return
        texts = {PLACE: "", RISK: risk_text(ticket.shown_level), AGENT: agent_text(ticket),
                 REQUEST: request_text(ticket), WAITED: waited(ticket), LEFT: time_left_text(ticket.countdown.latest())}
        row = QTreeWidgetItem([texts[column] for column in range(len(COLUMNS))])
        row.setData(0, TICKET_ROLE, ticket.key)
        row.setForeground(RISK, _colour(ticket.shown_level))
        row.setToolTip(AGENT, plain_tooltip(agent_details(ticket)))
        row.setToolTip(REQUEST, plain_tooltip("\n".join(f"{visible(call.tool)}: {summarise_args(call.args, 400)}"
                                                        for call in ticket.calls[:10])))
        self.tree.addTopLevelItem(row)
        self._rows[ticket.key] = row
        self._fit_agent_column()
        self.follow_queue()

    def remove_ticket(self, ticket: Ticket) -> None:
        row = self._rows.pop(ticket.key, None)
        if row is None:
            return
        self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(row))
        self._fit_agent_column()
        if self.review.ticket is ticket:
            self.review.clear()
            self._selection_changed()
        self.follow_queue()

    def _fit_agent_column(self) -> None:
        """The agent column as wide as its names, up to ``AGENT_COLUMN_CHARS``: a few 500-character
        names used to take most of the list and cut the request to its tool's name (issue 31)."""
        header = self.tree.header()
        title = header.sectionSizeHint(AGENT)  # its header is read whole
        cap = max(title, self.tree.fontMetrics().averageCharWidth() * AGENT_COLUMN_CHARS)
        header.resizeSection(AGENT, min(max(title, self.tree.sizeHintForColumn(AGENT)), cap))

    def follow_queue(self) -> None:
        """Put the rows in the queue's order, keeping the selection and the current row."""
        order = [t.key for t in self.decider.tickets() if t.key in self._rows]
        shown = [item.data(0, TICKET_ROLE) for i in range(self.tree.topLevelItemCount())
                 if (item := self.tree.topLevelItem(i)) is not None]  # never None below the count
        if shown != order:
            selected = {key for key, row in self._rows.items() if row.isSelected()}
            current = self.tree.currentItem()
            self.tree.blockSignals(True)
            try:
                for index, key in enumerate(order):
                    row = self._rows[key]
                    self.tree.takeTopLevelItem(self.tree.indexOfTopLevelItem(row))
                    self.tree.insertTopLevelItem(index, row)
                for key in selected:
                    self._rows[key].setSelected(True)
                if current is not None and current.data(0, TICKET_ROLE) in self._rows:
                    self.tree.setCurrentItem(current, 0, self.tree.selectionModel().SelectionFlag.NoUpdate)
            finally:
                self.tree.blockSignals(False)
        for place, key in enumerate(order, 1):
            self._rows[key].setText(PLACE, str(place))
        self._update_summary()

    def selected_tickets(self) -> list[Ticket]:
        """The selected requests, in the queue's order."""
        selected = {item.data(0, TICKET_ROLE) for item in self.tree.selectedItems()}
        return [ticket for ticket in self.decider.tickets() if ticket.key in selected]

    def select(self, ticket: Ticket) -> None:
        row = self._rows.get(ticket.key)
        if row is not None:
            self.tree.clearSelection()
            row.setSelected(True)
            self.tree.setCurrentItem(row)

    # -- deciding ---------------------------------------------------------------------------

    def decide_selected(self, choice: DecisionName) -> int:
        """Decide every selected request; returns how many (0 when the button would not allow it)."""
        tickets = self.selected_tickets()
        if not tickets:
            return 0
        if self._offer(tickets) != self._offered:
            # The selection or the review changed under the person (a request left, the review
            # moved on) since the buttons last said what they do: show it, answer nothing.
            self._update_buttons()
            self.selected_label.setText("The selection changed: check it and choose again")
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
            chosen = chooser((self.review.effective_ticket() or tickets[0]).calls, ticked)  # edits read again
            if not self.review.preview.is_known():  # nobody approves what they could not see
                return batch.Choice(chosen.label, False, READING_REASON, chosen.short)
            if not self.review.edits_valid():
                return batch.Choice(chosen.label, False, "the edited arguments are being read", chosen.short)
            return chosen
        how = "&once" if choice == "allow_once" else "for &session"
        label = f"Allow {len(tickets)} {how}"
        if any(t.risk_level == "destructive" for t in tickets):
            return batch.Choice(label, False, "a selected request is destructive: review and allow it on its own")
        if any(needs_the_dialog(t) for t in tickets):
            return batch.Choice(label, False, "a selected request has a long diff: review and allow it on its own")
        return batch.Choice(label, bool(tickets))

    def _selection_changed(self) -> None:
        tickets = self.selected_tickets()
        self.selected_label.setText(f"{count_text(tickets)} selected" if tickets else "select requests to decide")
        if tickets and self.review.ticket not in tickets:
            self.review.load(tickets[0])
        elif not tickets and self.review.ticket is not None:
            self.review.clear()  # nothing selected: no stale review of a request that left
        self.review.setEnabled(bool(tickets))
        self._update_buttons()

    def _offer(self, tickets: list[Ticket]) -> tuple[str | None, ...]:
        """What a button click would act on: the selected requests and the one the review shows."""
        return (*(t.key for t in tickets), self.review.ticket.key if self.review.ticket is not None else None)

    def _update_buttons(self) -> None:
        """Labels that say what a click does to the selection ("Allow 2 once", "Deny 3")."""
        tickets = self.selected_tickets()
        self._offered = self._offer(tickets)
        for button, choice in ((self.allow_once, "allow_once"), (self.allow_session, "allow_session")):
            allowed = self.choice_for(choice, tickets) if tickets else batch.Choice(
                "Allow &once" if choice == "allow_once" else "Allow for &session", False)
            button.setText(allowed.label)
            button.setEnabled(allowed.enabled)
            button.setToolTip(allowed.why_not)
        self.deny.setText(f"&Deny {len(tickets)}" if len(tickets) > 1 else "&Deny")
        self.deny.setEnabled(bool(tickets))
        arrange_row(self.button_row, self.width())

    def _tick(self) -> None:
        waiting = {t.key: t for t in self.decider.tickets()}
        for key, row in self._rows.items():
            if key in waiting:
                row.setText(WAITED, waited(waiting[key]))
                row.setText(LEFT, time_left_text(waiting[key].countdown.latest()))

    def _update_summary(self) -> None:
        tickets = self.decider.tickets()
        agents = len({t.identity.label for t in tickets})
        self.summary.setText(f"{count_text(tickets)} waiting from {agents} agent{'s' if agents != 1 else ''}, "
                             "most urgent first" if tickets
                             else "Nothing is waiting. New requests appear here without taking focus.")
        self._selection_changed()


def _colour(level: str) -> QBrush:
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(risk_colours(level)[0]))
