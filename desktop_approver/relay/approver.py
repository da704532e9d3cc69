"""The approver's side of the relay: requests from the stream, through the app's own broker.

:class:`RelayApprover` (``desktop-approver tray --relay nats://...``) connects with an approver's
credentials, sets up the stream and the decision bucket when they are missing, and reads every
request through a durable consumer of its own (each approver sees every request; the first answer
wins). Qt-free: it talks to the app only through the broker it is given.

Each request goes the way a local one goes, through the same code: the envelope's hello and
message are fed to a core :class:`~desktop_approver.core.transport.connection.Connection` (the
validation ladder, the broker's triage, policy, modes, session memory per agent and session, the
audit log, the person through the decider). Its identity is the remote one: the NATS user taken
from the subject (the server's permissions let only that user publish there) and what the agent
claims (agent, host, directory), marked as claims; the agent's name is kept as ``<user>/<agent>``
so session memory and rules never mix two users' agents, and a claimed directory never lowers a
level (:attr:`~desktop_approver.core.decisions.tickets.Identity.policy_cwd`).

The answer is written with a create-only put to ``<user>.<id>`` in the bucket: exactly one
decision exists, whoever sends it. It is written before the audit log records it (the broker's
:class:`~desktop_approver.core.decisions.broker.Settler`, :meth:`RelayApprover.settle`): when
another approver's answer is there first, that one is recorded as the decision (naming who gave
it) and ours only as a ``late_answer`` event, so every audit log holds the decision that stands.
An approver that sees another's answer arrive withdraws its own prompt (the dialog closes).
A request past its deadline is denied by ``timeout``; the deadline is the agent's, bounded by our
own clock, and one from a skewed clock is refused (``clock_skew``, :func:`.names.deadline_problem`).
A cancel, or an agent whose heartbeat stops, withdraws it everywhere (``deny`` by ``cancelled``).
Requests that do not fit (a wrong subject, a malformed or oversized envelope, an id replayed under
another stream sequence) are refused and audited. Connecting never gives up: whatever fails (the
server, the credentials, a missing package) is told to the person as the app's ``relay`` problem.

Two loops, one owner each: nats-py runs on a loop of its own in a thread (the connection, the
stream, the bucket, the stream's messages), so the app's loop (qasync's, under Qt) never runs
NATS I/O and a slow server never stalls a window; the broker, the connections, the audit log and
the open requests belong to the app's loop. They hand work to each other with ``call_soon_threadsafe``
(:meth:`RelayApprover._app`, :meth:`RelayApprover._nats`) and nothing else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..client import wire
from ..client.vocabulary import DECIDED_BY, DECISIONS, SCOPES, DecidedBy
from ..core.decisions.broker import Unsettled
from ..core.decisions.tickets import PAUSE_ALLOWANCE, CallInfo, Identity, Ticket, Verdict
from ..core.messages import models
from ..core.messages.protocol import Refusal, decode, encode, encode_decision
from ..core.store.logsafe import printable
from ..core.transport.connection import Connection
from ..core.transport.context import DEFAULT_MAX_PENDING_PER_CLIENT, Context
from ..core.transport.peercred import PeerCredentials
from . import names, secure, signing
from .address import RelayAddress

if TYPE_CHECKING:
    from ..core.decisions.broker import Broker, Triage
    from ..core.decisions.tickets import Decider

log = logging.getLogger(__name__)
_T = TypeVar("_T")

ACK_WAIT = 30.0
"""Seconds the server waits for our ack before redelivering; a request still open is kept alive
with ``in_progress`` every third of that, so only a dead approver's requests come again."""
RECONNECT_WAIT = 1.0
CLOCK_MEASURE_EVERY = 60.0
"""Seconds after which the server's clock is measured again (:meth:`RelayApprover._measure_clock`)."""
CLOCK_JUMP = 1.0
"""Seconds our wall clock may move apart from the monotonic one before the offset is measured again."""
QUOTA_CHECK_EVERY = 5.0
"""Seconds between two looks at one user's stream prompted by its agents saying they were refused."""
PROBE_TIMEOUT = 2.0
HEARTBEATS_PER_SECOND = 100.0
"""Heartbeats one agent user may send a second, on average (each of its agents sends one every 5 s
while it waits, more for over :data:`.names.HEARTBEAT_IDS` ids): more are dropped unread, so one
user's flood never holds up another's requests on the connection they share."""
HEARTBEAT_BURST = 1_000.0
"""Heartbeats one agent user may send at once before :data:`HEARTBEATS_PER_SECOND` binds."""
REFUSALS_LOGGED_PER_MINUTE = 10
"""Refusals the text log says one by one in a minute; the rest in one line at the minute's end (the
audit log keeps its own budget): a flood of junk never floods the log."""
FLOOD_TELL_EVERY = 10.0
"""Seconds between two words to the person about one user's dropped heartbeats."""
FLOOD_QUIET = 30.0
"""Seconds without a dropped heartbeat before a user is no longer said to flood."""
"""Seconds the server has to answer our probe before it counts as stalled (checked every few seconds)."""
CLOSE_WAIT = 5.0
"""Seconds a closing approver gives the decisions it made to reach the server."""
DEFAULT_AGENT_SILENCE = 20.0
"""Seconds without an agent's heartbeat (``agent.HEARTBEAT_SECONDS``) after which its requests are
withdrawn: it died without a word."""
DEFAULT_MAX_PENDING = 256
"""Relayed calls of one NATS user that may wait for the person at once (``too_many_pending``); one
of its agents may have the socket's limit per client (``DEFAULT_MAX_PENDING_PER_CLIENT``), so one
agent, or one user, that floods the stream never locks out the others."""
MAX_ACK_PENDING = 1_000
"""Stream messages of one user this app may hold unacknowledged (each user's stream has its own
consumer): above what a user may have waiting (:data:`DEFAULT_MAX_PENDING`)."""
DEFAULT_MAX_PENDING_BYTES = 16 * 1024 ** 2
"""Bytes of envelopes of one NATS user held open here at once: what a user's waiting requests may
cost this app's memory."""
MAX_ENVELOPE_BYTES = 2 * wire.MAX_LINE_BYTES
"""An envelope larger than this is refused unread: its message could not be within the protocol's
line limit (``wire.MAX_LINE_BYTES``) with any client information that fits the protocol."""
CLOSED = ("not answered here: this app closed while the request waited (it stays on the NATS server "
          "for the other approvers and the next start)")
"""What this app's log records for a relayed request still open when it closes: no answer was sent."""
TOO_LATE = "the answer could not be written to the NATS server before the request's deadline"
"""The note of an answer denied by ``timeout`` because it could not be written in time."""
STREAM_MAX_BYTES = 64 * 1024 ** 2
"""The most one agent user's request stream (``APPROVER_REQUESTS_<user>``) keeps on the server;
full, it refuses that user's new requests (its agent hears it at once, ``QuotaExceeded``) and never
drops one it holds; no other user's stream is touched. Requests leave it at their own time to live
(their deadline, :func:`.names.request_ttl`), refused ones at once. The server's account limit
(``jetstream { max_file }``, written by ``relay setup``) covers every user's stream and the bucket."""
STREAM_MAX_MSGS = 10_000
"""The most requests (and cancels, notices) one user's stream keeps at once."""
BUCKET_MAX_BYTES = 512 * 1024 ** 2
"""The most the decision bucket keeps on the server."""
REFUSAL_TTL = 600.0
"""Seconds a refusal (``too_many_pending``, ``clock_skew``...) stays in the bucket: its agent reads it
at once; the bucket is not filled for 49 hours by a flood of them."""
REFUSALS_PER_MINUTE = 60
"""Refusals of one NATS user written to the bucket a minute; more are not answered (their agents are
denied at their deadline), so a flooding user cannot fill the bucket every answer needs."""
PROBLEM = "relay"
"""The name of the relay's entry in the app's health (``status``'s ``problems``, the tray)."""
STORED_PAUSES = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)
"""Pauses between reads of a key after a put to it was seen, until the bucket has stored it."""
NO_UID = cast("int", None)
"""A remote peer has no uid on this machine; the audit log records none."""

Action = tuple[str, dict[str, Any] | None]
"""What the NATS side does with a stream message after the app took it: ``("open", None)`` (answered
later), ``("term", None)`` (refused, never again), ``("ack", None)`` (nothing more to do), ``("write", reply)`` (write
this answer, then ack), ``("expire", reply)`` (write this deny by timeout, then record what stands)."""


@dataclass(frozen=True)
class Claim:
    """How a create-only write of a decision went: ``won`` (ours stands, or, with ``failure``, only a
    refusal in its place could be stored), lost to ``theirs`` (the value that stands), or ``failure``
    alone (nothing of ours stored, and nobody else's found)."""

    won: bool
    theirs: dict[str, Any] | None = None
    failure: str | None = None
    timed_out: bool = False
    """Ours stands, but as a deny by ``timeout``: the request's deadline passed before it could be
    written, so what was written is what the agent decided by itself then."""


@dataclass(eq=False)
class RelayedRequest:
    """One request from the stream while this approver has it open (owned by the app's loop)."""

    key: str
    user: str
    unique: str
    sequence: int
    msg: Any
    """The stream message (the NATS loop's: only acked there)."""
    connection: Connection
    deadline: float
    """When this approver stops waiting (epoch s): the envelope's deadline bounded by our own clock."""
    elsewhere: asyncio.Future[dict[str, Any]]
    """Set when another approver's answer for this key is seen first."""
    withdrawn: asyncio.Future[str]
    """Set (with why) when the agent withdraws the request: a cancel, or its heartbeat stopped."""
    size: int = 0
    """The envelope's bytes (what it holds of this app's memory, counted per user)."""
    calls: int = 1
    last_seen: float = field(default_factory=time.monotonic)
    answered: bool = False
    theirs_at: set[int] = field(default_factory=set)
    """The calls another approver's answer decided here (the prompt closed): not this app's attempt."""
    claim: Claim | None = None
    """How writing the answer went, once :meth:`RelayApprover.settle` wrote it (then not written again)."""

    def __repr__(self) -> str:
        return f"<RelayedRequest {self.key} seq={self.sequence}{' answered' if self.answered else ''}>"


