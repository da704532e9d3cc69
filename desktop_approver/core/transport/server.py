"""The unix-socket server: the socket file, who is on the other end, and the bytes in and out.

Security: the socket sits in a 0700 directory, is created 0600, and every connection's peer
credentials are checked (a different uid is refused before a byte is read). The socket file is
bound without replacing anything, watched while the app runs (made again when deleted, left to
another live app that took it) and removed on quit only while it is the file this app made
(``core/transport/socket_file.py``); what keeps agents out is reported to ``health_listeners``. Nothing a client
can send decides anything: requests only ever *ask*. A client that disconnects cancels its
requests, which makes their dialogs disappear; one that only half-closes (shuts down its
writing side) still gets its answers, then the connection is closed.

What the lines *mean* is the protocol's business (``core/transport/connection.py``): this module reads,
frames and hands each line to the connection's :class:`~desktop_approver.core.transport.connection.Connection`,
and writes what it sends. Each socket has an asyncio protocol (:class:`_Link`), so a line is handled
in the callback that read it, with no read loop task in between (BENCHMARKS.md); the protocol
modules, and pydantic with them, load with the first connection.

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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...client import wire
from ...client.paths import ensure_private_dir
from ..decisions.broker import Broker
from . import activation, socket_file
from .context import DEFAULT_MAX_PENDING_PER_CLIENT as DEFAULT_MAX_PENDING_PER_CLIENT
from .context import Context
from .context import TokenCheck as TokenCheck
from .limits import Limits, RefusalBudget, raise_fd_limit
from .peercred import PeerCredentials, peer_credentials

if TYPE_CHECKING:
    from ...client.vocabulary import AskKind
    from ..messages.models import ErrorCode
    from .connection import Connection

log = logging.getLogger(__name__)
READ_BUFFER = 256 * 1024
"""Bytes one read of a socket takes at most: asyncio's own limit for a read (``max_size``)."""
SMALL_READ = 4096
TRICKLE_PAUSE = 0.002
"""After a read of under SMALL_READ bytes that ended no line, wait this long before reading on."""
HALF_CLOSED_CHECK = 0.5
"""Seconds between checks that a half-closed client is still there (Linux tells by POLLHUP)."""
CLOSE_WAIT = 2.0
"""Seconds :meth:`ApproverServer.close` waits for the connections to close before dropping unsent replies."""
ACCEPT_TURNS = 3
"""Loop turns from asyncio accepting a connection to calling :meth:`_Link.connection_made` (two)."""
OVER_CAP = 16
"""Connections accepted beyond the cap when every connection has a request pending: they may ask
what decides nothing (``status``, ``sessions``...), and a request on them is refused
``too_many_connections`` at once. So the person's ``status`` is answered however full the app is.
Fewer under a low descriptor limit: a quarter of the descriptors kept in reserve at most."""
LINGER = 30.0
"""Seconds a closed connection may take to deliver its last replies to a slow reader before they are dropped."""

_POLLS = sys.platform.startswith("linux") and hasattr(select, "poll")
"""The kernel tells a client's full close from a half-close by POLLHUP (``_Link.peer_gone``)."""

KEEP_SOCKET_FILE: dict[str, Any] = {"cleanup_socket": False} if sys.version_info >= (3, 13) else {}
"""Python 3.13's asyncio unlinks a unix server's path when it closes: the service manager's socket
among them. Which file goes is ours to decide (``socket_file.remove_if_ours``)."""


_SHORT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
"""What asyncio's accept reports as "out of system resource" (``selector_events``)."""


