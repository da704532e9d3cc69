"""The blocking client: ask the desktop, wait for the person's answer.

::

    from desktop_approver import Client
    decision = Client().request("write_file", {"path": "a.txt", "content": "hi"}, session="run-42")
    if decision.allowed: ...

Fails closed: if the app is not running, dies, or stops answering, :class:`ApproverUnavailable`
is raised (never an allow, never a hang). Standard library only.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any, Iterable, Mapping

from . import wire
from ._client_base import CONNECT_TIMEOUT, Call, ClientProtocol, IdleClosed, check_batch_length, unavailable
from .errors import ApproverUnavailable, Unauthorized
from .paths import resolve_socket_path
from .server_check import check_server, check_socket_path

__all__ = ["Client"]


class Client:
    """One connection to the app, opened on first use and reopened after a failure."""

    def __init__(self, socket_path: str | os.PathLike[str] | None = None, *, agent: str | None = None,
                 session: str | None = None, token: str | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.socket_path = resolve_socket_path(socket_path)
        self.protocol = ClientProtocol(agent=agent, session=session, token=token)
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._replies: list[dict[str, Any]] = []

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
        reply = self._exchange(request_id, message, self.protocol.reply_wait(timeout))
        return self.protocol.result(reply, raise_on_block=raise_on_block)

    def request_batch(self, calls: Iterable[Call], *, session: str | None = None,
                      timeout: float | None = None) -> list[wire.Decision]:
        """One prompt for several calls; one decision per call, in order (partial approval)."""
        batch_id, message = self.protocol.batch(calls, session=session, timeout=timeout)
        reply = self._exchange(batch_id, message, self.protocol.reply_wait(timeout))
        decisions = self.protocol.result(reply)
        check_batch_length(decisions, len(message["calls"]))
        return decisions

    def status(self) -> dict[str, Any]:
        """The app's status (pending count, mode, version); raises if it is not running."""
        status_id, message = self.protocol.status()
        return self.protocol.result(self._exchange(status_id, message, self.connect_timeout + 4.0))

    def end_session(self, session: str | None = None) -> int:
        """The agent's session is over: the app forgets its session approvals. Returns how many."""
        message_id, message = self.protocol.admin("end_session", session=session or self.session)
        return int(self.protocol.result(self._exchange(message_id, message, self.connect_timeout + 4.0))["forgotten"])

    def sessions(self) -> list[dict[str, Any]]:
        """What the running app remembers from "Allow for session"."""
        message_id, message = self.protocol.admin("sessions")
        return list(self.protocol.result(self._exchange(message_id, message, self.connect_timeout + 4.0))["entries"])

    def revoke(self, session: str | None = None, tool: str | None = None) -> int:
        """Forget remembered approvals (of a session, a tool, or all); returns how many."""
        message_id, message = self.protocol.admin("revoke", session=session, tool=tool)
        return int(self.protocol.result(self._exchange(message_id, message, self.connect_timeout + 4.0))["count"])

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- I/O ---------------------------------------------------------------------------------

    def _connect(self) -> list[bytes]:
        """Open the socket; returns the hello to send first (pipelined with the request)."""
        if self._sock is not None:
            if not _closed_by_app(self._sock):
                return []
            self._drop()  # the app closed it meanwhile (idle timeout, restart): connect afresh
        try:
            check_socket_path(self.socket_path)  # before connecting: nothing reaches another user's socket
        except OSError as exc:
            raise unavailable(self.socket_path, exc.strerror or exc) from None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(os.fspath(self.socket_path))
            check_server(sock, self.socket_path)
        except OSError as exc:
            sock.close()
            raise unavailable(self.socket_path, exc.strerror or exc) from None
        except ApproverUnavailable:
            sock.close()
            raise
        self._sock = sock
        self.protocol.framer = wire.LineFramer()
        return [wire.encode(self.protocol.hello())]

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _exchange(self, reply_id: str, message: dict[str, Any], wait: float) -> dict[str, Any]:
        try:
            return self._exchange_once(reply_id, message, wait)
        except IdleClosed:  # closed as idle just as we sent: it was never read, send it again
            return self._exchange_once(reply_id, message, wait)
        except Unauthorized:
            # No token given and none in the environment: on the desktop itself, the keyring has it.
            if not self.protocol.adopt_keyring_token():
                raise
            return self._exchange_once(reply_id, message, wait)

    def _exchange_once(self, reply_id: str, message: dict[str, Any], wait: float) -> dict[str, Any]:
        with self._lock:
            try:
                out = self._connect()
                assert self._sock is not None
                self._sock.sendall(b"".join([*out, wire.encode(message)]))
                return self._read_reply(reply_id, message["type"], time.monotonic() + wait)
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

    def _read_reply(self, reply_id: str, kind: str, deadline: float) -> dict[str, Any]:
        assert self._sock is not None
        while True:
            for index, reply in enumerate(self._replies):
                if reply.get("id") == reply_id and self.protocol.answers(reply, kind):
                    return self._replies.pop(index)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ApproverUnavailable(f"desktop-approver did not answer within its timeout ({self.socket_path})")
            self._sock.settimeout(remaining)
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise ApproverUnavailable(f"desktop-approver closed the connection ({self.socket_path})")
            self._replies.extend(self.protocol.parse(data))


def _closed_by_app(sock: socket.socket) -> bool:
    """Between our requests the app sends nothing unasked, except a notice before it hangs up
    (``idle_timeout``): anything readable now, or EOF, means the connection is finished."""
    timeout = sock.gettimeout()
    try:
        sock.setblocking(False)
        try:
            sock.recv(1, socket.MSG_PEEK)
        finally:
            sock.settimeout(timeout)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True
