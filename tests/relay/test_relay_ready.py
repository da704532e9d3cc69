"""Ready means ready: an approver that joins starts from what is still pending. Requests answered
before it joined (thousands of them on the stream) are passed over unread, neither asked nor
recorded, and a new request is answered at once."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

from tests.relay.conftest import Approver, NatsServer, join, run_agent

OLD = 3000


def answered_history(server: NatsServer, count: int) -> None:
    """``count`` requests of alice on its stream, each with its answer in the bucket (as another
    approver would have left them)."""
    import nats

    async def go() -> None:
        agent = await nats.connect(server.user_url("alice", "pw"), inbox_prefix="_INBOX_alice")
        desk = await nats.connect(server.user_url("inspector", "x"))
        try:
            js, kv = agent.jetstream(timeout=10), await desk.jetstream().key_value("approver_decisions")
            for _ in range(count):
                unique, now = uuid.uuid4().hex, time.time()
                envelope = {"relay": 1, "id": unique, "client": {"agent": "old"}, "sent_at": now, "deadline": now + 600,
                            "message": {"v": 1, "type": "request", "id": unique, "tool": "allow", "args": {},
                                        "timeout": 300}}
                await js.publish("approver.req.alice.old", json.dumps(envelope).encode(),
                                 headers={"Nats-Msg-Id": unique})
                reply = {"v": 1, "type": "decision", "id": unique, "decision": "allow_once", "decided_by": "user"}
                await kv.create(f"alice.{unique}", json.dumps({"relay": 1, "approver": "earlier", "instance": "x",
                                                              "reply": reply, "seq": None}).encode())
        finally:
            await agent.close()
            await desk.close()

    asyncio.run(go())


def test_a_new_approver_starts_from_what_is_pending(tmp_path: Path, nats_server: NatsServer,
                                                   approvers: list[Approver]) -> None:
    setup = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    join(nats_server, {"alice": "pw"})
    setup.stop()
    answered_history(nats_server, OLD)
    newcomer = Approver(tmp_path, nats_server.user_url("desk2", "x"), "desk2")
    approvers.append(newcomer)
    (fresh,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert fresh["decision"]["decision"] == "allow_once", fresh
    assert [row["agent"] for row in newcomer.decisions()] == ["alice/relay-agent"]  # the old ones: not its business
    assert newcomer.expect("asked").split()[2] == "alice/relay-agent"
