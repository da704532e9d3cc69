"""The golden exchanges in ``ipc/examples/`` replayed against both sides of the protocol.

Server side: each example's lines are sent over a real unix socket (raw bytes, no client
library) to a real :class:`ApproverServer` whose person is scripted by the example's ``person``
lines; every ``recv`` line must match what comes back. Client side: a fake app on a real unix
socket answers with the recorded replies, and the real ``Client`` and ``AsyncClient`` must send
the recorded messages and turn the replies into the recorded decisions. The format and the
placeholders are described in ``ipc/examples/README.md``.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from desktop_approver.client import Client, wire
from desktop_approver.client.async_client import AsyncClient
from desktop_approver.client.errors import ProtocolError
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from desktop_approver.core.messages.protocol import TOO_DEEP, decode
from tests.support.service import WAIT, ServiceThread

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "ipc" / "examples"

PLACEHOLDER_CHECKS: dict[str, Callable[[Any], bool]] = {
    "<string>": lambda value: isinstance(value, str),
    "<int>": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "<number>": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
}
PLACEHOLDER_SAMPLES: dict[str, Any] = {"<string>": "sample", "<int>": 4242, "<number>": 1.5}


# -- examples -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    name: str
    steps: list[dict[str, Any]]

    @property
    def token(self) -> str | None:
        """The token the app in the replay requires (an ``app`` line), if any."""
        return next((step["token"] for step in self.steps if step["dir"] == "app"), None)


SENT_AS_WRITTEN = re.compile(r'\{"dir": "send", "msg": (?P<text>.*)\}')
"""The one layout of a ``send``/``msg`` line: the message's text is what goes on the wire, as written
(ipc/examples/README.md), so ``4242.0`` stays ``4242.0`` for a client whose JSON reader makes it ``4242``."""


def load_examples() -> list[Example]:
    examples = []
    for path in sorted(EXAMPLES_DIR.glob("*.jsonl")):
        steps = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            step = json.loads(line)
            if step["dir"] == "send" and "msg" in step:
                written = SENT_AS_WRITTEN.fullmatch(line)
                assert written, f"{path.name}:{number}: a send line is written {{\"dir\": \"send\", \"msg\": ...}}"
                assert json.loads(written["text"]) == step["msg"], f"{path.name}:{number}"
                step["_text"] = written["text"]
            steps.append(step)
        examples.append(Example(path.stem, steps))
    return examples


EXAMPLES = load_examples()


def step_bytes(step: dict[str, Any]) -> bytes:
    """What a ``send`` line puts on the socket: a ``msg`` as written in the file, not re-serialised."""
    if "msg" in step:
        return str(step["_text"]).encode("utf-8") + b"\n"
    if "raw_hex" in step:
        return bytes.fromhex(step["raw_hex"]) + b"\n"
    return (step["raw"] * step.get("repeat", 1) + step.get("suffix", "")).encode("utf-8") + b"\n"


def assert_matches(expected: Any, actual: Any, where: str = "msg") -> None:
    """Equality, except that a placeholder string matches any value of its kind."""
    if isinstance(expected, str) and expected in PLACEHOLDER_CHECKS:
        assert PLACEHOLDER_CHECKS[expected](actual), f"{where}: {actual!r} is not a {expected}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), \
            f"{where}: keys {sorted(actual) if isinstance(actual, dict) else actual!r} != {sorted(expected)}"
        for key, value in expected.items():
            assert_matches(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for index, (value, got) in enumerate(zip(expected, actual, strict=True)):
            assert_matches(value, got, f"{where}[{index}]")
    else:
        assert actual == expected and type(actual) is type(expected) or (
            isinstance(expected, float) and isinstance(actual, (int, float)) and actual == expected), \
            f"{where}: {actual!r} != {expected!r}"


def fill(value: Any) -> Any:
    """A recorded message with its placeholders replaced by sample values (for the fake app)."""
    if isinstance(value, str) and value in PLACEHOLDER_SAMPLES:
        return PLACEHOLDER_SAMPLES[value]
    if isinstance(value, dict):
        return {key: fill(item) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item) for item in value]
    return value


def person_answer(step: dict[str, Any]) -> Callable[[Ticket], list[Verdict]]:
    """A ``person`` line as the scripted person's answer: one for every call, or one per call."""
    def verdict(answer: dict[str, Any]) -> Verdict:
        return Verdict(answer["answer"], "user", note=answer.get("note"), updated_args=answer.get("updated_args"),
                       scope=answer.get("scope", "exact"))

    if "answers" in step:
        return lambda ticket: [verdict(answer) for answer in step["answers"]]
    return lambda ticket: [verdict(step) for _ in ticket.calls]


