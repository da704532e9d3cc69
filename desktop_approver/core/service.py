"""The whole Qt-free app in one object: audit, memory, modes, policy, broker, server.

The GUI builds one :class:`ApproverService` with its own decider; tests and benchmarks build
one with a scripted decider. Nothing here knows about Qt.

What the app runs without is its *health* (:attr:`ApproverService.problems`, told to
``health_listeners`` as ``(what, problem)`` and to the log): ``"audit"`` while the audit log cannot
be written (every request is refused), ``"policy"`` while the rules file cannot be used,
``"descriptors"`` while the server runs out of file descriptors (newcomers refused, the others
served), and whatever else reports through :meth:`ApproverService.set_problem` under a name of its
own (the relay's states). The tray shows the app as degraded with these reasons; ``status`` (and
``status --json``) reports them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..client import paths
from .decisions.broker import DEFAULT_TIMEOUT, Broker
from .decisions.memory import SessionMemory
from .decisions.modes import ModeState
from .decisions.tickets import Decider, Identity
from .store import integrity
from .store.ast_lock import serialise_ast_construction
from .store.audit import AuditLog, PruneRefused
from .transport.context import DEFAULT_MAX_PENDING_PER_CLIENT, TokenCheck
from .transport.limits import Limits
from .transport.server import ApproverServer

if TYPE_CHECKING:
    from .policy import PolicyWatcher
    from .transport.tokens import TokenReader

log = logging.getLogger(__name__)
PRUNE_INTERVAL = 24 * 3600.0
AUDIT_WATCH_INTERVAL = 1.0
"""Seconds between two looks of the audit log at its own file (and, while it fails, tries to recover)."""
TOKEN_WATCH_INTERVAL = 1.0
"""Seconds between two looks at the keyring token's age (``--require-token``)."""
HealthListener = Callable[[str, "str | None"], None]
"""Called with (what, problem) when something the app relies on fails, and (what, None) when it works again."""
APP = Identity(agent="desktop-approver")
"""Who the app's own notices to the person come from."""


class FrontDoor(Protocol):
    """Another way in beside the socket (the NATS relay): it puts requests before the same broker.
    Only its shape is known here; the app's entry (``desktop_approver/wiring.py``) builds it."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...


DoorFactory = Callable[[Broker, HealthListener], FrontDoor]
"""Builds a front door for the service's broker; it reports what it runs without through the listener."""


@dataclass
class ServiceOptions:
    socket_path: Path
    audit_path: Path | str
    policy_path: Path | None = None
    state_path: Path | None = None
    default_timeout: float = DEFAULT_TIMEOUT
    max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT
    session_idle_seconds: float = 8 * 3600.0
    token_check: TokenCheck | None = None
    token_reader: TokenReader | None = None
    """The keyring token behind ``token_check`` (``--require-token``): refreshed and its health watched."""
    history_days: float | None = None
    """Prune the audit log of entries older than this, at start and daily; None keeps everything."""
    limits: Limits = field(default_factory=Limits)
    """Connections, unread replies, idle time and unfinished lines (``core/transport/limits.py``)."""
    doors: tuple[DoorFactory, ...] = ()
    """Other ways in beside the socket, built once the socket listens and closed first: the NATS relay
    for ``--relay``, wired by the app's entry (``desktop_approver/wiring.py``); the core knows none of them."""

    @classmethod
    def from_args(cls, args: Any) -> ServiceOptions:
        """From the CLI's ``--socket``, ``--policy``, ``--audit-db``, ``--timeout``, ``--require-token``,
        ``--history-days``, ``--session-idle`` (``--relay`` is the app's entry's: :mod:`desktop_approver.wiring`).

        Raises :class:`~desktop_approver.core.transport.tokens.TokenStoreUnavailable` when a token is
        required and there is no keyring to keep it in.
        """
        token_check = token_reader = None
        if getattr(args, "require_token", False):
            from .transport.tokens import TokenStore, make_token_check

            token_reader = TokenStore().reader()
            token_check = make_token_check(token_reader)
        return cls(socket_path=paths.resolve_socket_path(getattr(args, "socket", None)),
                   audit_path=Path(args.audit_db) if getattr(args, "audit_db", None) else paths.default_audit_path(),
                   policy_path=Path(args.policy) if getattr(args, "policy", None) else paths.default_policy_path(),
                   state_path=paths.default_state_path(),
                   default_timeout=getattr(args, "timeout", None) or DEFAULT_TIMEOUT,
                   token_check=token_check, token_reader=token_reader, history_days=getattr(args, "history_days", None),
                   session_idle_seconds=(getattr(args, "session_idle", None) or 8.0) * 3600)


