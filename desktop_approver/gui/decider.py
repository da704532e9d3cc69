"""The GUI's side of the one narrow interface: ``async decide(ticket) -> verdicts``.

Tickets wait in a queue; one dialog shows them one at a time ("1 of 3"), so a burst from
several agents never stacks windows. The next ticket is chosen fairly: the agent that was
served longest ago goes first, so one chatty agent cannot starve the others. A ticket that is
cancelled (timeout, client gone) leaves the queue and, if shown, the dialog.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from PySide6.QtCore import QObject, Signal

from ..core.tickets import Ticket, Verdict


class GuiDecider(QObject):
    queue_changed = Signal()
    ticket_added = Signal(object)
    ticket_removed = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._futures: dict[str, asyncio.Future[list[Verdict]]] = {}
        self._tickets: dict[str, Ticket] = {}
        self._served: dict[str, int] = {}   # agent label -> ticket number last shown
        self.show_dialogs = True
        self.present: Callable[[Ticket | None], None] | None = None
        """Set by the app: show this ticket in the dialog (None: nothing left to show)."""
        self.current: Ticket | None = None

    # -- Decider ----------------------------------------------------------------------------

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        future: asyncio.Future[list[Verdict]] = asyncio.get_running_loop().create_future()
        self._futures[ticket.key] = future
        self._tickets[ticket.key] = ticket
        self.ticket_added.emit(ticket)
        self.queue_changed.emit()
        if self.current is None:
            self._present_next()
        try:
            return await future
        finally:
            self._futures.pop(ticket.key, None)
            self._tickets.pop(ticket.key, None)
            self.ticket_removed.emit(ticket)
            self.queue_changed.emit()
            if self.current is ticket:
                self.current = None
                self._present_next()

    # -- used by the widgets ----------------------------------------------------------------

    def answer(self, ticket: Ticket, verdicts: list[Verdict]) -> bool:
        """Deliver the person's verdicts; False if the ticket is already gone."""
        future = self._futures.get(ticket.key)
        if future is None or future.done():
            return False
        future.set_result(verdicts)
        if self.current is ticket:
            self.current = None
            self._present_next()
        return True

    def tickets(self) -> list[Ticket]:
        return sorted(self._tickets.values(), key=lambda t: t.number)

    def position(self, ticket: Ticket) -> tuple[int, int]:
        """("1 of 3"): the shown ticket counts first, the rest in the order they will come."""
        others = [t for t in self.tickets() if t is not ticket]
        return 1, len(others) + 1

    def show(self, ticket: Ticket) -> None:
        """Bring a specific ticket up (from the tray menu or a notification)."""
        if ticket.key in self._tickets:
            self.current = ticket
            self._served[ticket.identity.label] = ticket.number
            if self.present:
                self.present(ticket)

    def next_ticket(self) -> Ticket | None:
        waiting = self.tickets()
        if not waiting:
            return None
        return min(waiting, key=lambda t: (self._served.get(t.identity.label, 0), t.number))

    def resume_dialogs(self) -> None:
        """Dialogs are allowed again (popups on, do-not-disturb off): show what waits, if nothing is shown."""
        if self.show_dialogs and self.current is None:
            self._present_next()

    def _present_next(self) -> None:
        ticket = self.next_ticket()
        if ticket is None or not self.show_dialogs:
            self.current = None
            if self.present:
                self.present(None)
            return
        self.show(ticket)
