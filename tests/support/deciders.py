"""Scripted people: the few deciders tests answer tickets with (the core's ``Decider`` protocol).

- :class:`ScriptedPerson` answers each ticket at once with ``choose(ticket)``; when ``choose``
  returns ``None`` it never answers: the ticket waits until cancelled (a timeout, the client
  gone), which it counts. :class:`WaitingPerson` is one who never answers at all.
- :class:`QueuedPerson` answers in arrival order with the answers the test queues, waiting while
  none is queued.
- :class:`FailingPerson` raises: a prompt that broke, or a person who must never be asked.

:func:`every` makes the common ``choose``: the same verdict for every call. Standard library and
the core only, so child processes (``PYTHONPATH`` at the checkout) can use them too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from desktop_approver.core.decisions.tickets import Ticket, Verdict

Choice = Callable[[Ticket], list[Verdict]]
MaybeChoice = Callable[[Ticket], "list[Verdict] | None"]


def every(decision: str, note: str | None = None, scope: str = "exact", decided_by: str = "user") -> Choice:
    """The same verdict for every call of the ticket."""
    return lambda ticket: [Verdict(decision, decided_by, note=note, scope=scope) for _ in ticket.calls]


class ScriptedPerson:
    """Answers each ticket at once with ``choose(ticket)``; no answer (``None``) waits until cancelled."""

    def __init__(self, choose: MaybeChoice | None = None) -> None:
        self.choose = choose
        self.seen: list[Ticket] = []
        self.cancelled = 0

    def __repr__(self) -> str:
        return f"<ScriptedPerson seen={len(self.seen)} cancelled={self.cancelled}>"

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.seen.append(ticket)
        verdicts = self.choose(ticket) if self.choose is not None else None
        if verdicts is not None:
            return verdicts
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable: an event nobody sets")


class WaitingPerson(ScriptedPerson):
    """Never answers: every ticket stays pending until cancelled (``cancelled`` counts them)."""

    def __init__(self) -> None:
        super().__init__(None)

    def __repr__(self) -> str:
        return f"<WaitingPerson seen={len(self.seen)} cancelled={self.cancelled}>"


class QueuedPerson:
    """Answers tickets in arrival order with the answers the test queues; waits while none is."""

    def __init__(self) -> None:
        self.answers: asyncio.Queue[Choice] = asyncio.Queue()
        self.tickets: list[Ticket] = []

    def __repr__(self) -> str:
        return f"<QueuedPerson tickets={len(self.tickets)} queued={self.answers.qsize()}>"

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.tickets.append(ticket)
        return (await self.answers.get())(ticket)


class FailingPerson:
    """Raises ``error`` for every ticket (and records it)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.seen: list[Ticket] = []

    def __repr__(self) -> str:
        return f"<FailingPerson {self.error!r} seen={len(self.seen)}>"

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.seen.append(ticket)
        raise type(self.error)(*self.error.args)  # a fresh one each time: tracebacks do not pile up
