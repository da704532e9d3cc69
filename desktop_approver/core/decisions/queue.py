"""The one order in which waiting tickets are shown: most urgent first.

Shared by the dialog (its "Also waiting" list, next / previous), the inbox, the tray menu and the
notifications, so every view agrees on what comes next. The most dangerous tickets come first (a
``git push --force`` must not wait behind ``pytest``: destructive, then moderate, then safe), then
the ones whose countdown ends soonest, then the older ones. The key never changes while a ticket
waits (it uses the deadline the ticket arrived with, not the seconds left), so the numbering a
person reads only moves when a request arrives or leaves, never by the clock or a pause.
Qt-free: a sort key and a few words for counts; the tray, the dialog and the inbox all call
:func:`by_urgency`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .tickets import CallInfo, Ticket

RISK_RANK = {"destructive": 0, "moderate": 1, "safe": 2}


def urgency_key(ticket: Ticket) -> tuple[int, float, int]:
    """Sort key: the most dangerous first, then the earliest deadline, then age (arrival order).

    Stable by construction: nothing in it changes while the ticket waits. Seconds left would
    (rounding made two tickets with nearly equal deadlines swap places now and then, and a paused
    one was passed by the others), and a list that reorders itself under the reader is misread.
    """
    deadline = ticket.created + ticket.countdown.total
    return RISK_RANK.get(ticket.risk_level, 1), deadline, ticket.number


def by_urgency(tickets: Iterable[Ticket]) -> list[Ticket]:
    return sorted(tickets, key=urgency_key)


def call_rank(call: CallInfo) -> int:
    return RISK_RANK.get(call.risk.level if call.risk else "moderate", 1)


def riskiest_first(calls: Sequence[CallInfo]) -> list[CallInfo]:
    """The calls of a batch with the most dangerous first (stable: the agent's order otherwise)."""
    return sorted(calls, key=call_rank)


def count_text(tickets: Sequence[Ticket], noun: str = "request") -> str:
    """"3 requests (5 calls)": counts are in requests; calls appear in brackets only for batches."""
    requests = len(tickets)
    calls = sum(len(ticket.calls) for ticket in tickets)
    text = f"{requests} {noun}{'s' if requests != 1 else ''}"
    if calls != requests:
        text += f" ({calls} calls)"
    return text


def time_left_text(seconds: float) -> str:
    """"4:05" for a countdown column or menu."""
    left = max(0, int(seconds + 0.999))
    return f"{left // 60}:{left % 60:02d}"


def waited_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


class ArrivalNumbers:
    """A number for each waiting ticket, by arrival, that never changes while it waits.

    The views list tickets most urgent first; a request numbered by its place in that order
    would become "2 of 2" while the person reads it because a more urgent one arrived. So the
    number is given once, on arrival (1, 2, 3 ...), and kept until the ticket leaves; when
    nothing waits any more, the next arrival is 1 again.
    """

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._next = 1

    def update(self, waiting: Iterable[Ticket]) -> None:
        """Forget tickets that left; number new ones in arrival order (the ticket's own counter)."""
        tickets = list(waiting)
        keys = {ticket.key for ticket in tickets}
        self._numbers = {key: number for key, number in self._numbers.items() if key in keys}
        if not self._numbers:
            self._next = 1
        for ticket in sorted(tickets, key=lambda ticket: ticket.number):
            if ticket.key not in self._numbers:
                self._numbers[ticket.key] = self._next
                self._next += 1

    def number(self, ticket: Ticket) -> int:
        """The ticket's number (numbered now if it was never seen)."""
        if ticket.key not in self._numbers:
            self._numbers[ticket.key] = self._next
            self._next += 1
        return self._numbers[ticket.key]
