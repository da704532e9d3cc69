"""An allow that reaches the NATS server only after the request's deadline: the agent has denied the
call by ``timeout`` by then, so the approver's log records that deny, never the allow."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, start_agent


def test_an_allow_stored_after_the_deadline_is_recorded_as_the_timeout_the_agent_got(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    assert nats_server.process is not None
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "slow", "args": {"command": "make"}, "timeout": 4}])
    request_id = approver.expect("asked").split()[1]
    os.kill(nats_server.process.pid, signal.SIGSTOP)  # the person's allow cannot be stored in time
    try:
        approver.expect("settling", suffix=request_id)
        out, err = agent.communicate(timeout=WAIT)  # the agent waits out its deadline
    finally:
        os.kill(nats_server.process.pid, signal.SIGCONT)  # now the allow's write lands, too late
    got = json.loads(out)["decision"]
    assert (got["decision"], got["decided_by"]) == ("deny", "timeout"), err
    deadline = time.monotonic() + WAIT
    while not approver.decisions() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(row["decision"], row["decided_by"]) for row in approver.decisions()] == [("deny", "timeout")]


def test_an_allow_not_stored_by_the_deadline_is_written_as_a_deny_by_timeout(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    import asyncio

    import nats

    assert nats_server.process is not None
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "slow", "args": {"command": "make"}, "timeout": 4}])
    request_id = approver.expect("asked").split()[1]
    os.kill(nats_server.process.pid, signal.SIGSTOP)
    try:
        approver.expect("settling", suffix=request_id)
        out, err = agent.communicate(timeout=WAIT)  # the agent waits out its deadline
    finally:
        nats_server.kill()  # what was on its way to it is lost; it comes back on the same store
    nats_server.start()
    got = json.loads(out)["decision"]
    assert (got["decision"], got["decided_by"]) == ("deny", "timeout"), err
    deadline = time.monotonic() + WAIT
    while not approver.decisions() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(row["decision"], row["decided_by"]) for row in approver.decisions()] == [("deny", "timeout")]

    async def stored() -> dict[str, object]:
        nc = await nats.connect(nats_server.user_url("inspector", "x"))
        try:
            entry = await (await nc.jetstream().key_value("approver_decisions")).get(f"alice.{request_id}")
            return dict(json.loads(entry.value or b"{}")["reply"])
        finally:
            await nc.close()

    reply = asyncio.run(stored())  # what the bucket holds is the deny, never the allow
    assert (reply["decision"], reply["decided_by"], reply["id"]) == ("deny", "timeout", request_id), reply
    assert isinstance(reply["risk"], dict)
