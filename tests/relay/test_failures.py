"""Failure is deny, never allow: no server, no approver, a deadline passed, a server restart."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverUnavailable
from tests.relay.conftest import WAIT, Approver, NatsServer, free_port, run_agent, start_agent
from tests.relay.test_approvers import stored_decisions


def test_no_server_is_approver_unavailable_at_once() -> None:
    started = time.monotonic()
    with Client(url=f"nats://alice:pw@127.0.0.1:{free_port()}") as client, pytest.raises(ApproverUnavailable) as caught:
        client.request("Bash", {"command": "ls"})
    assert "NATS server at nats://127.0.0.1" in str(caught.value)
    assert "pw" not in str(caught.value)  # the password is never shown
    assert time.monotonic() - started < WAIT


def test_a_server_no_approver_ever_used_is_approver_unavailable(nats_server: NatsServer) -> None:
    with Client(url=nats_server.user_url("alice", "pw")) as client, pytest.raises(ApproverUnavailable) as caught:
        client.request("Bash", {"command": "ls"})
    assert "no approver has set up the relay" in str(caught.value)


def test_credentials_that_cannot_be_read_are_approver_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.creds"
    (result,) = run_agent("nats://127.0.0.1:4222", [{"op": "request", "tool": "allow", "args": {}}],
                          env={"DESKTOP_APPROVER_NATS_CREDS": str(missing)})
    assert result["error"] == "ApproverUnavailable" and "cannot read the NATS credentials" in result["message"]
    (no_user,) = run_agent("nats://127.0.0.1:4222", [{"op": "request", "tool": "allow", "args": {}}])
    assert no_user["error"] == "ApproverUnavailable" and "no NATS user" in no_user["message"]


def test_past_the_deadline_the_agent_and_the_app_agree_on_a_timeout_deny(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    # With the approver there: its countdown, fitted to the agent's deadline, denies by timeout.
    (answered,) = run_agent(nats_server.user_url("alice", "pw"),
                            [{"op": "request", "tool": "wait", "args": {}, "timeout": 1}])
    assert (answered["decision"]["decision"], answered["decision"]["decided_by"]) == ("deny", "timeout")
    assert answered["decision"]["note"] == "nobody answered in time"
    # With no approver up: the agent denies at the deadline itself, and the approver, back later,
    # writes the same deny by timeout without asking anyone.
    approver.kill()
    (alone,) = run_agent(nats_server.user_url("alice", "pw"),
                         [{"op": "request", "tool": "allow", "args": {}, "timeout": 1}])
    assert (alone["decision"]["decision"], alone["decision"]["decided_by"]) == ("deny", "timeout")
    assert "deadline" in alone["decision"]["note"]
    back = Approver(tmp_path, nats_server.user_url("desk", "x"), "back")
    approvers.append(back)
    deadline = time.monotonic() + WAIT
    while stored_decisions(nats_server) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stored_decisions(nats_server) == 2
    back.stop()
    # The first request, answered before this new approver joined, is not its business (it starts
    # from what is pending); the second, unanswered, it expires.
    assert sorted(e["code"] for e in back.events("relay")) == ["expired"]
    assert not back.lines  # nobody was asked
    assert [(r["decision"], r["decided_by"]) for r in back.decisions()] == [("deny", "timeout")]


def test_a_server_restart_loses_nothing_and_answers_each_request_once(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    agents = [start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "slow", "args": {"n": n}}])
              for n in range(3)]
    for _ in agents:
        approver.expect("asked")  # the person has all three before them (and answers 3 s later)
    nats_server.kill()
    nats_server.start()
    outs = [agent.communicate(timeout=WAIT) for agent in agents]
    for out, err in outs:
        assert '"allow_once"' in out, err
    assert stored_decisions(nats_server) == 3
    approver.stop()
    assert [(r["decision"], r["decided_by"]) for r in approver.decisions()] == [("allow_once", "user")] * 3


def test_an_approver_started_before_its_server_connects_when_it_comes(tmp_path: Path,
                                                                      approvers: list[Approver]) -> None:
    import threading

    server = NatsServer(tmp_path)  # not started yet
    later = threading.Timer(1.0, server.start)
    later.start()
    try:
        approvers.append(Approver(tmp_path, server.user_url("desk", "x"), "desk"))  # waits until ready
        later.join()
        (result,) = run_agent(server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
        assert result["decision"]["decision"] == "allow_once"
    finally:
        later.join()
        server.stop()
