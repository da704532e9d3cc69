"""An app that quits while its answer is being written to the NATS server: the write may land (the
agent then has that answer), so its audit log records no guess, and its next start records what stands."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, start_agent


def test_closing_while_an_allow_is_written_records_what_the_agent_got(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    assert nats_server.process is not None
    url = nats_server.user_url("desk", "x")
    approver = Approver(tmp_path, url, "desk")
    approvers.append(approver)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "slow", "args": {"command": "deploy"}, "timeout": 15}])
    request_id = approver.expect("asked").split()[1]
    os.kill(nats_server.process.pid, signal.SIGSTOP)  # the answer's write stays on the wire
    try:
        approver.expect("settling", suffix=request_id)  # the person allowed it; it is being written
        approver.stop()  # the app quits with the write in flight
    finally:
        os.kill(nats_server.process.pid, signal.SIGCONT)
    out, err = agent.communicate(timeout=2 * WAIT)
    got = json.loads(out)["decision"]
    # Whether the write landed (an allow) or not (the agent denied at its deadline), no deny was
    # recorded against what the agent got: the calls wait, noted as unsettled.
    assert [row for row in approver.decisions() if row["request_id"] == request_id] == [], err
    assert [event["code"] for event in approver.events("relay")].count("unsettled") == 1

    again = Approver(tmp_path, url, "desk")  # the next start reads what stands and records it
    approvers.append(again)
    deadline = time.monotonic() + WAIT
    while not again.decisions() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(row["request_id"], row["decision"], row["decided_by"]) for row in again.decisions()] == [
        (request_id, got["decision"], got["decided_by"])]
    assert any(event["code"] == "settled" for event in again.events("relay"))
