"""The shared decision bucket under a flood of requests refused at once (here for ``clock_skew``): the
refusals written are bounded per user and short-lived, so another user's answer is still written; a
bucket that is full anyway is told to the person."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent
from tests.relay.test_user_limits import raw


def skewed_requests(server: NatsServer, user: str, count: int) -> None:
    """``count`` requests of ``user`` whose deadline passed an hour before they were sent: each is refused
    at once (``clock_skew``), and that refusal is its answer."""

    async def send(nc: Any) -> None:
        js = nc.jetstream()
        for _ in range(count):
            unique = uuid.uuid4().hex
            now = time.time() - 7200
            await js.publish(f"approver.req.{user}.flood", json.dumps({
                "relay": 1, "id": unique, "client": {"agent": "flood"}, "sent_at": now, "deadline": now + 60,
                "message": {"v": 1, "type": "request", "id": unique, "tool": "x", "args": {}, "timeout": 30}}).encode(),
                headers={"Nats-Msg-Id": unique})

    join(server, {user: "pw"})
    raw(server, user, "pw", send)


def refused(approver: Approver) -> int:
    """The refusals in the audit log: one by one, and the counts of those summed up (a burst)."""
    events = approver.events("refused")
    return (sum(event["code"] == "clock_skew" for event in events)
            + sum(int(event["detail"].split()[0]) for event in events if event["code"] == "rate_limited"))


def test_a_flood_of_refusals_leaves_room_for_another_users_answer(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk",
                        extra=["--bucket-max-bytes", str(96 * 1024)])
    approvers.append(approver)
    skewed_requests(nats_server, "alice", 600)  # some 250 KB of refusals, were they all written
    deadline = time.monotonic() + WAIT
    while refused(approver) < 600:  # every one was read and refused
        assert time.monotonic() < deadline, refused(approver)
        time.sleep(0.1)
    assert any(event["code"] == "refusals_unwritten" and "NATS user alice" in event["detail"]
               for event in approver.events("relay"))
    (answered,) = run_agent(nats_server.user_url("bob", "pw"),
                            [{"op": "request", "tool": "allow", "args": {}, "timeout": 5}])
    assert answered["decision"]["decision"] == "allow_once", answered


def test_a_full_bucket_is_told_to_the_person(tmp_path: Path, nats_server: NatsServer,
                                             approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", extra=["--bucket-max-bytes", "4096"])
    approvers.append(approver)
    skewed_requests(nats_server, "alice", 40)
    assert "the decision bucket approver_decisions" in approver.expect("problem relay")
