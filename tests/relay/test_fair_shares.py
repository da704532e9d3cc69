"""Fair shares: each agent user's requests are in a stream of its own with its own limits
(``APPROVER_REQUESTS_<user>``), refused requests are removed at once and the rest at their own time
to live, and a user at its limit is refused with ``QuotaExceeded`` while the person is told which
user; another user is served all along."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from desktop_approver import AsyncClient, QuotaExceeded
from desktop_approver.relay import names
from desktop_approver.relay.approver import REFUSALS_LOGGED_PER_MINUTE
from tests.relay.conftest import WAIT, Approver, NatsServer, run_agent

ALLOW = [{"op": "request", "tool": "allow", "args": {}}]


def held(server: NatsServer, user: str) -> int:
    """How many messages ``user``'s request stream holds."""
    import nats

    async def count() -> int:
        nc = await nats.connect(server.user_url("inspector", "x"))
        try:
            return int((await nc.jetstream().stream_info(names.stream_of(user))).state.messages)
        except nats.js.errors.NotFoundError:
            return 0  # not made yet: its first agent has not asked
        finally:
            await nc.close()

    return asyncio.run(count())


def junk(server: NatsServer, user: str, count: int) -> int:
    """``count`` messages no approver can take, published as ``user`` on its own subject: how many were stored."""
    import nats

    async def go() -> int:
        nc = await nats.connect(server.user_url(user, "pw"), inbox_prefix=f"_INBOX_{user}")
        stored = 0
        try:
            js = nc.jetstream(timeout=10)
            for index in range(count):
                try:
                    await js.publish(f"approver.req.{user}.flood", b"junk %d" % index)
                    stored += 1
                except nats.js.errors.APIError:
                    await asyncio.sleep(0.05)  # at the limit: the approvers remove what they refused
        finally:
            await nc.close()
        return stored

    return asyncio.run(go())


def test_a_junk_flood_is_removed_and_never_holds_up_another_user(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", extra=["--stream-max-msgs", "50"])
    approvers.append(approver)
    assert run_agent(nats_server.user_url("alice", "pw"), ALLOW)[0]["decision"]["decision"] == "allow_once"
    began = time.monotonic()
    stored = junk(nats_server, "alice", 400)  # far more than its stream holds at once
    assert stored > 50  # refused ones are removed as they come: room again, for alice alone
    for result in run_agent(nats_server.user_url("bob", "pw"), ALLOW * 3):
        assert result["decision"]["decision"] == "allow_once", result
    deadline = time.monotonic() + WAIT
    while held(nats_server, "alice") > 1:  # the one answered request stays until its time to live
        assert time.monotonic() < deadline, held(nats_server, "alice")
        time.sleep(0.1)
    assert held(nats_server, "bob") == 3
    # The text log says a few refusals a minute, not one line each (red team F6).
    minutes = (time.monotonic() - began) // 60 + 1
    said = (approver.folder / "stderr").read_text().count("relay: refused (")
    assert 1 <= said <= REFUSALS_LOGGED_PER_MINUTE * minutes, said


def test_a_user_at_its_quota_is_refused_by_type_and_the_person_is_told_which(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", extra=["--stream-max-msgs", "5"])
    approvers.append(approver)

    async def flood() -> list[object]:
        async with AsyncClient(url=nats_server.user_url("alice", "pw"), agent="flood") as client:
            waiting = [asyncio.ensure_future(client.request("wait", {"n": index}, timeout=60)) for index in range(5)]
            while await asyncio.to_thread(held, nats_server, "alice") < 5:  # five of alice's wait for the person
                await asyncio.sleep(0.05)
            results: list[object] = []
            try:
                await client.request("wait", {"n": 5}, timeout=60)
            except QuotaExceeded as exc:
                results.append(exc)
            # Another user is served while alice is at its quota.
            results.append(await asyncio.to_thread(run_agent, nats_server.user_url("bob", "pw"), ALLOW))
            for task in waiting:
                task.cancel()
            return results

    refused, served = asyncio.run(flood())
    assert isinstance(refused, QuotaExceeded) and refused.user == "alice", refused
    assert "alice" in str(refused) and "quota" in str(refused)
    assert served[0]["decision"]["decision"] == "allow_once", served  # type: ignore[index]
    told = approver.expect("problem relay user alice")
    assert "NATS user alice is at its quota" in told and "other users are not affected" in told
    assert any("NATS user alice is at its quota" in event["detail"] for event in approver.events("relay"))
