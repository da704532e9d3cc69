"""Test an agent's approval paths without the app: a fake approver that answers in process.

::

    from desktop_approver import Client, testing

    fake = testing.FakeApprover(lambda call: testing.deny("not on main"))
    decision = Client(transport=fake).request("Bash", {"command": "git push"})
    assert not decision.allowed and decision.note == "not on main"

:class:`FakeApprover` is a transport (:mod:`desktop_approver.client.transport`), so the client under test
runs all of its own code: the hello, framing, JSON, matching replies to ids, reading decisions,
and the typed errors (:class:`~desktop_approver.client.errors.Blocked` with ``raise_on_block``,
:class:`~desktop_approver.client.errors.ApproverUnavailable` when the fake is down or hangs up,
:class:`~desktop_approver.client.errors.Unauthorized` for a wrong token). The fake answers with the
protocol's own messages (``ipc/PROTOCOL.md``); your ``handler`` plays the person at the desktop.

The handler gets one :class:`ApprovalRequest` per call (each call of a batch too) and returns an
:class:`Answer` (:func:`allow_once`, :func:`allow_session`, :func:`deny`, :func:`block`), or raises
:class:`AppGone` to make the app vanish mid-question. Like the app, the fake remembers an
``allow_session`` for the same agent, session, tool and arguments, and answers those itself.

Standard library only; never imported by ``import desktop_approver`` or by the hook.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .client import wire
from .client.vocabulary import DecidedBy, RiskReport
from .client.vocabulary import DecisionName as DecisionName
from .version import __version__

__all__ = ["FakeApprover", "ApprovalRequest", "Answer", "AppGone", "allow_once", "allow_session", "deny", "block",
           "FAKE_RISK"]

FAKE_RISK: RiskReport = {"level": "moderate", "reasons": ["assessed by no one: FakeApprover"]}
"""The risk the fake reports unless an answer names one: it has no risk reading of its own."""


@dataclass(frozen=True)
class ApprovalRequest:
    """One call as the app would show it to the person."""

    tool: str
    args: dict[str, Any]
    session: str
    agent: str
    id: str
    description: str | None = None
    preview: dict[str, Any] | None = None
    hints: dict[str, Any] | None = None
    timeout: float | None = None
    batch_index: int | None = None
    """Position in its batch; ``None`` for a single request."""
    client: dict[str, Any] = field(default_factory=dict)
    """What the client's hello said about itself: pid, cwd, host, git_branch."""


