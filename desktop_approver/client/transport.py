"""The clients' one door to the app: a transport moves bytes, the clients keep the protocol.

:class:`~desktop_approver.client.Client` and :class:`~desktop_approver.client.async_client.AsyncClient`
take a ``transport=``; by default it is the unix socket here. Everything above the bytes (the
hello, framing, JSON, matching replies to ids, typed errors, retries) stays in the clients, so
another transport, such as :class:`desktop_approver.testing.FakeApprover`, is exercised through
exactly the code an agent runs against the real app.

A transport opens connections; a connection sends bytes and reads what comes back::

    Transport.connect(timeout)              -> Connection:      send, receive(timeout), finished, close
    AsyncTransport.connect_async(timeout)   -> AsyncConnection: write, drain, read, is_closing, close

Opening raises :class:`~desktop_approver.client.errors.ApproverUnavailable` (or an ``OSError``, which the
clients turn into one) when there is nobody to talk to; reading returns ``b""`` when the other
side hung up. Standard library only, and no asyncio at import: a hook starts once per tool call.
"""

from __future__ import annotations

import os
import socket

from .base import unavailable
from .errors import ApproverUnavailable
from .server_check import check_server, check_socket_path

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    import asyncio
    from typing import Protocol
else:
    # Type checkers see structural protocols; at run time these are plain classes, because
    # building four typing.Protocol classes costs a hook (which starts once per call) ~2 ms.
    Protocol = object

__all__ = ["Connection", "Transport", "AsyncConnection", "AsyncTransport", "DualTransport", "UnixSocketTransport"]


class Connection(Protocol):
    """One open, blocking conversation with the app."""

    def send(self, data: bytes) -> None: ...

    def receive(self, timeout: float) -> bytes:
        """What arrived within ``timeout`` seconds; ``b""`` when the app hung up; raises
        ``TimeoutError`` when nothing came."""

    def finished(self) -> bool:
        """Between requests: has the app closed this connection (idle, restart) meanwhile?"""

    def close(self) -> None: ...


class Transport(Protocol):
    """What :class:`~desktop_approver.client.Client` connects through."""

    @property
    def address(self) -> str | os.PathLike[str]:
        """Where the app is, for error messages and ``desktop-approver status``."""

    def connect(self, timeout: float) -> Connection: ...


class AsyncConnection(Protocol):
    """One open conversation for :class:`~desktop_approver.client.async_client.AsyncClient`."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    async def read(self) -> bytes:
        """The next bytes from the app; ``b""`` when it hung up."""

    def is_closing(self) -> bool: ...

    def close(self) -> None: ...


class AsyncTransport(Protocol):
    """What :class:`~desktop_approver.client.async_client.AsyncClient` connects through."""

    @property
    def address(self) -> str | os.PathLike[str]: ...

    async def connect_async(self, timeout: float) -> AsyncConnection: ...


class DualTransport(Transport, AsyncTransport, Protocol):
    """Both doors at once, as the adapters' :class:`~desktop_approver.adapters.base.Approver` needs
    (frameworks call it from threads and from event loops): the unix socket, ``FakeApprover``."""


class UnixSocketTransport:
    """The real app: its unix socket, checked to belong to our user before a byte is sent."""

    def __init__(self, socket_path: str | os.PathLike[str]) -> None:
        self.socket_path = socket_path

    @property
    def address(self) -> str | os.PathLike[str]:
        return self.socket_path

    def __repr__(self) -> str:
        return f"UnixSocketTransport({os.fspath(self.socket_path)!r})"

    def connect(self, timeout: float) -> _SocketConnection:
        try:
            check_socket_path(self.socket_path)  # before connecting: nothing reaches another user's socket
        except OSError as exc:
            raise unavailable(self.socket_path, exc.strerror or exc) from None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(os.fspath(self.socket_path))
            check_server(sock, self.socket_path)
        except OSError as exc:
            sock.close()
            raise unavailable(self.socket_path, exc.strerror or exc) from None
        except ApproverUnavailable:
            sock.close()
            raise
        return _SocketConnection(sock)

    async def connect_async(self, timeout: float) -> _StreamConnection:
        import asyncio  # only an AsyncClient gets here, and it has imported asyncio already

        try:
            check_socket_path(self.socket_path)  # before connecting: nothing reaches another user's socket
            reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(os.fspath(self.socket_path)), timeout)
        except (TimeoutError, OSError) as exc:
            raise unavailable(self.socket_path, getattr(exc, "strerror", None) or exc or "timed out") from None
        try:
            check_server(writer.get_extra_info("socket"), self.socket_path)
        except ApproverUnavailable:
            writer.close()
            raise
        return _StreamConnection(reader, writer)


class _SocketConnection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, timeout: float) -> bytes:
        self.sock.settimeout(timeout)
        return self.sock.recv(65536)  # socket.timeout is TimeoutError

    def finished(self) -> bool:
        """Between our requests the app sends nothing unasked, except a notice before it hangs up
        (``idle_timeout``): anything readable now, or EOF, means the connection is finished."""
        timeout = self.sock.gettimeout()
        try:
            self.sock.setblocking(False)
            try:
                self.sock.recv(1, socket.MSG_PEEK)
            finally:
                self.sock.settimeout(timeout)
        except BlockingIOError:
            return False
        except OSError:
            return True
        return True

    def close(self) -> None:
        self.sock.close()


class _StreamConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def write(self, data: bytes) -> None:
        self.writer.write(data)

    async def drain(self) -> None:
        await self.writer.drain()

    async def read(self) -> bytes:
        return await self.reader.read(65536)

    def is_closing(self) -> bool:
        return self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()
