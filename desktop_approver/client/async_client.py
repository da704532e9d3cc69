"""The asyncio twin of :class:`~desktop_approver.client.Client`.

Same protocol logic (:class:`~desktop_approver.client.base.ClientProtocol`), only the I/O differs;
one connection carries any number of concurrent requests, matched to replies by id.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import wire
from .base import (
    CONNECT_TIMEOUT,
    DUPLICATE_ID,
    QUICK_ANSWER_GRACE,
    ClientProtocol,
    IdleClosed,
    NeverSent,
    check_where,
    unavailable,
)
from .errors import ApproverError, ApproverUnavailable, ProtocolError, Unauthorized
from .transport import AsyncConnection, AsyncTransport
from .urls import open_transport
from .vocabulary import NoticeKind, ShowWhat

if TYPE_CHECKING:
    from .base import Call

__all__ = ["AsyncClient"]


class AsyncClient:
    """``await AsyncClient().request(tool, args)``: never blocks the agent's event loop.

    ``url`` (or ``DESKTOP_APPROVER_URL``) may name the app elsewhere: ``nats://host:4222`` goes
    through the NATS relay (:mod:`desktop_approver.client.urls`, the ``relay`` extra), with
    ``credentials`` (a credentials file) and ``ca_file`` (the CA the server's certificate must chain to).
    ``transport`` replaces the unix socket (e.g. :class:`desktop_approver.testing.FakeApprover`).
    """

    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *, agent: str | None = None,
                 session: str | None = None, token: str | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT, transport: AsyncTransport | None = None,
                 url: str | None = None, credentials: str | os.PathLike[str] | None = None,
                 ca_file: str | os.PathLike[str] | None = None) -> None:
        check_where("AsyncClient", socket_path, url, transport, "connect_async")
        self.transport: AsyncTransport = transport or open_transport(socket_path, url, creds=credentials,
                                                                     ca_file=ca_file)
        self.protocol = ClientProtocol(agent=agent, session=session, token=token)
        self.connect_timeout = connect_timeout
        self._connection: AsyncConnection | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._waiting: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}  # id -> (kind, future)
        self._connecting = asyncio.Lock()
        self._welcomed: asyncio.Future[None] | None = None

    @property
    def socket_path(self) -> str | os.PathLike[str]:
        """Where the app is (the transport's address)."""
        return self.transport.address

    @property
    def session(self) -> str:
        return self.protocol.session

    async def request(self, tool: str, args: Mapping[str, Any], *, session: str | None = None,
                      description: str | None = None, preview: Mapping[str, Any] | None = None,
                      timeout: float | None = None, hints: Mapping[str, Any] | None = None,
                      raise_on_block: bool = False) -> wire.Decision:
        request_id, message = self.protocol.request(tool, args, session=session, description=description,
                                                    preview=preview, timeout=timeout, hints=hints)
        reply = await self._exchange(request_id, message, timeout)
        return self.protocol.read_decision(reply, raise_on_block=raise_on_block)

    async def request_batch(self, calls: Iterable[Call], *, session: str | None = None,
                            timeout: float | None = None) -> list[wire.Decision]:
        batch_id, message = self.protocol.batch(calls, session=session, timeout=timeout)
        return self.protocol.read_decisions(await self._exchange(batch_id, message, timeout), len(message["calls"]))

    async def status(self) -> dict[str, Any]:
        status_id, message = self.protocol.status()
        reply = await self._exchange(status_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_status(reply)

    async def end_session(self, session: str | None = None) -> int:
        """The agent's session is over: the app forgets its session approvals."""
        message_id, message = self.protocol.admin("end_session", session=session or self.session)
        reply = await self._exchange(message_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_count(reply, "session_ended", "forgotten")

    async def sessions(self) -> list[dict[str, Any]]:
        """What the running app remembers from "Allow for session"."""
        message_id, message = self.protocol.admin("sessions")
        reply = await self._exchange(message_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_entries(reply)

    async def revoke(self, session: str | None = None, tool: str | None = None) -> int:
        """Forget remembered approvals (of a session, a tool, or all); returns how many."""
        message_id, message = self.protocol.admin("revoke", session=session, tool=tool)
        reply = await self._exchange(message_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_count(reply, "revoked", "count")

    async def notice(self, kind: NoticeKind, text: str, session: str | None = None) -> None:
        """Tell the person the agent is ``waiting`` for them, ``finished``, or some ``info``."""
        message_id, message = self.protocol.admin("notice", kind=kind, text=text, session=session)
        reply = await self._exchange(message_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        self.protocol.read_noticed(reply)

    async def show(self, what: ShowWhat = "request") -> bool:
        """Ask the app to raise the waiting request, the inbox or the history (see :meth:`Client.show`)."""
        message_id, message = self.protocol.admin("show", what=what)
        reply = await self._exchange(message_id, message, None, wait=self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_shown(reply)

    async def aclose(self) -> None:
        connection = self._connection
        if self._reader_task is not None:
            self._reader_task.cancel()
        self._drop(ApproverUnavailable("client closed"))
        wait_closed = getattr(connection, "wait_closed", None)  # the relay's: its goodbye goes out before the loop ends
        if wait_closed is not None:
            await wait_closed()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- I/O ---------------------------------------------------------------------------------

    async def _ensure_connected(self) -> AsyncConnection:
        async with self._connecting:
            if self._connection is not None and self._connection.is_closing():
                await self._reader_done()
            if self._connection is not None:
                return self._connection
            try:
                connection = await self.transport.connect_async(self.connect_timeout)
            except OSError as exc:
                raise unavailable(self.socket_path, exc.strerror or exc) from None
            self.protocol.framer = wire.LineFramer()
            self.protocol.welcome = None
            self._connection = connection
            # The hello is answered before anything else is sent: the app closes a connection whose
            # hello it refuses (no or wrong token), and a request written into that closing socket
            # fails with a broken pipe that tears down the transport before the refusal is read,
            # so the keyring retry would never see it.
            welcomed = self._welcomed = asyncio.get_running_loop().create_future()
            connection.write(wire.encode(self.protocol.hello()))
            self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(connection))
            # ``connect_timeout`` bounds reaching the socket; the welcome is the app's first answer and
            # gets what the blocking client gives its pipelined hello with a status: a just-started app
            # loads its protocol with its first connection (about a second on two loaded cores).
            try:
                await asyncio.wait_for(asyncio.shield(welcomed), self.connect_timeout + QUICK_ANSWER_GRACE)
            except TimeoutError:
                self._drop(ApproverUnavailable("no welcome"))
                raise unavailable(self.socket_path, "it did not answer the hello") from None
            return connection

    async def _exchange(self, reply_id: str, message: dict[str, Any], timeout: float | None,
                        wait: float | None = None) -> dict[str, Any]:
        try:
            return await self._exchange_once(reply_id, message, timeout, wait)
        except (IdleClosed, NeverSent):  # closed just as we sent: it was never read, send it again (once)
            return await self._exchange_once(reply_id, message, timeout, wait)
        except Unauthorized:
            # No token given and none in the environment: on the desktop itself, the keyring has it.
            if not self.protocol.adopt_keyring_token():
                raise
            return await self._exchange_once(reply_id, message, timeout, wait)

    async def _exchange_once(self, reply_id: str, message: dict[str, Any], timeout: float | None,
                             wait: float | None = None) -> dict[str, Any]:
        connection = await self._ensure_connected()
        if reply_id in self._waiting:
            # Fail closed: the app would refuse it, and the one reply that comes with this id is
            # the pending message's answer, which must not be read as this message's.
            raise ProtocolError(f"message id {reply_id!r} is already waiting for its answer on this connection",
                                DUPLICATE_ID)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[reply_id] = (message["type"], future)
        try:
            connection.write(wire.encode(message))
            if connection.is_closing():
                # Closed by this very write: asyncio sends at once into an empty buffer (the only
                # way here: the connection was open, and we await the drain of every write), and a
                # send that fails (EPIPE: the app had closed it) closes the transport with none of
                # the bytes sent. Provably never read by the app.
                raise NeverSent(f"desktop-approver closed the connection before the message was sent "
                                f"({self.socket_path})")
            await connection.drain()
            # The welcome is in (``_ensure_connected`` waits for it): the wait covers the app's latest answer.
            return await asyncio.wait_for(future, wait if wait is not None else self.protocol.reply_wait(timeout))
        except TimeoutError:
            self._drop(ApproverUnavailable("desktop-approver did not answer within its timeout"))
            raise ApproverUnavailable(
                f"desktop-approver did not answer within its timeout ({self.socket_path})") from None
        except asyncio.CancelledError:
            # The agent gave up: tell the app, so the person's dialog disappears.
            if self._connection is not None and not self._connection.is_closing():
                self._connection.write(wire.encode(self.protocol.cancel(reply_id)))
            raise
        except OSError as exc:  # the connection was lost after the message went out: did the app read it?
            await self._reader_done()  # the app's last words: ``idle_timeout`` says it read nothing more
            if future.done() and not future.cancelled() and isinstance(future.exception(), IdleClosed):
                raise IdleClosed(str(future.exception())) from None
            raise unavailable(self.socket_path, exc) from None
        finally:
            self._waiting.pop(reply_id, None)

    async def _reader_done(self) -> None:
        """The connection closed before the reader task has seen it (the app closed it as idle, or
        quit): let it finish, so the replies it still holds reach their waiters and each waiter hears
        why (``idle_timeout``: sent again); then the next message goes on a new connection."""
        reader = self._reader_task
        if reader is not None and not reader.done():
            await asyncio.wait({reader}, timeout=self.connect_timeout + QUICK_ANSWER_GRACE)
        if self._connection is not None:  # a reader that did not end: the connection is given up all the same
            self._drop(ApproverUnavailable(f"desktop-approver closed the connection ({self.socket_path})"))

    async def _read_loop(self, connection: AsyncConnection) -> None:
        failure: ApproverError = ApproverUnavailable(f"desktop-approver closed the connection ({self.socket_path})")
        try:
            while data := await connection.read():
                replies = self.protocol.parse(data)
                if self.protocol.welcome is not None and self._welcomed is not None and not self._welcomed.done():
                    self._welcomed.set_result(None)
                for reply in replies:
                    waiting = self._waiting.get(str(reply.get("id")))
                    if waiting is not None and not waiting[1].done() and self.protocol.answers(reply, waiting[0]):
                        waiting[1].set_result(reply)
        except ApproverError as exc:
            failure = exc
        except OSError as exc:
            failure = unavailable(self.socket_path, exc)
        self._drop(failure)

    def _drop(self, failure: ApproverError) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
        if self._welcomed is not None and not self._welcomed.done():
            self._welcomed.set_exception(failure)
            self._welcomed.exception()  # retrieved here: only _ensure_connected may be waiting
        for _, future in self._waiting.values():
            if not future.done():
                future.set_exception(failure)
