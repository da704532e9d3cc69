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
decision exists, whoever sends it. An approver that finds the key taken withdraws its own prompt
(the dialog closes) and records who answered; the answer seen first is the one both audit logs
keep, since a prompt still open when another approver's answer arrives is answered with it.
A request past its deadline is denied by ``timeout``; a cancel, or an agent whose heartbeat stops,
withdraws it everywhere (``deny`` by ``cancelled``). Requests that do not fit (a wrong subject, a
malformed envelope, an id replayed under another stream sequence) are refused and audited.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..core.decisions.tickets import PAUSE_ALLOWANCE, CallInfo, Identity, Ticket, Verdict
from ..core.messages import models
from ..core.messages.protocol import Refusal, decode, encode, encode_decision
from ..core.store.logsafe import printable
from ..core.transport.connection import Connection
from ..core.transport.context import Context
from ..core.transport.peercred import PeerCredentials
from ..vocabulary import DECIDED_BY, DECISIONS, SCOPES, DecidedBy
from . import names
from .address import RelayAddress

if TYPE_CHECKING:
    from ..core.decisions.broker import Broker
    from ..core.decisions.tickets import Decider

log = logging.getLogger(__name__)

ACK_WAIT = 30.0
"""Seconds the server waits for our ack before redelivering; a request still open is kept alive
with ``in_progress`` every third of that, so only a dead approver's requests come again."""
RECONNECT_WAIT = 1.0
START_DELAY = 0.05
CLOSE_WAIT = 5.0
"""Seconds a closing approver gives the decisions it made to reach the server."""
DEFAULT_AGENT_SILENCE = 20.0
"""Seconds without an agent's heartbeat (``agent.HEARTBEAT_SECONDS``) after which its requests are
withdrawn: it died without a word."""
DEFAULT_MAX_PENDING = 1024
"""Relayed calls that may wait for the person at once (all remote agents together)."""
NO_UID = cast("int", None)
"""A remote peer has no uid on this machine; the audit log records none."""


@dataclass(eq=False)
class RelayedRequest:
    """One request from the stream while this approver has it open."""

    key: str
    user: str
    unique: str
    sequence: int
    msg: Any
    connection: Connection
    deadline: float | None
    last_seen: float = field(default_factory=time.monotonic)
    elsewhere: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    """Set when another approver's answer for this key is seen first."""
    answered: bool = False

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
        deciding = asyncio.ensure_future(self.inner.decide(ticket))
        try:
            either: tuple[asyncio.Future[Any], ...] = (deciding, request.elsewhere)
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            deciding.cancel()
            raise
        if deciding.done():
            return deciding.result()
        deciding.cancel()  # the prompt disappears: another approver answered first
        with contextlib.suppress(asyncio.CancelledError):
            await deciding
        value = request.elsewhere.result()
        log.debug("%s answered elsewhere first, by %s", request.key, printable(str(value.get("approver")), 80))
        return [_verdict_of(value, call.index) for call in ticket.calls]