# -- the real app, scripted ------------------------------------------------------------------------

class RawConnection:
    """A client with no library at all: bytes out, JSON lines in."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(WAIT)
        self.sock.connect(str(path))
        self.framer = wire.LineFramer()
        self.lines: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_msg(self, message: dict[str, Any]) -> None:
        self.send(wire.encode(message))

    def recv(self) -> dict[str, Any]:
        while not self.lines:
            data = self.sock.recv(65536)
            assert data, "the app closed the connection"
            self.lines.extend(line for line in self.framer.feed(data) if isinstance(line, bytes))
        return json.loads(self.lines.pop(0))

    def expect_closed(self, where: str) -> None:
        """The app has closed the connection: nothing more than what was read, then end of input."""
        assert not self.lines, f"{where}: unread replies before the close: {self.lines}"
        assert self.sock.recv(65536) == b"", f"{where}: the app did not close the connection"

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_there_are_examples_of_every_reply() -> None:
    kinds = {step["msg"].get("type") for example in EXAMPLES for step in example.steps if step["dir"] == "recv"}
    assert kinds >= {"welcome", "decision", "batch_decision", "status_reply", "sessions_reply", "session_ended",
                     "revoked", "error"}
    assert {step["dir"] for example in EXAMPLES for step in example.steps} == {
        "app", "send", "recv", "person", "closed", "connect"}
    for example in EXAMPLES:
        assert all(step["dir"] != "app" for step in example.steps[1:]), f"{example.name}: app line not first"


def test_examples_cover_what_implementers_asked_about() -> None:
    """Issue 25: the cancel of a batch, a token refusal and a depth-limit refusal are recorded."""
    replies = [(example.name, step["msg"]) for example in EXAMPLES for step in example.steps if step["dir"] == "recv"]
    assert any(reply["type"] == "batch_decision" and sum(entry["decided_by"] == "cancelled"
                                                         for entry in reply["decisions"]) > 1 for _, reply in replies)
    assert any(reply.get("code") == "unauthorized" and EXAMPLES_BY_NAME[name].token for name, reply in replies)
    assert any(reply.get("code") == "invalid_message" and reply.get("message") == TOO_DEEP for _, reply in replies)


EXAMPLES_BY_NAME = {example.name: example for example in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_server_answers_as_recorded(example: Example, tmp_path: Path) -> None:
    token = example.token
    options = {"token_check": lambda sent: sent == token} if token is not None else {}
    with ServiceThread(tmp_path, **options) as service:
        connection = RawConnection(service.socket_path)
        try:
            for number, step in enumerate(example.steps, 1):
                where = f"{example.name}:{number}"
                if step["dir"] == "send":
                    connection.send(step_bytes(step))
                elif step["dir"] == "person":
                    service.answer(person_answer(step))
                elif step["dir"] == "recv":
                    assert_matches(step["msg"], connection.recv(), where)
                elif step["dir"] == "closed":
                    connection.expect_closed(where)
                elif step["dir"] == "connect":
                    connection.close()
                    connection = RawConnection(service.socket_path)
        finally:
            connection.close()


# -- the real clients against a recorded app ------------------------------------------------------

CLIENT_CALLS = ("request", "batch", "status", "end_session", "sessions", "revoke")


def client_steps(example: Example) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(recorded message, recorded reply) for each message a well-behaved client could send.

    Lines a client library never produces (raw bytes, invalid messages, a reused id, cancel, a
    message on a connection not yet welcomed) are left out; a ``duplicate_id`` error answers the
    latest send of its id, any other reply the earliest unanswered one.
    """
    sent: dict[str, list[int]] = {}
    pairs: dict[int, dict[str, Any]] = {}
    sends = {}
    welcomed = False
    for number, step in enumerate(example.steps):
        message = step.get("msg")
        if step["dir"] == "connect":
            welcomed = False
        elif step["dir"] == "recv" and message.get("type") == "welcome":
            welcomed = True
        if step["dir"] == "send" and message is not None and isinstance(message.get("id"), str):
            if welcomed:
                sends[number] = message
            sent.setdefault(message["id"], []).append(number)
        elif step["dir"] == "recv" and message.get("id") in sent:
            candidates = [n for n in sent[message["id"]] if n not in pairs]
            chosen = candidates[-1] if message.get("code") == "duplicate_id" else candidates[0]
            pairs[chosen] = message
    steps = []
    used: set[str] = set()
    for number, message in sends.items():
        fresh = message["id"] not in used
        used.add(message["id"])
        if (fresh and message.get("type") in CLIENT_CALLS and number in pairs
                and isinstance(decode(wire.encode(message)[:-1]), BaseModel)):
            steps.append((message, pairs[number]))
    return steps


