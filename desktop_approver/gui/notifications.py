"""Desktop notifications for waiting tickets: at most one per agent, each bound to one request.

Five requests from three agents make three notifications, not five: each agent's one says how
many of its requests wait and names the most urgent, the app's verdict first and the agent's
name last, marked as its claim ("⚠ Destructive: git push --force origin main · 2 waiting from
“codex” (as claimed)"), and carries that request's buttons. Only a destructive request makes it
critical; destructive requests get only "Review" and "Deny": approving them needs the full review.
Nothing is shown in do-not-disturb. Clicking the body opens the review.

A notification is bound to the one request it names (issue 31): its key is that request's ticket
(``request:t12``), it is updated in place (the spec's ``replaces_id``) only while it names that
request (the counts change), and when the agent's most urgent request becomes another one (the
first expired, was withdrawn or answered, or a more urgent one came) the old notification is
closed and a new one shown. An action always carries the request it was shown for; when that
request is no longer the one its agent's notification names (it expired, was withdrawn or was
replaced), the action opens the review instead of answering: an agent that times its requests
cannot turn an Allow picked on one text into the approval of another. Likewise, while the person
edits a request's arguments in the dialog or the inbox (:attr:`TicketNotifications.edit_pending`),
its notification's Allow answers nothing and brings that review forward, edit kept: the
notification shows the agent's call, the review what would run, and the person approves what the
review shows; Deny still refuses the request (the safe direction, whatever was edited).

Without a notification server nothing breaks: the dialog, inbox and tray still work, and the tray
says why notifications are missing (:attr:`TicketNotifications.health_changed`, from the notifier's
health); when a server or the bus comes back, every agent's notification is shown again. A click
that asks for a window leaves as a signal (:attr:`TicketNotifications.review_requested`,
``inbox_requested``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..client.vocabulary import DecisionName
from ..core.calls.reading import read_call
from ..core.decisions import modes
from ..core.decisions.queue import riskiest_first
from ..core.decisions.tickets import CallInfo, Ticket, Verdict
from ..core.store.logsafe import printable
from ..render import claims
from ..render.claims import as_claimed
from ..render.headline import headline
from .decider import GuiDecider

log = logging.getLogger(__name__)

ACTIONS = [("allow_once", "Allow once"), ("allow_session", "Allow for session"), ("deny", "Deny")]
DESTRUCTIVE_ACTIONS = [("review", "Review"), ("deny", "Deny")]


NAME_CHARS = 32  # an agent's or tool's name in a notification is cut to this
BOUND_KEPT = 256  # notifications remembered after they were replaced, so a late click on one is known


def claimed(name: str) -> str:
    """An agent's name as its claim: cut short, escaped, marked (“codex” (as claimed))."""
    return as_claimed(name, NAME_CHARS)


def tool_name(call: CallInfo) -> str:
    """The tool's name as the agent's word: “write_file”."""
    return claims.claimed(call.tool, NAME_CHARS)


def notification_text(ticket: Ticket) -> tuple[str, str]:
    """Title and body for one ticket; a batch lists its calls most dangerous first.

    Each call is its :func:`~desktop_approver.render.headline.headline`: the dangerous part of a
    long command comes first (``dd of=/dev/sda … (in a 4,923-character command)``), not its start.
    """
    from .badges import risk_text  # with the first notification: badges bring QLabel (idle memory, issue 23)

    first = ticket.calls[0]
    title = f"{claimed(ticket.identity.label)} wants to run {tool_name(first)}"
    if len(ticket.calls) > 1:
        title = f"{claimed(ticket.identity.label)} wants to run {len(ticket.calls)} tool calls"
    ordered = riskiest_first(ticket.calls)
    if len(ticket.calls) == 1:
        lines = [headline(first.tool, first.args, 120)]
    else:
        lines = [f"{risk_text(call.risk.shown if call.risk else 'not understood')} {tool_name(call)}: "
                 f"{headline(call.tool, call.args, 100)}" for call in ordered[:3]]
        if len(ordered) > 3:
            lines.append(f"… and {len(ordered) - 3} more")
    # The reasons for the ticket's level only: a moderate call's "runs pytest" is not why it is destructive.
    reasons = list(dict.fromkeys(r for call in ordered if call.risk and call.risk.level == ticket.risk_level
                                 for r in call.risk.reasons))[:3]
    lines.append(f"Risk: {ticket.risk_level}" + (f" ({'; '.join(reasons)})" if reasons else ""))
    return title, "\n".join(lines)


def agent_title(agent: str, waiting: list[Ticket]) -> str:
    """"⚠ Destructive: git push --force origin main · 2 waiting from “codex” (as claimed)".

    The app's verdict first, then what the most urgent request does, then the counts (in
    requests, calls in brackets); the agent's name last, cut short and marked as its claim.
    """
    from .badges import risk_text  # see notification_text

    top = waiting[0]
    calls = sum(len(ticket.calls) for ticket in waiting)
    count = f"{len(waiting)} waiting" + (f" ({calls} calls)" if calls != len(waiting) else "")
    if len(top.calls) == 1:
        what = short_summary(top.calls[0])
    else:
        worst = riskiest_first(top.calls)[0]
        what = f"batch of {len(top.calls)}, {short_summary(worst)}"
    return f"{risk_text(top.shown_level)}: {what} · {count} from {claimed(agent)}"


