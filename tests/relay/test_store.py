"""What an approver keeps on the server: set up again when the server lost it, and its own.

A server restarted on an empty store (a container without its volume), or a stream deleted under a
running approver: the approver creates the stream, the bucket and its consumer again, says so (its
log, its audit log), and answers again without a restart. Two apps of one user on hosts of one name
each read through a consumer of their own, so each sees every request.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, run_agent, start_agent


def answered_again(server: NatsServer) -> dict[str, object]:
    """A request, asked until an approver has set the relay up again (or ``WAIT`` has passed)."""
    deadline = time.monotonic() + WAIT
    while True:
        (result,) = run_agent(server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
        if "decision" in result or time.monotonic() > deadline:
            return result
        assert "no approver has set up the relay for NATS user alice" in result["message"], result
        time.sleep(0.2)


def lost_events(approver: Approver) -> list[str]:
    return [event["detail"] for event in approver.events("relay") if event["code"] == "store_lost"]


def test_a_server_restarted_on_an_empty_store_is_set_up_again(tmp_path: Path, nats_server: NatsServer,
                                                              approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    assert answered_again(nats_server)["decision"]["decision"] == "allow_once"  # type: ignore[index]
    nats_server.kill()
    shutil.rmtree(tmp_path / "approver-jetstream")
    nats_server.start()
    result = answered_again(nats_server)
    assert result["decision"]["decision"] == "allow_once", result  # type: ignore[index]
    (lost,) = lost_events(approver)
    assert "the decision bucket approver_decisions" in lost and "the stream APPROVER_REQUESTS_alice" in lost
    assert "had lost" in (approver.folder / "stderr").read_text()


def test_a_stream_deleted_under_a_running_approver_is_set_up_again(tmp_path: Path, nats_server: NatsServer,
                                                                   approvers: list[Approver]) -> None:
    import nats

    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)

    async def delete() -> None:
        nc = await nats.connect(nats_server.user_url("inspector", "x"))
        try:
            await nc.jetstream().delete_stream("APPROVER_REQUESTS_alice")
        finally:
            await nc.close()

    assert answered_again(nats_server)["decision"]["decision"] == "allow_once"  # type: ignore[index]
    asyncio.run(delete())
    result = answered_again(nats_server)
    assert result["decision"]["decision"] == "allow_once", result  # type: ignore[index]
    (lost,) = lost_events(approver)
    assert "lost the stream APPROVER_REQUESTS_alice" in lost and "bucket" not in lost


def test_two_apps_of_one_user_and_host_each_see_every_request(tmp_path: Path, nats_server: NatsServer,
                                                              approvers: list[Approver]) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for folder in (first, second):  # the same NATS user, the same name (user@host): two desks
        approvers.append(Approver(folder, nats_server.user_url("desk", "x"), "desk"))
    agents = [start_agent(nats_server.user_url("alice", "pw"),
                          [{"op": "request", "tool": "wait", "args": {"n": n}, "timeout": 1}]) for n in range(4)]
    seen = [{approver.expect("asked", suffix=" wait").split()[1] for _ in range(4)} for approver in approvers]
    assert seen[0] == seen[1] and len(seen[0]) == 4
    for agent in agents:
        agent.communicate(timeout=WAIT)
