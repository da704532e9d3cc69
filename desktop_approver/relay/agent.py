"""The agent's side of the relay: a transport that speaks the protocol's lines over NATS.

:class:`RelayTransport` plugs into the clients' transport seam (:mod:`desktop_approver.client.transport`),
so :class:`~desktop_approver.client.Client`, :class:`~desktop_approver.client.async_client.AsyncClient`,
the CLI, the hook and every adapter run their own code unchanged. Each line the client writes is
translated here:

- ``hello`` is kept (its client information travels with each request) and answered ``welcome``;
- ``request`` and ``batch`` are published to the stream on ``approver.req.<user>.<agent>`` under a
  new, globally unique id (the client's ids are per process) with ``Nats-Msg-Id`` set to it, so a
  publish retried after a reconnect is stored once; the answer is the decision key's first value,
  seen by a subscription as it is written, and read with a direct get after each reconnect;
- ``cancel`` publishes a cancel (the approvers withdraw the prompt and answer ``deny``); closing the
  connection cancels what is still waiting, and a heartbeat on ``approver.alive.<user>.<agent>``
  lets the approvers withdraw the requests of an agent that died without a word;
- ``notice`` and ``end_session`` are published for every approver; ``status`` is answered here
  (connected, and what this agent waits for); ``sessions`` and ``revoke`` are refused
  (``unknown_type``): session memory lives in each approver's app, ask it there.

Fails closed, within the request's time: an unreachable server or refused credentials raise
:class:`~desktop_approver.client.errors.ApproverUnavailable` at connect; a permission the server refuses
fails the connection the same way; past the request's deadline (``timeout`` stretched by the pause
allowance, as the app counts it) the answer is a ``deny`` by ``timeout``, or ``ApproverUnavailable``
when the server was not reachable to ask.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import math
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..client import wire
from ..client.errors import ApproverError, ApproverUnavailable, QuotaExceeded
from ..version import __version__
from . import names, secure, signing
from .address import AddressError, RelayAddress
from .secure import import_nats

log = logging.getLogger(__name__)
STREAM_LIMITS = ("maximum bytes exceeded", "maximum messages exceeded", "maximum messages per subject exceeded")
"""What the server says when this user's request stream refuses a request at its limits (it keeps what
it holds and refuses what comes): no retry helps until requests are answered or expire, so the agent
is told at once (:class:`~desktop_approver.client.errors.QuotaExceeded`), and the approvers too."""
JOIN_WAIT = 10.0
"""Seconds an agent whose user has no stream yet waits for an approver to make it (its first request)."""
NOTICE_TTL = 600.0
"""Seconds the server keeps a notice or an end of session (the approvers read them at once)."""

DEFAULT_TIMEOUT = 300.0
"""A request without its own ``timeout`` gets the app's default, written into the envelope so
approver and agent count the same deadline."""
DEADLINE_GRACE = 3.0
"""Seconds past the approver's latest moment before the agent stops waiting for its decision."""
HEARTBEAT_SECONDS = 5.0
"""How often an agent with requests waiting says it is still there (``approver.alive``)."""
RECHECK_SECONDS = 30.0
"""How often a waiting request reads its key anyway (a decision missed while reconnecting)."""
STORED_PAUSES = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)
"""Pauses between reads of a key after a write to it was seen, until the bucket has stored it."""
PUBLISH_TIMEOUT = 2.0
CONNECT_TIMEOUT = 5.0
"""At least this long to reach the server: the clients' default (1 s) is for a local socket."""


