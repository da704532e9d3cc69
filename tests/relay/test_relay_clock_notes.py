"""An agent whose clock is behind, by less than the tolerance that refuses it (``clock_skew``), but by
more than its timeout: its request is denied by timeout at once, and the answer says why plainly."""

from __future__ import annotations

from pathlib import Path

from tests.relay.conftest import Approver, NatsServer, run_agent
from tests.relay.test_envelopes import skewed


def test_a_deadline_past_on_arrival_says_so_not_that_nobody_answered(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    (result,) = run_agent(nats_server.user_url("alice", "pw"),
                          [{"op": "request", "tool": "allow", "args": {}, "timeout": 10}], env=skewed("-50s"))
    decision = result["decision"]
    assert (decision["decision"], decision["decided_by"]) == ("deny", "timeout"), result
    assert "deadline had already passed" in decision["note"], decision
    assert "before the NATS server stored it" in decision["note"]
    assert "nobody answered" not in decision["note"]
    assert approver.lines == []  # nobody was asked


def test_a_desktop_clock_that_jumps_after_connecting_is_measured_again(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    clock = tmp_path / "faketime.rc"
    clock.write_text("+0\n")
    env = {**skewed("+0"), "FAKETIME_TIMESTAMP_FILE": str(clock)}
    del env["FAKETIME"]
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", env=env)
    approvers.append(approver)
    clock.write_text("+10m\n")  # stepped forward after the relay measured the server's clock
    (result,) = run_agent(nats_server.user_url("alice", "pw"),
                          [{"op": "request", "tool": "allow", "args": {}, "timeout": 20}])
    assert result["decision"]["decision"] == "allow_once", result  # asked, not expired at once
    approver.expect("asked")
