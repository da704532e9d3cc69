"""More than one approver: each sees every request, exactly one decision is written, and both
audit logs agree who decided; an approver that dies leaves the request to the others."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent, start_agent


def stored_decisions(server: NatsServer, user: str = "inspector", password: str = "x") -> int:
    """How many values the decision bucket's stream ever took (history 1: one per key written)."""
    import nats

    async def count() -> int:
        nc = await nats.connect(server.user_url(user, password))
        try:
            try:
                info = await nc.jetstream().stream_info("KV_approver_decisions")
            except nats.js.errors.NotFoundError:
                return 0
            return int(info.state.last_seq)
        finally:
            await nc.close()

    return asyncio.run(count())


def test_two_approvers_racing_write_one_decision_and_agree_who_made_it(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    yes = Approver(tmp_path, nats_server.user_url("desk1", "x"), "yes", race="allow")
    no = Approver(tmp_path, nats_server.user_url("desk2", "x"), "no", race="deny")
    approvers += [yes, no]
    results = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "race", "args": {"n": n}}
                                                               for n in range(6)])
    assert stored_decisions(nats_server) == 6  # one value per request, whoever answered first
    got = [result["decision"]["decision"] for result in results]

    def heard_of_the_other() -> int:
        return sum(event["code"] == "answered_elsewhere"
                   for approver in (yes, no) for event in approver.events("relay"))

    deadline = time.monotonic() + WAIT  # the agent has its answers; the second approver may still be writing
    while heard_of_the_other() < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    yes.stop()
    no.stop()
    by_request: dict[str, list[str]] = {}
    for approver in (yes, no):
        for event in approver.events("relay"):
            if event["code"] == "answered_elsewhere":
                key = event["detail"].split(":", 1)[0]
                by_request.setdefault(key, []).append(f"{approver.name} heard {event['detail']}")
    # Each request: exactly one approver records that the other answered first, with the answer the
    # agent got; the winner's own record of it says the same.
    assert len(by_request) == 6, by_request
    told = []
    for key, heard in by_request.items():
        assert len(heard) == 1, heard
        loser, _, detail = heard[0].partition(" heard ")
        winner = no if loser == "yes" else yes
        decision = detail.split("answered by approver ", 1)[1].split(": ", 1)[1].split(" by ")[0]
        assert f"answered by approver {winner.name}: {decision} by user" in detail
        rows = [row for row in winner.decisions() if row["request_id"] == key.split(".", 1)[1]]
        assert [(row["decision"], row["decided_by"]) for row in rows] == [(decision, "user")]
        # The loser's own log records the winner's decision as the decision, naming the winner;
        # its own answer, if the person gave one in time, only as a late attempt.
        (lost,) = [row for row in (yes if winner is no else no).decisions() if row["request_id"] == key.split(".")[1]]
        assert (lost["decision"], lost["decided_by"]) == (decision, "user"), (loser, lost)
        assert lost["note"].startswith(f"answered by approver {winner.name}")
        told.append(decision)
    assert sorted(told) == sorted(got)
    for approver, own in ((yes, "allow_once by user"), (no, "deny by user (not on a Friday)")):
        for event in approver.events("relay"):
            if event["code"] == "late_answer":
                key = event["detail"].split(":", 1)[0]
                assert key in by_request and by_request[key][0].startswith(f"{approver.name} heard"), event
                assert event["detail"].endswith(f"came second and was not used: {own}"), event


