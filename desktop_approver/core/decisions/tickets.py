"""What the broker hands to whoever decides: a ticket of one or more pending calls.

A :class:`Ticket` is a non-widget object (like a question in a prompt queue): the GUI shows it,
the broker owns its lifetime (timeout, cancellation). :class:`Decider` is the one narrow
interface between the Qt-free core and the GUI, so tests can plug in a scripted decider.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...client.vocabulary import AskKind, RiskLevel, RiskReport
from ..store.logsafe import printable
from .verdict import Verdict as Verdict  # its home is .verdict (no circle with messages.models)

if TYPE_CHECKING:
    from ..calls.facts import Facts
    from ..calls.risk import RiskAssessment
    from ..messages.models import ToolCall
    from ..policy import PolicyCall

_ticket_numbers = itertools.count(1)


@dataclass(frozen=True)
class Identity:
    """Who asks: what the client claims, and what the kernel vouches for (peer credentials)."""

    agent: str | None = None
    pid: int | None = None            # as the client says
    cwd: str | None = None
    host: str | None = None
    git_branch: str | None = None
    peer_pid: int | None = None       # from SO_PEERCRED: cannot be forged
    peer_uid: int | None = None
    peer_exe: str | None = None       # /proc/<peer_pid>/exe, where readable
    peer_cwd: str | None = None       # /proc/<peer_pid>/cwd, where readable and the peer is no relay
    cwd_agrees: bool | None = None    # the claimed cwd is the real one (None: nothing to compare)
    relay_user: str | None = None     # the NATS user a relayed request came from (the server vouches for it)

    @property
    def pid_verified(self) -> bool:
        return self.pid is not None and self.pid == self.peer_pid

    @property
    def policy_cwd(self) -> str | None:
        """The cwd rules match: the kernel's where it tells, else (forwarded sockets) the claim.

        A request relayed over NATS has no kernel to tell, and its claim must never lower a level
        or satisfy a rule's directory: none (the risk is read from the claim too, the worse kept)."""
        if self.relay_user is not None:
            return self.peer_cwd
        return self.peer_cwd or self.cwd

    @property
    def memory_agent(self) -> str | None:
        """Whose session memory this is: the agent's name, and for a relayed request also the host
        it claims (a session allowed on one machine never answers another's, as a socket's
        sessions are its own agent's)."""
        if self.relay_user is not None and self.host:
            return f"{self.agent}@{self.host}"
        return self.agent

    @property
    def label(self) -> str:
        return self.agent or (self.peer_exe.rsplit("/", 1)[-1] if self.peer_exe else "unknown agent")

    def as_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "pid": self.pid, "cwd": self.cwd, "host": self.host,
                "git_branch": self.git_branch, "peer_pid": self.peer_pid, "peer_uid": self.peer_uid,
                "peer_exe": self.peer_exe, "peer_cwd": self.peer_cwd, "cwd_agrees": self.cwd_agrees,
                "relay_user": self.relay_user}


@dataclass(frozen=True)
class CallInfo:
    """One tool call of a ticket, with what the core found out about it."""

    index: int
    tool: str
    args: dict[str, Any]
    description: str | None = None
    preview: dict[str, Any] | None = None
    hints: dict[str, Any] = field(default_factory=dict)
    risk: RiskAssessment | None = None
    audit_id: int | None = None
    canonical_args: str | None = field(default=None, repr=False, compare=False)
    """The arguments' canonical JSON (``wire.canonical_json``), made once: the risk cache's key and
    session memory's both use it."""
    consequences: Facts | None = field(default=None, compare=False)
    """What the call would touch on this machine, gathered for it (issue 32): shown as "What this
    touches", kept in the audit log; None when it names nothing on the file system."""
    asked_because: str | None = None
    """Why an automatic answer (approve-all, a session approval, an allow rule) was withheld and the
    person is asked, in one line ("not understood: option `--output` of `git log`"); None when
    nothing would have answered the call by itself."""

    @classmethod
    def of(cls, index: int, call: ToolCall, risk: RiskAssessment | None) -> CallInfo:
        """The call as the core keeps it, straight from the validated message (hints by our names)."""
        return cls(index=index, tool=call.tool, args=call.args, description=call.description,
                   preview=call.preview.model_dump(exclude_none=True) if call.preview is not None else None,
                   hints=call.hints.as_dict() if call.hints is not None else {}, risk=risk)

    def policy_call(self, identity: Identity) -> PolicyCall:
        """What a policy rule sees of this call: the one place that view is built.

        The directory is the one the kernel vouches for where it can (``policy_cwd``), never only the claim.
        """
        from ..policy import PolicyCall  # the policy loads only with a rules file (or the rule editor)

        risk = self.risk
        return PolicyCall(tool=self.tool, args=self.args, agent=identity.agent, cwd=identity.policy_cwd,
                          risk=risk.level if risk is not None else None,
                          understood=risk is not None and risk.understood, gaps=risk.gaps if risk is not None else ())

    def risk_report(self) -> RiskReport | None:
        """The app's assessment as the agent is told it with the answer."""
        if self.risk is None:
            return None
        return {"level": cast("RiskLevel", self.risk.level), "reasons": list(self.risk.reasons)}