class ApproverService:
    def __init__(self, options: ServiceOptions, decider: Decider) -> None:
        serialise_ast_construction()  # the app's threads format tracebacks too (CPython gh-106905)
        self.options = options
        self.problems: dict[str, str] = {}
        """What the app runs without, by what it is (``"audit"``, ``"policy"``): the reasons, in words."""
        self.health_listeners: list[HealthListener] = []
        self.audit = AuditLog(options.audit_path, move_broken_aside=True, refuse_until_open=True,
                              check_content=integrity.EVERY)
        self.audit.moved_listeners.append(lambda text: self.broker.tell(APP, "info", text))
        self.audit.notice_listeners.append(lambda text: self.broker.tell(APP, "info", text))
        self.audit.health_listeners.append(functools.partial(self.set_problem, "audit"))
        if self.audit.problem is not None:  # it could not be opened: refused until it can be
            self.set_problem("audit", self.audit.problem)
        self.memory = SessionMemory(idle_seconds=options.session_idle_seconds)
        self.mode = ModeState(options.state_path)
        self.mode.listeners.append(self._audit_mode)
        self.policy_watcher = self._make_policy_watcher(options.policy_path)
        self.broker = Broker(decider, audit=self.audit, memory=self.memory, policy=self.policy_watcher,
                             mode=self.mode, default_timeout=options.default_timeout)
        self.server = ApproverServer(self.broker, options.socket_path,
                                     max_pending_per_client=options.max_pending_per_client,
                                     token_check=options.token_check, limits=options.limits)
        self.server.problem_listeners.append(self.set_problem)  # "descriptors": out of them, then back
        self.broker.problems = self.problems       # one dict: status reports what the tray shows
        self._prune_handle: asyncio.TimerHandle | None = None
        self._audit_watch: asyncio.TimerHandle | None = None
        self._token_watch: asyncio.TimerHandle | None = None
        self.doors: list[FrontDoor] = []

    def __repr__(self) -> str:
        return f"<ApproverService problems={sorted(self.problems)} {self.broker!r}>"

    async def start(self) -> None:
        # The rules are read before the socket listens: no request may be decided without them.
        if self.policy_watcher is not None:
            self.policy_watcher.start()
        await self.server.start()
        try:  # the socket is ours: no other app writes the log, what waits in it was an earlier run's
            self.audit.close_abandoned(leave_relayed=bool(self.options.doors))
        except sqlite3.Error:  # the log's health signal tells the person; closed at a later start
            log.warning("the audit log could not close the calls an earlier run left waiting", exc_info=True)
        for open_door in self.options.doors:
            door = open_door(self.broker, self.set_problem)
            self.doors.append(door)
            await door.start()
        self._watch_audit()
        self._watch_token()
        moved = self.audit.moved_aside
        if moved is not None:
            text = (f"The audit log could not be opened; it was kept as {moved} and a fresh log was started "
                    f"at {self.audit.path}.")
            self.broker.tell(APP, "info", text)
            try:
                self.audit.record_event("audit", "moved_aside", text)
            except sqlite3.Error:  # told to the person and the health signal already; the start goes on
                log.exception("the audit log could not record that it was moved aside")
        if self.options.history_days is not None:
            self._prune_daily()

    async def close(self) -> None:
        for door in reversed(self.doors):
            await door.close()
        if self.policy_watcher is not None:
            self.policy_watcher.stop()
        if self._prune_handle is not None:
            self._prune_handle.cancel()
        if self._audit_watch is not None:
            self._audit_watch.cancel()
        if self._token_watch is not None:
            self._token_watch.cancel()
        await self.server.close()
        await asyncio.sleep(0)
        self.audit.close()

    def close_at_once(self, why: str) -> None:
        """End now, without the event loop: what waits for the person is answered ``shutting_down``
        and recorded as not allowed, the socket file is removed, the log closed. For a world that
        ends under the app (its display gone: Qt exits the process right after saying so), where
        :meth:`close` cannot run."""
        self.server.close_at_once(why)
        self.audit.close_waiting(f"the app stopped before an answer ({why}): the agent was told shutting_down")
        with contextlib.suppress(sqlite3.Error):
            self.audit.record_event("app", "stopped", why)
        self.audit.close()

    def _prune_daily(self) -> None:
        assert self.options.history_days is not None
        try:
            removed = self.audit.prune(self.options.history_days)
        except PruneRefused as refused:  # the clock looks wrong: nothing deleted; the person is told
            log.warning("%s", refused)
            self.broker.tell(APP, "info", f"{str(refused)[0].upper()}{str(refused)[1:]}.")
            with contextlib.suppress(sqlite3.Error):
                self.audit.record_event("audit", "prune_refused", str(refused))
        except sqlite3.Error as exc:  # a busy or failing log must not take the app down; tried again tomorrow
            log.warning("pruning the audit log failed: %s", exc)
        else:
            if removed:
                log.info("pruned %d audit entries older than %g days", removed, self.options.history_days)
        self._prune_handle = asyncio.get_running_loop().call_later(PRUNE_INTERVAL, self._prune_daily)

    def set_problem(self, what: str, problem: str | None) -> None:
        """Record (or clear, with None) what the app runs without; tell the log and the listeners."""
        if self.problems.get(what) == problem:
            return
        if problem is None:
            del self.problems[what]
            log.warning("%s works again", what)
        else:
            self.problems[what] = problem
            log.error("degraded (%s): %s", what, problem)
        for listener in list(self.health_listeners):
            try:
                listener(what, problem)
            except Exception:  # the tray's display of the app's health must not fail a write
                log.exception("a health listener failed")

    def _watch_audit(self) -> None:
        try:
            self.audit.watch()
        except Exception:  # the watch must go on, whatever one look ran into
            log.exception("watching the audit log failed")
        self._audit_watch = asyncio.get_running_loop().call_later(AUDIT_WATCH_INTERVAL, self._watch_audit)

    def _watch_token(self) -> None:
        """Keep the keyring token fresh without a client asking (a rotation takes effect within the
        reader's ``max_age``) and its health shown: the reader reports from its own thread."""
        reader = self.options.token_reader
        if reader is None:
            return
        loop = asyncio.get_running_loop()
        if self._token_watch is None:
            def told(problem: str | None) -> None:  # from the reader's thread: the health is the loop's
                if not loop.is_closed():
                    loop.call_soon_threadsafe(self.set_problem, "token", problem)

            reader.health_listeners.append(told)
            self.set_problem("token", reader.problem)
        reader()  # starts a refresh in the reader's thread when the token is stale; never waits
        self._token_watch = loop.call_later(TOKEN_WATCH_INTERVAL, self._watch_token)

    def _make_policy_watcher(self, path: Path | None) -> PolicyWatcher | None:
        if path is None:
            return None
        from .policy import PolicyWatcher

        return PolicyWatcher(path, on_change=self._policy_changed)

    def _policy_changed(self, policy: object, error: object) -> None:
        assert self.policy_watcher is not None
        self.set_problem("policy", self.policy_watcher.problem)

    def _audit_mode(self, mode: str, reason: str | None) -> None:
        self.audit.record_event("mode", mode, reason)