class AgentLink:
    """One client connection over NATS, on an asyncio loop: lines in (:meth:`feed`), lines out (``emit``).

    ``emit(data)`` hands reply bytes to the client; ``emit(exc)`` (an :class:`ApproverError`) fails
    the connection with that reason.
    """

    def __init__(self, address: RelayAddress, emit: Callable[[bytes | ApproverError], None]) -> None:
        self.address = address
        self._emit = emit
        self.nc: Any = None
        self.js: Any = None
        self.client: dict[str, Any] = {}
        self.agent = "agent"
        self.waiting: dict[str, str] = {}            # client's id -> unique id
        self.ttls: dict[str, float] = {}             # unique id -> its request's time to live on the server
        self.digests: dict[str, str] = {}            # unique id -> what names the bytes it published (signing.py)
        self.tasks: set[asyncio.Task[None]] = set()
        self.reconnected = asyncio.Event()
        self.failed: ApproverError | None = None
        self.last_error: str | None = None
        """What nats-py last reported (a refused certificate, a refused password): said when connecting fails."""
        self.closed = False
        self._buffer = b""
        self._heartbeat: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return (f"<AgentLink {self.address.shown} user={self.address.user} agent={self.agent!r} "
                f"waiting={len(self.waiting)}{' failed' if self.failed else ''}{' closed' if self.closed else ''}>")

    async def open(self, timeout: float) -> None:
        try:
            nats = import_nats()
        except ImportError as exc:
            raise ApproverUnavailable(f"a NATS URL needs the relay extra (pip install 'desktop-approver[relay]'): "
                                      f"{exc}") from None
        timeout = max(timeout, CONNECT_TIMEOUT)
        try:
            self.nc = await asyncio.wait_for(secure.connect(
                self.address, name=f"desktop-approver agent {os.getpid()}",
                inbox_prefix=names.inbox_prefix(self.address.user), connect_timeout=max(1, round(timeout)),
                max_reconnect_attempts=1, reconnect_time_wait=0.25, error_cb=self._error,
                reconnected_cb=self._reconnected, disconnected_cb=self._disconnected), timeout)
        except ImportError as exc:  # nats-py loads nkeys only for a .creds file
            missing = getattr(exc, "name", None) or str(exc)
            raise ApproverUnavailable(f"the NATS credentials {self.address.creds_file or ''} need the Python package "
                                      f"{missing}, which is not installed (pip install "
                                      f"'desktop-approver[relay]')") from None
        except secure.TLSRequired as exc:
            raise ApproverUnavailable(f"desktop-approver's NATS server at {self.address.shown}: {exc}") from None
        except AddressError as exc:
            raise ApproverUnavailable(f"desktop-approver's NATS relay at {self.address.shown}: {exc}") from None
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            reason = _reason(exc) if self.last_error is None else f"{_reason(exc)} ({self.last_error})"
            raise ApproverUnavailable(f"desktop-approver's NATS server at {self.address.shown} refused or did not "
                                      f"answer: {reason}") from None
        except Exception as exc:  # noqa: BLE001 - a credentials file nats-py or nkeys cannot use, and the like
            raise ApproverUnavailable(f"desktop-approver's NATS relay cannot connect to {self.address.shown} as "
                                      f"{self.address.user}: {_reason(exc)}") from None
        # Connected: from now on reconnect without end; each request's deadline bounds the wait.
        self.nc.options["max_reconnect_attempts"] = -1
        self.js = self.nc.jetstream(timeout=PUBLISH_TIMEOUT)
        self._heartbeat = asyncio.get_running_loop().create_task(self._beat())
        log.debug("opened %r", self)

    async def close(self) -> None:
        """The client hung up: what it still waits for is cancelled for every approver."""
        if self.closed:
            return
        self.closed = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self.nc is not None and self.nc.is_connected:
            for unique in list(self.waiting.values()):
                with contextlib.suppress(Exception):
                    await self._publish_cancel(unique)
        for task in list(self.tasks):
            task.cancel()
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.close()
        log.debug("closed %r", self)

    # -- lines from the client ----------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if line.strip():
                self._line(line)

    def _line(self, line: bytes) -> None:
        if len(line) > wire.MAX_LINE_BYTES:  # as the app answers on its socket: unread, refused without an id
            self._reply({"type": "error", "code": "line_too_long",
                         "message": f"message of {len(line)} bytes exceeds the limit of {wire.MAX_LINE_BYTES}"})
            return
        try:
            message = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._reply({"type": "error", "code": "invalid_json", "message": "the relay could not read a line"})
            return
        if not isinstance(message, dict):
            return
        kind, message_id = message.get("type"), message.get("id")
        if kind == "hello":
            self.client = dict(message.get("client") or {})
            self.agent = str(self.client.get("agent") or "agent")
            self._reply({"type": "welcome", "server": "desktop-approver", "version": __version__,
                         "default_timeout": DEFAULT_TIMEOUT, "max_line_bytes": wire.MAX_LINE_BYTES,
                         "peer": {"pid": None, "uid": None}, "relay": self.address.shown})
        elif kind in ("request", "batch"):
            self._start(self._ask(message))
        elif kind == "cancel":
            unique = self.waiting.get(str(message_id))
            if unique is None:
                self._reply({"type": "error", "id": message_id, "in_reply_to": "cancel", "code": "unknown_id",
                             "message": f"no pending request {message_id!r}"})
            else:
                self._start(self._publish_cancel(unique))
        elif kind in ("notice", "end_session"):
            self._start(self._tell(message))
        elif kind == "status":
            self._reply({"type": "status_reply", "id": message_id, "version": __version__, "pid": None,
                         "socket": self.address.shown, "relay": self.address.shown, "user": self.address.user,
                         "pending": len(self.waiting), "mode": "relay", "connected": bool(self.nc.is_connected)})
        else:
            self._reply({"type": "error", "id": message_id, "in_reply_to": kind, "code": "unknown_type",
                         "message": f"{kind} is not available over the NATS relay: session memory lives in each "
                                    "approver's app (use its Sessions window)"})

    def _start(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._fail(exc if isinstance(exc, ApproverError) else
                       ApproverUnavailable(f"the NATS relay failed: {_reason(exc)}"))

    def _reply(self, message: dict[str, Any]) -> None:
        if not self.closed:
            self._emit(wire.encode({"v": wire.PROTOCOL_VERSION, **message}))

    def _fail(self, failure: ApproverError) -> None:
        if self.failed is None and not self.closed:
            self.failed = failure
            log.debug("failed %r: %s", self, failure)
            self._emit(failure)

    # -- a request's way -----------------------------------------------------------------------

    async def _ask(self, message: dict[str, Any]) -> None:
        local_id = str(message.get("id"))
        unique = uuid.uuid4().hex
        timeout = message.get("timeout")
        if timeout is None:
            timeout = DEFAULT_TIMEOUT
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout)
                or not 0 < timeout <= names.MAX_TIMEOUT):  # as the app's own ladder refuses it
            self._reply({"type": "error", "id": message.get("id"), "in_reply_to": message.get("type"),
                         "code": "invalid_message", "message": f"timeout must be a number of seconds above 0 and "
                                                               f"at most {names.MAX_TIMEOUT:g}"})
            return
        # Our own wait is counted on the monotonic clock: whatever the wall clocks here or at the
        # approvers say, it ends at the timeout stretched by the pause allowance (and some grace).
        sent_at = time.time()
        deadline = time.monotonic() + timeout * names.DEADLINE_FACTOR + DEADLINE_GRACE
        envelope = {"relay": names.RELAY_VERSION, "id": unique, "client": self.client, "sent_at": sent_at,
                    "deadline": sent_at + timeout * names.DEADLINE_FACTOR,
                    "message": {**message, "id": unique, "timeout": timeout}}
        payload = names.encode(envelope)
        if (too_large := self._too_large(payload)) is not None:
            self._reply({"type": "error", "id": message.get("id"), "in_reply_to": message.get("type"),
                         "code": "line_too_long", "message": too_large})
            return
        user = self.address.user
        written = asyncio.Event()

        async def seen(msg: Any) -> None:
            written.set()  # only a sign: what counts is the value the bucket stored, read back

        self.waiting[local_id] = unique
        self.ttls[unique] = names.request_ttl(timeout * names.DEADLINE_FACTOR)
        self.digests[unique] = signing.request_digest(payload)
        subscription = await self.nc.subscribe(names.decision_subject(user, unique), cb=seen)
        try:
            await self._publish(names.request_subject(user, self.agent), payload, unique, deadline, self.ttls[unique])
            value = await self._await_decision(unique, written, deadline)
        except TooLarge as exc:
            self._reply({"type": "error", "id": message.get("id"), "in_reply_to": message.get("type"),
                         "code": "line_too_long", "message": str(exc)})
            return
        finally:
            self.waiting.pop(local_id, None)
            self.ttls.pop(unique, None)
            self.digests.pop(unique, None)
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
        if value is None:
            note = "no approver answered before the deadline (NATS relay)"
            count = len(message.get("calls") or ()) if message.get("type") == "batch" else 1
            self._reply(_timeout_reply(message, local_id, note, count))
            return
        reply = dict(value["reply"])
        reply["id"] = local_id
        self._reply(reply)

    def _too_large(self, payload: bytes) -> str | None:
        """Why the server would refuse ``payload`` as too large (its ``max_payload``), or None."""
        limit = int(getattr(self.nc, "max_payload", 0) or 0)
        if limit and len(payload) > limit:
            return (f"the request is {len(payload)} bytes with its envelope, over the {limit} bytes the NATS "
                    f"server at {self.address.shown} takes (its max_payload)")
        return None

    async def _publish(self, subject: str, payload: bytes, message_id: str, deadline: float, ttl: float) -> None:
        """Publish to the stream until it is stored (the same ``Nats-Msg-Id``: stored once), or the
        deadline; the server keeps it ``ttl`` seconds at most (``Nats-TTL``).

        Our user's first request finds no stream: we say we are here (a heartbeat) and an approver
        makes it. What can never be stored fails at once: :class:`TooLarge` for a payload over the
        server's limit, :class:`~desktop_approver.client.errors.QuotaExceeded` for a stream at its
        limits, :class:`ApproverUnavailable` for a stream that refuses it or a closed connection.
        """
        import nats

        joined: float | None = None
        while True:
            try:
                await self.js.publish(subject, payload, headers={names.MSG_ID_HEADER: message_id}, msg_ttl=ttl)
                return
            except (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError):
                now = time.monotonic()
                joined = now if joined is None else joined
                if now - joined > JOIN_WAIT or now >= deadline:
                    raise ApproverUnavailable(f"no approver has set up the relay for NATS user {self.address.user} "
                                              f"on {self.address.shown} (no stream takes {subject})") from None
                await self._say_alive(join=True)
                await asyncio.sleep(0.1 if now - joined < 1 else 0.5)
            except nats.errors.MaxPayloadError:
                raise TooLarge(self._too_large(payload) or f"the request is {len(payload)} bytes with its "
                               f"envelope, more than the NATS server at {self.address.shown} takes") from None
            except (nats.errors.ConnectionClosedError, nats.errors.BadSubjectError) as exc:
                raise ApproverUnavailable(f"the NATS relay cannot publish to {self.address.shown}: "
                                          f"{_reason(exc)}") from None
            except nats.js.errors.APIError as exc:
                if any(limit in str(exc.description or "") for limit in STREAM_LIMITS):  # not passing: said at once
                    await self._say_alive(full=True)
                    raise QuotaExceeded(self.address.user, f"the server at {self.address.shown} refused to store "
                                        f"the request ({exc.description}): too many of this user's requests "
                                        "wait there") from None
                if not isinstance(exc, (nats.js.errors.ServiceUnavailableError, nats.js.errors.ServerError)):
                    raise ApproverUnavailable(f"the NATS server at {self.address.shown} refused to store the "
                                              f"request: {_reason(exc)}") from None
                if time.monotonic() >= deadline:
                    raise ApproverUnavailable(f"the NATS server at {self.address.shown} did not store the request "
                                              f"before its deadline: {_reason(exc)}") from None
                await asyncio.sleep(0.25)
            except (TimeoutError, nats.errors.Error, OSError) as exc:
                if time.monotonic() >= deadline:
                    raise ApproverUnavailable(f"the NATS server at {self.address.shown} did not store the request "
                                              f"before its deadline: {_reason(exc)}") from None
                log.debug("publish of %s not stored yet (%s): again", message_id, _reason(exc))
                await asyncio.sleep(0.25)

    async def _await_decision(self, unique: str, written: asyncio.Event, deadline: float) -> dict[str, Any] | None:
        """The decision stored for ``unique``; None at the deadline (no approver wrote one in time).

        A message on the key's subject only says a value was written: the decision is the value the
        bucket stored, read back by direct get, and only if it answers this very request (a put the
        bucket refused, or anything a reply subject sent there, is no decision)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.reconnected.clear()
            nudged = [asyncio.ensure_future(written.wait()), asyncio.ensure_future(self.reconnected.wait())]
            try:
                await asyncio.wait(nudged, timeout=min(left, RECHECK_SECONDS), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in nudged:
                    waiting.cancel()
            if written.is_set():
                written.clear()
                value = await self._get_stored(unique, deadline)
            else:
                value = await self._get(unique)
            if value is not None:
                return value
        value = await self._get(unique)  # the last word: it may have come while we were away
        if value is not None:
            return value
        if not self.nc.is_connected:
            raise ApproverUnavailable(f"the NATS server at {self.address.shown} was not reachable before the "
                                      "request's deadline")
        return None

    async def _get_stored(self, unique: str, deadline: float) -> dict[str, Any] | None:
        """After a write was seen: its value once the bucket has it (a subscriber may hear of a put a
        moment before the stream stored it, or of one the stream refused: then None, in a second)."""
        for pause in STORED_PAUSES:
            if (value := await self._get(unique)) is not None:
                return value
            if time.monotonic() + pause >= deadline:
                break
            await asyncio.sleep(pause)
        return None

    async def _get(self, unique: str) -> dict[str, Any] | None:
        """The decision by direct get (None: none yet, none that answers this request, or the server
        is not reachable now)."""
        import nats

        try:
            msg = await self.nc.request(names.direct_get_subject(self.address.user, unique), b"",
                                        timeout=PUBLISH_TIMEOUT)
        except (TimeoutError, nats.errors.Error, OSError) as exc:
            log.debug("direct get of %s failed: %s", unique, _reason(exc))
            return None
        if not msg.data:  # a status message: 404, no such key yet
            return None
        try:
            value = names.decision_for(msg.data, unique)
            if self.address.approvers:  # paired: only what a paired approver signed for this key counts
                signing.check(names.decision_key(self.address.user, unique), value, self.address.approvers)
                # and an allow answers the very bytes this agent published, not a request changed on the way
                signing.check_request(value, self.digests.get(unique, ""))
            return value
        except ValueError as exc:  # not a decision: we keep waiting, and deny at the deadline
            log.warning("ignored a value on the relay's key for %s that is no decision for it: %s", unique, exc)
            return None

    async def _publish_cancel(self, unique: str) -> None:
        envelope = {"relay": names.RELAY_VERSION, "id": unique, "client": self.client, "sent_at": time.time(),
                    "message": {"v": wire.PROTOCOL_VERSION, "type": "cancel", "id": unique}}
        await self._publish(names.request_subject(self.address.user, self.agent), names.encode(envelope),
                            f"{unique}-cancel", time.monotonic() + PUBLISH_TIMEOUT * 2,
                            self.ttls.get(unique, NOTICE_TTL))  # kept as long as its request

    async def _tell(self, message: dict[str, Any]) -> None:
        """A notice or end of session, for every approver; answered once the stream stored it."""
        unique = uuid.uuid4().hex
        envelope = {"relay": names.RELAY_VERSION, "id": unique, "client": self.client, "sent_at": time.time(),
                    "message": {**message, "id": unique}}
        payload = names.encode(envelope)
        try:
            if (too_large := self._too_large(payload)) is not None:
                raise TooLarge(too_large)
            await self._publish(names.request_subject(self.address.user, self.agent), payload, unique,
                                time.monotonic() + PUBLISH_TIMEOUT * 3, NOTICE_TTL)
        except TooLarge as exc:
            self._reply({"type": "error", "id": message.get("id"), "in_reply_to": message.get("type"),
                         "code": "line_too_long", "message": str(exc)})
            return
        if message.get("type") == "notice":
            self._reply({"type": "noticed", "id": message.get("id")})
        else:  # each approver forgets on its own; none answers for the others
            self._reply({"type": "session_ended", "id": message.get("id"), "forgotten": 0})

    async def _beat(self) -> None:
        """While requests wait: say so, so the approvers can tell a live agent from a dead one."""
        while True:
            if self.waiting and self.nc.is_connected:
                await self._say_alive()
            await asyncio.sleep(HEARTBEAT_SECONDS)

    async def _say_alive(self, *, join: bool = False, full: bool = False) -> None:
        """A heartbeat: the ids we wait for; ``join``: our user needs its stream; ``full``: the server
        refused us at our quota (the approvers check it on the server and tell the person)."""
        ids = sorted(self.waiting.values())
        for start in range(0, max(len(ids), 1), names.HEARTBEAT_IDS):  # each under the approvers' size limit
            beat: dict[str, Any] = {"relay": names.RELAY_VERSION, "ids": ids[start:start + names.HEARTBEAT_IDS]}
            if join:
                beat["join"] = True
            if full:
                beat["full"] = True
            with contextlib.suppress(Exception):
                await self.nc.publish(names.alive_subject(self.address.user, self.agent), names.encode(beat))

    # -- NATS callbacks --------------------------------------------------------------------------

    async def _error(self, error: Exception) -> None:
        text = self.last_error = _reason(error)
        if "permissions violation" in text.lower() or "authorization" in text.lower():
            self._fail(ApproverUnavailable(f"the NATS server at {self.address.shown} refused user "
                                           f"{self.address.user!r}: {text}"))
        else:
            log.debug("NATS: %s", text)

    async def _reconnected(self) -> None:
        log.debug("reconnected %r", self)
        self.reconnected.set()

    async def _disconnected(self) -> None:
        log.debug("disconnected %r", self)


class TooLarge(Exception):
    """A message the NATS server would never take (over its ``max_payload``): answered ``line_too_long``
    at once, as the app answers a line over its limit, never retried until the deadline."""


def _timeout_reply(message: dict[str, Any], local_id: str, note: str, count: int) -> dict[str, Any]:
    """The deny by ``timeout`` the approver writes at the same deadline."""
    decision = {"decision": "deny", "decided_by": "timeout", "note": note}
    if message.get("type") == "batch":
        return {"type": "batch_decision", "id": local_id,
                "decisions": [{**decision, "index": index} for index in range(count)]}
    return {"type": "decision", "id": local_id, **decision}


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


# -- the transport the clients use ------------------------------------------------------------------


class RelayTransport:
    """``Client(url="nats://host:4222")``: the app's protocol over NATS (see the module docstring)."""

    def __init__(self, address: RelayAddress) -> None:
        self.relay = address

    @property
    def address(self) -> str:
        return self.relay.shown

    def __repr__(self) -> str:
        return f"RelayTransport({self.relay.shown!r}, user={self.relay.user!r})"

    def connect(self, timeout: float) -> ThreadedConnection:
        connection = ThreadedConnection(self.relay)
        connection.open(timeout)
        return connection

    async def connect_async(self, timeout: float) -> LoopConnection:
        connection = LoopConnection(self.relay)
        await connection.link.open(timeout)
        return connection


