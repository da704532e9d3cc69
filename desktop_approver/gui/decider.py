"""The GUI's side of the one narrow interface: ``async decide(ticket) -> verdicts``.

Tickets wait in one queue, ordered by urgency (:mod:`desktop_approver.core.decisions.queue`: destructive
first, then the least time left), which the dialog, the inbox, the tray menu and the notifications
all read, so every view agrees on what comes next. One dialog shows them one at a time ("2 of
5"), so a burst from several agents never stacks windows. The dialog opens on the most urgent
ticket: for a moment after it popped up on its own (:data:`SETTLE_S`), and only while the person
has not touched it, a more urgent arrival takes its place (the allow lock starts again, so
nothing is approved by a click meant for the first); after that, or once touched, an arrival
never replaces the ticket in view. A ticket leaves every view the moment it is decided,
cancelled or timed out.
"""

from __future__ import annotations

import asyncio
import logging
import time

from PySide6.QtCore import QObject, QTimer, Signal

from ..core.decisions.queue import by_urgency, urgency_key
from ..core.decisions.tickets import Ticket, Verdict
from ..core.store.logsafe import printable

log = logging.getLogger(__name__)

SETTLE_S = 1.5
"""How long after the dialog popped up on its own a more urgent arrival may still take its place:
requests from several agents arrive in bursts, and the first of a burst is seldom the worst."""


class GuiDecider(QObject):
    """The queue every view reads; it tells them through signals and never calls widget code."""

    queue_changed = Signal()
    """Something arrived, left, or the order changed (time passes for every countdown)."""
    ticket_added = Signal(object)    # Ticket
    ticket_removed = Signal(object)  # Ticket: decided, cancelled or timed out
    present = Signal(object)
    """Show this ticket in the dialog (``None``: nothing left to show, or dialogs are off)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._futures: dict[str, asyncio.Future[list[Verdict]]] = {}
        self._tickets: dict[str, Ticket] = {}
        self.show_dialogs = True
        self.current: Ticket | None = None
        self.settle_s = SETTLE_S
        self._auto_shown_at: float | None = None  # when the current ticket popped up by itself (not chosen)
        self._order: list[str] = []
        # Time passes for every countdown but a paused one: the order can change without an
        # arrival; look once a second and tell the views when it did.
        self._reorder_clock = QTimer(self)
        self._reorder_clock.setInterval(1000)
        self._reorder_clock.timeout.connect(self._check_order)
        self._reorder_clock.start()

    def __repr__(self) -> str:
        current = printable(self.current.key, 40) if self.current is not None else None
        return (f"<GuiDecider waiting={len(self._tickets)} current={current!r} "
                f"dialogs={'on' if self.show_dialogs else 'off'}>")

    # -- Decider ----------------------------------------------------------------------------

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        future: asyncio.Future[list[Verdict]] = asyncio.get_running_loop().create_future()
        self._futures[ticket.key] = future
        self._tickets[ticket.key] = ticket
        log.debug("ticket %s from %s queued (%d waiting)", printable(ticket.key), printable(ticket.identity.label),
                  len(self._tickets))
        self.ticket_added.emit(ticket)
        self.queue_changed.emit()
        if self.current is None:
            self._present_next()
        elif self._settling() and urgency_key(ticket) < urgency_key(self.current):
            log.debug("ticket %s is more urgent than the one just shown: shown instead", printable(ticket.key))
            self._present_next()
        try:
            return await future
        finally:
            self._futures.pop(ticket.key, None)
            self._leave(ticket)

    # -- used by the widgets ----------------------------------------------------------------

    def answer(self, ticket: Ticket, verdicts: list[Verdict]) -> bool:
        """Deliver the person's verdicts; False if the ticket is already gone.

        The ticket leaves every view at once, not when the broker gets round to it.
        """
        future = self._futures.get(ticket.key)
        if future is None or future.done():
            return False
        future.set_result(verdicts)
        log.debug("ticket %s decided: %s", printable(ticket.key), ", ".join(v.decision for v in verdicts))
        self._leave(ticket)
        return True

    def _leave(self, ticket: Ticket) -> None:
        if self._tickets.pop(ticket.key, None) is None:
            return
        log.debug("ticket %s left the queue (%d waiting)", printable(ticket.key), len(self._tickets))
        self.ticket_removed.emit(ticket)
        self.queue_changed.emit()
        if self.current is ticket:
            self.current = None
            self._present_next()

    def stop(self) -> None:
        """The app is closing: no more looking at the order."""
        self._reorder_clock.stop()

    def tickets(self) -> list[Ticket]:
        """Everything waiting, most urgent first (the order every view shows)."""
        return by_urgency(self._tickets.values())

    def _check_order(self) -> None:
        order = [ticket.key for ticket in self.tickets()]
        if order != self._order:
            self._order = order
            self.queue_changed.emit()

    def position(self, ticket: Ticket) -> tuple[int, int]:
        """("2 of 5"): the ticket's place in the queue, and the queue's length."""
        waiting = self.tickets()
        return (waiting.index(ticket) + 1 if ticket in waiting else 1), max(1, len(waiting))

    def _settling(self) -> bool:
        """The current ticket popped up by itself a moment ago and nobody has touched it yet."""
        current = self.current
        return (current is not None and self._auto_shown_at is not None and self.show_dialogs
                and not current.countdown.paused and time.monotonic() - self._auto_shown_at < self.settle_s)

    def show(self, ticket: Ticket) -> None:
        """Bring a specific ticket up (from the tray menu, a notification, next / previous)."""
        self._auto_shown_at = None  # chosen by the person: an arrival never replaces it
        self._show(ticket)

    def _show(self, ticket: Ticket) -> None:
        if ticket.key in self._tickets:
            self.current = ticket
            log.debug("ticket %s presented", printable(ticket.key))
            self.present.emit(ticket)

    def next_ticket(self) -> Ticket | None:
        waiting = self.tickets()
        return waiting[0] if waiting else None

    def neighbour(self, ticket: Ticket, step: int) -> Ticket | None:
        """The ticket ``step`` places after (negative: before) ``ticket`` in the queue, wrapping round."""
        waiting = self.tickets()
        if not waiting:
            return None
        if ticket not in waiting:
            return waiting[0]
        return waiting[(waiting.index(ticket) + step) % len(waiting)]

    def resume_dialogs(self) -> None:
        """Dialogs are allowed again (popups on, do-not-disturb off): show what waits, if nothing is shown."""
        if self.show_dialogs and self.current is None:
            self._present_next()

    def _present_next(self) -> None:
        ticket = self.next_ticket()
        if ticket is None or not self.show_dialogs:
            self.current = None
            self._auto_shown_at = None
            self.present.emit(None)
            return
        self._auto_shown_at = time.monotonic()
        self._show(ticket)