class RelayApprover:
    """Answers relayed requests with ``broker``; ``start`` and ``close`` on the app's loop."""

    def __init__(self, broker: Broker, address: RelayAddress, *, name: str | None = None,
                 agent_silence: float = DEFAULT_AGENT_SILENCE, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.broker = broker
        self.address = address
        self.name = name or f"{address.user}@{socket.gethostname()}"
        self.durable = f"approver-{names.subject_token(self.name)}"
        self.agent_silence = agent_silence
        self.context = Context(broker, max_pending_per_client=max_pending, socket_path=address.shown)
        self.requests: dict[str, RelayedRequest] = {}
        self.nc: Any = None
        self.js: Any = None
        self.kv: Any = None
        self.connected_at: float | None = None
        self.closing = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runner: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        """Set once the stream, the bucket and our consumer are there (tests wait for it)."""

    def __repr__(self) -> str:
        state = "connected" if self.nc is not None and self.nc.is_connected else "disconnected"
        return f"<RelayApprover {self.name!r} {self.address.shown} {state} open={len(self.requests)}>"

    async def start(self) -> None:
        """Begin answering; connecting goes on in the background until the server is reachable."""
        self.context.loop = asyncio.get_running_loop()
        if not isinstance(self.broker.decider, RelayDecider):
            self.broker.decider = RelayDecider(self.broker.decider, self)
        self.context.loop.call_later(START_DELAY, self._begin)

    def _begin(self) -> None:
        """Start the runner in a turn of a running loop, not in the app's start-up: qasync's
        ``run_until_complete`` drains Qt's events after its loop stopped, with no running loop set,
        and nats-py's connect (``asyncio.wait_for``) fails if its first steps run in that drain."""
        if self.closing:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            assert self.context.loop is not None
            self.context.loop.call_later(START_DELAY, self._begin)
            return
        self._runner = loop.create_task(self._run())

    async def close(self) -> None:
        """Stop reading; decisions already made are written first (within a few seconds)."""
        self.closing = True
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._runner
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CLOSE_WAIT)
        for request in list(self.requests.values()):
            request.connection.connection_lost()  # prompts disappear; the stream keeps the request for later
        for task in list(self._tasks):
            task.cancel()
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
        self.context.close()

    # -- connecting and reading ----------------------------------------------------------------

    async def _run(self) -> None:
        import nats

        warned = False
        while True:
            try:
                await self._connect()
                break
            except (TimeoutError, OSError, nats.errors.Error) as exc:
                log.debug("relay: connecting to %s failed: %r", self.address.shown, exc)
                if not warned:
                    log.warning("relay: cannot reach NATS at %s yet (%s); trying again", self.address.shown, exc)
                    warned = True
                await asyncio.sleep(RECONNECT_WAIT)
        log.info("relay: answering requests from %s as %s", self.address.shown, self.name)
        keeping = asyncio.get_running_loop().create_task(self._keep_alive())
        try:
            await self._read_requests()
        finally:
            keeping.cancel()

    async def _connect(self) -> None:
        import nats
        from nats.js import api

        self.nc = await asyncio.wait_for(nats.connect(
            **self.address.connect_options(), name=f"desktop-approver {self.name}", connect_timeout=2,
            max_reconnect_attempts=1, reconnect_time_wait=0.25, error_cb=self._error,
            reconnected_cb=self._reconnected, disconnected_cb=self._disconnected), 5)
        self.nc.options["max_reconnect_attempts"] = -1  # connected: reconnect without end from now on
        self.connected_at = time.monotonic()
        self.js = self.nc.jetstream(timeout=5)
        await self.js.add_stream(api.StreamConfig(
            name=names.STREAM, subjects=[f"{names.SUBJECT_ROOT}.>"], storage=api.StorageType.FILE,
            max_age=names.RETENTION_SECONDS, duplicate_window=120.0))
        self.kv = await self.js.create_key_value(api.KeyValueConfig(
            bucket=names.BUCKET, history=1, storage=api.StorageType.FILE, ttl=names.RETENTION_SECONDS, direct=True))
        await self.nc.subscribe(f"{names.KV_SUBJECT_ROOT}.>", cb=self._decision_seen)
        await self.nc.subscribe(f"{names.ALIVE_ROOT}.>", cb=self._heartbeat)
        self.subscription = await self.js.pull_subscribe(
            f"{names.SUBJECT_ROOT}.>", durable=self.durable, stream=names.STREAM,
            config=api.ConsumerConfig(ack_wait=ACK_WAIT, deliver_policy=api.DeliverPolicy.ALL,
                                      max_ack_pending=4 * DEFAULT_MAX_PENDING))
        self.ready.set()

    async def _read_requests(self) -> None:
        import nats

        while not self.closing:
            try:
                batch = await self.subscription.fetch(64, timeout=1.0)
            except nats.errors.TimeoutError:
                continue
            except (nats.errors.Error, OSError) as exc:
                log.debug("relay: fetch failed (%s); again", exc)
                await asyncio.sleep(RECONNECT_WAIT / 4)
                continue
            for msg in batch:
                try:
                    await self._take(msg)
                except Exception:  # one bad message never stops the others
                    log.exception("relay: handling %s failed", printable(msg.subject, 120))
                    with contextlib.suppress(Exception):
                        await msg.term()

    # -- one message from the stream -----------------------------------------------------------

    async def _take(self, msg: Any) -> None:
        user = names.user_of_subject(msg.subject)
        if user is None:
            self._refuse("relay_subject", f"a message on {msg.subject!r}, not approver.req.<user>.<agent>")
            await msg.term()
            return
        try:
            envelope = names.decode_envelope(msg.data)
        except names.EnvelopeError as exc:
            self._refuse("relay_envelope", f"from NATS user {user}: {exc}")
            await msg.term()
            return
        unique, message = envelope["id"], envelope["message"]
        kind, key = message.get("type"), names.decision_key(user, envelope["id"])
        if message.get("id") != unique:
            self._refuse("relay_envelope", f"from NATS user {user}: the message's id is not the envelope's", unique)
            await msg.term()
        elif kind == "cancel":
            self._withdraw(key, "cancel")
            await msg.ack()
        elif kind in ("request", "batch"):
            await self._ask(msg, user, envelope, key)
        elif kind in ("notice", "end_session"):
            connection = self._connection(user, envelope, lambda payload: None)
            if connection is not None:
                connection.received(_line(message))
            await msg.ack()
        else:
            self._refuse("relay_type", f"from NATS user {user}: {printable(str(kind), 40)} is not relayed", unique)
            await msg.term()

    async def _ask(self, msg: Any, user: str, envelope: dict[str, Any], key: str) -> None:
        sequence = msg.metadata.sequence.stream
        mine = self.requests.get(key)
        if mine is not None:
            if mine.sequence != sequence:
                self._refuse("replayed_id", f"from NATS user {user}: request id {envelope['id']} again "
                                            f"(stream sequence {sequence}, first {mine.sequence})", envelope["id"])
                await msg.term()
            return  # a redelivery of what we have open: it is answered when decided
        existing = await self._decision(key)
        if existing is not None and existing.get("seq") not in (None, sequence):
            self._refuse("replayed_id", f"from NATS user {user}: request id {envelope['id']} was already "
                                        f"decided (stream sequence {existing.get('seq')})", envelope["id"])
            await msg.term()
            return
        message = dict(envelope["message"])
        deadline = envelope.get("deadline")
        left = (deadline - time.time()) if deadline is not None else None
        if existing is None and left is not None and left <= 0:
            await self._expire(msg, user, envelope, key)
            return
        if left is not None and left <= 0:
            left = None  # decided elsewhere already: recorded below with that answer, nobody is asked
        if left is not None:  # the person's pause allowance included, it ends by the agent's deadline
            message["timeout"] = min(float(message.get("timeout") or left), left / (1 + PAUSE_ALLOWANCE))
        request = RelayedRequest(key=key, user=user, unique=envelope["id"], sequence=sequence, msg=msg,
                                 connection=cast("Connection", None), deadline=deadline)
        connection = self._connection(user, envelope, functools.partial(self._answer, request))
        if connection is None:
            await msg.term()
            return
        request.connection = connection
        if existing is not None:  # answered while we were away: recorded here with that answer, no prompt
            request.elsewhere.set_result(existing)
        self.requests[key] = request
        log.debug("relay: %r from %s", request, user)
        connection.received(_line(message))

    def _connection(self, user: str, envelope: dict[str, Any], send: Any) -> Connection | None:
        """A core connection for one relayed message, with the remote identity; None if the hello is refused."""
        hello = decode(_line({"v": envelope["message"].get("v", 1), "type": "hello",
                              "client": envelope.get("client", {})}))
        if isinstance(hello, Refusal) or not isinstance(hello, models.Hello):
            reason = hello.message if isinstance(hello, Refusal) else "not a hello"
            self._refuse("relay_envelope", f"from NATS user {user}: its client information: {reason}",
                         envelope["id"])
            self._spawn(self._write(names.decision_key(user, envelope["id"]), _error_reply(
                envelope["id"], envelope["message"].get("type"), "invalid_message", reason), None))
            return None
        connection = Connection(self.context, PeerCredentials(None, NO_UID, None), send, lambda: None)
        info = hello.client
        connection.identity = Identity(agent=f"{user}/{info.agent or 'agent'}", pid=info.pid, cwd=info.cwd,
                                       host=info.host, git_branch=info.git_branch, relay_user=user)
        return connection

    def _answer(self, request: RelayedRequest, payload: bytes) -> None:
        """The connection's answer (decision, batch_decision or error): written, once."""
        if request.answered or request.connection.closed:
            return
        request.answered = True
        self._spawn(self._write(request.key, json.loads(payload), request))

    async def _write(self, key: str, reply: dict[str, Any], request: RelayedRequest | None) -> None:
        """Create the decision's key (exactly once, whoever writes); retried through a reconnect."""
        import nats
        from nats.js.errors import KeyWrongLastSequenceError

        value = {"relay": names.RELAY_VERSION, "approver": self.name, "reply": reply,
                 "seq": request.sequence if request is not None else None}
        stop = (request.deadline if request is not None and request.deadline is not None else time.time()) + 60.0
        try:
            while True:
                try:
                    await self.kv.create(key, names.encode(value))
                    log.debug("relay: %s decided here", key)
                    break
                except KeyWrongLastSequenceError:
                    existing = await self._decision(key)
                    if existing is not None and existing.get("approver") != self.name:
                        self._answered_elsewhere(key, existing, ours=reply)
                    break
                except (TimeoutError, nats.errors.Error, OSError) as exc:
                    if time.time() > stop:
                        log.error("relay: the decision for %s could not be written: %s", key, exc)
                        return
                    await asyncio.sleep(RECONNECT_WAIT / 4)
            if request is not None:
                with contextlib.suppress(Exception):
                    await request.msg.ack()
        finally:
            if request is not None and self.requests.get(key) is request:
                del self.requests[key]

    async def _expire(self, msg: Any, user: str, envelope: dict[str, Any], key: str) -> None:
        """Past its deadline on arrival (the approvers were away): a deny by ``timeout``, recorded,
        nobody asked: the agent has stopped waiting and denied it the same way."""
        checked = decode(_line(envelope["message"]))
        connection = self._connection(user, envelope, lambda payload: None)
        if connection is None:
            await msg.term()
            return
        if isinstance(checked, Refusal):
            connection.refuse(checked)
            reply = json.loads(encode(checked.reply()))
        else:
            reply = self._expired_reply(connection.identity, cast("models.Asking", checked))
        self.broker.audit.record_event("relay", "expired", f"{key}: past its deadline when it arrived; denied by "
                                                           "timeout")
        await self._write(key, reply, None)
        await msg.ack()

    def _expired_reply(self, identity: Identity, message: models.Asking) -> dict[str, Any]:
        from ..core.calls.risk import assess

        calls: list[Any] = message.calls() if isinstance(message, models.Request) else list(message.calls)
        infos = [CallInfo.of(index, call, assess(call.tool, call.args, cwd=None,
                                                 hints=call.hints.as_dict() if call.hints is not None else None))
                 for index, call in enumerate(calls)]
        verdicts = [Verdict("deny", "timeout", note="nobody answered before the request's deadline",
                            risk=info.risk_report()) for info in infos]
        session = message.session or f"{identity.label}-relay"
        self.broker.audit.record_answered(identity, session, message.id, infos, verdicts)
        if isinstance(message, models.Request):
            return dict(json.loads(encode_decision(message.id, verdicts[0])))
        return dict(json.loads(encode(models.BatchDecision(id=message.id, decisions=[
            models.CallDecision.of(verdict, index=index) for index, verdict in enumerate(verdicts)]))))

    # -- other approvers, agents' heartbeats, withdrawals ------------------------------------------

    async def _decision(self, key: str) -> dict[str, Any] | None:
        from nats.js.errors import KeyNotFoundError

        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        try:
            return names.decode_decision(entry.value or b"")
        except ValueError:
            return {"approver": "?", "reply": {}}

    async def _decision_seen(self, msg: Any) -> None:
        key = msg.subject.removeprefix(f"{names.KV_SUBJECT_ROOT}.")
        request = self.requests.get(key)
        if request is None or request.elsewhere.done():
            return
        try:
            value = names.decode_decision(msg.data)
        except ValueError:
            return
        if value.get("approver") != self.name:
            request.elsewhere.set_result(value)

    def _answered_elsewhere(self, key: str, value: dict[str, Any], ours: dict[str, Any] | None = None) -> None:
        """Another approver's answer stands: recorded, so both audit logs say who decided."""
        reply = value.get("reply", {})
        decisions = [reply] if reply.get("type") == "decision" else list(reply.get("decisions", []))
        summary = ", ".join(f"{d.get('decision')} by {d.get('decided_by')}" for d in decisions) or reply.get("code")
        detail = f"{key}: answered by approver {value.get('approver')}: {summary}"
        if ours is not None:
            detail += " (this app's answer came second and was not used)"
        self.broker.audit.record_event("relay", "answered_elsewhere", detail)

    async def _heartbeat(self, msg: Any) -> None:
        user = names.user_of_subject(msg.subject, names.ALIVE_ROOT)
        if user is None:
            return
        try:
            ids = json.loads(msg.data).get("ids", [])
        except (ValueError, AttributeError):
            return
        now = time.monotonic()
        for unique in ids if isinstance(ids, list) else ():
            request = self.requests.get(names.decision_key(user, str(unique)))
            if request is not None:
                request.last_seen = now

    async def _keep_alive(self) -> None:
        """Our open requests stay ours (``in_progress``); a silent agent's are withdrawn."""
        while True:
            await asyncio.sleep(min(ACK_WAIT / 3, self.agent_silence / 4))
            now = time.monotonic()
            connected_long = (self.nc.is_connected and self.connected_at is not None
                              and now - self.connected_at > self.agent_silence)
            for request in list(self.requests.values()):
                if request.answered:
                    continue
                with contextlib.suppress(Exception):
                    await request.msg.in_progress()
                if connected_long and now - request.last_seen > self.agent_silence:
                    log.debug("relay: no heartbeat for %s: the agent is gone", request.key)
                    self._withdraw(request.key, "agent gone")

    def _withdraw(self, key: str, why: str) -> None:
        """Withdraw an open request (its prompt disappears; the answer is a deny by ``cancelled``)."""
        request = self.requests.get(key)
        if request is None or request.answered:
            return
        self.broker.audit.record_event("relay", "withdrawn", f"{key}: {why}")
        request.connection.received(_line({"v": 1, "type": "cancel", "id": request.unique}))

    def _refuse(self, code: str, detail: str, message_id: str | None = None) -> None:
        log.warning("relay: refused (%s): %s", code, printable(detail, 200))
        self.context.audit_refusal(code, detail, None, None, message_id)

    # -- NATS callbacks ------------------------------------------------------------------------

    async def _error(self, error: Exception) -> None:
        log.warning("relay: NATS: %s", error)

    async def _reconnected(self) -> None:
        self.connected_at = time.monotonic()
        log.info("relay: reconnected to %s", self.address.shown)

    async def _disconnected(self) -> None:
        if not self.closing:
            log.info("relay: disconnected from %s", self.address.shown)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode("utf-8")