class LoopConnection:
    """For :class:`~desktop_approver.client.async_client.AsyncClient`: the link on the caller's loop."""

    def __init__(self, address: RelayAddress) -> None:
        self._incoming: asyncio.Queue[bytes | ApproverError] = asyncio.Queue()
        self.link = AgentLink(address, self._incoming.put_nowait)
        self._closing = False
        self._closed: asyncio.Task[None] | None = None

    def write(self, data: bytes) -> None:
        self.link.feed(data)

    async def drain(self) -> None:
        return None

    async def read(self) -> bytes:
        if self._closing:
            return b""
        item = await self._incoming.get()
        if isinstance(item, ApproverError):
            raise item
        return item

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._incoming.put_nowait(b"")
            self._closed = asyncio.get_running_loop().create_task(self.link.close())
            _keep(self._closed)

    async def wait_closed(self) -> None:
        """Until the link has said goodbye (its waiting requests cancelled) and closed its NATS
        connection: an ``asyncio.run`` that ends right after leaves nothing of it behind."""
        if self._closed is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._closed), PUBLISH_TIMEOUT * 3)


_kept: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    """Hold a fire-and-forget task until it ends (the loop keeps only weak references)."""
    _kept.add(task)
    task.add_done_callback(_kept.discard)


class ThreadedConnection:
    """For the blocking :class:`~desktop_approver.client.Client`: the link on a loop of its own, in a thread."""

    def __init__(self, address: RelayAddress) -> None:
        self._incoming: queue.Queue[bytes | ApproverError] = queue.Queue()
        self.loop = asyncio.new_event_loop()
        self.link = AgentLink(address, self._incoming.put)
        self._thread = threading.Thread(target=self._run, name="desktop-approver-relay", daemon=True)
        self._closed = False
        self._ended = False
        # A client the agent never closes is closed before the interpreter stops its threads (its
        # waiting requests cancelled, its connection closed), never from a half torn-down loop.
        atexit.register(self.close)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def open(self, timeout: float) -> None:
        self._thread.start()
        try:
            opening = asyncio.run_coroutine_threadsafe(self.link.open(timeout), self.loop)
            opening.result(max(timeout, CONNECT_TIMEOUT) + 1)
        except BaseException as exc:
            self.close()
            if isinstance(exc, ApproverError):
                raise
            raise ApproverUnavailable(f"desktop-approver's NATS server did not answer: {_reason(exc)}") from None

    def send(self, data: bytes) -> None:
        if self._closed:
            raise ApproverUnavailable("the NATS relay connection is closed")
        self.loop.call_soon_threadsafe(self.link.feed, data)

    def receive(self, timeout: float) -> bytes:
        if self._ended:
            return b""
        try:
            item = self._incoming.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if isinstance(item, ApproverError):
            self._ended = True
            raise item
        return item

    def finished(self) -> bool:
        return self._closed or self._ended or self.link.failed is not None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self.link.close(), self.loop).result(PUBLISH_TIMEOUT * 3)
            with contextlib.suppress(RuntimeError):  # the loop already closed
                self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(PUBLISH_TIMEOUT)
        if not self._thread.is_alive() and not self.loop.is_running():
            self.loop.close()
