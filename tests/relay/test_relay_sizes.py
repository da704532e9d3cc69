"""Too large for the server or for the protocol: refused at once with a typed error
(``line_too_long``, as the socket refuses a line over its limit), never retried until the
deadline; and where such a message reaches the app, refused and audited there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent
from tests.relay.test_approvers import stored_decisions
from tests.relay.test_envelopes import envelope, read_decision


def server_with_max_payload(tmp_path: Path, max_payload: int) -> NatsServer:
    config = tmp_path / "limits.conf"
    config.write_text(f'jetstream {{ store_dir: "jetstream" }}\nmax_payload: {max_payload}\n')
    return NatsServer(tmp_path, config=config).start()


@pytest.fixture
def small_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = server_with_max_payload(tmp_path, 32 * 1024)
    yield server
    server.stop()


def test_a_request_larger_than_the_server_takes_is_refused_at_once(
        tmp_path: Path, small_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, small_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    blob = "x" * 40_000  # under the protocol's line limit, over this server's max_payload
    request, batch, notice, fits = run_agent(small_server.user_url("alice", "pw"), [
        {"op": "request", "tool": "allow", "args": {"blob": blob}, "timeout": 1},
        {"op": "batch", "calls": [["allow", {"blob": blob}]], "timeout": 1},
        {"op": "notice", "text": blob},
        {"op": "request", "tool": "allow", "args": {}},  # the connection goes on
    ])
    for result in (request, batch, notice):
        assert result["error"] == "ProtocolError", result
        assert result["message"].startswith("line_too_long: ") and "max_payload" in result["message"], result
    assert fits["decision"]["decision"] == "allow_once"
    approver.expect("asked", suffix=" allow")
    approver.stop()
    assert approver.lines == [] and len(approver.decisions()) == 1  # the others never reached it


def test_a_line_over_the_protocols_limit_is_refused_by_the_agent_as_the_socket_does(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    (result,) = run_agent(nats_server.user_url("alice", "pw"), [
        {"op": "request", "tool": "allow", "args": {"blob": "x" * (1024 * 1024 + 10)}, "timeout": 1}])
    assert result["error"] == "ProtocolError" and result["message"].startswith("line_too_long: "), result
    assert "exceeds the limit of 1048576" in result["message"]


def test_an_oversized_message_that_reaches_the_app_is_refused_audited_and_answered(
        tmp_path: Path, approvers: list[Approver]) -> None:
    """A server set to take 4 MB lets a 1.5 MB message through: the app refuses it as the socket
    would (``line_too_long``), audits it, and writes the refusal so the agent hears at once."""
    import nats

    server = server_with_max_payload(tmp_path, 4 * 1024 * 1024)
    try:
        approver = Approver(tmp_path, server.user_url("desk", "x"), "desk")
        approvers.append(approver)

        join(server, {"alice": "pw"})

        async def publish() -> None:
            nc = await nats.connect(server.user_url("alice", "pw"), allow_reconnect=False)
            try:
                js = nc.jetstream()
                await js.publish("approver.req.alice.raw", envelope("huge", message={"args": {
                    "blob": "x" * (1536 * 1024)}}))
                await js.publish("approver.req.alice.raw", envelope("fine"))
            finally:
                await nc.close()

        asyncio.run(publish())
        approver.expect("asked fine")
        deadline = time.monotonic() + WAIT
        while stored_decisions(server) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        value = read_decision(server, "huge")
        assert value is not None
        assert (value["reply"]["type"], value["reply"]["code"]) == ("error", "line_too_long")
        approver.stop()
        refused = [event for event in approver.events("refused") if event["code"] == "line_too_long"]
        assert len(refused) == 1 and "exceeds the limit of 1048576" in refused[0]["detail"]
        assert [row["request_id"] for row in approver.decisions()] == ["fine"]
        assert approver.lines == []
    finally:
        server.stop()


def test_an_answer_the_server_cannot_store_becomes_a_refusal_at_once(
        tmp_path: Path, approvers: list[Approver]) -> None:
    """The person allows with edited arguments, an answer too large for the server: the agent is
    refused at once (never an answer it cannot see, never a wait to the deadline), and the audit
    log records that refusal as the decision, not the allow that never reached the agent."""
    server = server_with_max_payload(tmp_path, 12 * 1024)
    try:
        approver = Approver(tmp_path, server.user_url("desk", "x"), "desk")
        approvers.append(approver)
        calls = [["edit", {"n": n}] for n in range(100)]  # each allowed with edited arguments
        (result,) = run_agent(server.user_url("alice", "pw"), [{"op": "batch", "calls": calls, "timeout": 5}])
        assert result.get("error") == "ProtocolError", result
        assert result["message"].startswith("internal: desktop-approver could not deliver its answer"), result
        approver.stop()
        rows = approver.decisions()
        assert len(rows) == 100
        assert {(row["decision"], row["decided_by"]) for row in rows} == {("deny", "cancelled")}
        assert rows[0]["note"].startswith("desktop-approver could not deliver its answer over NATS")
        assert any(event["code"] == "unwritten" for event in approver.events("relay"))
    finally:
        server.stop()
