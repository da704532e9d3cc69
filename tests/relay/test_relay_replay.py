"""A consumer made anew (deleted on the server, or expired) reads the whole stream again: requests
decided before are acknowledged, never asked or recorded again, and never come back into session
memory (a session that ended stays ended)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, run_agent


def delete_consumers(server: NatsServer) -> list[str]:
    import json

    import nats

    async def delete() -> list[str]:
        nc = await nats.connect(server.user_url("inspector", "x"))
        try:
            listed = await nc.request("$JS.API.CONSUMER.LIST.APPROVER_REQUESTS_alice", b"{}", timeout=5)
            consumers = [info["name"] for info in json.loads(listed.data)["consumers"]]
            for consumer in consumers:
                await nc.request(f"$JS.API.CONSUMER.DELETE.APPROVER_REQUESTS_alice.{consumer}", b"", timeout=5)
            return consumers
        finally:
            await nc.close()

    return asyncio.run(delete())


def test_a_stream_read_again_records_nothing_twice_and_grants_no_ended_session(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    agent = nats_server.user_url("alice", "pw")
    ask = {"op": "request", "tool": "session", "args": {"command": "echo hi"}, "session": "S1"}
    first, remembered, _ = run_agent(agent, [ask, ask, {"op": "end_session", "session": "S1"}])
    assert (first["decision"]["decided_by"], remembered["decision"]["decided_by"]) == ("user", "session")
    recorded = len(approver.decisions())
    assert len(delete_consumers(nats_server)) == 1
    deadline = time.monotonic() + WAIT  # the app sees its consumer gone and makes it anew
    while not any(event["code"] == "store_lost" for event in approver.events("relay")):
        assert time.monotonic() < deadline, approver.events("relay")
        time.sleep(0.05)
    # After what was read again (it is earlier in the stream): asked, since the session has ended.
    (after,) = run_agent(agent, [ask])
    assert after["decision"]["decided_by"] == "user", after
    assert len(approver.decisions()) == recorded + 1, approver.decisions()
