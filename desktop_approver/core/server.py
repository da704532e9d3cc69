"""The unix-socket server: connections in, validated messages to the broker, answers out.

Security: the socket sits in a 0700 directory, is created 0600, and every connection's peer
credentials are checked (a different uid is refused before a byte is read). Nothing a client
can send decides anything: requests only ever *ask*. A client that disconnects cancels its
requests, which makes their dialogs disappear.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from .. import __version__, wire
from ..paths import ensure_private_dir
from . import activation, models
from .broker import Broker
from .peercred import PeerCredentials, peer_credentials, process_exe
from .protocol import Refusal, decode, encode
from .tickets import Identity, Verdict

log = logging.getLogger(__name__)
DEFAULT_MAX_PENDING_PER_CLIENT = 32
READ_CHUNK = 65536


class AlreadyRunning(RuntimeError):
    """Another desktop-approver answers on this socket."""


TokenCheck = Callable[[str | None], bool]


class Connection:
    """One client connection's state: who it is and what it is waiting for."""

    def __init__(self, peer: PeerCredentials, writer: asyncio.StreamWriter) -> None:
        self.peer = peer
        self.writer = writer
        self.identity = Identity(peer_pid=peer.pid, peer_uid=peer.uid, peer_exe=process_exe(peer.pid))
        self.authenticated = False
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def send(self, payload: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(payload)


class ApproverServer:
    def __init__(self, broker: Broker, socket_path: Path, *,
                 max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT,
                 token_check: TokenCheck | None = None) -> None:
        self.broker = broker
        self.socket_path = Path(socket_path)
        self.max_pending_per_client = max_pending_per_client
        self.token_check = token_check
        self.started = time.time()
        self._server: asyncio.AbstractServer | None = None
        self.activated = False
        """True when a service manager passed the listening socket: it owns the file, we never unlink it."""
        self._connections: set[Connection] = set()
        self._pending_by_peer: Counter[int | None] = Counter()

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
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
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            for request_id in list(connection.tasks):
                connection.send(encode(models.ErrorMessage(id=request_id, code="shutting_down",
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
        except (ConnectionRefusedError, FileNotFoundError, asyncio.TimeoutError):
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
            self.broker.audit.record_event("refused", "unauthorized", f"no peer credentials: {exc}")
            writer.close()
            return
        if peer.uid != os.getuid():
            self.broker.audit.record_event("refused", "unauthorized", "peer belongs to another user",
                                           peer.pid, peer.uid)
            writer.write(encode(models.ErrorMessage(code="unauthorized", message="this socket serves its own user only")))
            writer.close()
            return
        connection = Connection(peer, writer)
        connection.authenticated = self.token_check is None
        self._connections.add(connection)
        framer = wire.LineFramer()
        try:
            while data := await reader.read(READ_CHUNK):
                for line in framer.feed(data):
                    self._handle_line(connection, line)
                    if writer.is_closing():
                        return
        except (ConnectionError, OSError):
            pass
        finally:
            self._connections.discard(connection)
            for task in connection.tasks.values():
                task.cancel()  # the client is gone: its dialogs go away, nobody else gets its answer
            writer.close()

    def _handle_line(self, connection: Connection, line: bytes | wire.Oversized) -> None:
        message = decode(line)
        if isinstance(message, Refusal):
            self._refuse(connection, message)
            return
        if isinstance(message, models.Hello):
            self._hello(connection, message)
            return
        if not connection.authenticated:
            self._refuse(connection, Refusal("unauthorized", "a valid token is required: send it in hello",
                                             getattr(message, "id", None)))
            return
        if isinstance(message, (models.Request, models.Batch)):
            self._start_request(connection, message)
        elif isinstance(message, models.Cancel):
            task = connection.tasks.get(message.id)
            if task is None:
                self._refuse(connection, Refusal("unknown_id", f"no pending request {message.id!r}", message.id))
            else:
                task.cancel()
        elif isinstance(message, models.Status):
            connection.send(encode(self._status(message.id)))
        elif isinstance(message, models.EndSession):
            forgotten = self.broker.memory.forget_session(message.session)
            connection.send(encode(models.SessionEnded(id=message.id, forgotten=forgotten)))
        elif isinstance(message, models.ListSessions):
            entries = [models.MemoryEntryInfo(**entry.as_dict()) for entry in self.broker.memory.entries()]
            connection.send(encode(models.SessionsReply(id=message.id, entries=entries)))
        elif isinstance(message, models.Revoke):
            count = self.broker.memory.revoke(session=message.session, tool=message.tool)
            self.broker.audit.record_event("revoke", None, f"session={message.session} tool={message.tool} count={count}",
                                           connection.peer.pid, connection.peer.uid)
            connection.send(encode(models.Revoked(id=message.id, count=count)))

    def _refuse(self, connection: Connection, refusal: Refusal) -> None:
        self.broker.audit.record_event("refused", refusal.code, refusal.message, connection.peer.pid, connection.peer.uid)
        connection.send(encode(refusal.reply()))

    def _hello(self, connection: Connection, hello: models.Hello) -> None:
        if self.token_check is not None:
            if not self.token_check(hello.token):
                self._refuse(connection, Refusal("unauthorized", "missing or wrong token"))
                connection.writer.close()
                return
            connection.authenticated = True
        info = hello.client
        connection.identity = Identity(agent=info.agent, pid=info.pid, cwd=info.cwd, host=info.host,
                                       git_branch=info.git_branch, peer_pid=connection.peer.pid,
                                       peer_uid=connection.peer.uid, peer_exe=connection.identity.peer_exe)
        connection.send(encode(models.Welcome(version=__version__, default_timeout=self.broker.default_timeout,
                                              max_line_bytes=wire.MAX_LINE_BYTES,
                                              peer={"pid": connection.peer.pid, "uid": connection.peer.uid})))

    def _start_request(self, connection: Connection, message: models.Request | models.Batch) -> None:
        if message.id in connection.tasks:
            self._refuse(connection, Refusal("duplicate_id", f"request id {message.id!r} is already pending", message.id))
            return
        peer_key = connection.peer.pid
        if self._pending_by_peer[peer_key] >= self.max_pending_per_client:
            self._refuse(connection, Refusal(
                "too_many_pending", f"this client already has {self.max_pending_per_client} requests waiting",
                message.id))
            return
        calls = _calls_of(message)
        session = message.session or f"{connection.identity.label}-{connection.peer.pid}"
        try:
            prepared = self.broker.prepare(connection.identity, session, calls)
            answered = self.broker.answer_now(connection.identity, session, message.id, prepared)
        except Exception as exc:  # never leave an agent hanging, never take the app down
            log.exception("request %s failed", message.id)
            connection.send(encode(models.ErrorMessage(id=message.id, code="internal", message=str(exc) or "internal error")))
            return
        if answered is not None:  # a rule, the mode or session memory: answered in this very step
            self._send_verdicts(connection, message, answered)
            return
        self._pending_by_peer[peer_key] += 1
        task = asyncio.ensure_future(self._answer(connection, message, calls, session, prepared))
        connection.tasks[message.id] = task

        def finished(done: asyncio.Task[None]) -> None:
            connection.tasks.pop(message.id, None)
            self._pending_by_peer[peer_key] -= 1
            if self._pending_by_peer[peer_key] <= 0:
                del self._pending_by_peer[peer_key]
            if done.cancelled():
                # Answered here, not in _answer: a task cancelled before its first step (request
                # and cancel in one read) never runs _answer's code. send() skips closed writers,
                # so a client that disconnected, or an app shutting down, sends nothing.
                connection.send(encode(models.DecisionMessage(
                    id=message.id, decision="deny", decided_by="cancelled", note="cancelled")))

        task.add_done_callback(finished)

    async def _answer(self, connection: Connection, message: models.Request | models.Batch,
                      calls: list[dict[str, Any]], session: str, prepared: Any) -> None:
        try:
            verdicts = await self.broker.submit(connection.identity, session, message.id,
                                                "request" if isinstance(message, models.Request) else "batch",
                                                calls, message.timeout, prepared=prepared)
        except Exception as exc:  # never leave an agent hanging, never take the app down
            log.exception("request %s failed", message.id)
            connection.send(encode(models.ErrorMessage(id=message.id, code="internal", message=str(exc) or "internal error")))
            return
        self._send_verdicts(connection, message, verdicts)

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