def welcome_of(example: Example) -> dict[str, Any]:
    return fill(next(step["msg"] for step in example.steps if step["dir"] == "recv"
                     and step["msg"].get("type") == "welcome"))


class RecordedApp:
    """A fake app on a real unix socket: it answers each client message with the next recorded reply."""

    def __init__(self, path: Path, welcome: dict[str, Any], steps: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
        self.welcome = welcome
        self.steps = list(steps)
        self.received: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.failure: BaseException | None = None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        path.chmod(0o600)  # like the app's socket: clients refuse one open to others
        self.listener.listen()
        self.listener.settimeout(0.2)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stopped.is_set():
                try:
                    connection, _ = self.listener.accept()
                except TimeoutError:
                    continue
                with connection:
                    self._serve(connection)
        except BaseException as exc:  # reported by close(), in the test's thread
            self.failure = exc

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(WAIT)
        framer = wire.LineFramer()
        while data := connection.recv(65536):
            for line in framer.feed(data):
                assert isinstance(line, bytes)
                message = json.loads(line)
                if message["type"] == "hello":
                    connection.sendall(wire.encode(self.welcome))
                    continue
                assert self.steps, f"unexpected message {message}"
                recorded, reply = self.steps.pop(0)
                self.received.append((recorded, message))
                connection.sendall(wire.encode({**fill(reply), "id": message["id"]}))

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(WAIT)
        self.listener.close()
        if self.failure is not None:
            raise self.failure
        assert not self.steps, f"the client never sent {[recorded for recorded, _ in self.steps]}"
        for recorded, message in self.received:
            assert message == {**without_null_fields(recorded), "id": message["id"]}, \
                "the client sent something else than recorded"


def without_null_fields(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the Python clients send it: an optional field recorded as null (the same as
    absent, PROTOCOL.md "Client to app") left out, in the message and in each call of a batch;
    previews and hints are sent as given."""
    def kept(fields: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in fields.items() if value is not None}

    message = kept(message)
    if isinstance(message.get("calls"), list):
        message["calls"] = [kept(call) for call in message["calls"]]
    return message


def expected_outcome(reply: dict[str, Any]) -> Any:
    """What a client library must report for a recorded reply, derived from the reply alone."""
    def decision(item: dict[str, Any]) -> dict[str, Any]:
        return {"decision": item["decision"], "allowed": item["decision"] in ("allow_once", "allow_session"),
                "note": item.get("note"), "decided_by": item["decided_by"], "rule": item.get("rule"),
                "blocked": bool(item.get("blocked")), "updated_args": item.get("updated_args")}

    kind = reply["type"]
    if kind == "decision":
        return decision(reply)
    if kind == "batch_decision":
        return [decision(item) for item in reply["decisions"]]
    if kind == "session_ended":
        return reply["forgotten"]
    if kind == "sessions_reply":
        return fill(reply["entries"])
    if kind == "revoked":
        return reply["count"]
    return {**fill(reply), "id": "<client's>"}


def observed(outcome: Any) -> Any:
    if isinstance(outcome, wire.Decision):
        return {"decision": outcome.decision, "allowed": outcome.allowed, "note": outcome.note,
                "decided_by": outcome.decided_by, "rule": outcome.rule, "blocked": outcome.blocked,
                "updated_args": outcome.updated_args}
    if isinstance(outcome, list) and outcome and isinstance(outcome[0], wire.Decision):
        return [observed(item) for item in outcome]
    if isinstance(outcome, dict) and outcome.get("type") == "status_reply":
        return {**outcome, "id": "<client's>"}
    return outcome


def sync_call(client: Client, message: dict[str, Any]) -> Any:
    kind = message["type"]
    if kind == "request":
        return client.request(message["tool"], message["args"], session=message.get("session"),
                              description=message.get("description"), preview=message.get("preview"),
                              timeout=message.get("timeout"), hints=message.get("hints"))
    if kind == "batch":
        return client.request_batch(message["calls"], session=message.get("session"), timeout=message.get("timeout"))
    if kind == "status":
        return client.status()
    if kind == "end_session":
        return client.end_session(message["session"])
    if kind == "sessions":
        return client.sessions()
    return client.revoke(session=message.get("session"), tool=message.get("tool"))


async def async_call(client: AsyncClient, message: dict[str, Any]) -> Any:
    kind = message["type"]
    if kind == "request":
        return await client.request(message["tool"], message["args"], session=message.get("session"),
                                    description=message.get("description"), preview=message.get("preview"),
                                    timeout=message.get("timeout"), hints=message.get("hints"))
    if kind == "batch":
        return await client.request_batch(message["calls"], session=message.get("session"),
                                          timeout=message.get("timeout"))
    if kind == "status":
        return await client.status()
    if kind == "end_session":
        return await client.end_session(message["session"])
    if kind == "sessions":
        return await client.sessions()
    return await client.revoke(session=message.get("session"), tool=message.get("tool"))


REPLAYABLE = [example for example in EXAMPLES if client_steps(example)]


def test_most_examples_exercise_the_clients() -> None:
    assert len(REPLAYABLE) >= len(EXAMPLES) - 1


@pytest.mark.parametrize("example", REPLAYABLE, ids=lambda example: example.name)
def test_client_reads_recorded_replies(example: Example, tmp_path: Path) -> None:
    steps = client_steps(example)
    app = RecordedApp(tmp_path / "app.sock", welcome_of(example), steps)
    client = Client(tmp_path / "app.sock", agent="example-agent")
    try:
        for message, reply in steps:
            if reply["type"] == "error":
                with pytest.raises(ProtocolError) as raised:
                    sync_call(client, message)
                assert raised.value.code == reply["code"]
            else:
                assert observed(sync_call(client, message)) == expected_outcome(reply)
    finally:
        client.close()
        app.close()


@pytest.mark.parametrize("example", REPLAYABLE, ids=lambda example: example.name)
def test_async_client_reads_recorded_replies(example: Example, tmp_path: Path) -> None:
    steps = client_steps(example)
    app = RecordedApp(tmp_path / "app.sock", welcome_of(example), steps)

    async def replay() -> None:
        async with AsyncClient(tmp_path / "app.sock", agent="example-agent") as client:
            for message, reply in steps:
                if reply["type"] == "error":
                    with pytest.raises(ProtocolError) as raised:
                        await async_call(client, message)
                    assert raised.value.code == reply["code"]
                else:
                    assert observed(await async_call(client, message)) == expected_outcome(reply)

    try:
        asyncio.run(asyncio.wait_for(replay(), WAIT))
    finally:
        app.close()


def test_every_example_is_listed_in_the_examples_readme() -> None:
    listed = (EXAMPLES_DIR / "README.md").read_text(encoding="utf-8")
    assert [example.name for example in EXAMPLES if f"`{example.name}.jsonl`" not in listed] == []
