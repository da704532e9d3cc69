"""An agent user cannot reach the JetStream account through answers the server sends for it.

A message the server itself sends (the acknowledgement of a JetStream publish, a direct get's
value) goes to the reply subject its asker chose, in the asker's account. The sample configuration
puts each agent in an account of its own, so such an answer reaches nothing there: not the
JetStream API (delete the stream, the bucket, a consumer), not another key, not another user's
request subject. And whatever reaches an agent's own key that is no decision for that request is
not taken for one, by the agent or by an approver (tested on the layout where it can be stored).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.relay.conftest import HERE, WAIT, Approver, NatsServer, run_agent, start_agent
from tests.relay.test_permissions import SAMPLE, raw

SHARED = HERE / "shared_account.conf"
CI, BUILDBOX = ("ci", "change-me-ci"), ("buildbox", "change-me-buildbox")
DIRECT_GET = "$JS.API.DIRECT.GET.KV_approver_decisions.$KV.approver_decisions.{user}.{unique}"


@pytest.fixture
def sample_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path, config=SAMPLE).start()
    yield server
    server.stop()


def inspect(server: NatsServer) -> dict[str, Any]:
    """What the JetStream account holds, as an approver sees it: each stream's subjects, or its error."""
    import nats

    async def look() -> dict[str, Any]:
        nc = await nats.connect(server.user_url("desk", "change-me-desk"))
        try:
            js, found = nc.jetstream(), {}
            for stream in ("APPROVER_REQUESTS_ci", "KV_approver_decisions"):
                try:
                    info = await js.stream_info(stream, subjects_filter=">")
                    found[stream] = dict(info.state.subjects or {})
                except nats.js.errors.NotFoundError as exc:
                    found[stream] = f"gone: {exc}"
            try:
                found["consumers"] = sorted(c.name for c in await js.consumers_info("APPROVER_REQUESTS_ci"))
            except nats.js.errors.NotFoundError as exc:
                found["consumers"] = f"gone: {exc}"
            return found
        finally:
            await nc.close()

    return asyncio.run(look())