@dataclass(frozen=True)
class Answer:
    """What the fake person (or rule) decided; sent as the protocol's ``decision`` fields."""

    decision: DecisionName
    note: str | None = None
    updated_args: dict[str, Any] | None = None
    decided_by: DecidedBy = "user"
    rule: str | None = None
    blocked: bool = False
    risk: RiskReport = field(default_factory=lambda: RiskReport(level=FAKE_RISK["level"],
                                                                reasons=list(FAKE_RISK["reasons"])))

    def __post_init__(self) -> None:
        if self.decision not in wire.DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(wire.DECISIONS)}, not {self.decision!r}")
        if self.blocked and (self.decision != "deny" or self.decided_by != "policy"):
            raise ValueError("only a policy deny can be blocked (use testing.block)")

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision, "decided_by": self.decided_by, "blocked": self.blocked,
                               "risk": self.risk}
        for name in ("note", "rule", "updated_args"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


def allow_once(*, updated_args: dict[str, Any] | None = None, note: str | None = None) -> Answer:
    """Allow this call (with ``updated_args``: run these arguments instead)."""
    return Answer("allow_once", note=note, updated_args=updated_args)


def allow_session(*, note: str | None = None) -> Answer:
    """Allow this call and the same call again in this session (the fake remembers it)."""
    return Answer("allow_session", note=note)


def deny(note: str | None = None) -> Answer:
    """The person's "no", with what they wrote for the agent."""
    return Answer("deny", note=note)


def block(note: str | None = None, rule: str = "test-block") -> Answer:
    """A policy ``block`` rule refused the call: ``Decision.blocked``, ``Blocked`` with ``raise_on_block``."""
    return Answer("deny", note=note, decided_by="policy", rule=rule, blocked=True)


class AppGone(Exception):
    """Raise it in a handler: the app disappears without answering (the client fails closed)."""


Handler = Callable[[ApprovalRequest], Answer]


class FakeApprover:
    """A transport for :class:`~desktop_approver.Client` and :class:`~desktop_approver.AsyncClient`
    whose app is ``handler``.

    ``available = False`` makes every new connection fail as if the app were not running;
    ``token`` makes the fake refuse a hello without it. ``requests`` lists every call received,
    in order, including those answered from session memory.
    """

    address = "fake-approver"

    def __init__(self, handler: Handler, *, available: bool = True, token: str | None = None) -> None:
        self.handler = handler
        self.available = available
        self.token = token
        self.requests: list[ApprovalRequest] = []
        self.notices: list[tuple[str, str]] = []   # (kind, text) of every notice the agent sent
        self._remembered: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self._started = time.time()
        self._lock = threading.Lock()  # a sync Client may be shared by threads

    def __repr__(self) -> str:
        state = "available" if self.available else "unavailable"
        return f"FakeApprover({self.handler!r}, {state}, {len(self.requests)} requests)"

    def connect(self, timeout: float) -> _FakeConnection:
        self._refuse_if_down()
        return _FakeConnection(self)

    async def connect_async(self, timeout: float) -> _FakeAsyncConnection:
        self._refuse_if_down()
        return _FakeAsyncConnection(self)

    def _refuse_if_down(self) -> None:
        if not self.available:
            raise ConnectionRefusedError(111, "FakeApprover is unavailable")

    # -- the app's side of one connection ----------------------------------------------------

    def _answer(self, conversation: _Conversation, line: bytes) -> list[dict[str, Any]]:
        """The messages the app sends for one line from the client; raises AppGone to hang up."""
        try:
            message = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return [_error(None, "invalid_json", "the line is not JSON")]
        if not isinstance(message, dict):
            return [_error(None, "invalid_message", "the message is not a JSON object")]
        kind, message_id = message.get("type"), message.get("id")
        if message.get("v") != wire.PROTOCOL_VERSION:
            return [_error(message_id, "unsupported_version", f"unsupported version {message.get('v')!r}", kind)]
        if kind == "hello":
            return self._welcome(conversation, message)
        if self.token is not None and not conversation.welcomed:
            raise _Refused(_error(message_id, "unauthorized", "hello first, with the token", kind))
        with self._lock:
            if kind == "request":
                return [{"v": 1, "type": "decision", "id": message_id, **self._decide(conversation, message)}]
            if kind == "batch":
                calls = message.get("calls") or []
                decisions = [{"index": index, **self._decide(conversation, {**call, "id": message_id,
                                                                                 "session": message.get("session")},
                                                             batch_index=index)}
                             for index, call in enumerate(calls)]
                return [{"v": 1, "type": "batch_decision", "id": message_id, "decisions": decisions}]
            if kind == "cancel":  # the fake answers at once: nothing is ever pending to cancel
                return [_error(message_id, "unknown_id", f"no pending request {message_id!r}", kind)]
            if kind == "notice":
                if message.get("kind") not in ("waiting", "finished", "info") or not isinstance(
                        message.get("text"), str) or not 1 <= len(message["text"]) <= 1024:
                    return [_error(message_id, "invalid_message", "a notice needs a kind (waiting, finished, info) "
                                   "and a text of 1 to 1024 characters", kind)]
                self.notices.append((message["kind"], message["text"]))
                return [{"v": 1, "type": "noticed", "id": message_id}]
            if kind in ("status", "sessions", "end_session", "revoke"):
                return [{"v": 1, "id": message_id, **self._admin(conversation, kind, message)}]
        return [_error(message_id, "unknown_type", f"unknown message type {kind!r}", kind)]

    def _welcome(self, conversation: _Conversation, hello: dict[str, Any]) -> list[dict[str, Any]]:
        if self.token is not None and hello.get("token") != self.token:
            raise _Refused(_error(None, "unauthorized", "wrong or missing token"))
        conversation.welcomed = True
        conversation.client = dict(hello.get("client") or {})
        return [{"v": 1, "type": "welcome", "server": "desktop-approver", "version": __version__,
                 "default_timeout": 300.0, "max_line_bytes": wire.MAX_LINE_BYTES,
                 "peer": {"pid": os.getpid(), "uid": os.getuid()}}]

    def _decide(self, conversation: _Conversation, call: dict[str, Any],
                batch_index: int | None = None) -> dict[str, Any]:
        client = conversation.client
        request = ApprovalRequest(
            tool=str(call.get("tool")), args=dict(call.get("args") or {}), session=str(call.get("session")),
            agent=str(client.get("agent", "")), id=str(call.get("id", "")), description=call.get("description"),
            preview=call.get("preview"), hints=call.get("hints"), timeout=call.get("timeout"),
            batch_index=batch_index, client=client)
        self.requests.append(request)
        key = (request.agent, request.session, request.tool, wire.canonical_json(request.args))
        remembered = self._remembered.get(key)
        if remembered is not None:
            remembered["hits"] += 1
            return Answer("allow_session", decided_by="session").fields()
        answer = self.handler(request)
        if not isinstance(answer, Answer):
            raise TypeError(f"a FakeApprover handler returns a testing.Answer, not {type(answer).__name__}")
        if answer.decision == "allow_session" and answer.decided_by == "user":
            self._remembered[key] = {"session": request.session, "tool": request.tool, "scope": "exact",
                                     "args": key[3], "agent": request.agent, "created": time.time(), "hits": 0}
        return answer.fields()

    def _admin(self, conversation: _Conversation, kind: str, message: dict[str, Any]) -> dict[str, Any]:
        agent = conversation.client.get("agent")
        if kind == "status":
            sessions = len({(entry["agent"], entry["session"]) for entry in self._remembered.values()})
            return {"type": "status_reply", "version": __version__, "pid": os.getpid(), "socket": self.address,
                    "pending": 0, "mode": "interactive", "sessions": sessions, "uptime": time.time() - self._started}
        if kind == "sessions":
            return {"type": "sessions_reply",
                    "entries": [dict(entry) for entry in self._remembered.values() if entry["agent"] == agent]}
        session, tool = message.get("session"), message.get("tool")
        gone = [key for key, entry in self._remembered.items() if entry["agent"] == agent
                and session in (None, entry["session"]) and (kind == "end_session" or tool in (None, entry["tool"]))]
        for key in gone:
            del self._remembered[key]
        return {"type": "session_ended", "forgotten": len(gone)} if kind == "end_session" else \
            {"type": "revoked", "count": len(gone)}


class _Refused(Exception):
    """The fake app refuses the client: it sends this last error and closes the connection."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error


def _error(message_id: object, code: str, text: str, in_reply_to: object = None) -> dict[str, Any]:
    error: dict[str, Any] = {"v": 1, "type": "error", "code": code, "message": text}
    if isinstance(message_id, str):
        error["id"] = message_id
        if isinstance(in_reply_to, str):
            error["in_reply_to"] = in_reply_to
    return error


class _Conversation:
    """One connection's state on the fake app's side, shared by the sync and async doors."""

    def __init__(self, app: FakeApprover) -> None:
        self.app = app
        self.framer = wire.LineFramer()
        self.welcomed = False
        self.client: dict[str, Any] = {}
        self.closed = False

    def check_open(self) -> None:
        """Writing to a connection the app closed, or to an app that went away, fails like a socket."""
        if not self.app.available:
            self.closed = True
        if self.closed:
            raise BrokenPipeError(32, "FakeApprover closed the connection")

    def feed(self, data: bytes) -> bytes:
        """The app's reply bytes to ``data``; after a refusal or :class:`AppGone`, closed."""
        out = []
        for line in self.framer.feed(data):
            if self.closed:
                break
            if isinstance(line, wire.Oversized):
                out.append(wire.encode(_error(None, "line_too_long", f"line of {line.size} bytes")))
                continue
            try:
                out.extend(wire.encode(message) for message in self.app._answer(self, line))
            except _Refused as refused:
                out.append(wire.encode(refused.error))
                self.closed = True
            except AppGone:
                self.closed = True
        return b"".join(out)


class _FakeConnection:
    def __init__(self, app: FakeApprover) -> None:
        self.conversation = _Conversation(app)
        self.inbox: deque[bytes] = deque()

    def send(self, data: bytes) -> None:
        self.conversation.check_open()
        self.inbox.append(self.conversation.feed(data))

    def receive(self, timeout: float) -> bytes:
        # The fake answers while it is sent to: nothing queued means it has nothing more to say,
        # which a client waiting for a reply must see as the app hanging up (never a hang).
        return self.inbox.popleft() if self.inbox else b""

    def finished(self) -> bool:
        return self.conversation.closed or not self.conversation.app.available

    def close(self) -> None:
        self.conversation.closed = True


class _FakeAsyncConnection:
    def __init__(self, app: FakeApprover) -> None:
        self.conversation = _Conversation(app)
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()

    def write(self, data: bytes) -> None:
        self.conversation.check_open()
        reply = self.conversation.feed(data)
        if reply:
            self.inbox.put_nowait(reply)
        if self.conversation.closed:
            self.inbox.put_nowait(b"")

    async def drain(self) -> None:
        await asyncio.sleep(0)

    async def read(self) -> bytes:
        return await self.inbox.get()

    def is_closing(self) -> bool:
        return self.conversation.closed

    def close(self) -> None:
        if not self.conversation.closed:
            self.conversation.closed = True
            self.inbox.put_nowait(b"")