def short_summary(call: CallInfo) -> str:
    """A shell command as itself (its dangerous part first); any other call as its tool and main argument."""
    if read_call(call.tool, call.args).commands:
        return headline(call.tool, call.args, 80)
    return f"{tool_name(call)} {headline(call.tool, call.args, 60)}"


def needs_the_dialog(ticket: Ticket) -> bool:
    """Whether a call of ``ticket`` has a diff long enough that the dialog reads it in steps (its
    hidden-character warnings are known only then): a notification's Allow must not approve it unseen."""
    from ..render.autopreview import preview_for  # (only when an Allow is clicked: not at the app's start)
    from ..render.diffs import read_in_steps

    for call in ticket.calls:
        preview = call.preview
        if preview is None and isinstance(call.args, dict):
            preview = preview_for(call.tool, call.args, cwd=ticket.identity.cwd)
        if read_in_steps(preview):
            return True
    return False


class TicketNotifications(QObject):
    """Bridges the decider's queue to a :class:`~desktop_approver.notify.freedesktop.DesktopNotifier`, one per agent.

    The app connects the queue's ``queue_changed`` and the mode's changes to :meth:`refresh`.
    """

    review_requested = Signal(object)  # a notification's body or "Review" was clicked: show this Ticket
    inbox_requested = Signal()         # an agent's notice was clicked
    health_changed = Signal(object)    # why notifications cannot be shown (for the tray), None when they can

    def __init__(self, decider: GuiDecider, mode: modes.ModeState, notifier: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.decider = decider
        self.mode = mode
        self.notifier = notifier
        self.available = False
        self.enabled = True  # the person's setting
        self._shown: dict[str, Ticket] = {}          # agent -> the request its notification acts on
        self._bound: OrderedDict[str, tuple[str, Ticket]] = OrderedDict()  # notifier key -> (agent, its request)
        self._signatures: dict[str, tuple[Any, ...]] = {}
        self._dirty: set[str] = set()
        self._syncing: set[str] = set()
        self._calls: set[asyncio.Future[None]] = set()  # the loop keeps only weak references to tasks
        self.problem: str | None = None  # the notifier's, shown only while notifications are turned on
        self.counts_in_view: Callable[[], bool] = lambda: False
        """Whether a window shows the queue's counts (the app's inbox or dialog): then a change of an
        agent's counts alone is not sent, since servers pop a replaced notification up again (issue 31)."""
        self.edit_pending: Callable[[Ticket], bool] = lambda _ticket: False
        """Whether a review holds the person's edit of this request's arguments (the app's dialog or
        inbox): then an Allow here, which shows the agent's version, answers nothing (issue 31)."""
        notifier.on_action = self._on_action  # the notifier is Qt-free: it takes plain callbacks
        for listeners, listener in ((getattr(notifier, "health_listeners", None), self._health),
                                    (getattr(notifier, "ready_listeners", None), self._server_ready)):
            if listeners is not None:
                listeners.append(listener)

    def __repr__(self) -> str:
        return (f"<TicketNotifications available={self.available} enabled={self.enabled} "
                f"shown={[printable(agent, 40) for agent in sorted(self._shown)]}>")

    @staticmethod
    def key(ticket: Ticket) -> str:
        """The notifier's key of the notification that names ``ticket``: one request, one notification."""
        return f"request:{ticket.key}"

    async def start(self) -> bool:
        """Start the notifier; False only when it failed outright (no bus is not that: it keeps trying)."""
        try:
            await self.notifier.start()
            self.available = True
        except Exception as exc:  # a broken notifier: notifications are a nicety, the dialog still works
            log.exception("desktop notifications are unavailable")
            self.available = False
            self._health(f"Desktop notifications failed ({exc!r}): requests show only as dialogs and in the tray.")
        self.refresh()
        return self.available

    async def close(self) -> None:
        if self._calls:
            await asyncio.wait(list(self._calls), timeout=5)
        if self.available:
            await self.notifier.close()

    def shown_agents(self) -> list[str]:
        return sorted(self._shown)

    def set_enabled(self, on: bool) -> None:
        self.enabled = on
        self.health_changed.emit(self.problem if on else None)  # turned off, a missing server is no trouble
        self.refresh()

    def _health(self, problem: str | None) -> None:
        self.problem = problem
        self.health_changed.emit(problem if self.enabled else None)

    def _server_ready(self) -> None:
        """A server (new, or on a bus that came back) shows nothing of ours: show every agent's again."""
        log.debug("a notification server is ready; showing what waits again")
        self._signatures.clear()
        self.refresh()

    def refresh(self) -> None:
        """Bring every agent's notification in line with the queue (called on every queue change)."""
        agents = {ticket.identity.label for ticket in self.decider.tickets()} | set(self._shown)
        for agent in agents:
            self._dirty.add(agent)
            if agent not in self._syncing:
                self._syncing.add(agent)
                self._spawn(self._sync_agent(agent))

    async def _sync_agent(self, agent: str) -> None:
        """One task per agent at a time, so two updates never race to create two notifications."""
        try:
            while agent in self._dirty:
                self._dirty.discard(agent)
                await self._sync(agent)
            log.debug("notification for %s is up to date", printable(agent))
        finally:
            self._syncing.discard(agent)

    async def _sync(self, agent: str) -> None:
        waiting = [t for t in self.decider.tickets() if t.identity.label == agent]
        quiet = not self.available or not self.enabled or self.mode.mode == modes.DO_NOT_DISTURB
        if quiet or not waiting:
            self._signatures.pop(agent, None)
            if (gone := self._shown.pop(agent, None)) is not None and self.available:
                log.debug("notification for %s withdrawn", printable(agent))
                await self.notifier.withdraw(self.key(gone))
            return
        top = waiting[0]
        before = self._shown.get(agent)
        if before is not None and before is not top:
            # Another request: never the same notification, so nothing picked on the old text lands on it.
            log.debug("notification for %s no longer names ticket %s", printable(agent), printable(before.key))
            self._signatures.pop(agent, None)
            del self._shown[agent]
            await self.notifier.withdraw(self.key(before))
        title = agent_title(agent, waiting)
        _title, body = notification_text(top)
        destructive = top.risk_level == "destructive"
        signature = (top.key, title, body)
        said = self._signatures.get(agent)
        if said == signature:
            return  # nothing new to say: do not pop it up again
        if said is not None and said[0] == top.key and said[2] == body and self.counts_in_view():
            return  # only its counts changed, and they are on screen: the next real change brings them
        self._signatures[agent] = signature
        self._shown[agent] = top
        self._bound[self.key(top)] = (agent, top)
        self._bound.move_to_end(self.key(top))
        while len(self._bound) > BOUND_KEPT:
            self._bound.popitem(last=False)
        log.debug("notification for %s shows ticket %s (%d waiting)", printable(agent), printable(top.key),
                  len(waiting))
        await self.notifier.show(self.key(top), title, body, DESTRUCTIVE_ACTIONS if destructive else ACTIONS,
                                 urgency=2 if destructive else 1)

    def show_mode(self, mode: str, _reason: str | None) -> None:
        """Do-not-disturb withdraws what is shown; leaving it shows what is still waiting."""
        self.refresh()

    def announce(self, agent: str, kind: str, text: str) -> None:
        """An agent's notice as a notification of its own (normal urgency, no buttons but the
        default, which opens the inbox); nothing in do-not-disturb or when turned off."""
        if not (self.available and self.enabled) or self.mode.mode == modes.DO_NOT_DISTURB:
            return
        # Its name and its words, each quoted as its claim (render/claims.py).
        title = f"{claims.claimed(agent, NAME_CHARS)}: {claims.claimed(text, 200)}"
        self._spawn(self.notifier.show(f"notice:{agent}", title, "", [], urgency=1))

    def _on_action(self, key: str, action: str) -> None:
        if key.startswith("notice:"):
            if action == "default":
                self.inbox_requested.emit()
            return
        bound = self._bound.get(key)
        if bound is None:
            log.debug("notification action %s on an unknown notification ignored", printable(action, 40))
            return
        agent, ticket = bound
        waiting = self.decider.tickets()
        if self._shown.get(agent) is not ticket or ticket not in waiting:
            self._stale_action(agent, ticket, action, waiting)
            return
        log.debug("notification action %s on ticket %s", printable(action, 40), printable(ticket.key))
        if action in ("default", "review"):
            self.review_requested.emit(ticket)
            return
        if action == "deny":
            self.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        elif action in ("allow_once", "allow_session") and self.edit_pending(ticket):
            # The person is editing it in a review: this Allow shows the agent's version, not the edit.
            log.info("notification action %s on ticket %s while its arguments are being edited: "
                     "bringing that review forward instead of answering", printable(action, 40),
                     printable(ticket.key))
            self.review_requested.emit(ticket)
        elif action in ("allow_once", "allow_session") and needs_the_dialog(ticket):
            # Its long diff's warnings are said only once the dialog has read it to its end: show it there.
            self.review_requested.emit(ticket)
        elif action in ("allow_once", "allow_session") and ticket.risk_level != "destructive":
            allow: DecisionName = "allow_once" if action == "allow_once" else "allow_session"
            self.decider.answer(ticket, [Verdict(allow, "user") for _ in ticket.calls])

    def _stale_action(self, agent: str, ticket: Ticket, action: str, waiting: list[Ticket]) -> None:
        """A click on a notification whose request is no longer the one it names: show, never answer.

        The request itself when it still waits (a more urgent one took its agent's notification),
        else what that agent's notification names now, else the inbox.
        """
        now = self._shown.get(agent)
        target = ticket if ticket in waiting else now if now is not None and now in waiting else None
        log.info("notification action %s on ticket %s, which its notification no longer names: "
                 "opening the review instead of answering", printable(action, 40), printable(ticket.key))
        if target is not None:
            self.review_requested.emit(target)
        else:
            self.inbox_requested.emit()

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