def settled(server: NatsServer) -> dict[str, Any]:
    """:func:`inspect`, once the approver has refused and removed ci's junk (``approver.req.ci.raw``)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = inspect(server)
        if "approver.req.ci.raw" not in found["APPROVER_REQUESTS_ci"] or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def decided_request(server: NatsServer, approver: Approver, user: tuple[str, str]) -> str:
    """The id of a request of ``user`` the person allowed (its decision is in the bucket)."""
    (allowed,) = run_agent(server.user_url(*user), [{"op": "request", "tool": "allow", "args": {}}])
    assert allowed["decision"]["decision"] == "allow_once"
    return approver.expect("asked", suffix=" allow").split()[1]


def test_an_answer_sent_to_the_jetstream_api_deletes_nothing(tmp_path: Path, sample_server: NatsServer,
                                                              approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk")
    approvers.append(approver)
    known = decided_request(sample_server, approver, CI)
    before = inspect(sample_server)
    (consumer,) = before["consumers"]
    targets = ["$JS.API.STREAM.DELETE.APPROVER_REQUESTS_ci", "$JS.API.STREAM.DELETE.KV_approver_decisions",
               "$JS.API.STREAM.PURGE.APPROVER_REQUESTS_ci", "$JS.API.STREAM.PURGE.KV_approver_decisions",
               f"$JS.API.CONSUMER.DELETE.APPROVER_REQUESTS_ci.{consumer}"]

    async def attack(nc: Any) -> None:
        for target in targets:  # the stream's acknowledgement, a direct get's value or its "no such key"
            await nc.publish("approver.req.ci.raw", b"x", reply=target)
            await nc.publish(DIRECT_GET.format(user="ci", unique=known), b"", reply=target)
            await nc.publish(DIRECT_GET.format(user="ci", unique=uuid.uuid4().hex), b"", reply=target)
        await nc.flush()
        await asyncio.sleep(1)  # what the server would do with the answers, it has done by now

    raw(sample_server, *CI, attack)
    after = settled(sample_server)
    assert after["consumers"] == [consumer]
    assert after["KV_approver_decisions"] == before["KV_approver_decisions"]
    assert "approver.req.ci.raw" not in after["APPROVER_REQUESTS_ci"]  # ci's own junk: refused by the app, removed
    (still,) = run_agent(sample_server.user_url(*BUILDBOX), [{"op": "request", "tool": "allow", "args": {}}])
    assert still["decision"]["decision"] == "allow_once"


def test_an_answer_sent_to_another_key_or_users_subject_stores_nothing(
        tmp_path: Path, sample_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk")
    approvers.append(approver)
    known = decided_request(sample_server, approver, CI)
    other = uuid.uuid4().hex
    targets = [f"$KV.approver_decisions.ci.{other}", f"$KV.approver_decisions.buildbox.{other}",
               "$KV.approver_decisions.buildbox.*", "$KV.approver_decisions.buildbox.>", "approver.req.buildbox.claude"]

    async def attack(nc: Any) -> None:
        for target in targets:
            await nc.publish(DIRECT_GET.format(user="ci", unique=known), b"", reply=target)
            await nc.publish("approver.req.ci.raw", b"x", reply=target)
        await nc.flush()
        await asyncio.sleep(1)

    raw(sample_server, *CI, attack)
    after = settled(sample_server)
    assert after["KV_approver_decisions"] == {f"$KV.approver_decisions.ci.{known}": 1}
    assert set(after["APPROVER_REQUESTS_ci"]) == {"approver.req.ci.relay-agent"}  # the junk refused and removed
    assert [event["code"] for event in approver.events("relay")] == []  # nothing seen as answered elsewhere


def test_a_value_on_its_key_that_answers_another_request_is_no_decision(tmp_path: Path,
                                                                        approvers: list[Approver]) -> None:
    """On the shared-account layout a direct get can store an old allow of ci's on the key of its
    request waiting for the person: neither the agent nor the approver takes it for the answer."""
    server = NatsServer(tmp_path, config=SHARED).start()
    try:
        approver = Approver(tmp_path, server.user_url("desk", "change-me-desk"), "desk")
        approvers.append(approver)
        known = decided_request(server, approver, CI)
        waiting = start_agent(server.user_url(*CI), [{"op": "request", "tool": "wait", "args": {"command": "rm -rf ~"},
                                                      "timeout": 2}])
        pending = approver.expect("asked", suffix=" wait").split()[1]

        async def replay(nc: Any) -> None:
            await nc.publish(DIRECT_GET.format(user="ci", unique=known), b"",
                             reply=f"$KV.approver_decisions.ci.{pending}")

        raw(server, *CI, replay)
        out, _ = waiting.communicate(timeout=30)
        decision = json.loads(out)["decision"]
        assert (decision["decision"], decision["decided_by"]) == ("deny", "timeout")  # not the replayed allow
        approver.stop()
        rows = [row for row in approver.decisions() if row["request_id"] == pending]
        assert [(row["decision"], row["decided_by"]) for row in rows] == [("deny", "timeout")]
        assert not [event for event in approver.events("relay") if event["code"] == "answered_elsewhere"]
        refused = [event["detail"] for event in approver.events("refused") if event["code"] == "relay_decision"]
        assert refused and f"answers '{known}'" in refused[0]
        stored = inspect_value(server, f"ci.{pending}")
        reply = stored["reply"]
        assert (stored["approver"], reply["id"], reply["decided_by"]) == ("desk", pending, "timeout")
    finally:
        server.stop()


def test_junk_on_its_key_leaves_the_agent_waiting_for_the_answer(tmp_path: Path, sample_server: NatsServer,
                                                                  approvers: list[Approver]) -> None:
    """The stream's acknowledgement of the agent user's own publish, sent to its waiting key."""
    approver = Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk")
    approvers.append(approver)
    waiting = start_agent(sample_server.user_url(*CI), [{"op": "request", "tool": "slow", "args": {}}])
    pending = approver.expect("asked", suffix=" slow").split()[1]

    async def junk(nc: Any) -> None:
        await nc.publish("approver.req.ci.other", b"x", reply=f"$KV.approver_decisions.ci.{pending}")

    raw(sample_server, *CI, junk)
    out, err = waiting.communicate(timeout=30)
    decision = json.loads(out)["decision"]
    assert (decision["decision"], decision["decided_by"]) == ("allow_once", "user"), err


def inspect_value(server: NatsServer, key: str) -> dict[str, Any]:
    import nats

    async def get() -> dict[str, Any]:
        nc = await nats.connect(server.user_url("desk", "change-me-desk"))
        try:
            entry = await (await nc.jetstream().key_value("approver_decisions")).get(key)
            return dict(json.loads(entry.value or b"{}"))
        finally:
            await nc.close()

    return asyncio.run(get())
