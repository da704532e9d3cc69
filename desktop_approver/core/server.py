"""The unix-socket server: connections in, validated messages to the broker, answers out.

Security: the socket sits in a 0700 directory, is created 0600, and every connection's peer
credentials are checked (a different uid is refused before a byte is read). Nothing a client
can send decides anything: requests only ever *ask*. A client that disconnects cancels its
requests, which makes their dialogs disappear; one that only half-closes (shuts down its
writing side) still gets its answers, then the connection is closed.

Resources (``core/limits.py``): connections are capped in total and per peer process, a client
that does not read its replies is not read from, idle connections are closed, unfinished lines
share one memory budget, and refusals are rate-limited in the audit log. Each limit ends in a
typed ``error``; none takes the app down.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import select
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__, wire
from ..paths import ensure_private_dir
from . import activation, models
from .broker import Broker
from .limits import Limits, RefusalBudget
from .logsafe import printable
from .peercred import PeerCredentials, peer_credentials, process_cwd, process_exe, same_directory
from .protocol import Refusal, decode, encode
from .tickets import Identity, Verdict

log = logging.getLogger(__name__)
DEFAULT_MAX_PENDING_PER_CLIENT = 128
"""Calls of one peer process that may wait for the person at once (``too_many_pending``); counted
in calls, like ``status.pending``, and above the largest batch (100 calls)."""
READ_CHUNK = 65536
SMALL_READ = 4096
TRICKLE_PAUSE = 0.002
"""After a read of under SMALL_READ bytes that ended no line, wait this long before reading on."""
HALF_CLOSED_CHECK = 0.5
"""Seconds between checks that a half-closed client is still there (Linux tells by POLLHUP)."""


class AlreadyRunning(RuntimeError):
    """Another desktop-approver answers on this socket."""


TokenCheck = Callable[[str | None], bool]


class Connection:
    """One client connection's state: who it is and what it is waiting for."""

    def __init__(self, peer: PeerCredentials, writer: asyncio.StreamWriter) -> None:
        self.peer = peer
        self.writer = writer
        self.identity = Identity(peer_pid=peer.pid, peer_uid=peer.uid, peer_exe=process_exe(peer.pid),
                                 peer_cwd=process_cwd(peer.pid))
        self.authenticated = False
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.kinds: dict[str, str] = {}             # pending id -> "request" | "batch" (for errors about it)
        self.last_active = asyncio.get_running_loop().time()
        self.held = 0                               # bytes of an unfinished line held for this client
        self.half_closed = False
        self.idle_timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"<Connection peer={self.peer.pid} pending={len(self.tasks)} half_closed={self.half_closed}>"

    def send(self, payload: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(payload)

    def close_when_idle(self) -> None:
        """A half-closed client has had every answer: nothing more can happen on this connection."""
        if self.half_closed and not self.tasks:
            self.writer.close()

    def hung_up(self) -> bool:
        """After EOF: did the client close entirely (True) or only shut its writing side (False)?

        Linux reports a full close as POLLHUP; elsewhere EOF counts as gone (the safe reading: the
        person's dialog disappears rather than waiting for nobody).
        """
        if not sys.platform.startswith("linux"):
            return True
        sock = self.writer.get_extra_info("socket")
        try:
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLHUP)
            return any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, event in poller.poll(0))
        except (OSError, ValueError):
            return True


