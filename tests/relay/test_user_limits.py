"""Limits per NATS user and per agent: one that floods the stream is refused ``too_many_pending``
(audited with its user's name), and every other user's agents go on being answered. What one user's
waiting requests may hold of the approver's memory is bounded too."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent
from tests.relay.test_permissions import raw


def envelope(unique: str, agent: str, pad: str = "") -> bytes:
    now = time.time()
    return json.dumps({"relay": 1, "id": unique, "client": {"agent": agent}, "sent_at": now, "deadline": now + 7200,
                       "message": {"v": 1, "type": "request", "id": unique, "tool": "wait", "args": {"pad": pad},
                                   "timeout": 3600}}).encode()


def flood(server: NatsServer, user: str, counts: dict[str, int], pad: str = "") -> None:
    """``counts[agent]`` requests from each agent of ``user``, stored on the stream."""

    async def send(nc: Any) -> None:
        js = nc.jetstream()
        for agent, count in counts.items():
            for _ in range(count):
                unique = uuid.uuid4().hex
                await js.publish(f"approver.req.{user}.{agent}", envelope(unique, agent, pad),
                                 headers={"Nats-Msg-Id": unique})

    join(server, {user: "pw"})
    raw(server, user, "pw", send)


def refusals(approver: Approver, until: int) -> list[str]:
    """The ``too_many_pending`` refusals in the audit log (and the summaries of those not recorded
    one by one), once there are ``until`` of them."""
    deadline = time.monotonic() + WAIT
    while True:
        found = [event["detail"] for event in approver.events("refused")
                 if event["code"] in ("too_many_pending", "rate_limited")]
        counted = sum(int(detail.split()[0]) if detail[0].isdigit() else 1 for detail in found)
        if counted >= until or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_user_flooding_the_stream_locks_out_no_other_user(tmp_path: Path, nats_server: NatsServer,
                                                             approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    flood(nats_server, "alice", {"one": 140, "two": 128, "three": 782})  # 1050 requests: 12 over one agent's limit
    found = refusals(approver, until=1050 - 256)
    (answered,) = run_agent(nats_server.user_url("bob", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert answered["decision"]["decision"] == "allow_once", answered
    singles = [detail for detail in found if not detail[0].isdigit()]
    assert singles and all("NATS user alice" in detail for detail in singles), singles[:3]
    assert any("NATS user alice's agent 'one' already has 128 calls" in detail for detail in singles)
    assert any("NATS user alice already has 256 calls" in detail for detail in singles)
    summaries = [detail for detail in found if detail[0].isdigit()]
    assert all("NATS user alice: " in detail for detail in summaries), summaries


def test_the_bytes_one_user_holds_waiting_are_bounded(tmp_path: Path, nats_server: NatsServer,
                                                      approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    flood(nats_server, "alice", {"big": 40}, pad="x" * 500_000)  # 20 MB, over the 16 MiB a user may hold
    found = refusals(approver, until=5)
    assert any("NATS user alice already has" in detail and "bytes of requests waiting" in detail
               for detail in found), found
    (answered,) = run_agent(nats_server.user_url("bob", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert answered["decision"]["decision"] == "allow_once", answered