PAUSE_ALLOWANCE = 0.5
"""Pausing may stretch a request's wait by at most this fraction of its timeout: a timeout stays a
timeout (a touched dialog never doubles it), and an agent knows the latest moment an answer can
come (``timeout * 1.5``; the clients wait ``timeout * 2`` plus a grace)."""


class Countdown:
    """A deadline that the person can pause by interacting with the dialog, within a hard limit.

    One pause per request: once resumed (the person left it for another), touching it again does
    not stop the clock a second time, so going back and forth never stretches it further.
    """

    def __init__(self, seconds: float, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self.total = seconds
        self._remaining = seconds
        self._started = self._loop.time()
        self.hard_deadline = self._started + seconds * (1 + PAUSE_ALLOWANCE)
        self.paused_once = False
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(self._started + seconds, self._countdown_due)
        self._hard: asyncio.TimerHandle | None = self._loop.call_at(self.hard_deadline, self._hard_due)
        self.expired: asyncio.Future[None] = self._loop.create_future()

    def __repr__(self) -> str:
        state = "expired" if self.expired.done() else "paused" if self.paused else "running"
        return f"<Countdown {state} {self.remaining():.1f}s of {self.total:g}s, latest {self.latest():.1f}s>"

    @property
    def paused(self) -> bool:
        return self._handle is None and not self.expired.done()

    def remaining(self) -> float:
        """Seconds left on the countdown (frozen while paused)."""
        if self._handle is None:
            return self._remaining
        return max(0.0, self._remaining - (self._loop.time() - self._started))

    def latest(self) -> float:
        """Seconds until the request is denied at the latest, paused or not."""
        hard_left = max(0.0, self.hard_deadline - self._loop.time())
        return hard_left if self.paused else min(self.remaining(), hard_left)

    @property
    def can_pause(self) -> bool:
        """Running and not paused before: the one pause this request has is still there."""
        return self._handle is not None and not self.paused_once

    def pause(self) -> None:
        """Stop the clock, the first time only (until :meth:`resume` or the hard limit)."""
        if self._handle is not None and not self.paused_once:
            self.paused_once = True
            self._remaining = self.remaining()
            self._handle.cancel()
            self._handle = None

    def resume(self) -> None:
        if self._handle is None and not self.expired.done():
            self._started = self._loop.time()
            self._handle = self._loop.call_at(self._started + self._remaining, self._countdown_due)

    def cancel(self) -> None:
        for handle in (self._handle, self._hard):
            if handle is not None:
                handle.cancel()
        self._handle = self._hard = None

    # Timers may fire early (Qt's coarse timers, which run asyncio's under qasync, by up to 5 %):
    # each callback checks the clock and waits out the rest, so a request is never denied early.

    def _countdown_due(self) -> None:
        due = self._started + self._remaining
        if self._loop.time() < due:
            self._handle = self._loop.call_at(due, self._countdown_due)
            return
        self._expire()

    def _hard_due(self) -> None:
        if self._loop.time() < self.hard_deadline:
            self._hard = self._loop.call_at(self.hard_deadline, self._hard_due)
            return
        self._expire()

    def _expire(self) -> None:
        self.cancel()
        self._remaining = 0.0
        if not self.expired.done():
            self.expired.set_result(None)


@dataclass(repr=False)
class Ticket:
    """Calls from one request or batch that need a person, waiting together under one prompt."""

    request_id: str
    kind: AskKind
    calls: list[CallInfo]
    session: str
    identity: Identity
    countdown: Countdown
    batch_size: int = 1
    created: float = field(default_factory=time.time)
    number: int = field(default_factory=lambda: next(_ticket_numbers))

    @property
    def key(self) -> str:
        return f"t{self.number}"

    def __repr__(self) -> str:
        return (f"<Ticket {self.key} {self.kind} {printable(self.request_id, 40)!r} calls={len(self.calls)}"
                f"/{self.batch_size} agent={printable(self.identity.label, 40)!r} peer={self.identity.peer_pid} "
                f"risk={self.risk_level} left={self.countdown.latest():.1f}s>")

    @property
    def risk_level(self) -> RiskLevel:
        levels = {call.risk.level for call in self.calls if call.risk}
        worst: tuple[RiskLevel, ...] = ("destructive", "moderate")
        return next((level for level in worst if level in levels), "safe")

    @property
    def shown_level(self) -> str:
        """What the badge says: ``destructive`` when a call is, else ``not understood`` when a call
        was not understood (its level would be a guess), else the highest level."""
        if any(call.risk is not None and call.risk.level == "destructive" for call in self.calls):
            return "destructive"
        if any(call.risk is None or not call.risk.understood for call in self.calls):
            return "not understood"
        return self.risk_level

    def summary(self) -> str:
        """One line for the tray menu and notifications."""
        first = self.calls[0]
        more = f" (+{len(self.calls) - 1} more)" if len(self.calls) > 1 else ""
        return f"{self.identity.label}: {first.tool}{more}"


class Decider(Protocol):
    """Whoever answers tickets: the GUI in the app, a script in tests.

    Returns one verdict per call in ``ticket.calls``, in order. Cancellation (timeout, client
    gone) arrives as ``asyncio.CancelledError`` and must make any prompt disappear.
    """

    async def decide(self, ticket: Ticket) -> list[Verdict]: ...
