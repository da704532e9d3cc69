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
from ..core.tickets import Ticket, Verdict
from .decider import GuiDecider

log = logging.getLogger(__name__)

ACTIONS = [("allow_once", "Allow once"), ("allow_session", "Allow for session"), ("deny", "Deny")]
DESTRUCTIVE_ACTIONS = [("review", "Review"), ("deny", "Deny")]


def notification_text(ticket: Ticket) -> tuple[str, str]:
    from .review import summarise_args

    first = ticket.calls[0]
    title = f"{ticket.identity.label} wants to run {first.tool}"
    if len(ticket.calls) > 1:
        title = f"{ticket.identity.label} wants to run {len(ticket.calls)} tool calls"
    lines = [summarise_args(call.args, 120) for call in ticket.calls[:3]]
    level = ticket.risk_level
    reasons = [r for call in ticket.calls if call.risk for r in call.risk.reasons][:3]
    lines.append(f"Risk: {level}" + (f" ({'; '.join(reasons)})" if reasons else ""))
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
        notifier.on_action = self._on_action
        decider.ticket_added.connect(self._added)
        decider.ticket_removed.connect(self._removed)

    async def start(self) -> bool:
        try:
            self.available = bool(await self.notifier.start())
        except Exception:  # no bus, no server, a broken server: notifications are a nicety
            log.exception("desktop notifications are unavailable")
            self.available = False
        return self.available

    async def close(self) -> None:
        if self.available:
            await self.notifier.close()

    def _added(self, ticket: Ticket) -> None:
        if not self.available or self.mode.mode == modes.DO_NOT_DISTURB:
            return
        self._tickets[ticket.key] = ticket
        title, body = notification_text(ticket)
        destructive = ticket.risk_level == "destructive"
        actions = DESTRUCTIVE_ACTIONS if destructive else ACTIONS
        asyncio.ensure_future(self._safely(self.notifier.show(ticket.key, title, body, actions,
                                                              urgency=2 if destructive else 1)))

    def _removed(self, ticket: Ticket) -> None:
        if self._tickets.pop(ticket.key, None) is not None and self.available:
            asyncio.ensure_future(self._safely(self.notifier.withdraw(ticket.key)))

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

    @staticmethod
    async def _safely(coro: Any) -> None:
        try:
            await coro
        except Exception:
            log.exception("notification call failed")