class ApproverServer:
    def __init__(self, broker: Broker, socket_path: Path, *,
                 max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT,
                 token_check: TokenCheck | None = None, limits: Limits | None = None) -> None:
        self.broker = broker
        self.socket_path = Path(socket_path)
        self.max_pending_per_client = max_pending_per_client
        self.token_check = token_check
        self.limits = limits or Limits()
        self.max_connections = self.limits.max_connections
        self.refusals = RefusalBudget()
        self.started = time.time()
        self._server: asyncio.AbstractServer | None = None
        self.activated = False
        """True when a service manager passed the listening socket: it owns the file, we never unlink it."""
        self._connections: set[Connection] = set()
        self._connections_by_peer: Counter[int | None] = Counter()
        self._pending_by_peer: Counter[int | None] = Counter()   # calls waiting for the person
        self._held_total = 0                                     # bytes of unfinished lines, all clients
        self._summary_timer: asyncio.TimerHandle | None = None

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self.max_connections = self.limits.connection_cap()  # below the descriptor limit: accept() never fails
        if await self._serve_activated_socket():
            return
        ensure_private_dir(self.socket_path.parent)
        await self._clear_stale_socket()
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where others can connect
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=os.fspath(self.socket_path),
                                                           limit=wire.MAX_LINE_BYTES)
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, 0o600)

    async def _serve_activated_socket(self) -> bool:
        """Serve on the socket systemd (or systemd-socket-activate) passed us, if it did."""
        sock = activation.listening_socket()
        if sock is None:
            return False
        path = activation.socket_path_of(sock)
        if path is not None:
            activation.secure_socket_file(path)
            if path != self.socket_path:
                log.warning("serving on the activated socket %s, not %s", path, self.socket_path)
            self.socket_path = path
        self.activated = True
        self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=wire.MAX_LINE_BYTES)
        log.info("serving on the socket passed by the service manager: %s", self.socket_path)
        return True

    async def close(self) -> None:
        if self._summary_timer is not None:
            self._summary_timer.cancel()
        self._write_refusal_summary()
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            for request_id in list(connection.tasks):
                connection.send(encode(models.ErrorMessage(id=request_id, code="shutting_down",
                                                           in_reply_to=connection.kinds.get(request_id),  # type: ignore[arg-type]
                                                           message="desktop-approver is shutting down")))
            for task in connection.tasks.values():
                task.cancel()
            connection.writer.close()
        if not self.activated:  # an activated socket stays: the next request starts the app again
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _clear_stale_socket(self) -> None:
        """Refuse to start beside a live app; remove a socket left behind by a crash."""
        if not os.path.lexists(self.socket_path):
            return
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(probe, os.fspath(self.socket_path)), 1.0)
        except (TimeoutError, ConnectionRefusedError, FileNotFoundError):
            pass
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
                raise
        else:
            raise AlreadyRunning(f"desktop-approver is already running (socket {self.socket_path})")
        finally:
            probe.close()
        log.info("removing stale socket %s", self.socket_path)
        self.socket_path.unlink()

    # -- connections ------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            peer = peer_credentials(sock)
        except OSError as exc:
            self._audit_refusal("unauthorized", f"no peer credentials: {exc}", None, None)
            writer.close()
            return
        if peer.uid != os.getuid():
            self._audit_refusal("unauthorized", "peer belongs to another user", peer.pid, peer.uid)
            writer.write(encode(models.ErrorMessage(code="unauthorized", message="this socket serves its own user only")))
            writer.close()
            return
        if len(self._connections) >= self.max_connections and \
                self._connections_by_peer[peer.pid] < self.limits.max_connections_per_peer:
            self._make_room()
        if len(self._connections) >= self.max_connections or \
                self._connections_by_peer[peer.pid] >= self.limits.max_connections_per_peer:
            mine = self._connections_by_peer[peer.pid]
            reason = (f"this process already has {mine} connections (at most {self.limits.max_connections_per_peer})"
                      if mine >= self.limits.max_connections_per_peer else
                      f"the app already serves {len(self._connections)} connections (at most {self.max_connections})")
            self._audit_refusal("too_many_connections", reason, peer.pid, peer.uid)
            writer.write(encode(models.ErrorMessage(code="too_many_connections", message=reason)))
            writer.close()
            return
        connection = Connection(peer, writer)
        connection.authenticated = self.token_check is None
        self._connections.add(connection)
        self._connections_by_peer[peer.pid] += 1
        writer.transport.set_write_buffer_limits(high=self.limits.max_unread_reply_bytes)
        self._arm_idle_timer(connection)
        framer = wire.LineFramer()
        try:
            while True:
                if writer.transport.get_write_buffer_size() > self.limits.max_unread_reply_bytes:
                    await writer.drain()  # back-pressure: read no more until the client reads its replies
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
                connection.last_active = asyncio.get_running_loop().time()
                complete = 0
                for line in framer.feed(data):
                    complete += 1
                    self._handle_line(connection, line)
                    if writer.is_closing():
                        return
                if not self._hold(connection, framer.buffered_bytes):
                    return
                if not complete and len(data) < SMALL_READ:
                    # A line trickling in (a byte per write) would cost a loop turn per byte: stop
                    # reading for a moment so the pieces gather in the socket, then read them at once.
                    writer.transport.pause_reading()
                    try:
                        await asyncio.sleep(TRICKLE_PAUSE)
                    finally:
                        if not writer.transport.is_closing():
                            writer.transport.resume_reading()
            if not connection.tasks or connection.hung_up():
                return
            # Half-closed: the client has said all it will say and waits for its answers.
            connection.half_closed = True
            await self._until_answered_or_gone(connection)
        except (ConnectionError, OSError):
            pass
        finally:
            self._drop(connection)

    def _make_room(self) -> None:
        """At the total cap: close the longest-idle connection with nothing pending (if any), so idle
        connections held by one party cannot lock everyone else out; its client reconnects when it
        next asks (``idle_timeout``)."""
        idle = [c for c in self._connections if not c.tasks and not c.writer.is_closing()]
        if not idle:
            return
        victim = min(idle, key=lambda c: c.last_active)
        victim.send(encode(models.ErrorMessage(
            code="idle_timeout", message="closed while idle to make room for another connection; connect again to ask")))
        self._drop(victim)

    def _drop(self, connection: Connection) -> None:
        if connection not in self._connections:
            return
        self._connections.discard(connection)
        self._connections_by_peer[connection.peer.pid] -= 1
        if self._connections_by_peer[connection.peer.pid] <= 0:
            del self._connections_by_peer[connection.peer.pid]
        self._hold(connection, 0)
        if connection.idle_timer is not None:
            connection.idle_timer.cancel()
        for task in connection.tasks.values():
            task.cancel()  # the client is gone: its dialogs go away, nobody else gets its answer
        connection.writer.close()

    async def _until_answered_or_gone(self, connection: Connection) -> None:
        """Wait while a half-closed client's requests are pending; stop early if it hangs up."""
        while connection.tasks and not connection.writer.is_closing():
            await asyncio.wait(list(connection.tasks.values()), timeout=HALF_CLOSED_CHECK)
            if connection.tasks and connection.hung_up():
                return
        await asyncio.sleep(0)  # let the last answer's done-callback write it before closing

    def _hold(self, connection: Connection, held: int) -> bool:
        """Account the client's unfinished line in the shared budget; False (closed) when over it."""
        self._held_total += held - connection.held
        connection.held = held
        if held and self._held_total > self.limits.max_unfinished_bytes:
            message = (f"the app already holds {self._held_total - held:,} bytes of unfinished lines from its clients "
                       f"(at most {self.limits.max_unfinished_bytes:,}); end each message with a newline promptly")
            self._refuse(connection, Refusal("overloaded", message))
            self._hold(connection, 0)
            connection.writer.close()
            return False
        return True

    def _arm_idle_timer(self, connection: Connection) -> None:
        loop = asyncio.get_running_loop()
        due = connection.last_active + self.limits.idle_seconds
        connection.idle_timer = loop.call_at(max(due, loop.time() + 0.001), self._check_idle, connection)

    def _check_idle(self, connection: Connection) -> None:
        if connection not in self._connections or connection.writer.is_closing():
            return
        loop = asyncio.get_running_loop()
        if connection.tasks or loop.time() - connection.last_active < self.limits.idle_seconds:
            if connection.tasks:
                connection.last_active = loop.time()  # time spent waiting for the person is not idleness
            self._arm_idle_timer(connection)
            return
        connection.send(encode(models.ErrorMessage(
            code="idle_timeout",
            message=f"closed after {self.limits.idle_seconds:g} s with nothing pending; connect again to ask")))
        connection.writer.close()

    def _handle_line(self, connection: Connection, line: bytes | wire.Oversized) -> None:
        message = decode(line)
        if isinstance(message, Refusal):
            self._refuse(connection, message)
            if not connection.authenticated:  # a client without a token gets one answer, not a conversation
                connection.writer.close()
            return
        if isinstance(message, models.Hello):
            self._hello(connection, message)
            return
        if not connection.authenticated:
            self._refuse(connection, Refusal("unauthorized", "a valid token is required: send it in hello",
                                             getattr(message, "id", None), getattr(message, "type", None)))
            connection.writer.close()
            return
        if isinstance(message, (models.Request, models.Batch)):
            self._start_request(connection, message)
        elif isinstance(message, models.Cancel):
            task = connection.tasks.get(message.id)
            if task is None:
                self._refuse(connection, Refusal("unknown_id", f"no pending request {message.id!r}", message.id,
                                                 "cancel"))
            else:
                task.cancel()
        elif isinstance(message, models.Status):
            connection.send(encode(self._status(message.id)))
        # Session memory over the socket is the asking agent's own: keyed by the agent's name from hello.
        elif isinstance(message, models.EndSession):
            forgotten = self.broker.memory.forget_session(message.session, agent=connection.identity.agent)
            connection.send(encode(models.SessionEnded(id=message.id, forgotten=forgotten)))
        elif isinstance(message, models.ListSessions):
            entries = [models.MemoryEntryInfo(**entry.as_dict())
                       for entry in self.broker.memory.entries(agent=connection.identity.agent)]
            connection.send(encode(models.SessionsReply(id=message.id, entries=entries)))
        elif isinstance(message, models.Notice):
            identity = connection.identity
            self.broker.audit.record_event("notice", message.kind, f"agent={identity.agent} {message.text}",
                                           connection.peer.pid, connection.peer.uid)
            self.broker.tell(identity, message.kind, message.text)
            connection.send(encode(models.Noticed(id=message.id)))
        elif isinstance(message, models.Revoke):
            count = self.broker.memory.revoke(session=message.session, tool=message.tool,
                                              agent=connection.identity.agent)
            self.broker.audit.record_event(
                "revoke", None, f"agent={connection.identity.agent} session={message.session} tool={message.tool} "
                f"count={count}", connection.peer.pid, connection.peer.uid)
            connection.send(encode(models.Revoked(id=message.id, count=count)))

    def _refuse(self, connection: Connection, refusal: Refusal) -> None:
        self._audit_refusal(refusal.code, refusal.message, connection.peer.pid, connection.peer.uid, refusal.id)
        connection.send(encode(refusal.reply()))

    def _audit_refusal(self, code: str, message: str, pid: int | None, uid: int | None,
                       message_id: str | None = None) -> None:
        """One audit row per refusal, within :class:`RefusalBudget`; the rest become one summary row."""
        if not self.refusals.allow():
            if self._summary_timer is None:
                self._summary_timer = asyncio.get_running_loop().call_later(1.0, self._write_refusal_summary)
            return
        self._write_refusal_summary()
        detail = f"{message} (id {message_id!r})" if message_id is not None else message
        self.broker.audit.record_event("refused", code, detail, pid, uid)

    def _write_refusal_summary(self) -> None:
        self._summary_timer = None
        count = self.refusals.take_suppressed()
        if count:
            self.broker.audit.record_event("refused", "rate_limited",
                                           f"{count} more refusals not recorded one by one (too many at once)")

    def _hello(self, connection: Connection, hello: models.Hello) -> None:
        if self.token_check is not None:
            if not self.token_check(hello.token):
                self._refuse(connection, Refusal("unauthorized", "missing or wrong token", None, "hello"))
                connection.writer.close()
                return
            connection.authenticated = True
        info = hello.client
        real_cwd = process_cwd(connection.peer.pid)  # now, not at connect: the client may have moved
        connection.identity = Identity(agent=info.agent, pid=info.pid, cwd=info.cwd, host=info.host,
                                       git_branch=info.git_branch, peer_pid=connection.peer.pid,
                                       peer_uid=connection.peer.uid, peer_exe=connection.identity.peer_exe,
                                       peer_cwd=real_cwd, cwd_agrees=same_directory(info.cwd, real_cwd))
        connection.send(encode(models.Welcome(server="desktop-approver", version=__version__,
                                              default_timeout=self.broker.default_timeout,
                                              max_line_bytes=wire.MAX_LINE_BYTES,
                                              peer={"pid": connection.peer.pid, "uid": connection.peer.uid})))

    def _start_request(self, connection: Connection, message: models.Request | models.Batch) -> None:
        if message.id in connection.tasks:
            self._refuse(connection, Refusal("duplicate_id", f"request id {message.id!r} is already pending",
                                             message.id, message.type))
            return
        calls = _calls_of(message)
        session = message.session or f"{connection.identity.label}-{connection.peer.pid}"
        try:
            prepared = self.broker.prepare(connection.identity, session, calls)
            waiting = sum(verdict is None for verdict in prepared.verdicts)
            peer_key = connection.peer.pid
            if waiting and self._pending_by_peer[peer_key] + waiting > self.max_pending_per_client:
                self._refuse(connection, Refusal(
                    "too_many_pending", f"this client already has {self._pending_by_peer[peer_key]} calls waiting for "
                    f"the person; {waiting} more would pass the limit of {self.max_pending_per_client}",
                    message.id, message.type))
                return
            answered = self.broker.answer_now(connection.identity, session, message.id, prepared)
        except Exception as exc:  # never leave an agent hanging, never take the app down
            self._internal_error(connection, message, exc)
            return
        if answered is not None:  # a rule, the mode or session memory: answered in this very step
            self._reply(connection, message, answered)
            return
        self._pending_by_peer[peer_key] += waiting
        task = asyncio.ensure_future(self._answer(connection, message, calls, session, prepared))
        connection.tasks[message.id] = task
        connection.kinds[message.id] = message.type

        def finished(done: asyncio.Task[None]) -> None:
            connection.tasks.pop(message.id, None)
            connection.kinds.pop(message.id, None)
            self._pending_by_peer[peer_key] -= waiting
            if self._pending_by_peer[peer_key] <= 0:
                del self._pending_by_peer[peer_key]
            connection.last_active = asyncio.get_running_loop().time()
            if done.cancelled():
                # Answered here, not in _answer: a task cancelled before its first step (request
                # and cancel in one read) never runs _answer's code. send() skips closed writers,
                # so a client that disconnected, or an app shutting down, sends nothing.
                self._reply(connection, message, [
                    replace(verdict, risk=risk) if verdict is not None else
                    Verdict("deny", "cancelled", note="cancelled", risk=risk)
                    for verdict, risk in zip(prepared.verdicts, prepared.risks())])
            connection.close_when_idle()

        task.add_done_callback(finished)

    async def _answer(self, connection: Connection, message: models.Request | models.Batch,
                      calls: list[dict[str, Any]], session: str, prepared: Any) -> None:
        try:
            verdicts = await self.broker.submit(connection.identity, session, message.id,
                                                "request" if isinstance(message, models.Request) else "batch",
                                                calls, message.timeout, prepared=prepared)
        except Exception as exc:  # never leave an agent hanging, never take the app down
            self._internal_error(connection, message, exc)
            return
        self._reply(connection, message, verdicts)

    def _reply(self, connection: Connection, message: models.Request | models.Batch, verdicts: list[Verdict]) -> None:
        """The verdicts as the agent's answer; if they cannot be put into one, a typed error (never silence)."""
        try:
            self._send_verdicts(connection, message, verdicts)
        except Exception as exc:
            self._internal_error(connection, message, exc)

    def _internal_error(self, connection: Connection, message: models.Request | models.Batch, exc: Exception) -> None:
        """Our failure, not the client's: logged with its traceback, audited, answered (a deny)."""
        log.exception("request %s failed", printable(message.id))
        text = str(exc) or type(exc).__name__
        self.broker.audit.record_event("refused", "internal", f"{message.type} {message.id!r}: {text}",
                                       connection.peer.pid, connection.peer.uid)
        connection.send(encode(models.ErrorMessage(id=message.id, code="internal", in_reply_to=message.type,
                                                   message=f"desktop-approver failed: {text}")))

    @staticmethod
    def _send_verdicts(connection: Connection, message: models.Request | models.Batch, verdicts: list[Verdict]) -> None:
        if isinstance(message, models.Request):
            connection.send(encode(models.DecisionMessage(id=message.id, **_verdict_fields(verdicts[0]))))
        else:
            connection.send(encode(models.BatchDecision(id=message.id, decisions=[
                models.CallDecision(index=i, **_verdict_fields(v)) for i, v in enumerate(verdicts)])))

    def _status(self, status_id: str) -> models.StatusReply:
        state = self.broker.status()
        return models.StatusReply(id=status_id, version=__version__, pid=os.getpid(), socket=os.fspath(self.socket_path),
                                  pending=state["pending"], mode=state["mode"], mode_until=state["mode_until"],
                                  sessions=state["sessions"], uptime=time.time() - self.started)


def _calls_of(message: models.Request | models.Batch) -> list[dict[str, Any]]:
    """The calls as plain dicts for the broker, hints by their field names."""
    models_ = message.calls() if isinstance(message, models.Request) else message.calls
    calls = [call.model_dump(exclude_none=True) for call in models_]
    for call, model in zip(calls, models_):
        if model.hints is not None:
            call["hints"] = model.hints.as_dict()
    return calls


def _verdict_fields(verdict: Verdict) -> dict[str, Any]:
    return {"decision": verdict.decision, "decided_by": verdict.decided_by, "note": verdict.note,
            "rule": verdict.rule, "blocked": verdict.blocked, "updated_args": verdict.updated_args,
            "risk": verdict.risk}
