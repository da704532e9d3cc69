"""``desktop_approver.testing.FakeApprover``: an agent's approval paths, tested without the app.

Each test runs on a ``Client`` and on an ``AsyncClient`` through ``transport=``, so what is checked
is the clients' own code (the hello, reply matching, decisions, typed errors) answered in process.
Every message the fake sends is checked against the published JSON Schema (``ipc/schema/``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from desktop_approver import ApproverUnavailable, AsyncClient, Blocked, Client, Decision, Unauthorized, testing
from desktop_approver.adapters.base import Approver
from desktop_approver.testing import Answer, ApprovalRequest, FakeApprover

SCHEMAS = Path(__file__).resolve().parent.parent / "ipc" / "schema"
WAIT = 30.0


class SchemaCheckedFake(FakeApprover):
    """The fake, with every line it sends validated against the schema of its message type."""

    sent: list[dict[str, Any]]

    def _answer(self, conversation: Any, line: bytes) -> list[dict[str, Any]]:
        self.__dict__.setdefault("sent", [])
        try:
            messages = super()._answer(conversation, line)
        except testing._Refused as refused:
            self._check(refused.error)
            raise
        for message in messages:
            self._check(message)
        return messages

    def _check(self, message: dict[str, Any]) -> None:
        schema = json.loads((SCHEMAS / f"{message['type']}.json").read_text())
        jsonschema.validate(message, schema)
        self.sent.append(message)


Ask = Callable[..., Any]


@pytest.fixture(params=["sync", "async"])
def connect(request: pytest.FixtureRequest) -> Iterator[Callable[..., Ask]]:
    """``connect(fake, **client_options)`` gives ``ask(method, *args, **kwargs)`` on a Client or an AsyncClient."""
    loop = asyncio.new_event_loop()
    closers: list[Callable[[], None]] = []

    def connect(fake: FakeApprover, **options: Any) -> Ask:
        options.setdefault("agent", "tester")
        options.setdefault("session", "run-1")
        if request.param == "sync":
            client = Client(transport=fake, **options)
            closers.append(client.close)
            return lambda method, *args, **kwargs: getattr(client, method)(*args, **kwargs)
        async_client = AsyncClient(transport=fake, **options)
        closers.append(lambda: loop.run_until_complete(async_client.aclose()))
        return lambda method, *args, **kwargs: loop.run_until_complete(
            asyncio.wait_for(getattr(async_client, method)(*args, **kwargs), WAIT))

    yield connect
    for close in closers:
        close()
    loop.close()


def test_a_deny_reaches_the_agent_with_its_note(connect: Callable[..., Ask]) -> None:
    seen: list[ApprovalRequest] = []

    def person(call: ApprovalRequest) -> Answer:
        seen.append(call)
        return testing.deny("use make clean instead")

    fake = SchemaCheckedFake(person)
    ask = connect(fake)
    decision = ask("request", "Bash", {"command": "rm -rf build"}, description="clean", timeout=30,
                   preview={"kind": "command", "command": "rm -rf build"}, hints={"destructive": True})
    assert isinstance(decision, Decision)
    assert (decision.decision, decision.allowed, decision.note, decision.decided_by, decision.blocked) == \
        ("deny", False, "use make clean instead", "user", False)
    assert decision.risk == testing.FAKE_RISK
    [call] = seen
    assert (call.tool, call.args, call.session, call.agent, call.description, call.timeout) == \
        ("Bash", {"command": "rm -rf build"}, "run-1", "tester", "clean", 30)
    assert call.preview == {"kind": "command", "command": "rm -rf build"} and call.hints == {"destructive": True}
    assert call.batch_index is None and call.id.startswith("r") and call.client["agent"] == "tester"
    assert fake.requests == seen
    assert [message["type"] for message in fake.sent] == ["welcome", "decision"]


def test_allow_once_with_changed_arguments(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.allow_once(updated_args={**call.args, "dry_run": True}))
    decision = connect(fake)("request", "deploy", {"env": "prod"})
    assert decision.allowed and decision.decision == "allow_once"
    assert decision.updated_args == {"env": "prod", "dry_run": True}


def test_allow_session_is_remembered_listed_and_forgotten(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.allow_session())
    ask = connect(fake)
    first = ask("request", "Bash", {"command": "npm test"})
    again = ask("request", "Bash", {"command": "npm test"})
    other_session = ask("request", "Bash", {"command": "npm test"}, session="run-2")
    assert (first.decided_by, again.decided_by, other_session.decided_by) == ("user", "session", "user")
    assert again.decision == "allow_session" and len(fake.requests) == 3
    entries = ask("sessions")
    assert sorted((entry["session"], entry["tool"], entry["args"], entry["hits"]) for entry in entries) == \
        [("run-1", "Bash", '{"command":"npm test"}', 1), ("run-2", "Bash", '{"command":"npm test"}', 0)]
    assert ask("status")["sessions"] == 2
    assert ask("end_session") == 1  # this client's session, run-1
    assert ask("revoke", tool="Write") == 0
    assert ask("revoke", tool="Bash") == 1
    assert ask("sessions") == []
    assert ask("request", "Bash", {"command": "npm test"}).decided_by == "user"


def test_block_is_blocked_and_raises_when_asked(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.block("never on prod", rule="no-prod"))
    ask = connect(fake)
    decision = ask("request", "deploy", {"env": "prod"})
    assert decision.blocked and not decision.allowed
    assert (decision.decided_by, decision.rule, decision.note) == ("policy", "no-prod", "never on prod")
    with pytest.raises(Blocked) as raised:
        ask("request", "deploy", {"env": "prod"}, raise_on_block=True)
    assert raised.value.decision == decision.__class__.from_wire(
        {"decision": "deny", "decided_by": "policy", "rule": "no-prod", "note": "never on prod", "blocked": True,
         "risk": testing.FAKE_RISK, "id": raised.value.decision.request_id})


def test_a_batch_is_answered_call_by_call(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.deny("no force") if "--force" in call.args["command"]
                             else testing.allow_once())
    decisions = connect(fake)("request_batch", [("Bash", {"command": "git commit"}),
                                                {"tool": "Bash", "args": {"command": "git push --force"}}])
    assert [decision.decision for decision in decisions] == ["allow_once", "deny"]
    assert decisions[1].note == "no force"
    assert [call.batch_index for call in fake.requests] == [0, 1]
    assert len({call.id for call in fake.requests}) == 1  # both calls carry their batch's id
    assert fake.sent[-1]["type"] == "batch_decision"


def test_an_unavailable_app_fails_closed(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.allow_once(), available=False)
    ask = connect(fake)
    with pytest.raises(ApproverUnavailable, match="not reachable at fake-approver"):
        ask("request", "Bash", {"command": "ls"})
    fake.available = True
    assert ask("request", "Bash", {"command": "ls"}).allowed
    fake.available = False  # the app quits between two calls
    with pytest.raises(ApproverUnavailable):
        ask("request", "Bash", {"command": "ls"})
    assert len(fake.requests) == 1


def test_an_app_that_vanishes_mid_question_fails_closed_and_the_next_call_reconnects(
        connect: Callable[..., Ask]) -> None:
    def person(call: ApprovalRequest) -> Answer:
        if call.args.get("crash"):
            raise testing.AppGone()
        return testing.allow_once()

    ask = connect(SchemaCheckedFake(person))
    with pytest.raises(ApproverUnavailable, match="closed the connection"):
        ask("request", "deploy", {"crash": True})
    assert ask("request", "deploy", {}).allowed


def test_a_wrong_token_is_unauthorized(connect: Callable[..., Ask]) -> None:
    fake = SchemaCheckedFake(lambda call: testing.allow_once(), token="right")
    with pytest.raises(Unauthorized):
        connect(fake, token="wrong")("request", "Bash", {"command": "ls"})
    assert fake.requests == [] and fake.sent[-1]["code"] == "unauthorized"
    assert connect(fake, token="right")("request", "Bash", {"command": "ls"}).allowed


def test_a_handler_must_answer_with_an_answer(connect: Callable[..., Ask]) -> None:
    ask = connect(FakeApprover(lambda call: "allow_once"))  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="testing.Answer"):
        ask("request", "Bash", {"command": "ls"})


def test_answers_are_checked_when_made() -> None:
    with pytest.raises(ValueError):
        Answer("maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Answer("deny", blocked=True)  # a person's deny is never "blocked"


def test_a_client_takes_a_socket_path_or_a_transport_not_both(tmp_path: Path) -> None:
    fake = FakeApprover(lambda call: testing.allow_once())
    with pytest.raises(TypeError):
        Client(tmp_path / "s.sock", transport=fake)
    with pytest.raises(TypeError):
        AsyncClient(tmp_path / "s.sock", transport=fake)
    assert Client(transport=fake).socket_path == "fake-approver"


def test_concurrent_async_requests_share_one_connection() -> None:
    fake = FakeApprover(lambda call: testing.allow_once() if call.args["n"] % 2 else testing.deny("even"))

    async def main() -> list[Decision]:
        async with AsyncClient(transport=fake, agent="tester") as client:
            return await asyncio.gather(*(client.request("tool", {"n": n}) for n in range(20)))

    decisions = asyncio.run(main())
    assert [decision.allowed for decision in decisions] == [bool(n % 2) for n in range(20)]
    assert [call.args["n"] for call in fake.requests] == list(range(20))
    assert len({call.id for call in fake.requests}) == 20


def test_the_fake_takes_notices_as_the_app_does() -> None:
    from desktop_approver import Client
    from desktop_approver.client.errors import ProtocolError
    from desktop_approver.testing import FakeApprover, allow_once

    fake = FakeApprover(lambda request: allow_once())
    with Client(transport=fake) as client:
        client.notice("finished", "my-agent finished")
        with pytest.raises(ProtocolError):
            client.notice("approved", "x")
    assert fake.notices == [("finished", "my-agent finished")]


@pytest.mark.parametrize("client", [Client, AsyncClient])
@pytest.mark.parametrize(("build", "says"), [
    (lambda client, fake: client(fake), r"got a FakeApprover as its socket path; a FakeApprover is a transport: "
                                        r"pass (Async)?Client\(transport=your_fakeapprover\)"),
    (lambda client, fake: client(object()), r"takes a socket path \(str or os\.PathLike\), not object"),
    (lambda client, fake: client(url=fake), r"\(url=\.\.\.\) takes a string .* not FakeApprover"),
    (lambda client, fake: client(transport="/run/app.sock"), r"\(transport=\.\.\.\) takes an object with a connect"),
    (lambda client, fake: client("/run/app.sock", transport=fake), r"not more than one"),
])
def test_a_fake_approver_or_other_wrong_object_fails_at_construction_saying_what_to_pass(
        client: Any, build: Any, says: str) -> None:
    """Not later, at the first request, as a bare TypeError from os.fspath or an AttributeError."""
    fake = FakeApprover(lambda call: testing.allow_once())
    with pytest.raises(TypeError, match=says):
        build(client, fake)
    assert fake.requests == []


@pytest.mark.parametrize(("build", "says"), [
    (lambda fake: Approver(socket_path=fake), r"Approver\(\) got a FakeApprover as its socket path; a FakeApprover "
                                              r"is a transport: pass Approver\(transport=your_fakeapprover\)"),
    (lambda fake: Approver(transport=Client(transport=fake)), r"Approver\(transport=\.\.\.\) takes an object with a "
                                                              r"connect.*not Client"),
    (lambda fake: Approver(transport="x"), r"Approver\(transport=\.\.\.\) takes an object with a connect"),
    (lambda fake: Approver(url=5), r"Approver\(url=\.\.\.\) takes a string"),
])
def test_an_approver_given_a_wrong_object_fails_at_construction_saying_what_to_pass(build: Any, says: str) -> None:
    """The adapters' Approver refuses as the clients do, before any tool call reaches it."""
    fake = FakeApprover(lambda call: testing.allow_once())
    with pytest.raises(TypeError, match=says):
        build(fake)
    assert fake.requests == []