def _spare_descriptor() -> int | None:
    """A descriptor held for the moment the app runs out: given up to accept one newcomer and refuse it."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _error_line(code: ErrorCode, message: str, about: tuple[str, AskKind] | None = None) -> bytes:
    """A typed ``error`` line (``about``: the id and type of the message it answers). The message
    models load here at the earliest: an app no agent has talked to yet does without pydantic
    (issue 11's idle memory)."""
    from ..messages import models
    from ..messages.protocol import encode

    if about is None:
        return encode(models.ErrorMessage(code=code, message=message))
    return encode(models.ErrorMessage(id=about[0], in_reply_to=about[1], code=code, message=message))


class AlreadyRunning(RuntimeError):
    """Another desktop-approver answers on this socket."""


class _Link(asyncio.BufferedProtocol):
    """One connection as the transport sees it: asyncio calls it as bytes arrive, and it hands each
    complete line straight to the protocol object that gives its lines meaning (no read loop task:
    a line is acted on in the very callback that read it).

    A buffered protocol: the socket is read into the server's one read buffer (``recv_into``), where
    a plain protocol has asyncio allocate 256 KiB for every read and shrink it to the line's size,
    which costs ten times the read itself (about 35 µs of a round trip here; BENCHMARKS.md).

    It also keeps the stream's limits: its unfinished-line bytes, the idle timer, back-pressure
    (no reading while the client leaves too many replies unread) and the trickle pause.
    """

    def __init__(self, server: ApproverServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.connection: Connection | None = None   # None: refused (or not yet made)
        self.framer = wire.LineFramer()
        self.held = 0                               # bytes of an unfinished line held for this client
        self.idle_timer: asyncio.TimerHandle | None = None
        self.closed: asyncio.Future[None] = server._loop.create_future()
        """Done when asyncio has closed the socket: what :meth:`ApproverServer.close` waits for."""
        self.reason = "closed by the app"
        self._reading_paused_by: set[str] = set()   # "replies" (back-pressure) and/or "trickle"
        self._lines: Iterator[bytes | wire.Oversized] = iter(())  # read, not yet handed on (back-pressure)
        self._give_up: asyncio.TimerHandle | None = None
        self._watch: asyncio.Task[None] | None = None
        self._eof = False                           # the client shut its writing side
        self._resuming = False                      # inside resume_writing (see hang_up)
        self._poller: Any = None                    # select.poll on this socket, made on first look (peer_gone)
        self._written = 0                           # bytes handed to the transport so far
        self._in_buffer: list[tuple[int, Sequence[int]]] = []
        """Answers (the stream offset of their end, their decision rows) still in the app's own write
        buffer when last looked: not delivered until they reach the socket (:meth:`answered`)."""
        self._aborted = False                       # the transport was aborted: its buffer was dropped
        self._watching_drain = False
        """While answers are in the write buffer its high-water mark is 0, so asyncio says when it is
        empty (``resume_writing``); back-pressure on reading stays at the limit (:meth:`pause_writing`)."""

    def __repr__(self) -> str:
        closing = self.transport is None or self.transport.is_closing()
        return f"<_Link {self.connection!r} held={self.held} closing={closing}>"

    @property
    def accepted(self) -> Connection:
        """The protocol object of a connection the server accepted (every link in its ``_connections``)."""
        assert self.connection is not None, "a refused connection has no protocol object"
        return self.connection

    @property
    def peer(self) -> PeerCredentials:
        return self.accepted.peer

    # -- asyncio's calls ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.server._links.add(self)
        if self.server._closing:
            self.hang_up()
            return
        try:
            self.connection = self.server._accept(self)
        except Exception:  # asyncio would only log it and leave the client waiting on an open socket
            log.exception("accepting a connection failed; closing it")
            self.connection = None
        if self.connection is None:
            self.hang_up()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.server._read_buffer  # shared: asyncio reads into it and calls buffer_updated at once

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(bytes(self.server._read_buffer[:nbytes]))

    def data_received(self, data: bytes) -> None:
        connection = self.connection
        if connection is None or connection.closed:
            return
        connection.last_active = self.server._loop.time()
        self._lines = self.framer.feed(data)
        complete = self._pump()
        if complete is None or "replies" in self._reading_paused_by:
            return  # closed, or lines held back until the client reads its replies (resume_writing)
        if not self.server._hold(self, self.framer.unfinished_bytes):
            return
        if not complete and len(data) < SMALL_READ:
            # A line trickling in (a byte per write) would cost a loop turn per byte: stop reading
            # for a moment so the pieces gather in the socket, then read them at once.
            self._pause_reading("trickle")
            self.server._loop.call_later(TRICKLE_PAUSE, self._resume_reading, "trickle")

    def _pump(self) -> int | None:
        """Hand the lines read so far to the connection, one by one, until they are all handled or
        the client stops reading its replies (the rest wait in the framer until it reads them);
        the number handled, or None once the connection is closed."""
        connection = self.accepted
        complete = 0
        try:
            for line in self._lines:
                complete += 1
                connection.received(line)
                if connection.closed:
                    return None
                if "replies" in self._reading_paused_by:
                    break
        except Exception:  # our failure: the client is hung up on (its requests withdrawn), never left waiting
            log.exception("handling a line from %r failed; closing the connection", connection)
            self.reason = "internal error"
            self.hang_up()
            return None
        return complete

    def eof_received(self) -> bool:
        """The client shut its writing side: hang up, unless it waits for answers (half-closed)."""
        connection = self.connection
        if connection is None or connection.closed:
            return False
        if self._eof:  # reading resumed after a pause on a socket already at its end: nothing new
            return True
        self._eof = True
        self.reason = "the client hung up"
        if not connection.tasks or self.hung_up():
            self.hang_up()  # answers held for this turn's commit get it first (Connection.close)
            return True  # hang_up ends the connection and closes (with the linger), not asyncio
        connection.half_closed = True
        self.reason = "half-closed and answered"
        self._watch = self.server._loop.create_task(self._until_answered_or_gone())
        return True

    def pause_writing(self) -> None:
        """Back-pressure: the client leaves too many replies unread, so read nothing more until it reads.
        (Called at once, too, when the drain is watched: then only past the limit.)"""
        if not self._watching_drain or self._over_limit():
            self._pause_reading("replies")

    def _over_limit(self) -> bool:
        transport = self.transport
        return transport is not None and transport.get_write_buffer_size() > self.server.limits.max_unread_reply_bytes

    def resume_writing(self) -> None:
        """The client read its replies: the lines it sent meanwhile are handled, then reading goes on."""
        self._drained()
        if self._watching_drain and self.transport is not None and not self._in_buffer:
            self._watching_drain = False  # every answer is in the agent's socket: the usual marks again
            self.transport.set_write_buffer_limits(high=self.server.limits.max_unread_reply_bytes)
        self._reading_paused_by.discard("replies")
        self._resuming = True
        try:
            if self.connection is None or self.connection.closed or self._pump() is None:
                return
            if "replies" in self._reading_paused_by:
                return  # paused again by the replies to the lines just handled
            if self.server._hold(self, self.framer.unfinished_bytes):
                self._resume_reading("replies")
        finally:
            self._resuming = False

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self.reason in ("closed by the app", "the client hung up"):
            self.reason = f"connection error: {exc}"
        if self._in_buffer and (exc is not None or self._aborted) and self.connection is not None:
            # A close that was not aborted writes the whole buffer first; these never left the app.
            rows = [row for _, answered in self._in_buffer for row in answered]
            self.connection.not_delivered(rows, "its connection ended while the answer was still in the app's "
                                                "write buffer (the agent did not read)")
        self._in_buffer = []
        if self._give_up is not None:
            self._give_up.cancel()
        if self._watch is not None and not self._watch.done():
            self._watch.cancel()
        self.server._drop(self, self.reason)
        self.server._links.discard(self)
        if not self.closed.done():
            self.closed.set_result(None)

    # -- ours -----------------------------------------------------------------------------------

    def send(self, payload: bytes) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(payload)
            self._written += len(payload)
            if self._watching_drain and self._over_limit():  # asyncio calls pause_writing once per watch
                self._pause_reading("replies")

    def answered(self, rows: Sequence[int], size: int) -> None:
        """Right after an answer was written (``Connection.answer_sent``): delivered means the agent
        could read it, i.e. its bytes are in the agent's socket. A transport closed by now dropped
        them; bytes still in the app's write buffer are delivered when it drains (the server reads
        nothing more from the client until then), and recorded as not delivered if the connection
        ends first (:meth:`connection_lost`)."""
        transport = self.transport
        if transport is None or transport.is_closing():
            self.accepted.not_delivered(rows, "its connection was closed when the answer was written")
            return
        self._drained()
        if transport.get_write_buffer_size():
            self._in_buffer.append((self._written, rows))
            if not self._watching_drain:  # told when the buffer is empty (resume_writing), exactly
                self._watching_drain = True
                transport.set_write_buffer_limits(high=0)

    def _drained(self) -> None:
        """Forget the answers that have left the app's write buffer (they are in the agent's socket)."""
        if self._in_buffer and self.transport is not None:
            flushed = self._written - self.transport.get_write_buffer_size()
            self._in_buffer = [(end, rows) for end, rows in self._in_buffer if end > flushed]

    def _abort(self) -> None:
        """Drop the connection and whatever of its replies is still buffered (recorded as not delivered)."""
        if self.transport is not None:
            self._drained()
            self._aborted = True
            self.transport.abort()

    def hang_up(self) -> None:
        """Close once the replies are written; a client that leaves them unread for LINGER seconds loses them.

        The connection ends now, not when the last reply has gone: its requests are withdrawn (their
        dialogs disappear) and its slot is free, whatever the client does with the bytes in flight.
        """
        self.server._drop(self, self.reason)
        if self._resuming:
            # asyncio calls resume_writing from its write path, which would then report the loss of a
            # transport closed in here a second time: close it at the next turn instead.
            self.server._loop.call_soon(self._close_transport)
        else:
            self._close_transport()

    def _close_transport(self) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.close()
        self._give_up = self.server._loop.call_later(LINGER, self._abort)

    def peer_gone(self) -> str | None:
        """Why the client can no longer read an answer, or None: the app's own look, at the moment it
        records an answer, at the client's socket (``Connection.gone``). A client that gave up (its
        timeout passed while the app was stopped or busy) has closed it, though its request may still
        be waiting unread in the socket; one that only shut its writing side still reads (None).
        Linux says so by POLLHUP; elsewhere nothing is claimed (None) and EOF tells later."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return "its connection is closed"
        if not _POLLS:
            return None
        poller = self._poller
        try:
            if poller is None:
                poller = self._poller = select.poll()
                poller.register(transport.get_extra_info("socket").fileno(), select.POLLHUP)
            events = poller.poll(0)
        except (OSError, ValueError):
            return None
        if any(event & (select.POLLHUP | select.POLLERR) for _, event in events):
            return "the agent closed its connection"
        return None

    def hung_up(self) -> bool:
        """After EOF: did the client close entirely (True) or only shut its writing side (False)?

        Linux reports a full close as POLLHUP; elsewhere EOF counts as gone (the safe reading: the
        person's dialog disappears rather than waiting for nobody).
        """
        if not sys.platform.startswith("linux") or self.transport is None:
            return True
        sock = self.transport.get_extra_info("socket")
        try:
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLHUP)
            return any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, event in poller.poll(0))
        except (OSError, ValueError):
            return True

    def _pause_reading(self, why: str) -> None:
        if not self._reading_paused_by and self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()
        self._reading_paused_by.add(why)

    def _resume_reading(self, why: str) -> None:
        self._reading_paused_by.discard(why)
        if self._eof:
            return  # asyncio stopped reading at the end of input; there is nothing more to read
        if not self._reading_paused_by and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    async def _until_answered_or_gone(self) -> None:
        """Wait while a half-closed client's requests are pending; stop early if it hangs up."""
        connection = self.connection
        assert connection is not None
        while connection.tasks and not connection.closed:
            await asyncio.wait(list(connection.tasks.values()), timeout=HALF_CLOSED_CHECK)
            if connection.tasks and self.hung_up():
                self.reason = "the client hung up"
                break
        self.server._drop(self, self.reason)
        self.hang_up()


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
        """True when a service manager passed the listening socket: it owns that file, we never unlink it."""
        self.health_listeners: list[Callable[[str | None], None]] = []
        """Called with what keeps agents from reaching this app (its socket deleted, taken), None once fixed."""
        self._own_socket: socket_file.FileIdentity | None = None  # the socket file we bound: the one we may unlink
        self._anchor: socket_file.Anchor | None = None  # holds the watched file, so its inode is not reused
        self._watch: socket_file.SocketWatch | None = None
        self._connections: set[_Link] = set()
        self._connections_by_peer: Counter[int | None] = Counter()
        self._held_total = 0                                     # bytes of unfinished lines, all clients
        self._links: set[_Link] = set()                          # every open socket, refused ones too
        self._over_cap: set[_Link] = set()                       # accepted at the cap: no requests (OVER_CAP)
        self.over_cap = OVER_CAP                                 # within the descriptor reserve (start)
        self._spare_fd: int | None = None                        # given up to refuse a newcomer when out of them
        self.descriptor_problem: str | None = None
        """Told while ``accept()`` runs out of descriptors; None when it works."""
        self.problem_listeners: list[Callable[[str, str | None], None]] = []
        """Called with (what, problem) as the server runs short of something, and (what, None) when it is back."""
        self._read_buffer = memoryview(bytearray(READ_BUFFER))
        """Every connection's reads land here (``_Link.get_buffer``): asyncio calls ``recv_into`` and
        then ``buffer_updated`` in one callback, so one read never meets another in it."""
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
        self.context.loop = self._started_on
        self.max_connections = self.limits.connection_cap()  # below the descriptor limit: accept() never fails
        self.over_cap = min(OVER_CAP, max(1, (raise_fd_limit() - self.max_connections) // 4))
        self._catch_accept_failures(self._started_on)
        if await self._serve_activated_socket():
            return
        ensure_private_dir(self.socket_path.parent)
        await self._clear_stale_socket()
        try:
            bound = await self._listen()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise AlreadyRunning(f"desktop-approver is already running (socket {self.socket_path})") from exc
        self._watch_socket(bound)
        log.debug("listening on %s", self.socket_path)

    async def _listen(self) -> socket_file.FileIdentity:
        """Bind a new listening socket at our path (never over another file) and serve on it; its identity.

        Raises ``OSError`` (EADDRINUSE) when something is at the path: a second app started meanwhile.
        """
        sock, bound = socket_file.bind_listening(self.socket_path)
        anchor = socket_file.Anchor(self.socket_path)
        try:
            server = await self._loop.create_unix_server(self._new_link, sock=sock, **KEEP_SOCKET_FILE)
        except BaseException:
            sock.close()
            with contextlib.suppress(OSError):
                socket_file.remove_if_ours(self.socket_path, bound)
            anchor.release()
            raise
        old, self._server, self._own_socket = self._server, server, bound
        self._anchor_to(anchor)
        if old is not None:  # the socket agents could no longer reach: connections made on it stay
            await self._stop_listening(old)
        return bound

    def _anchor_to(self, anchor: socket_file.Anchor | None) -> None:
        """Hold this socket file open from now on (and let go of the one before)."""
        if self._anchor is not None:
            self._anchor.release()
        self._anchor = anchor

    async def _listen_again(self) -> socket_file.FileIdentity:
        """The watch found our path free again (its file deleted): make the directory and socket again."""
        ensure_private_dir(self.socket_path.parent)
        return await self._listen()

    def _watch_socket(self, watched: socket_file.FileIdentity | None) -> None:
        self._watch = socket_file.SocketWatch(self.socket_path, watched, self._listen_again, self._socket_health)
        self._watch.start()

    def _socket_health(self, problem: str | None) -> None:
        for listener in list(self.health_listeners):
            try:
                listener(problem)
            except Exception:  # a listener's failure must not stop the watch or the others
                log.exception("a socket health listener failed")

    @property
    def socket_problem(self) -> str | None:
        """What keeps agents from reaching this app through its socket now, or None."""
        return self._watch.problem if self._watch is not None else None

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
        self._server = await self._loop.create_unix_server(self._new_link, sock=sock, **KEEP_SOCKET_FILE)
        log.info("serving on the socket passed by the service manager: %s", self.socket_path)
        if path is not None:  # deleted, the app makes a socket of its own there (and removes that one on quit)
            self._anchor_to(socket_file.Anchor(path))
            self._watch_socket(socket_file.identity(path))
        return True

    async def close(self) -> None:
        """Stop listening, tell waiting clients ``shutting_down``, close every connection and wait for it."""
        self._closing = True
        self.context.close()
        if self._watch is not None:
            await self._watch.stop()
        if self._server is not None:
            await self._stop_listening(self._server)
        withdrawn = [task for link in self._connections for task in link.accepted.tasks.values()]
        for link in list(self._connections):
            link.accepted.shutdown()
        # Only the file we bound goes: an activated socket stays (the next request starts the app
        # again), and so does another app's that took the path while we ran.
        socket_file.remove_if_ours(self.socket_path, self._own_socket)
        self._anchor_to(None)
        for link in list(self._links):
            link.hang_up()
        waits: list[asyncio.Future[Any]] = [*withdrawn, *(link.closed for link in self._links)]
        if waits:
            _done, late = await asyncio.wait(waits, timeout=CLOSE_WAIT)
            if late:  # a client that reads nothing keeps its replies in our buffer: drop them now
                log.warning("%d connections did not close within %g s; aborting them", len(late), CLOSE_WAIT)
                for link in list(self._links):
                    link._abort()
                await asyncio.wait(late, timeout=CLOSE_WAIT)
        if self._server is not None:
            await self._server.wait_closed()
        if self._spare_fd is not None:
            os.close(self._spare_fd)
            self._spare_fd = None
        log.debug("closed %r", self)

    def close_at_once(self, why: str) -> None:
        """Without the loop (it will not run again): every waiting request hears ``shutting_down``,
        written straight to its socket, and the socket file we made is removed."""
        self._closing = True
        for link in list(self._connections):
            connection = link.accepted
            lines = b"".join(_error_line("shutting_down", f"desktop-approver is shutting down: {why}",
                                         about=(request_id, kind)) for request_id, kind in connection.kinds.items())
            sock = link.transport.get_extra_info("socket") if link.transport is not None else None
            if lines and sock is not None:
                with contextlib.suppress(OSError):
                    os.write(sock.fileno(), lines)  # small: the socket's buffer takes it at once
        socket_file.remove_if_ours(self.socket_path, self._own_socket)
        log.warning("closed at once (%s): %d connections told shutting_down", why, len(self._connections))

    @staticmethod
    async def _stop_listening(server: asyncio.Server) -> None:
        """Accept no more connections, let the accepts under way finish, then close the listening socket.

        Closing it while asyncio is between accepting a connection and attaching its transport trips an
        assertion in asyncio and leaks the accepted socket (CPython gh-109564); the turns in between also
        bring every connection accepted so far to :meth:`_Link.connection_made`, so :meth:`close` waits for it.
        """
        loop = asyncio.get_running_loop()
        for sock in server.sockets:
            loop.remove_reader(sock.fileno())
        for _ in range(ACCEPT_TURNS):
            await asyncio.sleep(0)
        server.close()

    async def _clear_stale_socket(self) -> None:
        """Refuse to start beside a live app; remove a socket left behind by a crash."""
        found = socket_file.identity(self.socket_path)
        if found is None:
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
        if socket_file.identity(self.socket_path) != found:
            return  # replaced while we probed: binding tells whether the path is free
        log.info("removing stale socket %s", self.socket_path)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    # -- connections ------------------------------------------------------------------------

    # -- out of descriptors ----------------------------------------------------------------------

    def _catch_accept_failures(self, loop: asyncio.AbstractEventLoop) -> None:
        """asyncio reports an ``accept()`` that ran out of descriptors (or memory) to the loop's
        exception handler, with a traceback, and stops accepting for a second; the newcomers then
        wait in the backlog and hear nothing. Here the app instead refuses them with a typed error
        (through a descriptor kept spare for it), keeps serving the others, and tells the person
        (``problem_listeners``: "descriptors") until an accept works again."""
        if self._spare_fd is None:
            self._spare_fd = _spare_descriptor()
        previous = loop.get_exception_handler()

        def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            failure = context.get("exception")
            if isinstance(failure, OSError) and failure.errno in _SHORT_OF_RESOURCES \
                    and "accept" in str(context.get("message", "")) and not self._closing:
                self._short_of_descriptors(failure)
                return
            if self._closing and isinstance(failure, (OSError, ValueError)) \
                    and "_start_serving" in repr(context.get("handle")):
                # asyncio retries accepting a second after running out; the app closed its socket
                # meanwhile, so the retry finds no descriptor: nothing is lost, nothing to tell.
                log.debug("accepting again after running out: the socket is closed already (%s)", failure)
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handler)

    def _short_of_descriptors(self, failure: OSError) -> None:
        problem = (f"The app is out of file descriptors ({failure.strerror or failure}; {len(self._connections)} "
                   "connections open): new agents are refused with too_many_connections until some close; "
                   "the ones connected are still served.")
        if self.descriptor_problem is None:
            log.warning("%s", problem)
            self.descriptor_problem = problem
            self._tell("descriptors", problem)
        refused = 0
        for server_socket in (self._server.sockets if self._server is not None else ()):
            refused += self._refuse_waiting(server_socket)
        log.debug("out of descriptors: %d waiting newcomers refused", refused)

    def _refuse_waiting(self, server_socket: Any) -> int:
        """Accept and refuse the newcomers waiting in the backlog, one at a time through the spare descriptor."""
        refused = 0
        while refused < self.over_cap:
            if self._spare_fd is not None:
                os.close(self._spare_fd)
                self._spare_fd = None
            listening = socket.socket(fileno=server_socket.fileno())  # asyncio's wrapper refuses accept()
            try:
                newcomer, _ = listening.accept()
            except OSError:
                break
            finally:
                listening.detach()  # the listening socket stays asyncio's
            with newcomer:
                newcomer.setblocking(False)
                with contextlib.suppress(OSError):
                    newcomer.send(_error_line("too_many_connections", "the app is out of file descriptors; "
                                                                      "ask again in a moment"))
            refused += 1
            self._spare_fd = _spare_descriptor()
        if self._spare_fd is None:
            self._spare_fd = _spare_descriptor()
        return refused

    def _tell(self, what: str, problem: str | None) -> None:
        for listener in list(self.problem_listeners):
            try:
                listener(what, problem)
            except Exception:  # a listener's failure must not stop the serving
                log.exception("a server problem listener failed")

    def _new_link(self) -> _Link:
        """asyncio's protocol factory: one :class:`_Link` per accepted socket."""
        return _Link(self)

    def _accept(self, link: _Link) -> Connection | None:
        """The connection of a peer of ours within the limits, or None (refused, with a typed error)."""
        assert link.transport is not None
        sock = link.transport.get_extra_info("socket")
        try:
            peer = peer_credentials(sock)
        except OSError as exc:
            self.context.audit_refusal("unauthorized", f"no peer credentials: {exc}", None, None)
            log.debug("connection refused: no peer credentials (%s)", exc)
            return None
        if peer.uid != os.getuid():
            self.context.audit_refusal("unauthorized", "peer belongs to another user", peer.pid, peer.uid)
            link.send(_error_line("unauthorized", "this socket serves its own user only"))
            log.debug("connection refused: pid %s, uid %s is another user", peer.pid, peer.uid)
            return None
        per_peer = self.limits.max_connections_per_peer
        serving = len(self._connections) - len(self._over_cap)
        if serving >= self.max_connections and self._connections_by_peer[peer.pid] < per_peer:
            self._make_room()
            serving = len(self._connections) - len(self._over_cap)
        mine = self._connections_by_peer[peer.pid]
        full = serving >= self.max_connections
        if mine >= per_peer or (full and len(self._over_cap) >= self.over_cap):
            reason = (f"this process already has {mine} connections (at most {per_peer})" if mine >= per_peer else
                      f"the app already serves {serving} connections (at most {self.max_connections})")
            self.context.audit_refusal("too_many_connections", reason, peer.pid, peer.uid)
            link.send(_error_line("too_many_connections", reason))
            log.debug("connection refused: pid %s: %s", peer.pid, reason)
            return None
        from .connection import Connection  # the protocol (and pydantic) loads with the first connection

        if self.descriptor_problem is not None:  # an accept worked: the descriptors are back
            log.warning("the app has file descriptors again")
            self.descriptor_problem = None
            self._tell("descriptors", None)
        connection = Connection(self.context, peer, link.send, link.hang_up, gone=link.peer_gone,
                                answer_sent=link.answered)
        if full:  # every connection has something pending: this one may ask what decides nothing
            connection.no_requests = (f"the app already serves {serving} connections, each with a request "
                                      f"pending (at most {self.max_connections}); ask again later")
            self._over_cap.add(link)
        link.connection = connection
        self._connections.add(link)
        self._connections_by_peer[peer.pid] += 1
        link.transport.set_write_buffer_limits(high=self.limits.max_unread_reply_bytes)
        self._arm_idle_timer(link)
        log.debug("connection opened: pid %s, uid %s (%d open)", peer.pid, peer.uid, len(self._connections))
        return connection

    def _make_room(self) -> None:
        """At the total cap: close the longest-idle connection with nothing pending (if any), so idle
        connections held by one party cannot lock everyone else out; its client reconnects when it
        next asks (``idle_timeout``)."""
        idle = [link for link in self._connections if not link.accepted.owes_answers and not link.accepted.closed
                and link not in self._over_cap]  # closing one beyond the cap makes no room under it
        if not idle:
            return
        victim = min(idle, key=lambda link: link.accepted.last_active)
        victim.accepted.send(_error_line(
            "idle_timeout", "closed while idle to make room for another connection; connect again to ask"))
        self._drop(victim, "closed to make room for another connection")

    def _drop(self, link: _Link, reason: str) -> None:
        if link not in self._connections:
            return
        self._connections.discard(link)
        self._over_cap.discard(link)
        pid = link.peer.pid
        self._connections_by_peer[pid] -= 1
        if self._connections_by_peer[pid] <= 0:
            del self._connections_by_peer[pid]
        self._hold(link, 0)
        if link.idle_timer is not None:
            link.idle_timer.cancel()
        log.debug("connection closed: pid %s, uid %s, %d pending (%s)", pid, link.peer.uid,
                  len(link.accepted.tasks), reason)
        link.accepted.connection_lost()  # the client is gone: its dialogs go away, nobody else gets its answer

    def _hold(self, link: _Link, held: int) -> bool:
        """Account the client's unfinished line in the shared budget; False (closed) when over it."""
        self._held_total += held - link.held
        link.held = held
        if held and self._held_total > self.limits.max_unfinished_bytes:
            message = (f"the app already holds {self._held_total - held:,} bytes of unfinished lines from its clients "
                       f"(at most {self.limits.max_unfinished_bytes:,}); end each message with a newline promptly")
            from ..messages.protocol import Refusal

            link.accepted.refuse(Refusal("overloaded", message))
            self._hold(link, 0)
            link.accepted.close()
            return False
        return True

    def _arm_idle_timer(self, link: _Link) -> None:
        loop = self._loop
        due = link.accepted.last_active + self.limits.idle_seconds
        link.idle_timer = loop.call_at(max(due, loop.time() + 0.001), self._check_idle, link)

    def _check_idle(self, link: _Link) -> None:
        connection = link.accepted
        if link not in self._connections or connection.closed:
            return
        loop = self._loop
        if connection.owes_answers or loop.time() - connection.last_active < self.limits.idle_seconds:
            if connection.tasks:
                connection.last_active = loop.time()  # time spent waiting for the person is not idleness
            self._arm_idle_timer(link)
            return
        connection.send(_error_line(
            "idle_timeout", f"closed after {self.limits.idle_seconds:g} s with nothing pending; connect again to ask"))
        connection.close()
