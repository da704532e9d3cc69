"""The client's protocol logic, without I/O.

:class:`ClientProtocol` builds the messages and turns reply lines into decisions or errors;
:class:`~desktop_approver.client.Client` and :class:`~desktop_approver.client.async_client.AsyncClient`
only move its bytes. Standard library only: an agent's environment may pin anything.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Mapping

from . import wire
from .errors import ApproverError, ApproverUnavailable, Blocked, ProtocolError, Unauthorized

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, TypeAlias

    Call: TypeAlias = Mapping[str, Any] | tuple[str, Mapping[str, Any]]
    """One call of a batch: ``{"tool": ..., "args": ...}`` or ``(tool, args)``."""

TOKEN_ENV = "DESKTOP_APPROVER_TOKEN"
AGENT_ENV = "DESKTOP_APPROVER_AGENT"
SESSION_ENV = "DESKTOP_APPROVER_SESSION"
CONNECT_TIMEOUT = 1.0
REPLY_GRACE = 10.0
"""Seconds we wait past the request's own timeout before giving up on a silent app."""
QUICK_ANSWER_GRACE = 4.0
"""Seconds past ``connect_timeout`` an answer that needs nobody (a welcome, a status) may take."""
DEFAULT_WAIT = 300.0
DUPLICATE_ID = "duplicate_id"  # the error code of a message that reused a pending id

KEYRING_SERVICE, KEYRING_USERNAME = "desktop-approver", "socket-token"  # core.tokens keeps the token here


def check_where(client: str, socket_path: object, url: object, transport: object, connect: str) -> None:
    """Refuse, when a client is built, arguments that say where the app is in a way it cannot use,
    with what to pass instead: a wrong object would otherwise fail at the first call as a bare
    ``TypeError`` from ``os.fspath`` or an ``AttributeError`` (a ``FakeApprover`` passed as the socket
    path is the usual one). ``connect`` names the method the client calls on a transport."""
    if transport is not None and (socket_path is not None or url is not None):
        raise TypeError("give a socket_path, a url or a transport, not more than one")
    if socket_path is not None and not isinstance(socket_path, (str, os.PathLike)):
        kind = type(socket_path).__name__
        if hasattr(socket_path, connect):
            raise TypeError(f"{client}() got a {kind} as its socket path; a {kind} is a transport: "
                            f"pass {client}(transport=your_{kind.lower()})")
        raise TypeError(f"{client}() takes a socket path (str or os.PathLike), not {kind}; or pass url=... "
                        f"or transport=... (e.g. {client}(transport=desktop_approver.testing.FakeApprover(handler)))")
    if url is not None and not isinstance(url, str):
        raise TypeError(f"{client}(url=...) takes a string (nats://HOST:PORT or unix:///PATH), "
                        f"not {type(url).__name__}")
    if transport is not None and not callable(getattr(transport, connect, None)):
        raise TypeError(f"{client}(transport=...) takes an object with a {connect}(timeout) method (such as "
                        f"desktop_approver.testing.FakeApprover), not {type(transport).__name__}")


def keyring_token() -> str | None:
    """The app's token from the desktop keyring, if ``keyring`` is installed and holds one.

    Only asked after the app refused a client without a token, so an agent's start-up never pays
    for importing keyring, and an agent's environment need not have it.
    """
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME) or None
    except (KeyringError, RuntimeError, OSError):
        return None


def git_branch(cwd: str) -> str | None:
    """The current branch, read from ``.git/HEAD`` (no subprocess and no pathlib: hooks start once per call)."""
    folder = os.path.abspath(cwd)
    while True:
        git = os.path.join(folder, ".git")
        if os.path.isfile(git):  # a worktree: "gitdir: <path>"
            try:
                with open(git, encoding="utf-8") as pointer:
                    target = pointer.read().split(":", 1)[1].strip()
            except (OSError, IndexError, UnicodeDecodeError):
                return None
            git = os.path.realpath(os.path.join(folder, target))
        try:
            with open(os.path.join(git, "HEAD"), encoding="utf-8") as head:
                text = head.read().strip()
        except (OSError, UnicodeDecodeError):
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent
            continue
        return text.removeprefix("ref: refs/heads/") if text.startswith("ref:") else text[:12]