def test_an_approver_whose_rule_answers_a_request_decided_elsewhere_records_the_decision_that_stands(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    """A rule would answer at once, but another approver's answer is already on the server when this
    app, back from being away, reads the request: that one is the decision in both logs, and nothing
    is asked or decided here."""
    first = Approver(tmp_path, nats_server.user_url("desk1", "x"), "first")
    approvers.append(first)
    join(nats_server, {"alice": "pw"})
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\naction = "deny"\ntool = "allow"\nnote = "not from this desk"\n')
    Approver(tmp_path, nats_server.user_url("desk2", "x"), "ruled", policy=policy).stop()  # here before, then away
    (allowed,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert allowed["decision"]["decision"] == "allow_once"
    ruled = Approver(tmp_path, nats_server.user_url("desk2", "x"), "ruled", policy=policy)  # back: its consumer
    approvers.append(ruled)
    deadline = time.monotonic() + WAIT
    while not ruled.events("relay") and time.monotonic() < deadline:
        time.sleep(0.05)
    ruled.stop()
    first.stop()
    (theirs,) = first.decisions()
    (mine,) = ruled.decisions()
    assert (mine["request_id"], mine["decision"], mine["decided_by"]) == (
        theirs["request_id"], theirs["decision"], theirs["decided_by"]) == (theirs["request_id"], "allow_once", "user")
    assert mine["note"] == "answered by approver first"
    codes = {event["code"]: event["detail"] for event in ruled.events("relay")}
    assert codes["answered_elsewhere"].endswith("answered by approver first: allow_once by user")
    assert "late_answer" not in codes  # decided before this app read it: its rule was never consulted
    assert stored_decisions(nats_server) == 1


def test_a_slower_approver_closes_its_prompt_and_records_the_other_answer(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    slow = Approver(tmp_path, nats_server.user_url("desk1", "x"), "slow", race="wait")
    approvers.append(slow)
    agent = start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "race", "args": {}}])
    request_id = slow.expect("asked").split()[1]
    quick = Approver(tmp_path, nats_server.user_url("desk2", "x"), "quick", race="allow")
    approvers.append(quick)
    out, err = agent.communicate(timeout=WAIT)
    assert '"allow_once"' in out, err
    assert slow.expect("withdrawn").split()[1] == request_id  # the dialog closed
    slow.stop()
    quick.stop()
    (mine,) = [row for row in slow.decisions() if row["request_id"] == request_id]
    (theirs,) = [row for row in quick.decisions() if row["request_id"] == request_id]
    assert (mine["decision"], mine["decided_by"]) == (theirs["decision"], theirs["decided_by"])
    assert (theirs["decision"], theirs["decided_by"]) == ("allow_once", "user")
    assert mine["note"] == "answered by approver quick"


def test_when_an_approver_dies_another_answers(tmp_path: Path, nats_server: NatsServer,
                                               approvers: list[Approver]) -> None:
    first = Approver(tmp_path, nats_server.user_url("desk1", "x"), "first", race="wait")
    approvers.append(first)
    agent = start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "race", "args": {}}])
    first.expect("asked")
    first.kill()
    second = Approver(tmp_path, nats_server.user_url("desk2", "x"), "second", race="deny")
    approvers.append(second)
    out, err = agent.communicate(timeout=WAIT)
    assert '"deny"' in out and "not on a Friday" in out, err
    assert stored_decisions(nats_server) == 1


@pytest.mark.slow
def test_an_agent_that_dies_has_its_request_withdrawn(tmp_path: Path, nats_server: NatsServer,
                                                      approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", silence=12.0)
    approvers.append(approver)
    agent = start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "wait", "args": {}}])
    request_id = approver.expect("asked").split()[1]
    agent.kill()  # no goodbye: only its heartbeat stops
    agent.communicate()
    started = time.monotonic()
    assert approver.expect("withdrawn", timeout=40).split()[1] == request_id
    assert time.monotonic() - started < 40
    approver.stop()
    assert [(r["decision"], r["decided_by"]) for r in approver.decisions()] == [("deny", "cancelled")]
    assert any(e["code"] == "withdrawn" and "agent gone" in e["detail"] for e in approver.events("relay"))


def test_an_agent_that_is_interrupted_withdraws_its_request_at_once(tmp_path: Path, nats_server: NatsServer,
                                                                    approvers: list[Approver]) -> None:
    import signal

    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    agent = start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "wait", "args": {}}])
    request_id = approver.expect("asked").split()[1]
    agent.send_signal(signal.SIGINT)  # KeyboardInterrupt: the client closes, the relay cancels
    agent.communicate(timeout=WAIT)
    assert approver.expect("withdrawn").split()[1] == request_id
    approver.stop()
    assert any(e["code"] == "withdrawn" and "cancel" in e["detail"] for e in approver.events("relay"))


def test_an_approver_that_closes_records_that_it_did_not_answer_and_another_answers(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    """Closing the app with a request open writes nothing (the request stays on the stream) and its
    log says so, not a deny the agent never got; the approver that answers later decides it."""
    first = Approver(tmp_path, nats_server.user_url("desk1", "x"), "first", race="wait")
    approvers.append(first)
    agent = start_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "race", "args": {}}])
    request_id = first.expect("asked").split()[1]
    first.stop()
    assert stored_decisions(nats_server) == 0
    second = Approver(tmp_path, nats_server.user_url("desk2", "x"), "second", race="allow")
    approvers.append(second)
    out, err = agent.communicate(timeout=WAIT)
    assert '"allow_once"' in out, err
    (row,) = first.decisions()
    assert (row["request_id"], row["decision"], row["decided_by"]) == (request_id, "deny", "cancelled")
    assert row["note"].startswith("not answered here: this app closed")
    assert stored_decisions(nats_server) == 1
