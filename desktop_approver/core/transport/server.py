"""The unix-socket server: the socket file, who is on the other end, and the bytes in and out.

Security: the socket sits in a 0700 directory, is created 0600, and every connection's peer
credentials are checked (a different uid is refused before a byte is read). Nothing a client
can send decides anything: requests only ever *ask*. A client that disconnects cancels its
requests, which makes their dialogs disappear; one that only half-closes (shuts down its
writing side) still gets its answers, then the connection is closed.

What the lines *mean* is the protocol's business (``core/transport/connection.py``): this module reads,
frames and hands each line to the connection's :class:`~desktop_approver.core.transport.connection.Connection`,
and writes what it sends.

Resources (``core/transport/limits.py``): connections are capped in total and per peer process, a client
that does not read its replies is not read from, idle connections are closed, unfinished lines
share one memory budget, and refusals are rate-limited in the audit log. Each limit ends in a
typed ``error``; none takes the app down. Closing the server closes every connection and waits
until each is closed.
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
from collections import Counter
from pathlib import Path
from typing import cast

from ... import wire
from ...paths import ensure_private_dir
from ..decisions.broker import Broker
from ..messages import models
from ..messages.protocol import Refusal, encode
from . import activation
from .connection import DEFAULT_MAX_PENDING_PER_CLIENT as DEFAULT_MAX_PENDING_PER_CLIENT
from .connection import Connection, Context, Send
from .connection import TokenCheck as TokenCheck
from .limits import Limits, RefusalBudget
from .peercred import PeerCredentials, peer_credentials

log = logging.getLogger(__name__)
READ_CHUNK = 65536
SMALL_READ = 4096
TRICKLE_PAUSE = 0.002
"""After a read of under SMALL_READ bytes that ended no line, wait this long before reading on."""
HALF_CLOSED_CHECK = 0.5
"""Seconds between checks that a half-closed client is still there (Linux tells by POLLHUP)."""
CLOSE_WAIT = 2.0
"""Seconds :meth:`ApproverServer.close` waits for the connections to close before dropping unsent replies."""
ACCEPT_TURNS = 3
"""Loop turns from asyncio accepting a connection to calling back :meth:`ApproverServer._connected` (two)."""
LINGER = 30.0
"""Seconds a closed connection may take to deliver its last replies to a slow reader before they are dropped."""


class AlreadyRunning(RuntimeError):
    """Another desktop-approver answers on this socket."""


class _Link:
    """One connection as the transport sees it: its stream, idle timer and unfinished-line bytes,
    beside the protocol object that gives its lines meaning."""

    def __init__(self, writer: asyncio.StreamWriter, connection: Connection) -> None:
        self.writer = writer
        self.connection = connection
        self.held = 0                               # bytes of an unfinished line held for this client
        self.idle_timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"<_Link {self.connection!r} held={self.held} closing={self.writer.is_closing()}>"

    @property
    def peer(self) -> PeerCredentials:
        return self.connection.peer

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


def _sender(writer: asyncio.StreamWriter) -> Send:
    def send(payload: bytes) -> None:
        if not writer.is_closing():
            writer.write(payload)

    return send


class ApproverServer:
    def __init__(self, broker: Broker, socket_path: Path, *,
                 max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT,
                 token_check: TokenCheck | None = None, limits: Limits | None = None) -> None:
        self.broker = broker
        self.socket_path = Path(socket_path)
        self.limits = limits or Limits()
        self.max_connections = self.limits.max_connections
        self.context = Context(broker, token_check=token_check, max_pending_per_client=max_pending_per_client,
                               socket_path=os.fspath(self.socket_path))
        self._server: asyncio.Server | None = None
        self.activated = False
        """True when a service manager passed the listening socket: it owns the file, we never unlink it."""
        self._connections: set[_Link] = set()
        self._connections_by_peer: Counter[int | None] = Counter()
        self._held_total = 0                                     # bytes of unfinished lines, all clients
        self._readers: dict[asyncio.Task[None], asyncio.StreamWriter] = {}  # each connection's read loop
        self._closing = False
        self._started_on: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (f"<ApproverServer {self.socket_path} connections={len(self._connections)} "
                f"listening={self._server is not None and self._server.is_serving()}"
                f"{' activated' if self.activated else ''}>")

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        """The loop :meth:`start` ran on, which serves every connection."""
        assert self._started_on is not None, "the server has not started"
        return self._started_on

    # The settings the protocol keeps, under the names they had when it lived here.

    @property
    def token_check(self) -> TokenCheck | None:
        return self.context.token_check

    @property
    def max_pending_per_client(self) -> int:
        return self.context.max_pending_per_client

    @property
    def refusals(self) -> RefusalBudget:
        return self.context.refusals

    def _write_refusal_summary(self) -> None:
        self.context.write_refusal_summary()

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self._started_on = asyncio.get_running_loop()
        self.max_connections = self.limits.connection_cap()  # below the descriptor limit: accept() never fails
        if await self._serve_activated_socket():
            return
        ensure_private_dir(self.socket_path.parent)
        await self._clear_stale_socket()
        old_umask = os.umask(0o177)  # the socket is born 0600: no window where others can connect
        try:
            self._server = await asyncio.start_unix_server(self._connected, path=os.fspath(self.socket_path),
                                                           limit=wire.MAX_LINE_BYTES)
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, 0o600)
        log.debug("listening on %s", self.socket_path)

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
            self.context.socket_path = os.fspath(path)
        self.activated = True
        self._server = await asyncio.start_unix_server(self._connected, sock=sock, limit=wire.MAX_LINE_BYTES)
        log.info("serving on the socket passed by the service manager: %s", self.socket_path)
        return True

    async def close(self) -> None:
        """Stop listening, tell waiting clients ``shutting_down``, close every connection and wait for it."""
        self._closing = True
        self.context.close()
        if self._server is not None:
            await self._stop_listening(self._server)
        withdrawn = [task for link in self._connections for task in link.connection.tasks.values()]
        for link in list(self._connections):
            link.connection.shutdown()
        if not self.activated:  # an activated socket stays: the next request starts the app again
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
        waits = [*withdrawn, *self._readers]
        if waits:
            _done, late = await asyncio.wait(waits, timeout=CLOSE_WAIT)
            if late:  # a client that reads nothing keeps its replies in our buffer: drop them now
                log.warning("%d connections did not close within %g s; aborting them", len(late), CLOSE_WAIT)
                for writer in self._readers.values():
                    writer.transport.abort()
                await asyncio.wait(late, timeout=CLOSE_WAIT)
        if self._server is not None:
            await self._server.wait_closed()
        log.debug("closed %r", self)

    @staticmethod
    async def _stop_listening(server: asyncio.Server) -> None:
        """Accept no more connections, let the accepts under way finish, then close the listening socket.

        Closing it while asyncio is between accepting a connection and attaching its transport trips an
        assertion in asyncio and leaks the accepted socket (CPython gh-109564); the turns in between also
        bring every connection accepted so far to :meth:`_connected`, so :meth:`close` waits for it.
        """
        loop = asyncio.get_running_loop()
        for sock in server.sockets:
            loop.remove_reader(sock.fileno())
        for _ in range(ACCEPT_TURNS):
            await asyncio.sleep(0)
        server.close()

    async def _closed(self, writer: asyncio.StreamWriter, linger: float) -> None:
        """Close ``writer`` and wait until it is; replies still unread after ``linger`` seconds are dropped.

        Only futures are awaited here, nothing that asks for the running loop: under qasync, Qt may run
        this step while processing its own events, when asyncio has no running loop to give.
        """
        if not writer.is_closing():
            writer.close()
        give_up = self._loop.call_later(linger, writer.transport.abort)
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        finally:
            give_up.cancel()

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

    def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """asyncio's callback for a new connection, run as it is made: its read loop is known from the
        first moment, so :meth:`close` waits for a connection made just before it too."""
        task = self._loop.create_task(self._serve(reader, writer))
        self._readers[task] = writer
        task.add_done_callback(self._served)

    def _served(self, task: asyncio.Task[None]) -> None:
        del self._readers[task]
        if not task.cancelled() and task.exception() is not None:
            log.error("a connection's read loop failed", exc_info=task.exception())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            link = self._accept(writer) if not self._closing else None
            if link is not None:
                await self._read(link, reader)
        finally:
            await self._closed(writer, LINGER)

    def _accept(self, writer: asyncio.StreamWriter) -> _Link | None:
        """The connection of a peer of ours within the limits, or None (refused, with a typed error)."""
        sock = writer.get_extra_info("socket")
        try:
            peer = peer_credentials(sock)
        except OSError as exc:
            self.context.audit_refusal("unauthorized", f"no peer credentials: {exc}", None, None)
            log.debug("connection refused: no peer credentials (%s)", exc)
            return None
        if peer.uid != os.getuid():
            self.context.audit_refusal("unauthorized", "peer belongs to another user", peer.pid, peer.uid)
            writer.write(encode(models.ErrorMessage(code="unauthorized",
                                                    message="this socket serves its own user only")))
            log.debug("connection refused: pid %s, uid %s is another user", peer.pid, peer.uid)
            return None
        per_peer = self.limits.max_connections_per_peer
        if len(self._connections) >= self.max_connections and self._connections_by_peer[peer.pid] < per_peer:
            self._make_room()
        if len(self._connections) >= self.max_connections or self._connections_by_peer[peer.pid] >= per_peer:
            mine = self._connections_by_peer[peer.pid]
            reason = (f"this process already has {mine} connections (at most {per_peer})" if mine >= per_peer else
                      f"the app already serves {len(self._connections)} connections (at most {self.max_connections})")
            self.context.audit_refusal("too_many_connections", reason, peer.pid, peer.uid)
            writer.write(encode(models.ErrorMessage(code="too_many_connections", message=reason)))
            log.debug("connection refused: pid %s: %s", peer.pid, reason)
            return None
        link = _Link(writer, Connection(self.context, peer, _sender(writer), writer.close))
        self._connections.add(link)
        self._connections_by_peer[peer.pid] += 1
        writer.transport.set_write_buffer_limits(high=self.limits.max_unread_reply_bytes)
        self._arm_idle_timer(link)
        log.debug("connection opened: pid %s, uid %s (%d open)", peer.pid, peer.uid, len(self._connections))
        return link

    async def _read(self, link: _Link, reader: asyncio.StreamReader) -> None:
        """The read loop: bytes in, lines to the connection, until EOF, a hang-up or a limit."""
        writer, connection = link.writer, link.connection
        transport = cast(asyncio.Transport, writer.transport)  # a socket's: it reads as well as writes
        framer = wire.LineFramer()
        reason = "closed by the app"
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
                    connection.received(line)
                    if connection.closed:
                        return
                if not self._hold(link, framer.buffered_bytes):
                    return
                if not complete and len(data) < SMALL_READ:
                    # A line trickling in (a byte per write) would cost a loop turn per byte: stop
                    # reading for a moment so the pieces gather in the socket, then read them at once.
                    transport.pause_reading()
                    try:
                        await asyncio.sleep(TRICKLE_PAUSE)
                    finally:
                        if not transport.is_closing():
                            transport.resume_reading()
            reason = "the client hung up"
            if not connection.tasks or link.hung_up():
                return
            # Half-closed: the client has said all it will say and waits for its answers.
            connection.half_closed = True
            reason = "half-closed and answered"
            await self._until_answered_or_gone(link)
        except (ConnectionError, OSError) as exc:
            reason = f"connection error: {exc}"
        finally:
            self._drop(link, reason)

    def _make_room(self) -> None:
        """At the total cap: close the longest-idle connection with nothing pending (if any), so idle
        connections held by one party cannot lock everyone else out; its client reconnects when it
        next asks (``idle_timeout``)."""
        idle = [link for link in self._connections if not link.connection.tasks and not link.connection.closed]
        if not idle:
            return
        victim = min(idle, key=lambda link: link.connection.last_active)
        victim.connection.send(encode(models.ErrorMessage(code="idle_timeout", message=(
            "closed while idle to make room for another connection; connect again to ask"))))
        self._drop(victim, "closed to make room for another connection")

    def _drop(self, link: _Link, reason: str) -> None:
        if link not in self._connections:
            return
        self._connections.discard(link)
        pid = link.peer.pid
        self._connections_by_peer[pid] -= 1
        if self._connections_by_peer[pid] <= 0:
            del self._connections_by_peer[pid]
        self._hold(link, 0)
        if link.idle_timer is not None:
            link.idle_timer.cancel()
        log.debug("connection closed: pid %s, uid %s, %d pending (%s)", pid, link.peer.uid,
                  len(link.connection.tasks), reason)
        link.connection.connection_lost()  # the client is gone: its dialogs go away, nobody else gets its answer

    async def _until_answered_or_gone(self, link: _Link) -> None:
        """Wait while a half-closed client's requests are pending; stop early if it hangs up."""
        connection = link.connection
        while connection.tasks and not connection.closed:
            await asyncio.wait(list(connection.tasks.values()), timeout=HALF_CLOSED_CHECK)
            if connection.tasks and link.hung_up():
                return
        await asyncio.sleep(0)  # let the last answer's done-callback write it before closing

    def _hold(self, link: _Link, held: int) -> bool:
        """Account the client's unfinished line in the shared budget; False (closed) when over it."""
        self._held_total += held - link.held
        link.held = held
        if held and self._held_total > self.limits.max_unfinished_bytes:
            message = (f"the app already holds {self._held_total - held:,} bytes of unfinished lines from its clients "
                       f"(at most {self.limits.max_unfinished_bytes:,}); end each message with a newline promptly")
            link.connection.refuse(Refusal("overloaded", message))
            self._hold(link, 0)
            link.connection.close()
            return False
        return True

    def _arm_idle_timer(self, link: _Link) -> None:
        loop = asyncio.get_running_loop()
        due = link.connection.last_active + self.limits.idle_seconds
        link.idle_timer = loop.call_at(max(due, loop.time() + 0.001), self._check_idle, link)

    def _check_idle(self, link: _Link) -> None:
        connection = link.connection
        if link not in self._connections or connection.closed:
            return
        loop = asyncio.get_running_loop()
        if connection.tasks or loop.time() - connection.last_active < self.limits.idle_seconds:
            if connection.tasks:
                connection.last_active = loop.time()  # time spent waiting for the person is not idleness
            self._arm_idle_timer(link)
            return
        connection.send(encode(models.ErrorMessage(
            code="idle_timeout",
            message=f"closed after {self.limits.idle_seconds:g} s with nothing pending; connect again to ask")))
        connection.close()