def _error_reply(message_id: str, kind: object, code: str, text: str) -> dict[str, Any]:
    return {"v": 1, "type": "error", "id": message_id, "in_reply_to": kind if isinstance(kind, str) else None,
            "code": code, "message": text}


def _verdict_of(value: dict[str, Any], index: int) -> Verdict:
    """Another approver's answer for call ``index``, as this app records it (a deny if unreadable)."""
    reply = value.get("reply", {})
    decisions = [reply] if reply.get("type") == "decision" else list(reply.get("decisions", []))
    found = next((d for d in decisions if d.get("index", 0) == index), None) if decisions else None
    approver = printable(str(value.get("approver")), 80)
    if not isinstance(found, dict) or found.get("decision") not in DECISIONS:
        return Verdict("deny", "cancelled", note=f"answered by approver {approver} (unreadable: denied)")
    decided_by: DecidedBy = found["decided_by"] if found.get("decided_by") in DECIDED_BY else "user"
    note, updated = found.get("note"), found.get("updated_args")
    said = f"answered by approver {approver}" + (f": {note}" if note else "")
    return Verdict(found["decision"], decided_by, note=said,
                   rule=found.get("rule"), blocked=bool(found.get("blocked")),
                   updated_args=updated if isinstance(updated, dict) else None,
                   scope=found["scope"] if found.get("scope") in SCOPES else "exact")
