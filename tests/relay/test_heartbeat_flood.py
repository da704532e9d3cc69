"""One agent user's heartbeats never starve another's requests (red team F2): heartbeats larger than
``names.MAX_HEARTBEAT_BYTES`` or beyond the user's rate are dropped unread, counted against that
user, and the person is told which user floods (and when it stopped); another user is answered
within its deadline all the while."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from desktop_approver.relay import names
from tests.relay.conftest import Approver, NatsServer, run_agent


def flood(server: NatsServer, user: str, stop: threading.Event, sent: list[int]) -> None:
    """Heartbeats as fast as one connection publishes them, as ``user``, until ``stop``: many of a
    plausible size, and now and then one far over the limit."""
    import nats

    small = json.dumps({"relay": 1, "ids": [f"{index:032x}" for index in range(50)]}).encode()
    large = json.dumps({"relay": 1, "ids": [f"{index:032x}" for index in range(5_000)]}).encode()
    assert len(small) < names.MAX_HEARTBEAT_BYTES < len(large)

    async def go() -> None:
        nc = await nats.connect(server.user_url(user, "pw"), inbox_prefix=f"_INBOX_{user}")
        try:
            while not stop.is_set():
                for index in range(200):
                    await nc.publish(f"approver.alive.{user}.flood", large if index == 0 else small)
                sent[0] += 200
                await nc.flush(timeout=30)
        finally:
            await nc.close()

    asyncio.run(go())


def test_a_heartbeat_flood_is_dropped_and_named_while_another_user_is_served(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    stop, sent = threading.Event(), [0]
    flooder = threading.Thread(target=flood, args=(nats_server, "alice", stop, sent), daemon=True)
    flooder.start()
    try:
        told = approver.expect("problem relay heartbeats alice")
        assert "NATS user alice floods the relay with heartbeats" in told and "dropped unread" in told, told
        plan = [{"op": "request", "tool": "allow", "args": {"n": index}, "timeout": 60} for index in range(3)]
        for result in run_agent(nats_server.user_url("bob", "pw"), plan, timeout=120):
            assert result["decision"]["decision"] == "allow_once", result
        assert flooder.is_alive() and sent[0] > 2_000  # bob was served while alice went on
    finally:
        stop.set()
        flooder.join(60)
    approver.expect("fixed relay heartbeats alice", timeout=120)  # quiet for a while: no longer said
    details = [event["detail"] for event in approver.events("relay")]
    assert any("NATS user alice floods" in detail for detail in details), details
    assert "NATS user alice no longer floods the relay with heartbeats" in details
    assert not any("bob" in line for line in approver.lines if line.startswith("problem")), approver.lines
