"""Stalls are not departures: while the server is stalled (paused: connected, answering nothing) no
agent's heartbeat arrives, and that silence is not taken for the agent gone. A request whose agent
still waits is answered after the stall as if nothing happened."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.relay.conftest import WAIT, Approver, NatsServer, start_agent

SILENCE = 12.0  # seconds without a heartbeat (one every 5 s) before an agent counts as gone


@pytest.mark.slow  # a stall of 18 s, on purpose
def test_a_server_stall_longer_than_the_silence_withdraws_nothing(tmp_path: Path, nats_server: NatsServer,
                                                                   approvers: list[Approver]) -> None:
    first = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", race="wait", silence=SILENCE)
    approvers.append(first)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "race", "args": {}, "timeout": 120}])
    request_id = first.expect("asked").split()[1]
    assert nats_server.process is not None
    nats_server.process.send_signal(signal.SIGSTOP)  # the stall: the stimulus, not a wait for anything
    try:
        time.sleep(SILENCE * 1.5)
    finally:
        nats_server.process.send_signal(signal.SIGCONT)
    # A second desk answers right after the stall: had the first taken the agent for gone, its
    # "withdrawn" deny would be there first.
    approvers.append(Approver(tmp_path, nats_server.user_url("desk2", "x"), "desk2", race="allow", silence=SILENCE))
    out, err = agent.communicate(timeout=WAIT)
    assert '"allow_once"' in out, (out, err)
    assert not [event for event in first.events("relay") if event["code"] == "withdrawn"], first.events("relay")
    assert f"withdrawn {request_id}" in first.expect("withdrawn")  # its prompt closed: answered by desk2