class RelayDecider:
    """The app's decider, with relayed tickets raced against the other approvers' answers."""

    def __init__(self, inner: Decider, relay: RelayApprover) -> None:
        self.inner = inner
        self.relay = relay

    def __repr__(self) -> str:
        return f"<RelayDecider over {self.inner!r}>"

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        user = ticket.identity.relay_user
        request = self.relay.requests.get(names.decision_key(user, ticket.request_id)) if user else None
        if request is None:
            return await self.inner.decide(ticket)
        if request.elsewhere.done():  # answered before we got to it: nobody is asked
            return self._theirs(request, ticket)
        if request.withdrawn.done():
            return self._withdrawn(request, ticket)
        deciding = asyncio.ensure_future(self.inner.decide(ticket))
        try:
            either: tuple[asyncio.Future[Any], ...] = (deciding, request.elsewhere, request.withdrawn)
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            deciding.cancel()
            raise
        if deciding.done():
            return deciding.result()
        deciding.cancel()  # the prompt disappears: another approver answered first, or the agent withdrew
        with contextlib.suppress(asyncio.CancelledError):
            await deciding
        return self._theirs(request, ticket) if request.elsewhere.done() else self._withdrawn(request, ticket)

    @staticmethod
    def _withdrawn(request: RelayedRequest, ticket: Ticket) -> list[Verdict]:
        """The agent withdrew it: a deny by ``cancelled``, settled like any answer (another approver's
        answer, if it came first, is the one recorded)."""
        why = request.withdrawn.result()
        return [Verdict("deny", "cancelled", note=why if why == CLOSED else f"withdrawn: {why}")
                for _ in ticket.calls]

    @staticmethod
    def _theirs(request: RelayedRequest, ticket: Ticket) -> list[Verdict]:
        value = request.elsewhere.result()
        request.theirs_at.update(call.index for call in ticket.calls)
        log.debug("%s answered elsewhere first, by %s", request.key, printable(str(value.get("approver")), 80))
        return [_verdict_of(value, call.index) for call in ticket.calls]


