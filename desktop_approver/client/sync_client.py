"""The blocking client: ask the desktop, wait for the person's answer.

::

    from desktop_approver import Client
    decision = Client().request("write_file", {"path": "a.txt", "content": "hi"}, session="run-42")
    if decision.allowed: ...

Fails closed: if the app is not running, dies, or stops answering, :class:`ApproverUnavailable`
is raised (never an allow, never a hang). Standard library only.
"""

from __future__ import annotations

import _thread
import os
import time

from . import wire
from .base import CONNECT_TIMEOUT, QUICK_ANSWER_GRACE, ClientProtocol, IdleClosed, NeverSent, check_where, unavailable
from .errors import ApproverUnavailable, Unauthorized
from .urls import open_transport

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from .base import Call
    from .transport import Connection, Transport
    from .vocabulary import NoticeKind, ShowWhat

__all__ = ["Client"]


class Client:
    """One connection to the app, opened on first use and reopened after a failure.

    Close it (``close()`` or ``with Client() as client:``) when done; a client dropped without
    closing closes its connection when it is garbage collected, so it never keeps one of the
    app's connection slots for nothing.

    ``url`` (or ``DESKTOP_APPROVER_URL``) may name the app elsewhere: ``nats://host:4222`` goes
    through the NATS relay (:mod:`desktop_approver.client.urls`, the ``relay`` extra), with
    ``credentials`` (a credentials file) and ``ca_file`` (the CA the server's certificate must chain to).
    ``transport`` replaces the unix socket (e.g. :class:`desktop_approver.testing.FakeApprover`
    in an agent's tests); everything above the bytes is the same code either way.
    """

    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *, agent: str | None = None,
                 session: str | None = None, token: str | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT, transport: Transport | None = None,
                 url: str | None = None, credentials: str | os.PathLike[str] | None = None,
                 ca_file: str | os.PathLike[str] | None = None) -> None:
        check_where("Client", socket_path, url, transport, "connect")
        self.transport: Transport = transport or open_transport(socket_path, url, creds=credentials, ca_file=ca_file)
        self.protocol = ClientProtocol(agent=agent, session=session, token=token)
        self.connect_timeout = connect_timeout
        self._connection: Connection | None = None
        self._lock = _thread.allocate_lock()  # threading's Lock, without importing threading
        self._replies: list[dict[str, Any]] = []

    @property
    def socket_path(self) -> str | os.PathLike[str]:
        """Where the app is (the transport's address)."""
        return self.transport.address

    @property
    def session(self) -> str:
        return self.protocol.session

    def request(self, tool: str, args: Mapping[str, Any], *, session: str | None = None,
                description: str | None = None, preview: Mapping[str, Any] | None = None,
                timeout: float | None = None, hints: Mapping[str, Any] | None = None,
                raise_on_block: bool = False) -> wire.Decision:
        """Block until the call is decided; ``timeout`` (seconds) ends in a deny by the app."""
        request_id, message = self.protocol.request(tool, args, session=session, description=description,
                                                    preview=preview, timeout=timeout, hints=hints)
        reply = self._exchange(request_id, message, self._reply_wait(timeout))
        return self.protocol.read_decision(reply, raise_on_block=raise_on_block)

    def request_batch(self, calls: Iterable[Call], *, session: str | None = None,
                      timeout: float | None = None) -> list[wire.Decision]:
        """One prompt for several calls; one decision per call, in order (partial approval)."""
        batch_id, message = self.protocol.batch(calls, session=session, timeout=timeout)
        reply = self._exchange(batch_id, message, self._reply_wait(timeout))
        return self.protocol.read_decisions(reply, len(message["calls"]))

    def status(self) -> dict[str, Any]:
        """The app's status (pending count, mode, version); raises if it is not running."""
        status_id, message = self.protocol.status()
        return self.protocol.read_status(self._exchange(status_id, message, self.connect_timeout + QUICK_ANSWER_GRACE))

    def end_session(self, session: str | None = None) -> int:
        """The agent's session is over: the app forgets its session approvals. Returns how many."""
        message_id, message = self.protocol.admin("end_session", session=session or self.session)
        reply = self._exchange(message_id, message, self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_count(reply, "session_ended", "forgotten")

    def sessions(self) -> list[dict[str, Any]]:
        """What the running app remembers from "Allow for session"."""
        message_id, message = self.protocol.admin("sessions")
        reply = self._exchange(message_id, message, self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_entries(reply)

    def revoke(self, session: str | None = None, tool: str | None = None) -> int:
        """Forget remembered approvals (of a session, a tool, or all); returns how many."""
        message_id, message = self.protocol.admin("revoke", session=session, tool=tool)
        reply = self._exchange(message_id, message, self.connect_timeout + QUICK_ANSWER_GRACE)
        return self.protocol.read_count(reply, "revoked", "count")

    def notice(self, kind: NoticeKind, text: str, session: str | None = None) -> None:
        """Tell the person the agent is ``waiting`` for them, ``finished``, or some ``info``: shown in
        the tray and as a notification that never takes focus. Decides nothing."""
        message_id, message = self.protocol.admin("notice", kind=kind, text=text, session=session)
        self.protocol.read_noticed(self._exchange(message_id, message, self.connect_timeout + QUICK_ANSWER_GRACE))

    def show(self, what: ShowWhat = "request") -> bool:
        """Ask the app to raise the most urgent waiting request (``"request"``), the inbox or the
        history, for the person; False when the app shows no windows. Decides nothing."""
        message_id, message = self.protocol.admin("show", what=what)
        return self.protocol.read_shown(self._exchange(message_id, message, self.connect_timeout + QUICK_ANSWER_GRACE))

    def _reply_wait(self, timeout: float | None) -> Callable[[], float]:
        """The wait for a decision, asked again as the reply is awaited: the welcome (pipelined with
        the request) carries the app's default timeout, which only then decides the wait."""
        return lambda: self.protocol.reply_wait(timeout)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __del__(self) -> None:
        # Dropped without close(): give the app its connection slot back (weakref.finalize would do
        # the same at the cost of importing weakref on every hook's start).
        connection = self.__dict__.get("_connection")
        if connection is not None:
            connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- I/O ---------------------------------------------------------------------------------

    def _connect(self) -> list[bytes]:
        """Open a connection; returns the hello to send first (pipelined with the request)."""
        if self._connection is not None:
            if not self._connection.finished():
                return []
            self._drop()  # the app closed it meanwhile (idle timeout, restart): connect afresh
        self._connection = self.transport.connect(self.connect_timeout)
        self.protocol.framer = wire.LineFramer()
        self.protocol.welcome = None  # this app (perhaps restarted with another --timeout) says its own
        return [wire.encode(self.protocol.hello())]

    def _drop(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    def _exchange(self, reply_id: str, message: dict[str, Any], wait: float | Callable[[], float]) -> dict[str, Any]:
        try:
            return self._exchange_once(reply_id, message, wait)
        except (IdleClosed, NeverSent):  # closed just as we sent: it was never read, send it again (once)
            return self._exchange_once(reply_id, message, wait)
        except Unauthorized:
            # No token given and none in the environment: on the desktop itself, the keyring has it.
            if not self.protocol.adopt_keyring_token():
                raise
            return self._exchange_once(reply_id, message, wait)

    def _exchange_once(self, reply_id: str, message: dict[str, Any],
                       wait: float | Callable[[], float]) -> dict[str, Any]:
        with self._lock:
            try:
                out = self._connect()
                assert self._connection is not None
                try:
                    self._connection.send(b"".join([*out, wire.encode(message)]))
                except OSError as exc:  # its newline never went out: the app cannot act on the line
                    raise NeverSent(f"desktop-approver closed the connection before the message was sent "
                                    f"({self.socket_path}: {exc.strerror or exc})") from None
                return self._read_reply(reply_id, message["type"], time.monotonic(), wait)
            except (OSError, ApproverUnavailable) as exc:
                self._drop()
                if isinstance(exc, ApproverUnavailable):
                    raise
                raise unavailable(self.socket_path, exc) from None
            except BaseException:
                # KeyboardInterrupt, a protocol error...: the server treats a closed connection
                # as a cancel, so the person's dialog goes away instead of waiting for nobody.
                self._drop()
                raise

    def _read_reply(self, reply_id: str, kind: str, started: float,
                    wait: float | Callable[[], float]) -> dict[str, Any]:
        """The reply to ``reply_id``; ``wait`` seconds after ``started`` the app counts as gone. A
        callable ``wait`` is asked again after every read, so the welcome can extend it."""
        assert self._connection is not None
        while True:
            for index, reply in enumerate(self._replies):
                if reply.get("id") == reply_id and self.protocol.answers(reply, kind):
                    return self._replies.pop(index)
            remaining = started + (wait() if callable(wait) else wait) - time.monotonic()
            if remaining <= 0:
                raise ApproverUnavailable(f"desktop-approver did not answer within its timeout ({self.socket_path})")
            try:
                data = self._connection.receive(remaining)
            except TimeoutError:
                continue
            if not data:
                raise ApproverUnavailable(f"desktop-approver closed the connection ({self.socket_path})")
            self._replies.extend(self.protocol.parse(data))

