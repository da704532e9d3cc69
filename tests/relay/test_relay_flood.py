"""One agent user floods its request stream: its stream refuses the flood (that agent hears it at its
publish, ``QuotaExceeded``) and another user's request waiting for an answer is neither pushed out nor
refused (it is in a stream of its own)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent, start_agent

STREAM_BYTES = 4 * 1024 ** 2


def flood(server: NatsServer, user: str) -> tuple[int, str]:
    """Publishes as ``user`` until the stream refuses them: how many of the last size it took, and why it refused."""
    import nats

    async def go() -> tuple[int, str]:
        nc = await nats.connect(server.user_url(user, "pw"), inbox_prefix=f"_INBOX_{user}")
        try:
            js = nc.jetstream(timeout=10)
            stored, why = 0, "never refused"
            for size in (256 * 1024, 256):  # then small ones: the stream has no room left even for a request
                stored = 0
                while stored < 4 * STREAM_BYTES // size:
                    try:
                        await js.publish(f"approver.req.{user}.flood", b"x" * size)
                    except nats.js.errors.APIError as exc:
                        why = str(exc.description)
                        break
                    stored += 1
                else:
                    return stored, why
            return stored, why
        finally:
            await nc.close()

    return asyncio.run(go())


def stored_of(server: NatsServer, user: str) -> int:
    """How many messages of ``user``'s agents the request stream holds."""
    import nats

    async def count() -> int:
        nc = await nats.connect(server.user_url("inspector", "x"))
        try:
            info = await nc.jetstream().stream_info(f"APPROVER_REQUESTS_{user}")
            return int(info.state.messages)
        finally:
            await nc.close()

    return asyncio.run(count())


def test_a_flood_is_refused_to_its_sender_and_never_evicts_a_waiting_request(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    small = ["--stream-max-bytes", str(STREAM_BYTES)]
    setup = Approver(tmp_path, nats_server.user_url("desk", "x"), "setup", extra=small)
    join(nats_server, {"alice": "pw", "bob": "pw"})  # their streams are there
    setup.stop()
    waiting = start_agent(nats_server.user_url("bob", "pw"),
                          [{"op": "request", "tool": "allow", "args": {"command": "ls"}, "timeout": 20}])
    deadline = time.monotonic() + WAIT
    while not stored_of(nats_server, "bob"):  # bob's request is on the stream before the flood
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stored, why = flood(nats_server, "alice")  # no approver reads meanwhile: bob's request waits on the stream
    assert stored < 4 * STREAM_BYTES // 256, why
    assert "maximum bytes" in why, why
    (refused,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert refused.get("error") == "QuotaExceeded", refused  # told at once, not at a deadline
    assert "NATS user alice is at its quota" in refused["message"], refused
    late = Approver(tmp_path, nats_server.user_url("desk", "x"), "late", extra=small)
    approvers.append(late)
    out, err = waiting.communicate(timeout=WAIT)
    assert '"allow_once"' in out, (out, err)  # bob's request was still there, and asked
    assert late.expect("asked").split()[2] == "bob/relay-agent"