class RelayApprover:
    """Answers relayed requests with ``broker``; ``start`` and ``close`` on the app's loop."""

    def __init__(self, broker: Broker, address: RelayAddress, *, name: str | None = None,
                 agent_silence: float = DEFAULT_AGENT_SILENCE, max_pending: int = DEFAULT_MAX_PENDING,
                 on_problem: Callable[[str, str | None], None] | None = None,
                 max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES, ack_wait: float = ACK_WAIT) -> None:
        self.broker = broker
        self.on_problem = on_problem
        """The app's health (``ApproverService.set_problem``): the tray and ``status`` show what the
        relay cannot do; without it, the broker's ``problems`` hold it."""
        self.problem: str | None = None
        self.address = address
        self.name = name or f"{address.user}@{socket.gethostname()}"
        self.instance = _instance_id(broker)
        """This app's own id (kept beside its audit log): stored with each answer it writes, so an
        answer is known as ours by it, never by the name another app may share."""
        self.durable = f"approver-{names.subject_token(self.name)[:40]}-{self.instance}"
        """This app's consumer: its own, even beside another app with the same user and host (each
        approver sees every request); kept across restarts, removed by the server once unused for
        the stream's retention."""
        self.agent_silence = agent_silence
        self.ack_wait = ack_wait
        self.max_pending = max_pending
        self.max_pending_bytes = max_pending_bytes
        self.context = Context(broker, max_pending_per_client=min(max_pending, DEFAULT_MAX_PENDING_PER_CLIENT),
                               socket_path=address.shown)
        self.requests: dict[str, RelayedRequest] = {}
        self._expiring: dict[str, tuple[Identity, str, str, list[CallInfo], list[Verdict]]] = {}
        """Requests past their deadline on arrival, recorded once their expiry is written."""
        self.ready = asyncio.Event()
        """Set once the stream, the bucket and our consumer are there (tests wait for it)."""
        self.closing = False
        self.connected_at: float | None = None
        self.responsive_since: float | None = None
        """Since when (monotonic) the server has answered each of our probes in time: agents' silence
        counts only from then."""
        self.clock_offset = 0.0
        """Seconds to add to our clock to read the NATS server's (:meth:`_measure_clock`)."""
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._checking: asyncio.TimerHandle | None = None
        self._settling: set[concurrent.futures.Future[Any]] = set()
        """Answers being written by :meth:`settle`; a new request waits while one is written and not recorded."""
        self._writing: set[concurrent.futures.Future[Any]] = set()
        """Decisions handed to the NATS loop and not written yet (a closing app waits for them)."""
        # the NATS loop's
        self.nats_loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._thread_main, name="desktop-approver-relay", daemon=True)
        self.nc: Any = None
        self.nc_alive: Any = None
        """The agents' heartbeats come on a connection of their own: a flood the server cuts as a slow
        consumer there never cuts the stream reads and the answers on :attr:`nc`."""
        self.kv: Any = None
        self._streams: dict[str, Any] = {}
        """Per agent user: our pull subscription to its stream (the NATS loop's)."""
        self._readers: dict[str, asyncio.Task[None]] = {}
        self._joining: set[str] = set()
        self._answered_before: dict[str, set[str]] = {}
        """Per user, the keys already answered when our consumer of its stream was made: passed over."""
        self._join_checked = 0.0
        self._quota_checked: dict[str, float] = {}
        self._store_why = "after a reconnect"
        self._wake = asyncio.Event()
        self.full_users: set[str] = set()
        """Agent users whose stream is at its limit (the app's loop): told to the person."""
        self._check_store = False
        """Set after a reconnect: the reader sees whether the server still has the stream, the bucket, our consumer."""
        self._runner: asyncio.Task[None] | None = None
        self._refusals: dict[str, tuple[float, int, int]] = {}
        """Per NATS user: since when (monotonic), refusals written and not written this minute."""
        self._clock_mark: tuple[float, float] | None = None
        """Our wall and monotonic clocks when the offset was last measured (None: measure again)."""
        self._told_offset = 0.0
        self._beat_budget: dict[str, tuple[float, float]] = {}
        """Per agent user: heartbeats it may send now, and when that was counted (the NATS loop's)."""
        self._beats_dropped: dict[str, tuple[int, float]] = {}
        """Per agent user: heartbeats dropped since the person was last told, and when that was."""
        self._last_drop: dict[str, float] = {}
        """Per agent user: when (monotonic) its last heartbeat was dropped."""
        self.flooding: set[str] = set()
        self._refusals_logged = (-60.0, 0)
        """Since when (monotonic) refusals are counted for the text log, and how many it said (the app's loop)."""
        self._refusals_unlogged = 0
        self._refusals_summary: asyncio.TimerHandle | None = None
        """Agent users whose heartbeats are being dropped (the app's loop): told to the person."""
        self._settling_earlier: asyncio.Task[None] | None = None
        self._settling_abandoned: asyncio.Task[None] | None = None
        self._unsettled_keys: set[str] | None = None
        """Keys an earlier run left unsettled (read once, on the app loop): not opened again."""
        """Recording what an earlier run left unsettled (:meth:`_settle_unsettled`)."""

    def __repr__(self) -> str:
        state = "connected" if self.nc is not None and self.nc.is_connected else "disconnected"
        return f"<RelayApprover {self.name!r} {self.address.shown} {state} open={len(self.requests)}>"

    @property
    def app_loop(self) -> asyncio.AbstractEventLoop:
        assert self._app_loop is not None, "start() first"
        return self._app_loop

    # -- the app's loop: start, close ---------------------------------------------------------------

    async def start(self) -> None:
        """Begin answering; connecting goes on in the background until the server is reachable."""
        self._app_loop = self.context.loop = asyncio.get_running_loop()
        if not isinstance(self.broker.decider, RelayDecider):
            self.broker.decider = RelayDecider(self.broker.decider, self)
        self.broker.settler = self
        self.broker.relay_state = self.state
        self._thread.start()
        self._checking = self.app_loop.call_later(self._check_interval, self._check_open_requests)

    async def close(self) -> None:
        """Stop reading; decisions already made are written first (within a few seconds)."""
        self.closing = True
        if self._checking is not None:
            self._checking.cancel()
        if self._refusals_summary is not None:  # what the log left out is said before the app goes
            self._refusals_summary.cancel()
            self._log_unlogged()
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._stop_reading(), self.nats_loop))
        # Prompts disappear; the stream keeps each open request for the other approvers, or for our
        # next start. The log records why this app did not answer it, not a deny the agent never got.
        waiting = [task for request in self.requests.values() if not request.answered
                   for task in request.connection.tasks.values()]
        for request in list(self.requests.values()):
            if not request.withdrawn.done():
                request.withdrawn.set_result(CLOSED)
        if waiting:
            await asyncio.wait(waiting, timeout=CLOSE_WAIT)
        if self._writing and self._thread.is_alive():
            await asyncio.wait([asyncio.wrap_future(write) for write in self._writing], timeout=CLOSE_WAIT)
        for request in list(self.requests.values()):
            request.connection.connection_lost()
        if self.broker.settler is self:
            self.broker.settler = None
        if self.broker.relay_state == self.state:
            self.broker.relay_state = None
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._disconnect(), self.nats_loop))
            self.nats_loop.call_soon_threadsafe(self.nats_loop.stop)
            self._thread.join(CLOSE_WAIT)
        elif self._thread.ident is None:  # never started: its loop never ran
            self.nats_loop.close()
        self.context.close()

    def state(self) -> dict[str, Any]:
        """For ``status``: the server, our user, whether we are connected, the relayed calls waiting here."""
        return {"server": self.address.shown, "user": self.address.user,
                "connected": bool(self.nc is not None and self.nc.is_connected and self.ready.is_set()),
                "pending": sum(request.calls for request in self.requests.values() if not request.answered)}

    # -- handing work over --------------------------------------------------------------------------

    def _app(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` on the app's loop (from the NATS loop)."""
        self.app_loop.call_soon_threadsafe(function, *args)

    def _app_result(self, function: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """``function(*args)`` on the app's loop, awaited on the NATS loop."""
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def run() -> None:
            if any(writing.done() for writing in self._settling):
                # An answer is on the server (its agent may already ask again) and not yet recorded
                # and remembered here: that comes first, or a session approval would be missed.
                self.app_loop.call_soon(run)
                return
            try:
                result = function(*args)
            except BaseException as exc:
                with contextlib.suppress(concurrent.futures.InvalidStateError):  # its waiter went (closing)
                    done.set_exception(exc)
                return
            with contextlib.suppress(concurrent.futures.InvalidStateError):  # the same: the work is done all the same
                done.set_result(result)

        self.app_loop.call_soon_threadsafe(run)
        return asyncio.wrap_future(done, loop=self.nats_loop)

    def _nats(self, work: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T] | None:
        """Run ``work`` on the NATS loop (from the app's loop); its failure is logged."""
        if not self._thread.is_alive():
            work.close()
            return None
        future = asyncio.run_coroutine_threadsafe(work, self.nats_loop)
        future.add_done_callback(_log_failure)
        return future

    # -- the NATS loop: connecting and reading ------------------------------------------------------

    def _thread_main(self) -> None:
        asyncio.set_event_loop(self.nats_loop)
        self._runner = self.nats_loop.create_task(self._run())
        try:
            self.nats_loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(self.nats_loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.nats_loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_WAIT))
            self.nats_loop.close()

    async def _run(self) -> None:
        """Connect, and keep trying whatever fails (the server away, credentials refused, a module
        missing): the person is told what is wrong (:attr:`problem`), and it works once that is
        fixed; this task never ends with an error while the app runs."""
        told: str | None = None
        while not self.closing:
            try:
                await self._connect()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever it is, we say so and try again
                reason = connect_problem(exc, self.address)
                log.debug("relay: connecting to %s failed: %r", self.address.shown, exc)
                if reason != told:
                    log.warning("relay: %s; trying again", reason)
                    self._app(self._set_problem, reason)
                    told = reason
                await self._disconnect()
                await asyncio.sleep(RECONNECT_WAIT)
                continue
            if told is not None:
                self._app(self._set_problem, None)
            log.info("relay: answering requests from %s as %s", self.address.shown, self.name)
            self._settling_earlier = self.nats_loop.create_task(self._settle_unsettled())
            self._settling_abandoned = self.nats_loop.create_task(self._settle_abandoned())
            await self._read_requests()
            return

    async def _connect(self) -> None:
        self.nc = await asyncio.wait_for(secure.connect(
            self.address, name=f"desktop-approver {self.name}", connect_timeout=2,
            max_reconnect_attempts=1, reconnect_time_wait=0.25, error_cb=self._error,
            reconnected_cb=self._reconnected, disconnected_cb=self._disconnected), 5)
        self.nc.options["max_reconnect_attempts"] = -1  # connected: reconnect without end from now on
        self.connected_at = time.monotonic()
        await self._set_up()
        await self._measure_clock()
        await self.nc.subscribe(f"{names.KV_SUBJECT_ROOT}.>", cb=self._decision_seen)
        self.nc_alive = await asyncio.wait_for(secure.connect(
            self.address, name=f"desktop-approver {self.name} heartbeats", connect_timeout=2,
            max_reconnect_attempts=1, reconnect_time_wait=0.25, error_cb=self._error,
            reconnected_cb=self._beats_lost, disconnected_cb=self._beats_lost), 5)
        self.nc_alive.options["max_reconnect_attempts"] = -1
        await self.nc_alive.subscribe(f"{names.ALIVE_ROOT}.>", cb=self._heartbeat)
        self._app(self.ready.set)

    async def _set_up(self) -> list[str]:
        """The decision bucket, each agent user's stream and our consumer of it, each created when
        missing (idempotent: what is there is used as it is); what had to be created, by name.

        A user's stream is made when its first agent asks (:meth:`_join`): the server's permissions
        say which users exist, and an approver learns of them from them."""
        from nats.js import api
        from nats.js.errors import BadRequestError, NotFoundError

        js = self.nc.jetstream(timeout=5)
        created: list[str] = []
        await self._retire_shared_stream(js)
        try:
            await js.stream_info(names.KV_STREAM)
        except NotFoundError:
            created.append(f"the decision bucket {names.BUCKET}")
        try:
            self.kv = await js.create_key_value(api.KeyValueConfig(
                bucket=names.BUCKET, history=1, storage=api.StorageType.FILE, ttl=names.RETENTION_SECONDS,
                direct=True, max_bytes=BUCKET_MAX_BYTES))
        except BadRequestError as exc:
            log.warning("relay: using the bucket %s as it is: %s", names.BUCKET, exc)
            self.kv = await js.key_value(names.BUCKET)
        for user in sorted(set(self._streams) | await self._users_on_server(js)):
            created += await self._set_up_user(js, user)
        return created

    async def _users_on_server(self, js: Any) -> set[str]:
        """The agent users whose streams the server has (every page of the stream list)."""
        users: set[str] = set()
        offset = 0
        while True:
            page = await js.streams_info(offset)
            users.update(user for info in page if (user := names.user_of_stream(info.config.name)) is not None)
            if not page:
                return users
            offset += len(page)

    async def _retire_shared_stream(self, js: Any) -> None:
        """The one stream all users shared (before each had its own) overlaps every user's: removed,
        and said (what it held is gone: its agents are denied at their deadline)."""
        from nats.js.errors import NotFoundError

        try:
            info = await js.stream_info(names.STREAM)
        except NotFoundError:
            return
        await js.delete_stream(names.STREAM)
        text = (f"the shared request stream {names.STREAM} ({info.state.messages} messages) is replaced by one "
                "stream per agent user; requests it held are gone (their agents are denied at their deadline)")
        log.warning("relay: %s", text)
        self._app(self._event, "store_replaced", text)

    async def _set_up_user(self, js: Any, user: str) -> list[str]:
        """``user``'s stream with its own limits, our consumer of it, and a reader; what was created."""
        from nats.js import api
        from nats.js.errors import BadRequestError, NotFoundError

        stream_name, subjects = names.stream_of(user), f"{names.SUBJECT_ROOT}.{user}.>"
        created: list[str] = []
        try:
            await js.stream_info(stream_name)
        except NotFoundError:
            created.append(f"the stream {stream_name}")
        # Full, it refuses what comes (the publisher hears it at once), never drops what it holds. Its
        # limits are this user's alone: another user's flood never touches it.
        stream = api.StreamConfig(
            name=stream_name, subjects=[subjects], storage=api.StorageType.FILE, max_age=names.RETENTION_SECONDS,
            duplicate_window=120.0, max_bytes=STREAM_MAX_BYTES, max_msgs=STREAM_MAX_MSGS,
            max_msg_size=MAX_ENVELOPE_BYTES, discard=api.DiscardPolicy.NEW, allow_msg_ttl=True)
        try:
            await js.add_stream(stream)
        except BadRequestError as exc:  # there already, set up otherwise (an operator's, other limits)
            try:
                await js.update_stream(stream)
                log.info("relay: the stream %s is set up anew: %s", stream_name, exc)
            except BadRequestError as refused:
                log.warning("relay: using the stream %s as it is: %s", stream_name, refused)
        try:
            await js.consumer_info(stream_name, self.durable)
        except NotFoundError:
            created.append(f"this app's consumer {self.durable} of {stream_name}")
            # A new consumer starts from what is still pending: what was answered before this app
            # joined is not its business (not asked, not recorded), and is passed over unread.
            self._answered_before[user] = await self._decided_keys(user)
            await js.add_consumer(stream_name, api.ConsumerConfig(
                name=self.durable, durable_name=self.durable, filter_subject=subjects,
                ack_wait=self.ack_wait, deliver_policy=api.DeliverPolicy.ALL, max_ack_pending=MAX_ACK_PENDING,
                inactive_threshold=names.RETENTION_SECONDS))
        old = self._streams.get(user)
        if old is not None:
            with contextlib.suppress(Exception):
                await old.unsubscribe()
        self._streams[user] = await js.pull_subscribe_bind(durable=self.durable, stream=stream_name)
        if user not in self._readers or self._readers[user].done():
            self._readers[user] = asyncio.get_running_loop().create_task(self._read_user(user))
        return created

    async def _decided_keys(self, user: str) -> set[str]:
        """The keys of ``user``'s answers in the bucket now (one ordered read of its keys)."""
        keys: set[str] = set()
        try:
            watcher = await self.kv.watch(f"{user}.>", ignore_deletes=True, meta_only=True)
        except Exception as exc:  # noqa: BLE001 - none known: each is then looked up as it comes
            log.debug("relay: the answered keys of %s cannot be listed: %r", user, exc)
            return keys
        try:
            async for entry in watcher:
                if entry is None:
                    break
                keys.add(entry.key)
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()
        return keys

    async def _join(self, user: str) -> None:
        """An agent of ``user`` said it is there and no stream of its user exists here yet: made now,
        so its request can be stored (it publishes again)."""
        if user in self._streams or user in self._joining or self.nc is None:
            return
        self._joining.add(user)
        try:
            created = await self._set_up_user(self.nc.jetstream(timeout=5), user)
            if created:
                log.info("relay: set up %s for NATS user %s", ", ".join(created), user)
        except Exception as exc:  # noqa: BLE001 - its agent asks again, and is refused at its deadline
            log.warning("relay: cannot set up the stream of NATS user %s: %s", user, _reason(exc))
        finally:
            self._joining.discard(user)

    async def _measure_clock(self) -> None:
        """How far our clock is from the server's (the stream info's ``ts``): deadlines are then
        counted on the server's clock, so a desktop whose clock is off neither expires every request
        at once nor keeps one too long. Unmeasured (an older server): our own clock is used."""
        self._clock_mark = (time.time(), time.monotonic())
        before = time.time()
        try:
            reply = await self.nc.request(f"$JS.API.STREAM.INFO.{names.KV_STREAM}", b"", timeout=5)
            server = _server_time(json.loads(reply.data).get("ts"))
        except Exception as exc:  # noqa: BLE001 - an answer we cannot read: our own clock it is
            log.debug("relay: the server's time is unknown: %r", exc)
            return
        after = time.time()
        if server is None:
            return
        self.clock_offset = server - (before + after) / 2
        self._clock_mark = (after, time.monotonic())
        told, self._told_offset = self._told_offset, self.clock_offset
        if abs(self.clock_offset) > names.CLOCK_TOLERANCE and abs(self.clock_offset - told) > CLOCK_JUMP:
            text = (f"this desktop's clock is {abs(self.clock_offset):.0f} s "
                    f"{'ahead of' if self.clock_offset < 0 else 'behind'} the NATS server's at {self.address.shown}: "
                    "relayed deadlines are counted on the server's clock")
            log.warning("relay: %s", text)
            self._app(self._event, "clock", text)

    def _clock_stale(self) -> bool:
        """Whether the measured offset may no longer hold: never measured since a (re)connect, measured
        a while ago, or our wall clock jumped since (stepped by NTP, a suspend, a person)."""
        if self._clock_mark is None:
            return True
        wall, monotonic = self._clock_mark
        since = time.monotonic() - monotonic
        return since > CLOCK_MEASURE_EVERY or abs((time.time() - wall) - since) > CLOCK_JUMP

    async def _read_requests(self) -> None:
        """While the app runs: the store set up again after a reconnect or a failed read, the server's
        clock measured again when stale; each user's stream is read by a task of its own
        (:meth:`_read_user`)."""
        while not self.closing:
            if self._check_store:
                await self._restore(self._store_why)
                continue
            if self._clock_stale():
                await self._measure_clock()
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    async def _read_user(self, user: str) -> None:
        """``user``'s requests, in batches, through our consumer of its stream."""
        import nats

        while not self.closing:
            subscription = self._streams.get(user)
            if subscription is None or self._check_store:
                await asyncio.sleep(RECONNECT_WAIT / 4)
                continue
            try:
                batch = await subscription.fetch(256, timeout=1.0)
            except nats.errors.TimeoutError:
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server's or ours: reading goes on
                log.debug("relay: fetch of %s failed (%r); again", user, exc)
                self._store_why = f"reading the stream of {user} failed ({_reason(exc)})"
                self._check_store = True
                self._wake.set()
                await asyncio.sleep(RECONNECT_WAIT / 4)
                continue
            if self._clock_stale():  # before the batch's deadlines are judged
                await self._measure_clock()
            keys = [_key_of(msg) for msg in batch]
            if len(set(keys)) == len(keys):  # no two about one request (a cancel after its request): at once
                await asyncio.gather(*(self._take_safely(msg) for msg in batch))
            else:
                for msg in batch:
                    await self._take_safely(msg)

    async def _restore(self, why: str) -> None:
        """After a reconnect or a failed read: set up again what the server no longer has (a server
        started on an empty store, a stream deleted), and tell the person; no restart needed."""
        self._check_store = False
        self._store_why = "after a reconnect"
        try:
            created = await self._set_up()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the server away, or refusing: said, and tried again
            problem = f"cannot set the relay up on {self.address.shown} {why}: {_reason(exc)}{self._flood_note()}"
            if problem != self.problem:
                log.warning("relay: %s; trying again", problem)
                self._app(self._set_problem, problem)
            self._check_store = True
            await asyncio.sleep(RECONNECT_WAIT)
            return
        if created:
            text = (f"the NATS server at {self.address.shown} had lost {', '.join(created)} ({why}): set up "
                    "again; requests and decisions it held are gone (their agents are denied at their deadline)")
            log.warning("relay: %s", text)
            self._app(self._event, "store_lost", text)
            self._app(self._set_problem, None)
        elif self.problem is not None and self.problem.startswith("cannot set the relay up"):
            self._app(self._set_problem, None)

    async def _take_safely(self, msg: Any) -> None:
        try:
            await self._take(msg)
        except Exception:  # one bad message never stops the others
            log.exception("relay: handling %s failed", printable(msg.subject, 120))
            with contextlib.suppress(Exception):
                await msg.term()

    async def _stop_reading(self) -> None:
        for task in [self._runner, *self._readers.values()]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _disconnect(self) -> None:
        for connection in (self.nc_alive, self.nc):
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()
        self.nc = self.nc_alive = None

    async def _beats_lost(self) -> None:
        """The heartbeats' connection was cut or is back: what it missed is no agent's silence."""
        self._app(self._probed, 0.0, False)

    # -- the NATS loop: one message from the stream ----------------------------------------------------

    async def _take(self, msg: Any) -> None:
        user = names.user_of_subject(msg.subject)
        if user is None:
            self._app(self._refuse, "relay_subject", f"a message on {msg.subject!r}, not approver.req.<user>.<agent>")
            await self._drop(msg)
            return
        if len(msg.data) > MAX_ENVELOPE_BYTES:  # not even read: a server may take far more than we do
            self._app(self._refuse, "line_too_long", f"from NATS user {user}: an envelope of {len(msg.data)} bytes, "
                                                     f"over the limit of {MAX_ENVELOPE_BYTES}")
            await self._drop(msg)
            return
        try:
            envelope = names.decode_envelope(msg.data)
        except names.EnvelopeError as exc:
            self._app(self._refuse, "relay_envelope", f"from NATS user {user}: {exc}")
            await self._drop(msg)
            return
        unique, message = envelope["id"], envelope["message"]
        kind, key = message.get("type"), names.decision_key(user, unique)
        size = len(_line(message))
        if message.get("id") != unique:
            self._app(self._refuse, "relay_envelope", f"from NATS user {user}: the message's id is not the "
                                                      "envelope's", unique)
            await self._drop(msg)
        elif size > wire.MAX_LINE_BYTES:  # as the socket refuses a line over the limit; the agent is told at once
            text = f"message of {size} bytes exceeds the limit of {wire.MAX_LINE_BYTES}"
            self._app(self._refuse, "line_too_long", f"from NATS user {user}: {text}", unique)
            if kind in names.ASKING and self._refusal_allowed(user) and await self._decision(key) is None:
                await self._write(key, _error_reply(unique, kind, "line_too_long", text), None)
                await self._drop(msg)
            else:
                await self._drop(msg)
        elif kind == "cancel":
            self._app(self._withdraw, key, "cancel")
            await msg.ack()
        elif kind in ("request", "batch") and key in self._answered_before.get(user, ()):
            await msg.ack()  # answered before this app joined: not pending, not its business
        elif kind in ("request", "batch"):
            existing = await self._decision(key)
            action, reply = await self._app_result(self._ask, msg, user, envelope, key, existing, _stored_at(msg))
            if action == "term":
                await self._drop(msg)
            elif action == "write":
                assert reply is not None
                if self._refusal_allowed(user):
                    await self._write(key, reply, None)
                # Past the limit of refusals a minute (a flood) its agent waits until its deadline (a deny)
                # rather than fill the bucket; either way the refused request holds none of its quota.
                await self._drop(msg)
            elif action == "expire":
                assert reply is not None
                claim = await self._claim(key, reply, None, time.time() + 60.0, ttl=REFUSAL_TTL,
                                          request_bytes=msg.data)
                self._app(self._expired, key, claim)
                await self._drop(msg)
            elif action == "ack":
                await msg.ack()
        elif kind in ("notice", "end_session"):
            self._app(self._tell, user, envelope)
            await msg.ack()
        else:
            self._app(self._refuse, "relay_type", f"from NATS user {user}: {printable(str(kind), 40)} is not "
                                                  "relayed", unique)
            await self._drop(msg)

    async def _drop(self, msg: Any) -> None:
        """A refused or expired request: acknowledged as done for good, and removed from its user's
        stream, so it holds none of that user's quota (every approver refuses it alike, and its
        answer, if any, is in the bucket)."""
        with contextlib.suppress(Exception):
            await msg.term()
        try:
            metadata = msg.metadata
            await self.nc.jetstream(timeout=5).delete_msg(metadata.stream, metadata.sequence.stream)
        except Exception as exc:  # noqa: BLE001 - removed already (by another approver), or the server away: its TTL will
            log.debug("relay: removing %s failed: %r", printable(msg.subject, 120), exc)

    def _refusal_allowed(self, user: str) -> bool:
        """Whether one more refusal of ``user`` is written to the shared bucket this minute: a user that
        floods the stream with requests refused at once must not fill the bucket every approver's
        answers go to. Past the limit the log says so, once a minute (each refusal is audited anyway)."""
        now = time.monotonic()
        start, written, unwritten = self._refusals.get(user, (now, 0, 0))
        if now - start > 60.0:
            start, written, unwritten = now, 0, 0
        allowed = written < REFUSALS_PER_MINUTE
        if not allowed and not unwritten:
            self._app(self._event, "refusals_unwritten", f"NATS user {user}: more than {REFUSALS_PER_MINUTE} "
                                                          "refusals this minute: the rest are not written to the "
                                                          "bucket; their agents are denied at their deadline")
        self._refusals[user] = (start, written + allowed, unwritten + (not allowed))
        return allowed

    async def _write(self, key: str, reply: dict[str, Any], request: RelayedRequest | None) -> None:
        """Write an answer nothing recorded as a decision here (a refusal, an error), then ack. A
        refusal written for a request nobody opened is kept only :data:`REFUSAL_TTL` in the bucket."""
        stop = (request.deadline if request is not None else time.time()) + 60.0
        try:
            claim = await self._claim(key, reply, request.sequence if request is not None else None, stop,
                                      ttl=REFUSAL_TTL if request is None else _answer_ttl(request.deadline),
                                      request_bytes=request.msg.data if request is not None else None)
            if claim.theirs is not None:
                self._app(self._answered_elsewhere, key, claim.theirs)
            elif claim.failure is not None:
                self._app(self._event, "unwritten", f"{key}: {claim.failure}")
            if request is not None:
                with contextlib.suppress(Exception):
                    await request.msg.ack()
        finally:
            if request is not None:
                self._app(self._forget, request)

    async def _claim(self, key: str, reply: dict[str, Any], sequence: int | None, stop: float,
                     deadline: float | None = None, ttl: float | None = None, *,
                     request_bytes: bytes | None = None) -> Claim:
        """Create the decision's key (exactly once, whoever writes); retried through a reconnect until
        ``stop``. What the server can never take (too large, refused) is not retried: a refusal is
        stored in its place, so the agent hears at once. Past the request's ``deadline`` the agent has
        denied it by ``timeout`` itself: an allow not yet written is then written as that deny."""
        import nats
        from nats.js.errors import APIError, KeyWrongLastSequenceError, ServerError, ServiceUnavailableError

        def signed(value: dict[str, Any]) -> dict[str, Any]:
            return value if self.address.seed is None else signing.sign(self.address.seed, key, value)

        value = signed({"relay": names.RELAY_VERSION, "approver": self.name, "instance": self.instance,
                        "reply": reply, "seq": sequence,
                        # the bytes read (and shown): an allow answers exactly that request (signing.py)
                        **({signing.REQUEST: signing.request_digest(request_bytes)} if request_bytes is not None
                           else {})})
        instead: str | None = None
        timed_out = False

        async def won() -> Claim:
            return Claim(won=True, failure=instead, timed_out=timed_out or await self._late(key, value, deadline))

        while True:
            if deadline is not None and not timed_out and time.time() > deadline and _allows(reply):
                timed_out = True
                reply = _timed_out(reply)
                value = signed({**value, "reply": reply})
            try:
                try:
                    await self.kv.create(key, names.encode(value), msg_ttl=ttl)
                    log.debug("relay: %s decided here", key)
                    if self.problem is not None:  # we can write again: whatever kept us from it is over
                        self._app(self._set_problem, None)
                    return await won()
                except KeyWrongLastSequenceError:
                    stored = await self._entry(key)
                    if stored is None:
                        continue  # gone again (its age passed): ours may still be written
                    existing, revision = stored
                    if existing is None:  # no decision for this request stands there: ours replaces it
                        try:
                            await self.kv.update(key, names.encode(value), last=revision)
                        except KeyWrongLastSequenceError:
                            continue  # written again meanwhile: look again
                        return await won()
                    if self._ours(existing):  # ours, from a try whose reply was lost
                        return await won()
                    return Claim(won=False, theirs=existing)
            except (nats.errors.MaxPayloadError, nats.errors.BadSubjectError, APIError) as exc:
                if isinstance(exc, APIError) and ttl is not None and "ttl" in str(exc.description or "").lower():
                    ttl = None  # a bucket made without per-message TTLs: kept as long as any answer
                    continue
                if isinstance(exc, APIError) and "maximum bytes exceeded" in str(exc.description or ""):
                    self._app(self._set_problem, f"the decision bucket {names.BUCKET} on {self.address.shown} is "
                                                 "full: answers cannot be written (agents are denied at their "
                                                 "deadline) until old ones age out or the bucket is made larger")
                if isinstance(exc, (ServiceUnavailableError, ServerError)) and time.time() <= stop:
                    await asyncio.sleep(RECONNECT_WAIT / 4)
                    continue
                why = f"the NATS server cannot store the answer ({len(names.encode(value))} bytes): {_reason(exc)}"
                if instead is not None or reply.get("type") == "error":
                    return Claim(won=False, failure=why)
                instead = f"this app's answer was not delivered: {why}; the agent was refused instead"
                refused = _error_reply(str(reply.get("id")), _kind_of(reply), "internal",
                                       f"desktop-approver could not deliver its answer: {why}")
                value = signed({**value, "reply": refused})
            except (TimeoutError, nats.errors.Error, OSError) as exc:
                if time.time() > stop:
                    log.error("relay: the decision for %s could not be written: %s", key, exc)
                    return Claim(won=False, failure=f"not stored on the NATS server before the deadline: "
                                                    f"{_reason(exc)}")
                await asyncio.sleep(RECONNECT_WAIT / 4)

    async def _late(self, key: str, value: dict[str, Any], deadline: float | None) -> bool:
        """Whether our allow on ``key`` was stored after the request's ``deadline`` (our clock) by the
        server's stamp: the agent had denied it by ``timeout`` then, and ignores it."""
        if deadline is None or time.time() <= deadline or not _allows(cast("dict[str, Any]", value["reply"])):
            return False
        try:
            stored = await self.nc.request(f"$JS.API.DIRECT.GET.{names.KV_STREAM}.{names.KV_SUBJECT_ROOT}.{key}",
                                           b"", timeout=5)
            stamp = _server_time((stored.headers or {}).get("Nats-Time-Stamp"))
        except Exception as exc:  # noqa: BLE001 - unknown when it landed: past the deadline, it is no allow
            log.debug("relay: when %s was stored is unknown: %r", key, exc)
            return True
        return stamp is None or stamp > deadline + self.clock_offset

    async def _acked(self, request: RelayedRequest) -> None:
        """Settled already (written before it was recorded): only acknowledged now."""
        try:
            with contextlib.suppress(Exception):
                await request.msg.ack()
        finally:
            self._app(self._forget, request)

    async def _decision(self, key: str) -> dict[str, Any] | None:
        """The decision stored on ``key`` (None: none, or nothing that answers its request)."""
        entry = await self._entry(key)
        return entry[0] if entry is not None else None

    async def _entry(self, key: str) -> tuple[dict[str, Any] | None, int] | None:
        """What the bucket stored on ``key``: (the decision, its revision), the decision None when the
        value is none for this key's request (refused and audited); None when nothing is stored."""
        from nats.js.errors import KeyNotFoundError

        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        try:
            value = names.decision_for(entry.value or b"", names.unique_of_key(key))
            if self.address.approvers:  # paired: an answer no paired approver signed is none (ours replaces it)
                signing.check(key, value, self.address.approvers)
            return value, int(entry.revision or 0)
        except ValueError as exc:
            self._app(self._refuse, "relay_decision", f"the value stored on {key} is no decision for it: {exc}",
                      names.unique_of_key(key))
            return None, int(entry.revision or 0)

    async def _decision_seen(self, msg: Any) -> None:
        """A put to a key, as published: only a sign. What counts is what the bucket stored (a put it
        refused, another approver's that lost the race, is published all the same), read back."""
        try:
            claimed = names.decode_decision(msg.data)
        except ValueError:
            claimed = {}
        if self._ours(claimed):  # ours: we know what we wrote
            return
        key = msg.subject.removeprefix(f"{names.KV_SUBJECT_ROOT}.")
        for pause in STORED_PAUSES:
            try:
                stored = await self._entry(key)
            except Exception as exc:  # the server away: the request's own checks read it again later
                log.debug("relay: reading back %s failed: %r", key, exc)
                return
            if stored is not None:  # a decision, or something refused (and audited) as none
                value = stored[0]
                if value is not None and not self._ours(value):
                    self._app(self._seen_elsewhere, key, value)
                return
            await asyncio.sleep(pause)

    def _ours(self, value: dict[str, Any]) -> bool:
        """Whether this app wrote the stored answer ``value`` (by its instance id: another app may
        share its name, the default ``<user>@<host>`` on two machines of one name)."""
        return value.get("instance") == self.instance

    async def _heartbeat(self, msg: Any) -> None:
        user = names.user_of_subject(msg.subject, names.ALIVE_ROOT)
        if user is None:
            return
        if len(msg.data) > names.MAX_HEARTBEAT_BYTES or not self._beat_allowed(user):
            self._beat_dropped(user)  # counted before anything is read: a flood costs little, and its user alone
            return
        try:
            beat = names.load_json(msg.data)
            ids = beat.get("ids", [])
        except (ValueError, AttributeError, RecursionError):
            return
        if user not in self._streams:  # its first agent: its stream is made (the server vouches for the user)
            await self._join(user)
        elif beat.get("join") is True and time.monotonic() - self._join_checked > 1.0:
            # We read its stream, and its agent found none: deleted under us. Set up again (at most once a second).
            self._join_checked = time.monotonic()
            self._store_why = f"an agent of NATS user {user} found no stream"
            self._check_store = True
            self._wake.set()
        if beat.get("full") is True and user not in self.full_users:  # checked on the server, never taken on trust
            now = time.monotonic()
            if now - self._quota_checked.get(user, -QUOTA_CHECK_EVERY) >= QUOTA_CHECK_EVERY:
                self._quota_checked[user] = now  # a flood of such heartbeats costs the server one look per user
                await self._check_quota(user)
        if isinstance(ids, list):  # only what could be a request's id: a heartbeat is no way in
            self._app(self._alive, [names.decision_key(user, unique) for unique in ids if names.is_token(unique)])

    def _beat_allowed(self, user: str) -> bool:
        """Whether ``user`` may send this heartbeat (a token bucket: :data:`HEARTBEATS_PER_SECOND`,
        :data:`HEARTBEAT_BURST`)."""
        now = time.monotonic()
        tokens, counted = self._beat_budget.get(user, (HEARTBEAT_BURST, now))
        tokens = min(HEARTBEAT_BURST, tokens + (now - counted) * HEARTBEATS_PER_SECOND)
        allowed = tokens >= 1.0
        self._beat_budget[user] = (tokens - 1.0 if allowed else tokens, now)
        return allowed

    def _beat_dropped(self, user: str) -> None:
        """One of ``user``'s heartbeats was dropped: counted, and the person told which user floods
        (at most every :data:`FLOOD_TELL_EVERY` seconds)."""
        now = time.monotonic()
        self._last_drop[user] = now
        dropped, told = self._beats_dropped.get(user, (0, -FLOOD_TELL_EVERY))
        if now - told >= FLOOD_TELL_EVERY:
            self._beats_dropped[user] = (0, now)
            self._app(self._flood, user, dropped + 1)
        else:
            self._beats_dropped[user] = (dropped + 1, told)

    def _flood(self, user: str, dropped: int) -> None:
        text = (f"NATS user {user} floods the relay with heartbeats: {dropped} dropped unread since last said "
                f"(more than {HEARTBEATS_PER_SECOND:g} a second, or larger than "
                f"{names.MAX_HEARTBEAT_BYTES // 1024} KiB); other users are served")
        self.flooding.add(user)
        log.warning("relay: %s", text)
        self._event("heartbeat_flood", text)
        self._set_problem(text, f"{PROBLEM} heartbeats {user}")

    def _flood_ended(self, now: float) -> None:
        for user in list(self.flooding):
            if now - self._last_drop.get(user, now) > FLOOD_QUIET:
                self.flooding.discard(user)
                text = f"NATS user {user} no longer floods the relay with heartbeats"
                log.info("relay: %s", text)
                self._event("heartbeat_flood", text)
                self._set_problem(None, f"{PROBLEM} heartbeats {user}")

    def _flood_note(self) -> str:
        """Who floods the relay now, said beside a failure that the flood may cause (the NATS loop's)."""
        now = time.monotonic()
        users = sorted(user for user, at in list(self._last_drop.items()) if now - at <= FLOOD_QUIET)
        return f" (while NATS user {', '.join(users)} floods the relay with heartbeats)" if users else ""

    async def _check_quota(self, user: str) -> None:
        """Whether ``user``'s stream is at its limits, read from the server: the person is told which
        user is refused (the log, the audit log, the app's health), and when it is not any more."""
        try:
            info = await self.nc.jetstream(timeout=5).stream_info(names.stream_of(user))
        except Exception as exc:  # noqa: BLE001 - unknown now: asked again at the next sign
            log.debug("relay: the stream of %s cannot be read: %r", user, exc)
            return
        config, state = info.config, info.state
        full = ((config.max_msgs or -1) > 0 and state.messages >= config.max_msgs - 1) or (
            (config.max_bytes or -1) > 0 and state.bytes >= config.max_bytes - MAX_ENVELOPE_BYTES)
        self._app(self._quota, user, full, f"{state.messages} requests, {state.bytes} bytes")

    def _quota(self, user: str, full: bool, held: str) -> None:
        what = f"{PROBLEM} user {user}"
        if full and user not in self.full_users:
            self.full_users.add(user)
            text = (f"NATS user {user} is at its quota ({held} waiting on the server): its new requests are refused "
                    "until some are answered or expire; other users are not affected")
            log.warning("relay: %s", text)
            self._event("quota", text)
            self._set_problem(text, what)
        elif not full and user in self.full_users:
            self.full_users.discard(user)
            self._event("quota", f"NATS user {user} is below its quota again ({held})")
            self._set_problem(None, what)

    async def _in_progress(self, messages: list[Any]) -> None:
        for msg in messages:
            with contextlib.suppress(Exception):
                await msg.in_progress()

    async def _error(self, error: Exception) -> None:
        from nats.errors import SlowConsumerError

        if isinstance(error, SlowConsumerError):  # a message dropped on our side, unread
            user = names.user_of_subject(error.subject, names.ALIVE_ROOT)
            if user is not None:  # a heartbeat: its user's count; lost beats are no silence (see _probe)
                self._app(self._probed, 0.0, False)
                self._beat_dropped(user)
                return
        log.warning("relay: NATS: %s%s", error, self._flood_note())
        text = _reason(error)
        if "permissions violation" in text.lower():  # our answers or reads would fail: the person must know
            self._app(self._set_problem, f"the NATS server at {self.address.shown} refuses {self.address.user} "
                                         f"something the relay needs: {text}")

    async def _reconnected(self) -> None:
        self.connected_at = time.monotonic()
        self._check_store = True  # a server restarted on an empty store has nothing of ours
        self._clock_mark = None  # another server, maybe: its clock is measured again
        log.info("relay: reconnected to %s", self.address.shown)
        self._app(self._outage_over)

    async def _disconnected(self) -> None:
        if not self.closing:
            log.info("relay: disconnected from %s", self.address.shown)
            if self.ready.is_set():  # before that, the connect loop says what keeps it from connecting
                self._app(self._set_problem, self.outage)

    @property
    def outage(self) -> str:
        """What the person is told while the server is out of reach (the tray shows it, ``status`` too)."""
        return (f"the NATS server at {self.address.shown} is out of reach: relayed agents can neither ask nor be "
                "answered until it is back (trying again)")

    def _outage_over(self) -> None:
        if self.problem == self.outage:  # another problem (set up, bucket full) is cleared by its own cure
            self._set_problem(None)

    # -- the app's loop: requests through the core ----------------------------------------------------

    def _ask(self, msg: Any, user: str, envelope: dict[str, Any], key: str,
             existing: dict[str, Any] | None, stored_at: float | None = None) -> Action:
        sequence = msg.metadata.sequence.stream
        mine = self.requests.get(key)
        if mine is not None:
            if mine.sequence == sequence:  # a redelivery of what we have open: answered when decided
                mine.msg = msg  # acked through the latest (a consumer made anew delivers it again)
                return ("open", None)
            self._refuse("replayed_id", f"from NATS user {user}: request id {envelope['id']} again "
                                        f"(stream sequence {sequence}, first {mine.sequence})", envelope["id"])
            return ("term", None)
        if existing is not None and existing.get("seq") not in (None, sequence):
            self._refuse("replayed_id", f"from NATS user {user}: request id {envelope['id']} was already "
                                        f"decided (stream sequence {existing.get('seq')})", envelope["id"])
            return ("term", None)
        if existing is not None:
            return self._decided_before(user, envelope, key, existing)
        if self._left_unsettled(key):  # what stands is recorded by _settle_unsettled: nobody asked, nothing twice
            return ("ack", None)
        message = dict(envelope["message"])
        now = time.time() + self.clock_offset  # the server's time: its stream's stamps are on that clock
        skewed = names.deadline_problem(envelope["deadline"], stored_at, now)
        if existing is None and skewed is not None:
            self._refuse("clock_skew", f"from NATS user {user}: request {envelope['id']}: {skewed}", envelope["id"])
            return ("write", _error_reply(envelope["id"], message.get("type"), "clock_skew",
                                          f"desktop-approver refused the request: {skewed}"))
        # Our own clock bounds it too: never longer than the request's own timeout (with the pause
        # allowance) from when we got it, nor than the longest wait, whatever the agent's clock says.
        deadline = min(envelope["deadline"], now + float(message["timeout"]) * names.DEADLINE_FACTOR,
                       now + names.MAX_WAIT)
        left = deadline - now
        if existing is None and left <= 0:
            return self._expire(user, envelope, key, _late_note(envelope["deadline"], stored_at))
        crowded = self._crowded(user, message, len(msg.data))
        if crowded is not None:
            self._refuse("too_many_pending", f"from NATS user {user}: request {envelope['id']}: {crowded}",
                         envelope["id"], user)
            return ("write", _error_reply(envelope["id"], message.get("type"), "too_many_pending", crowded))
        opened: list[RelayedRequest] = []  # the request the connection's answer belongs to, once made
        connection = self._connection(user, envelope, lambda payload: self._answer(opened[0], payload))
        if connection is None:
            return ("write", _error_reply(envelope["id"], message.get("type"), "invalid_message",
                                          "the client information is not valid"))
        if left > 0:  # the person's pause allowance included, it ends by the deadline
            message["timeout"] = min(float(message["timeout"]), left / (1 + PAUSE_ALLOWANCE))
        request = RelayedRequest(key=key, user=user, unique=envelope["id"], sequence=sequence, msg=msg,
                                 connection=connection, deadline=deadline - self.clock_offset, size=len(msg.data),
                                 calls=len(message.get("calls") or ()) if message.get("type") == "batch" else 1,
                                 elsewhere=self.app_loop.create_future(), withdrawn=self.app_loop.create_future())
        opened.append(request)
        if existing is not None:  # answered while we were away: recorded here with that answer, no prompt
            request.elsewhere.set_result(existing)
        self.requests[key] = request
        log.debug("relay: %r from %s", request, user)
        connection.received(_line(message))
        return ("open", None)

    def _left_unsettled(self, key: str) -> bool:
        """Whether an earlier run of this app closed while writing its answer to this request (the
        stream delivers it again): it is not opened again, so the person is not asked twice and
        the log does not record two answers; :meth:`_settle_unsettled` records the one that stands."""
        if self._unsettled_keys is None:
            try:
                self._unsettled_keys = {str(entry.get("key")) for entry in self.broker.audit.unsettled()}
            except Exception:  # the log's health signal tells the person; the request is opened as new
                log.exception("relay: cannot read what an earlier run left unsettled")
                return False
        return key in self._unsettled_keys

    def _decided_before(self, user: str, envelope: dict[str, Any], key: str, existing: dict[str, Any]) -> Action:
        """A request answered before this app read it (by another approver while we were away, or
        read again: a consumer made anew reads the whole stream): nobody is asked, nothing goes into
        session memory (it may have ended since), and it is recorded at most once in this log."""
        reply = existing.get("reply")
        if isinstance(reply, dict) and reply.get("type") == "error":  # a refusal: audited when it was made
            return ("ack", None)
        try:
            left = envelope["id"] in getattr(self.broker.audit, "relayed_left", {})  # our rows, left by a crash
            if not left and self.broker.audit.has_request(envelope["id"], f"{user}/"):
                return ("ack", None)
        except Exception:  # the log's health signal tells the person; not recorded twice, at worst not at all
            log.exception("relay: the audit log could not be read for %s", key)
            return ("ack", None)
        read = self._read_unasked(user, envelope)
        if read is None:
            return ("term", None)
        connection, message, infos = read
        verdicts = [replace(_verdict_of(existing, info.index), risk=info.risk_report()) for info in infos]
        if not self._ours(existing):
            self._answered_elsewhere(key, existing)
        try:
            self.broker.audit.record_answered(connection.identity, message.session or
                                              f"{connection.identity.label}-relay", message.id, infos, verdicts)
        except Exception:  # the log's health signal tells the person
            log.exception("relay: the audit log could not record %s", key)
        return ("ack", None)

    def _read_unasked(self, user: str, envelope: dict[str, Any]
                      ) -> tuple[Connection, models.Asking, list[CallInfo]] | None:
        """A request recorded without asking anyone (decided before, or past its deadline): its
        connection, message and calls; None (refused, as on the socket) when it does not read."""
        connection = self._connection(user, envelope, lambda payload: None)
        checked = decode(_line(envelope["message"]))
        if connection is None or isinstance(checked, Refusal):
            if isinstance(checked, Refusal) and connection is not None:
                connection.refuse(checked)
            return None
        message = cast("models.Asking", checked)
        return connection, message, _infos_of(message)

    def _crowded(self, user: str, message: dict[str, Any], size: int) -> str | None:
        """Why one more request of ``user`` may not wait for the person (its calls or bytes already
        waiting here are at the limits), or None."""
        calls = len(message.get("calls") or ()) if message.get("type") == "batch" else 1
        waiting = [request for request in self.requests.values() if request.user == user and not request.answered]
        held_calls = sum(request.calls for request in waiting)
        held_bytes = sum(request.size for request in waiting)
        if held_calls + calls > self.max_pending:
            return (f"NATS user {user} already has {held_calls} calls waiting for the person; {calls} more would "
                    f"pass the limit of {self.max_pending}")
        if held_bytes + size > self.max_pending_bytes:
            return (f"NATS user {user} already has {held_bytes} bytes of requests waiting for the person; "
                    f"{size} more would pass the limit of {self.max_pending_bytes}")
        return None

    def _connection(self, user: str, envelope: dict[str, Any], send: Callable[[bytes], None]) -> Connection | None:
        """A core connection for one relayed message, with the remote identity; None if the hello is refused."""
        hello = decode(_line({"v": envelope["message"].get("v", 1), "type": "hello",
                              "client": envelope.get("client", {})}))
        if isinstance(hello, Refusal) or not isinstance(hello, models.Hello):
            reason = hello.message if isinstance(hello, Refusal) else "not a hello"
            self._refuse("relay_envelope", f"from NATS user {user}: its client information: {reason}",
                         envelope["id"])
            return None
        connection = Connection(self.context, PeerCredentials(None, NO_UID, None), send, lambda: None)
        info = hello.client
        connection.identity = Identity(agent=f"{user}/{info.agent or 'agent'}", pid=info.pid, cwd=info.cwd,
                                       host=info.host, git_branch=info.git_branch, relay_user=user)
        connection.pending_key = ("nats", user, info.agent or "agent")  # each agent of each user: its own limit
        connection.pending_owner = f"NATS user {user}'s agent {printable(info.agent or 'agent', 64)!r}"
        return connection

    def _answer(self, request: RelayedRequest, payload: bytes) -> None:
        """The connection's answer (decision, batch_decision or error): written, once."""
        if request.answered or request.connection.closed:
            return
        request.answered = True
        if self.closing and request.claim is None:  # not answered here: the stream keeps it for another
            return
        if request.claim is not None:  # settled: the answer that stands is on the server already
            writing = self._nats(self._acked(request))
        else:
            writing = self._nats(self._write(request.key, json.loads(payload), request))
        if writing is not None:
            self._writing.add(writing)
            writing.add_done_callback(lambda done: self._app(self._writing.discard, done))  # in the NATS thread

    def _set_problem(self, problem: str | None, what: str = PROBLEM) -> None:
        """Tell the person what keeps the relay from working (None: it works); ``what``: the relay
        itself, or one user's quota (``relay user <name>``)."""
        if what == PROBLEM:
            self.problem = problem
        if self.on_problem is not None:
            self.on_problem(what, problem)
        elif problem is None:
            self.broker.problems.pop(what, None)
        else:
            self.broker.problems[what] = problem

    # -- settling an answer before the audit log records it (the broker's Settler) ---------------------

    def settles(self, identity: Identity) -> bool:
        return identity.relay_user is not None

    async def settle(self, triage: Triage, verdicts: list[Verdict]) -> list[Verdict]:
        """The answer that stands for a relayed request: ours, written create-only before the audit
        log records it, or the one another approver wrote first. Either way both audit logs record
        the same decision, and this app's own unused answer only as a ``late_answer`` event."""
        user = triage.identity.relay_user
        request = self.requests.get(names.decision_key(user, triage.request_id)) if user else None
        if request is None:
            return verdicts
        if self.closing and not request.elsewhere.done():  # not answered here: nothing is written
            return [replace(verdict, decision="deny", decided_by="cancelled", note=CLOSED, updated_args=None)
                    for verdict in verdicts]
        if request.elsewhere.done():
            claim = Claim(won=False, theirs=request.elsewhere.result())
        else:
            reply = _reply_of(triage.kind, request.unique, verdicts)
            writing = self._nats(self._claim(request.key, reply, request.sequence, request.deadline + 60.0,
                                             request.deadline, ttl=_answer_ttl(request.deadline),
                                             request_bytes=request.msg.data))
            if writing is None:
                claim = Claim(won=False, failure="the relay was closed")
            else:
                self._writing.add(writing)
                writing.add_done_callback(lambda done: self._app(self._writing.discard, done))
                self._settling.add(writing)
                try:
                    claim = await asyncio.wrap_future(writing)
                except asyncio.CancelledError:  # the app closes: ours may be on the wire, and may stand
                    self._unsettled(request, triage, verdicts)
                    raise Unsettled(request.key) from None
                except Exception as exc:  # never an answer recorded that may not stand: the agent was not told
                    log.exception("relay: writing the answer for %s failed", request.key)
                    claim = Claim(won=False, failure=f"writing it failed: {_reason(exc)}")
                finally:  # the broker records and remembers it in this same step, before anything else
                    self._settling.discard(writing)
        request.claim = claim
        return self._standing(request, verdicts, claim)

    def _unsettled(self, request: RelayedRequest, triage: Triage, verdicts: list[Verdict]) -> None:
        """Closing while our answer was being written: no decision is recorded now (it may have been
        stored, and the agent told), only where to read it; the next start records what stands
        (:meth:`_settle_unsettled`)."""
        rows = [info.audit_id for info in triage.infos if info.audit_id is not None]
        try:
            self.broker.audit.record_unsettled("relay", rows, {
                "key": request.key, "deadline": request.deadline, "ours": _summary(verdicts)})
        except Exception:  # the log's health signal tells the person
            log.exception("relay: the audit log could not note %s as unsettled", request.key)
        log.warning("relay: closing while the answer to %s was being written: recorded at the next start", request.key)

    async def _settle_unsettled(self) -> None:
        """What an earlier run left unsettled (it closed while writing its answer): the answer that
        stands is read from the bucket and recorded; with none there once the deadline passed, the
        agent was denied by timeout, and so is the record."""
        try:
            entries = await self._app_result(self.broker.audit.unsettled)
        except Exception:  # noqa: BLE001 - the log's health signal tells the person; the next start tries again
            log.exception("relay: cannot read what an earlier run left unsettled")
            return
        for entry in entries:
            key, rows = str(entry.get("key")), entry["rows"]
            user, _, unique = key.partition(".")
            if not (names.is_token(user) and names.is_token(unique)):
                continue
            while True:
                try:
                    value = await self._decision(key)
                except Exception as exc:  # noqa: BLE001 - the server away: read again
                    log.debug("relay: reading %s failed: %r", key, exc)
                    await asyncio.sleep(RECONNECT_WAIT)
                    continue
                left = float(entry.get("deadline") or 0) - time.time()
                if value is not None or left < 0:
                    break
                await asyncio.sleep(min(left + 1, 60.0))  # ours may still be written by nobody: wait out its deadline
            self._app(self._record_unsettled, key, rows, value)

    async def _settle_abandoned(self) -> None:
        """Relayed calls an earlier run left waiting when it was killed (``AuditLog.relayed_left``):
        each is recorded once, on its own rows, with the answer that stands. Still on the stream, it is
        delivered again and asked again (its rows taken up, :meth:`AuditLog._insert_calls`); answered
        meanwhile by another approver, that answer is recorded; neither within three ack waits (it
        expired on the server), a deny by timeout, which is what its agent got."""
        def left_now() -> dict[str, tuple[str, list[int], float]]:
            return dict(getattr(self.broker.audit, "relayed_left", {}))

        left = await self._app_result(left_now)
        started = time.monotonic()
        while left and not self.closing:
            still = await self._app_result(left_now)
            for request_id in list(left):
                if request_id not in still:  # delivered again and asked here: its rows were taken up
                    del left[request_id]
                    continue
                user = left[request_id][0].partition("/")[0]
                if not (names.is_token(user) and names.is_token(request_id)):
                    del left[request_id]
                    continue
                try:
                    value = await self._decision(names.decision_key(user, request_id))
                except Exception as exc:  # noqa: BLE001 - the server away: read again
                    log.debug("relay: reading %s.%s failed: %r", user, request_id, exc)
                    continue
                if value is not None or time.monotonic() - started > 3 * self.ack_wait:
                    self._app(self._record_abandoned, request_id, value)
                    del left[request_id]
            await asyncio.sleep(RECONNECT_WAIT)

    def _record_abandoned(self, request_id: str, value: dict[str, Any] | None) -> None:
        left = self.broker.audit.relayed_left.pop(request_id, None)
        if left is None:  # taken up meanwhile: recorded where it was asked
            return
        agent, rows, _ = left
        if value is not None:
            verdicts = [_verdict_of(value, index) for index in range(len(rows))]
            if not self._ours(value):
                self._answered_elsewhere(f"{agent.partition('/')[0]}.{request_id}", value)
        else:
            verdicts = [Verdict("deny", "timeout", note="this app stopped while the request waited; it was not "
                                                        "delivered again and no answer was stored: it expired")
                        for _ in rows]
        self._event("settled", f"{agent} {request_id}: left waiting when this app stopped; what stands: "
                               f"{_summary(verdicts)}")
        try:
            self.broker.audit.record_decisions(zip(rows, verdicts, strict=True))
        except Exception:  # the log's health signal tells the person
            log.exception("relay: the audit log could not record what stands for %s", request_id)

    def _record_unsettled(self, key: str, rows: list[int], value: dict[str, Any] | None) -> None:
        if value is not None:
            verdicts = [_verdict_of(value, index) for index in range(len(rows))]
            self._event("settled", f"{key}: left unsettled when this app closed; what stands: {_summary(verdicts)}")
        else:
            verdicts = [Verdict("deny", "timeout", note="this app closed while writing its answer, and no answer "
                                                        "was stored before the deadline") for _ in rows]
            self._event("settled", f"{key}: left unsettled when this app closed; no answer stored: denied by timeout")
        try:
            self.broker.audit.record_decisions(zip(rows, verdicts, strict=True))
        except Exception:  # the log's health signal tells the person
            log.exception("relay: the audit log could not record what stands for %s", key)

    def _standing(self, request: RelayedRequest, verdicts: list[Verdict], claim: Claim) -> list[Verdict]:
        if claim.won and claim.timed_out:
            self._event("unwritten", f"{request.key}: {_summary(verdicts)}: not written before the request's "
                                     "deadline; denied by timeout instead")
            return [Verdict("deny", "timeout", note=TOO_LATE, risk=verdict.risk) for verdict in verdicts]
        if claim.won and claim.failure is None:
            return verdicts
        own = [(index, verdict) for index, verdict in enumerate(verdicts) if index not in request.theirs_at]
        if claim.theirs is not None:
            if not request.elsewhere.done():
                request.elsewhere.set_result(claim.theirs)
            self._answered_elsewhere(request.key, claim.theirs)
            if own:
                self._event("late_answer", f"{request.key}: this app's own answer came second and was not used: "
                                           f"{_summary(verdict for _, verdict in own)}")
            return [replace(_verdict_of(claim.theirs, index), risk=verdict.risk)
                    for index, verdict in enumerate(verdicts)]
        failure = claim.failure or "not written"
        self._event("unwritten", f"{request.key}: {_summary(verdicts)}: {failure}")
        decided_by: DecidedBy = "cancelled" if claim.won else "timeout"  # refused at once, or waited out
        return [Verdict("deny", decided_by, note=f"desktop-approver could not deliver its answer over NATS: "
                                                  f"{failure}", risk=verdict.risk) for verdict in verdicts]

    def _event(self, code: str, detail: str) -> None:
        try:
            self.broker.audit.record_event("relay", code, detail)
        except Exception:  # the log's own health signal tells the person; the answer goes on
            log.exception("relay: the audit log could not record %s", code)

    def _forget(self, request: RelayedRequest) -> None:
        if self.requests.get(request.key) is request:
            del self.requests[request.key]

    def _tell(self, user: str, envelope: dict[str, Any]) -> None:
        """A notice or end of session: the core's own handlers (audit, the tray; session memory)."""
        connection = self._connection(user, envelope, lambda payload: None)
        if connection is not None:
            connection.received(_line(envelope["message"]))

    def _expire(self, user: str, envelope: dict[str, Any], key: str, note: str) -> Action:
        """Past its deadline on arrival (the approvers were away): a deny by ``timeout``, recorded,
        nobody asked: the agent has stopped waiting and denied it the same way."""
        read = self._read_unasked(user, envelope)
        if read is None:
            return ("term", None)
        connection, message, infos = read
        verdicts = [Verdict("deny", "timeout", note=note, risk=info.risk_report()) for info in infos]
        identity = connection.identity
        session = message.session or f"{identity.label}-relay"
        self._expiring[key] = (identity, session, message.id, infos, verdicts)
        return ("expire", _reply_of(message.type, message.id, verdicts))

    def _expired(self, key: str, claim: Claim) -> None:
        """The expiry is written (or another answer stood): recorded now, as what stands."""
        identity, session, request_id, infos, verdicts = self._expiring.pop(key)
        if claim.theirs is not None:
            self._answered_elsewhere(key, claim.theirs)
            verdicts = [replace(_verdict_of(claim.theirs, index), risk=verdict.risk)
                        for index, verdict in enumerate(verdicts)]
        else:
            self._event("expired", f"{key}: past its deadline when it arrived; denied by timeout"
                                   + (f" ({claim.failure})" if claim.failure else ""))
        try:
            self.broker.audit.record_answered(identity, session, request_id, infos, verdicts)
        except Exception:  # the log's health signal tells the person
            log.exception("relay: the audit log could not record the expiry of %s", key)

    def _seen_elsewhere(self, key: str, value: dict[str, Any]) -> None:
        request = self.requests.get(key)
        if request is not None and not request.elsewhere.done():
            request.elsewhere.set_result(value)

    def _answered_elsewhere(self, key: str, value: dict[str, Any]) -> None:
        """Another approver's answer stands: recorded, so both audit logs say who decided."""
        decisions = _decisions_in(value)
        summary = ", ".join(f"{d.get('decision')} by {d.get('decided_by')}" for d in decisions) or str(
            value.get("reply", {}).get("code"))
        self._event("answered_elsewhere", f"{key}: answered by approver {printable(str(value.get('approver')), 80)}: "
                                          f"{printable(summary, 400)}")

    def _alive(self, keys: list[str]) -> None:
        now = time.monotonic()
        for key in keys:
            request = self.requests.get(key)
            if request is not None:
                request.last_seen = now

    @property
    def _check_interval(self) -> float:
        return min(ACK_WAIT / 3, self.agent_silence / 4)

    def _check_open_requests(self) -> None:
        """Our open requests stay ours (``in_progress``); a silent agent's are withdrawn, but only a
        silence heard while the server answered us all along: a stalled server delivers no heartbeat,
        and a stall is no departure (:meth:`_probe`)."""
        now = time.monotonic()
        connected = self.nc is not None and self.nc.is_connected and self.connected_at is not None
        hearing = connected and self.nc_alive is not None and self.nc_alive.is_connected
        if connected:
            self._nats(self._probe(now))
        else:
            self.responsive_since = None
        responsive = self.responsive_since
        connected_long = hearing and responsive is not None and now - responsive > self.agent_silence
        open_requests = [request for request in self.requests.values() if not request.answered]
        if open_requests and connected:
            self._nats(self._in_progress([request.msg for request in open_requests]))
        if connected:
            for user in list(self.full_users):  # told when it is below its quota again
                self._nats(self._check_quota(user))
        self._flood_ended(now)
        for request in open_requests:
            if connected_long and now - request.last_seen > self.agent_silence:
                log.debug("relay: no heartbeat for %s: the agent is gone", request.key)
                self._withdraw(request.key, "agent gone")
        self._checking = self.app_loop.call_later(self._check_interval, self._check_open_requests)

    async def _probe(self, sent: float) -> None:
        """A question answered in time (JetStream's account info) says the server is responsive now;
        one that is not (a stall, a server paused or overloaded) starts the agents' silence over once
        it answers again."""
        try:  # a request, not flush(timeout=): nats-py fails its read loop on a PONG that comes after a flush gave up
            await self.nc.request("$JS.API.INFO", b"", timeout=PROBE_TIMEOUT)
            answered = True
        except Exception:  # noqa: BLE001 - not in time, or not connected: not responsive
            answered = False
        self._app(self._probed, sent, answered)

    def _probed(self, sent: float, answered: bool) -> None:
        if not answered:
            self.responsive_since = None
        elif self.responsive_since is None:
            self.responsive_since = sent

    def _withdraw(self, key: str, why: str) -> None:
        """Withdraw an open request (its prompt disappears; the answer is a deny by ``cancelled``)."""
        request = self.requests.get(key)
        if request is None or request.answered:
            return
        if request.withdrawn.done():
            return
        self._event("withdrawn", f"{key}: {why}")
        # Through the decider, not a cancel of the broker's task: the deny is settled like any answer
        # (written before it is recorded), so a withdrawal never stands in a log against another's answer.
        request.withdrawn.set_result("the agent cancelled the request" if why == "cancel" else
                                     "the agent is gone (its heartbeat stopped)")

    def _refuse(self, code: str, detail: str, message_id: str | None = None, user: str | None = None) -> None:
        now = time.monotonic()
        since, logged = self._refusals_logged
        if now - since >= 60.0:
            since, logged = now, 0
        if logged < REFUSALS_LOGGED_PER_MINUTE:
            log.warning("relay: refused (%s): %s", code, printable(detail, 200))
            logged += 1
        else:
            self._refusals_unlogged += 1
            if self._refusals_summary is None:
                self._refusals_summary = self.app_loop.call_later(max(since + 60.0 - now, 0.0), self._log_unlogged)
        self._refusals_logged = (since, logged)
        self.context.audit_refusal(code, detail, None, None, message_id, who=f"NATS user {user}" if user else None)

    def _log_unlogged(self) -> None:
        self._refusals_summary = None
        if self._refusals_unlogged:
            log.warning("relay: %d more refusals in the last minute, not logged one by one (the audit log "
                        "records them within its own limit)", self._refusals_unlogged)
            self._refusals_unlogged = 0


def _answer_ttl(deadline: float) -> float:
    """How long the bucket keeps an answer: as long as its request is kept (:func:`.names.request_ttl`),
    and no longer. So what one user's requests hold in the bucket is bounded by what its own stream
    holds (and its refusals by :data:`REFUSALS_PER_MINUTE` × :data:`REFUSAL_TTL`)."""
    return names.request_ttl(max(deadline - time.time(), 0.0))


def _instance_id(broker: Broker) -> str:
    """A name for this app's consumer, kept beside its audit log so that a restart reads on where it
    stopped (a new consumer would read the whole stream again); random without a log file."""
    path = getattr(broker.audit, "path", None)
    if not path or str(path) == ":memory:":
        return uuid.uuid4().hex[:12]
    kept = Path(f"{path}.relay-consumer")
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = kept.read_text(encoding="utf-8").strip()
        if names.is_token(text) and len(text) <= 16:
            return text
    made = uuid.uuid4().hex[:12]
    try:
        kept.write_text(made + "\n", encoding="utf-8")
    except OSError as exc:  # a new consumer at the next start: requests are read again, nothing lost
        log.warning("relay: cannot keep this app's consumer name in %s: %s", kept, exc)
    return made


def _infos_of(message: models.Asking) -> list[CallInfo]:
    """The calls of a request recorded without asking anyone (their risk read as the broker reads it)."""
    from ..core.calls.risk import assess

    calls: list[Any] = message.calls() if isinstance(message, models.Request) else list(message.calls)
    return [CallInfo.of(index, call, assess(call.tool, call.args, cwd=None,
                                            hints=call.hints.as_dict() if call.hints is not None else None))
            for index, call in enumerate(calls)]


def _late_note(deadline: float, stored_at: float | None) -> str:
    """Why a request is denied by ``timeout`` on arrival, said plainly: its deadline had passed before
    the server even stored it (the agent's clock is behind, within the tolerance), or it waited on
    the stream while no approver read it."""
    if stored_at is not None and stored_at >= deadline:
        return (f"not asked: the request's deadline had already passed {stored_at - deadline:.0f} s before the NATS "
                "server stored it (the agent's clock is behind the server's, or its timeout too short for the "
                "relay)")
    return "nobody answered before the request's deadline (it waited on the NATS server while no approver read it)"


def _key_of(msg: Any) -> object:
    """The decision key a stream message is about, to keep two messages about one request in order;
    a message that names none is about nothing else (an object of its own)."""
    user = names.user_of_subject(msg.subject)
    try:
        unique = names.decode_envelope(msg.data)["id"]
    except Exception:  # noqa: BLE001 - refused when it is taken; here it only orders nothing
        return object()
    return names.decision_key(user, unique) if user is not None else object()


def connect_problem(exc: BaseException, address: RelayAddress) -> str:
    """What keeps the relay from connecting, said for the person."""
    if isinstance(exc, ImportError):
        missing = getattr(exc, "name", None) or str(exc)
        why = f"the Python package {missing} is missing"
        if missing == "nkeys":
            why += " (a .creds file needs it)"
        return f"the relay cannot connect to {address.shown}: {why}; pip install 'desktop-approver[relay]'"
    return f"the relay cannot connect to {address.shown} as {address.user}: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _server_time(stamp: object) -> float | None:
    """An RFC 3339 time as the server writes it (nanoseconds, ``Z``) in epoch seconds, or None."""
    import datetime
    import re

    found = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", str(stamp))
    if found is None:
        return None
    whole, fraction, zone = found.groups()
    moment = datetime.datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return moment.timestamp() + float(f"0.{fraction}" if fraction else 0)


def _stored_at(msg: Any) -> float | None:
    """When the NATS server stored a stream message (the server's clock), if it says."""
    try:
        return float(msg.metadata.timestamp.timestamp())
    except Exception:  # no JetStream metadata: judged by our own clock alone
        return None


def _log_failure(done: concurrent.futures.Future[Any]) -> None:
    if not done.cancelled() and (exc := done.exception()) is not None:
        log.error("relay: %s", exc, exc_info=exc)


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8")


def _error_reply(message_id: str, kind: object, code: str, text: str) -> dict[str, Any]:
    return {"v": 1, "type": "error", "id": message_id, "in_reply_to": kind if isinstance(kind, str) else None,
            "code": code, "message": text}


def _decisions_in(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-call decisions of a stored answer (none for an error, or for what cannot be read)."""
    reply = value.get("reply")
    if not isinstance(reply, dict):
        return []
    if reply.get("type") == "decision":
        return [reply]
    decisions = reply.get("decisions")
    return [d for d in decisions if isinstance(d, dict)] if isinstance(decisions, list) else []


def _reply_of(kind: str, message_id: str, verdicts: list[Verdict]) -> dict[str, Any]:
    """The protocol's answer carrying ``verdicts`` (what the connection would send for them)."""
    if kind == "request":
        return dict(json.loads(encode_decision(message_id, verdicts[0])))
    return dict(json.loads(encode(models.BatchDecision(id=message_id, decisions=[
        models.CallDecision.of(verdict, index=index) for index, verdict in enumerate(verdicts)]))))


def _allows(reply: dict[str, Any]) -> bool:
    """Whether an answer allows any of its calls."""
    return any(str(decision.get("decision", "")).startswith("allow") for decision in _decisions_in({"reply": reply}))


def _timed_out(reply: dict[str, Any]) -> dict[str, Any]:
    """The deny by ``timeout`` that replaces an answer written too late to count (each call's risk kept)."""

    def denied(decision: dict[str, Any]) -> dict[str, Any]:
        kept = {name: value for name, value in decision.items() if name not in ("updated_args", "scope", "rule")}
        return {**kept, "decision": "deny", "decided_by": "timeout", "note": TOO_LATE, "blocked": False}

    if reply.get("type") == "decision":
        return denied(reply)
    return {**reply, "decisions": [denied(decision) for decision in _decisions_in({"reply": reply})]}


def _kind_of(reply: dict[str, Any]) -> str:
    """The asking message an answer answers."""
    return "batch" if reply.get("type") == "batch_decision" else "request"


def _summary(verdicts: Iterable[Verdict]) -> str:
    return ", ".join(f"{verdict.decision} by {verdict.decided_by}"
                     + (f" ({printable(verdict.note, 200)})" if verdict.note else "") for verdict in verdicts)


def _verdict_of(value: dict[str, Any], index: int) -> Verdict:
    """Another approver's answer for call ``index``, as this app records it (a deny if unreadable)."""
    decisions = _decisions_in(value)
    found = next((d for d in decisions if d.get("index", 0) == index), None) if decisions else None
    approver = printable(str(value.get("approver")), 80)
    if not isinstance(found, dict) or found.get("decision") not in DECISIONS:
        return Verdict("deny", "cancelled", note=f"answered by approver {approver} (unreadable: denied)")
    decided_by: DecidedBy = found["decided_by"] if found.get("decided_by") in DECIDED_BY else "user"
    note, updated, rule = found.get("note"), found.get("updated_args"), found.get("rule")
    said = f"answered by approver {approver}" + (f": {note[:4096]}" if isinstance(note, str) and note
                                                  else "")
    return Verdict(found["decision"], decided_by, note=said,
                   rule=printable(rule, 400) if isinstance(rule, str) else None, blocked=found.get("blocked") is True,
                   updated_args=updated if isinstance(updated, dict) else None,
                   scope=found["scope"] if found.get("scope") in SCOPES else "exact")
