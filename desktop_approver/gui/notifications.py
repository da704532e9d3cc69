"""Desktop notifications for waiting tickets, with Allow / Deny buttons where the server has them.

A notification is raised for each ticket that waits for a person (not in do-not-disturb), and
withdrawn when the ticket is decided anywhere, cancelled or timed out. Destructive tickets get
only "Review" and "Deny": approving them needs the full review. Clicking the body opens the
review. Without a notification server nothing breaks: the dialog, inbox and tray still work.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..core import modes
from ..core.queue import riskiest_first
from ..core.tickets import Ticket, Verdict
from .badges import risk_text
from .review_text import summarise_args, visible
from .decider import GuiDecider

log = logging.getLogger(__name__)

ACTIONS = [("allow_once", "Allow once"), ("allow_session", "Allow for session"), ("deny", "Deny")]
DESTRUCTIVE_ACTIONS = [("review", "Review"), ("deny", "Deny")]


def notification_text(ticket: Ticket) -> tuple[str, str]:
    """Title and body for one ticket; a batch lists its calls most dangerous first."""
    first = ticket.calls[0]
    title = f"{visible(ticket.identity.label)} wants to run {visible(first.tool)}"
    if len(ticket.calls) > 1:
        title = f"{visible(ticket.identity.label)} wants to run {len(ticket.calls)} tool calls"
    ordered = riskiest_first(ticket.calls)
    if len(ticket.calls) == 1:
        lines = [summarise_args(first.args, 120)]
    else:
        lines = [f"{risk_text(call.risk.level if call.risk else 'moderate')} {visible(call.tool)}: "
                 f"{summarise_args(call.args, 100)}" for call in ordered[:3]]
        if len(ordered) > 3:
            lines.append(f"… and {len(ordered) - 3} more")
    reasons = list(dict.fromkeys(r for call in ordered if call.risk for r in call.risk.reasons))[:3]  # worst first
    lines.append(f"Risk: {ticket.risk_level}" + (f" ({'; '.join(reasons)})" if reasons else ""))
    return title, "\n".join(lines)


class TicketNotifications:
    """Bridges the decider's tickets to a :class:`~desktop_approver.notify.freedesktop.DesktopNotifier`."""

    def __init__(self, decider: GuiDecider, mode: modes.ModeState, notifier: Any, open_review: Any) -> None:
        self.decider = decider
        self.mode = mode
        self.notifier = notifier
        self.open_review = open_review
        self.available = False
        self._tickets: dict[str, Ticket] = {}
        self._calls: set[asyncio.Future[None]] = set()  # the loop keeps only weak references to tasks
        notifier.on_action = self._on_action
        decider.ticket_added.connect(self._added)
        decider.ticket_removed.connect(self._removed)
        mode.listeners.append(self._mode_changed)

    async def start(self) -> bool:
        try:
            self.available = bool(await self.notifier.start())
        except Exception:  # no bus, no server, a broken server: notifications are a nicety
            log.exception("desktop notifications are unavailable")
            self.available = False
        return self.available

    async def close(self) -> None:
        if self._calls:
            await asyncio.wait(list(self._calls), timeout=5)
        if self.available:
            await self.notifier.close()

    def _added(self, ticket: Ticket) -> None:
        if not self.available or self.mode.mode == modes.DO_NOT_DISTURB:
            return
        self._tickets[ticket.key] = ticket
        title, body = notification_text(ticket)
        destructive = ticket.risk_level == "destructive"
        actions = DESTRUCTIVE_ACTIONS if destructive else ACTIONS
        self._spawn(self.notifier.show(ticket.key, title, body, actions, urgency=2 if destructive else 1))

    def _removed(self, ticket: Ticket) -> None:
        if self._tickets.pop(ticket.key, None) is not None and self.available:
            self._spawn(self.notifier.withdraw(ticket.key))

    def _mode_changed(self, mode: str, _reason: str | None) -> None:
        """Do-not-disturb withdraws what is shown; leaving it shows what is still waiting."""
        if mode == modes.DO_NOT_DISTURB:
            for ticket in list(self._tickets.values()):
                self._removed(ticket)
        else:
            for ticket in self.decider.tickets():
                if ticket.key not in self._tickets:
                    self._added(ticket)

    def _on_action(self, key: str, action: str) -> None:
        ticket = self._tickets.get(key)
        if ticket is None:
            return
        if action in ("default", "review"):
            self.open_review(ticket)
            return
        if action == "deny":
            self.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        elif action in ("allow_once", "allow_session") and ticket.risk_level != "destructive":
            self.decider.answer(ticket, [Verdict(action, "user") for _ in ticket.calls])

    def _spawn(self, coro: Any) -> None:
        call = asyncio.ensure_future(self._safely(coro))
        self._calls.add(call)
        call.add_done_callback(self._calls.discard)

    @staticmethod
    async def _safely(coro: Any) -> None:
        try:
            await coro
        except Exception:
            log.exception("notification call failed")