def default_agent_name() -> str:
    name = os.environ.get(AGENT_ENV)
    if name:
        return name
    argv0 = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return argv0 if argv0 and argv0 not in ("-c", "-") else "python"


def _positive_finite(value: float) -> bool:
    return 0 < value < float("inf")  # False for NaN too (every comparison with NaN is)


def check_timeout(timeout: object, name: str = "timeout") -> float | None:
    """``timeout`` if it is None or a finite number of seconds above zero; else ValueError.

    NaN, infinities, zero and negative numbers would make a wait that is over before it starts,
    which reads as "the app is not reachable": for a caller who chose ``on_unavailable="allow"``
    that would be an allow nobody gave. They are refused where they are given, never sent.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(timeout).__name__}")
    if not _positive_finite(timeout):
        raise ValueError(f"{name} must be a finite number of seconds above 0, not {timeout!r}")
    return float(timeout)


def normalise_call(call: Call) -> dict[str, Any]:
    """A batch entry as a ``(tool, args)`` pair or a dict with tool, args, description, preview."""
    if isinstance(call, tuple):
        tool, args = call
        entry: dict[str, Any] = {"tool": tool, "args": dict(args)}
    elif isinstance(call, Mapping):
        entry = {k: v for k, v in call.items() if v is not None}
        entry.setdefault("args", {})
    else:
        raise TypeError(f"a batch call is a (tool, args) pair or a dict, not {type(call).__name__}")
    if not isinstance(entry.get("tool"), str) or not isinstance(entry.get("args"), Mapping):
        raise TypeError("a batch call needs a str tool and a dict of args")
    entry["args"] = dict(entry["args"])
    return entry


class ClientProtocol:
    """Messages out, decisions in; shared by the sync and async clients."""

    def __init__(self, *, agent: str | None = None, session: str | None = None,
                 token: str | None = None, cwd: str | None = None) -> None:
        self.agent = agent or default_agent_name()
        self.session = session or os.environ.get(SESSION_ENV) or f"{self.agent}-{os.getpid()}-{os.urandom(4).hex()}"
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._tried_keyring = False
        self.cwd = cwd or _safe_cwd()
        self.framer = wire.LineFramer()
        self.welcome: dict[str, Any] | None = None
        self._next_id = 0

    def new_id(self, prefix: str = "r") -> str:
        self._next_id += 1
        return f"{prefix}{self._next_id}"

    def hello(self) -> dict[str, Any]:
        client: dict[str, Any] = {
            "agent": self.agent,
            "pid": os.getpid(),
            "cwd": self.cwd,
            "host": socket.gethostname(),
        }
        branch = git_branch(self.cwd)
        if branch:
            client["git_branch"] = branch
        message: dict[str, Any] = {"v": wire.PROTOCOL_VERSION, "type": "hello", "client": client}
        if self.token:
            message["token"] = self.token
        return message

    def request(self, tool: str, args: Mapping[str, Any], *, session: str | None, description: str | None,
                preview: Mapping[str, Any] | None, timeout: float | None,
                hints: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        if not isinstance(tool, str) or not tool:
            raise TypeError("tool must be a non-empty str")
        if not isinstance(args, Mapping):
            raise TypeError(f"args must be a dict, not {type(args).__name__}")
        check_timeout(timeout)
        request_id = self.new_id()
        message: dict[str, Any] = {
            "v": wire.PROTOCOL_VERSION, "type": "request", "id": request_id,
            "tool": tool, "args": dict(args), "session": session or self.session,
        }
        _put_optional(message, description=description, preview=dict(preview) if preview else None,
                      timeout=timeout, hints=dict(hints) if hints else None)
        return request_id, message

    def batch(self, calls: Iterable[Call], *, session: str | None,
              timeout: float | None) -> tuple[str, dict[str, Any]]:
        check_timeout(timeout)
        entries = [normalise_call(call) for call in calls]
        if not entries:
            raise ValueError("a batch needs at least one call")
        batch_id = self.new_id("b")
        message: dict[str, Any] = {"v": wire.PROTOCOL_VERSION, "type": "batch", "id": batch_id,
                                   "calls": entries, "session": session or self.session}
        _put_optional(message, timeout=timeout)
        return batch_id, message

    def status(self) -> tuple[str, dict[str, Any]]:
        status_id = self.new_id("s")
        return status_id, {"v": wire.PROTOCOL_VERSION, "type": "status", "id": status_id}

    def admin(self, message_type: str, /, **fields: Any) -> tuple[str, dict[str, Any]]:
        """``sessions``, ``revoke``, ``end_session``, ``notice`` and ``show``: messages that never approve anything."""
        message_id = self.new_id("m")
        message = {"v": wire.PROTOCOL_VERSION, "type": message_type, "id": message_id}
        _put_optional(message, **fields)
        return message_id, message

    def cancel(self, request_id: str) -> dict[str, Any]:
        return {"v": wire.PROTOCOL_VERSION, "type": "cancel", "id": request_id}

    def adopt_keyring_token(self) -> bool:
        """After a refusal: take the keyring's token if none was given (once). True to retry."""
        if self.token or self._tried_keyring:
            return False
        self._tried_keyring = True
        self.token = keyring_token()
        return self.token is not None

    @staticmethod
    def answers(reply: Mapping[str, Any], kind: str) -> bool:
        """Does ``reply`` (carrying the id of our ``kind`` message) answer it? An ``error`` about
        another message that reused the id (``in_reply_to: "cancel"``) does not, nor does a
        ``duplicate_id``: it refuses a second message sent with the id of one still pending, and
        the pending one still stands and gets its own answer (ipc/PROTOCOL.md, ``error``). Taken
        as the answer, it would end our wait before the person's decision; and a client that had
        sent that second message would then read the first one's decision as its own. The clients
        never send an id still waiting (:class:`~desktop_approver.client.async_client.AsyncClient`
        refuses it with a typed ``duplicate_id`` error of its own)."""
        if reply.get("type") != "error":
            return True
        if reply.get("code") == DUPLICATE_ID:
            return False
        in_reply_to = reply.get("in_reply_to")
        return in_reply_to is None or in_reply_to == kind

    def reply_wait(self, timeout: float | None) -> float:
        """How long to wait for a reply before calling the app unavailable (never forever).

        Both clients compute it once the ``welcome`` is known (the async client waits for it; the
        blocking one pipelines its hello and extends its deadline when the welcome arrives): before
        that the app's own ``default_timeout`` is unknown, and a wait made from our guess could end
        before the app's answer, which would turn into an unavailable (an allow, for a caller who
        chose ``on_unavailable="allow"``) while the person could still deny.
        """
        default = DEFAULT_WAIT
        if self.welcome is not None:
            announced = self.welcome.get("default_timeout")
            if isinstance(announced, (int, float)) and not isinstance(announced, bool) and _positive_finite(announced):
                default = float(announced)
        # The person may pause the countdown; the app still answers within the timeout stretched by
        # its pause allowance (core.decisions.tickets.PAUSE_ALLOWANCE: at most 1.5 times the
        # timeout); twice the timeout is what ipc/PROTOCOL.md promises a client may wait, whichever
        # app version answers.
        return (timeout if timeout is not None else default) * 2 + REPLY_GRACE

    def parse(self, data: bytes) -> list[dict[str, Any]]:
        """Complete messages in ``data``; the welcome is absorbed here."""
        messages = []
        for line in self.framer.feed(data):
            if isinstance(line, wire.Oversized):
                raise ProtocolError(f"reply line of {line.size} bytes is over the limit", "line_too_long")
            try:
                message = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ProtocolError(f"reply is not JSON: {exc}", "invalid_json") from None
            if not isinstance(message, dict):
                raise ProtocolError("reply is not a JSON object", "invalid_message")
            if message.get("type") == "welcome":
                self.welcome = message
                continue
            if message.get("type") == "error" and message.get("id") is None:
                raise error_from(message)
            messages.append(message)
        return messages

    # -- typed results: one reader per reply type; an ``error`` reply becomes its typed exception --

    def read_decision(self, reply: Mapping[str, Any], *, raise_on_block: bool = False) -> wire.Decision:
        """The :class:`~desktop_approver.client.wire.Decision` a ``decision`` reply carries."""
        try:
            decision = wire.Decision.from_wire(dict(_expect(reply, "decision")))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed decision: {exc}", "invalid_message") from None
        if raise_on_block and decision.blocked:
            raise Blocked(decision)
        return decision

    def read_decisions(self, reply: Mapping[str, Any], expected: int) -> list[wire.Decision]:
        """One decision per call of a batch, in order; any other count is a protocol error."""
        try:
            decisions = [wire.Decision.from_wire(item) for item in _expect(reply, "batch_decision")["decisions"]]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed batch_decision: {exc}", "invalid_message") from None
        check_batch_length(decisions, expected)
        return decisions

    def read_status(self, reply: Mapping[str, Any]) -> dict[str, Any]:
        """A ``status_reply`` as the app sent it (its fields are listed in ipc/PROTOCOL.md)."""
        return dict(_expect(reply, "status_reply"))

    def read_entries(self, reply: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The remembered approvals a ``sessions_reply`` lists."""
        entries = _expect(reply, "sessions_reply").get("entries")
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise ProtocolError("malformed sessions_reply: entries is not a list of objects", "invalid_message")
        return entries

    def read_noticed(self, reply: Mapping[str, Any]) -> None:
        """The app took a ``notice`` (or said why not, as a typed error)."""
        _expect(reply, "noticed")

    def read_shown(self, reply: Mapping[str, Any]) -> bool:
        """Whether the app raised what ``show`` asked for (False: it shows no windows)."""
        shown = _expect(reply, "shown").get("shown")
        if not isinstance(shown, bool):
            raise ProtocolError("malformed shown: shown is not a boolean", "invalid_message")
        return shown

    def read_count(self, reply: Mapping[str, Any], kind: str, field: str) -> int:
        """A number of forgotten approvals: ``session_ended.forgotten``, ``revoked.count``."""
        value = _expect(reply, kind).get(field)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProtocolError(f"malformed {kind}: {field} is not an integer", "invalid_message")
        return value


def _expect(reply: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """``reply`` if it is a ``kind``; the typed error an ``error`` reply stands for; else garbage."""
    actual = reply.get("type")
    if actual == "error":
        raise error_from(reply)
    if actual != kind:
        raise ProtocolError(f"unexpected reply type {actual!r} (expected {kind!r})", "invalid_message")
    return reply


class IdleClosed(ApproverUnavailable):
    """The app closed the connection as idle. It read nothing after deciding that, so whatever we
    sent meanwhile was never acted on: the clients send it again, once, on a new connection."""


class NeverSent(ApproverUnavailable):
    """The connection was found closed as the message was written, and not one byte of it left: the
    app cannot have read it, so the clients send it again, once, on a new connection. (A message that
    may have reached the app is never sent again: its failure is the caller's ``ApproverUnavailable``.)"""


def error_from(message: Mapping[str, Any]) -> ApproverError:
    code = str(message.get("code", "error"))
    text = str(message.get("message", "the approver refused the message"))
    if code == "shutting_down":  # the app is going away: the same as finding it gone (fail closed)
        return ApproverUnavailable(f"desktop-approver quit before answering: {text}")
    if code == "idle_timeout":
        return IdleClosed(f"desktop-approver closed the idle connection: {text}")
    return Unauthorized(text, code) if code == "unauthorized" else ProtocolError(text, code)


def unavailable(path: os.PathLike[str] | str, reason: object) -> ApproverUnavailable:
    return ApproverUnavailable(f"desktop-approver is not reachable at {path}: {reason}")


def _put_optional(message: dict[str, Any], **fields: Any) -> None:
    for key, value in fields.items():
        if value is not None:
            message[key] = value


def _safe_cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "?"


def check_batch_length(decisions: Sequence[Any], expected: int) -> None:
    if len(decisions) != expected:
        raise ProtocolError(f"batch reply has {len(decisions)} decisions for {expected} calls", "invalid_message")
