"""Hostile envelopes, published straight to the stream with nats-py as an agent user: every field
is checked, each refusal is audited, the agent hears a typed reason where it can be named, and
the relay goes on answering. And the clocks: a deadline from a skewed clock is bounded or refused.
(``names.decode_envelope``, ``names.deadline_problem``, ``approver.RelayApprover._ask``.)"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from tests.relay.conftest import WAIT, Approver, NatsServer, join, run_agent
from tests.relay.test_approvers import stored_decisions


def envelope(unique: str, *, raw: dict[str, str] | None = None, drop: tuple[str, ...] = (),
             message: dict[str, Any] | None = None, **fields: Any) -> bytes:
    """A well-formed request envelope from ``alice``'s agent ``raw``, with ``fields`` changed, ``drop``
    removed, and ``raw`` fields written as raw JSON text (``NaN``, ``Infinity``, ``1e400``)."""
    now = time.time()
    value: dict[str, Any] = {"relay": 1, "id": unique, "client": {"agent": "raw"}, "sent_at": now,
                             "deadline": now + 60,
                             "message": {"v": 1, "type": "request", "id": unique, "tool": "allow", "args": {},
                                         "timeout": 30, **(message or {})}}
    value.update(fields)
    for name in drop:
        value.pop(name)
    for name in raw or {}:
        value[name] = f"@@{name}@@"
    text = json.dumps(value)
    for name, literal in (raw or {}).items():
        text = text.replace(f'"@@{name}@@"', literal)
    return text.encode()


def publish(server: NatsServer, payloads: list[tuple[str, bytes]]) -> None:
    import nats

    join(server, {"alice": "pw"})

    async def go() -> None:
        nc = await nats.connect(server.user_url("alice", "pw"), allow_reconnect=False, inbox_prefix="_INBOX_alice")
        try:
            js = nc.jetstream()
            for unique, payload in payloads:
                await js.publish("approver.req.alice.raw", payload, headers={"Nats-Msg-Id": unique})
        finally:
            await nc.close()

    asyncio.run(go())


def read_decision(server: NatsServer, unique: str) -> dict[str, Any] | None:
    import nats

    async def go() -> dict[str, Any] | None:
        nc = await nats.connect(server.user_url("inspector", "x"))
        try:
            kv = await nc.jetstream().key_value("approver_decisions")
            try:
                entry = await kv.get(f"alice.{unique}")
            except nats.js.errors.KeyNotFoundError:
                return None
            return dict(json.loads(entry.value or b"{}"))
        finally:
            await nc.close()

    return asyncio.run(go())


LIBFAKETIME = next((str(path) for path in (Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
                                           Path("/usr/lib/faketime/libfaketime.so.1")) if path.exists()), None)


def skewed(offset: str) -> dict[str, str]:
    """The environment of a process whose wall clock is off by ``offset`` (libfaketime preloaded into
    the process itself, so a signal reaches it); its monotonic clock (an agent's own wait) is the machine's."""
    import pytest

    if LIBFAKETIME is None:
        pytest.skip("no libfaketime")
    return {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_NO_CACHE": "1"}


def wait_for(condition: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


HOSTILE = {
    "nandeadline": {"raw": {"deadline": "NaN"}},
    "infdeadline": {"raw": {"deadline": "Infinity"}},
    "hugedeadline": {"raw": {"deadline": "1e400"}},
    "textdeadline": {"deadline": "tomorrow"},
    "truedeadline": {"deadline": True},
    "nodeadline": {"drop": ("deadline",)},
    "nosentat": {"drop": ("sent_at",)},
    "nansentat": {"raw": {"sent_at": "-Infinity"}},
    "zerosentat": {"sent_at": 0},
    "backwards": {"deadline": 1_700_000_000.0},  # before its sent_at
    "tenyears": {"deadline": time.time() + 10 * 365 * 86400},  # further than the longest wait after sent_at
    "relaytrue": {"relay": True},
    "extrafield": {"approved": True},
    "textclient": {"client": "me"},
    "texttimeout": {"message": {"timeout": "30"}},
    "nantimeout": {"message": {"timeout": 1e400}},
    "longtimeout": {"message": {"timeout": 86400 * 7}},
    "notype": {"message": {"type": None}},
}


def test_hostile_envelopes_are_refused_audited_and_the_relay_goes_on(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    payloads = [(unique, envelope(unique, **change)) for unique, change in HOSTILE.items()]
    payloads.append(("deep", b'{"relay": 1, "id": "deep", "client": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
    payloads.append(("fine", envelope("fine")))
    publish(nats_server, payloads)
    approver.expect("asked fine")  # the one that fits, after all the others: the relay still reads
    wait_for(lambda: stored_decisions(nats_server) >= 1)
    approver.stop()
    refused = [event for event in approver.events("refused") if event["code"] == "relay_envelope"]
    assert len(refused) == len(HOSTILE) + 1, [event["detail"] for event in refused]
    assert approver.lines == []  # nobody was asked anything else
    assert [(row["request_id"], row["decision"]) for row in approver.decisions()] == [("fine", "allow_once")]
    assert stored_decisions(nats_server) == 1  # and nothing was written for the others


def test_a_deadline_from_a_skewed_clock_is_refused_with_a_typed_reason(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    now = time.time()
    publish(nats_server, [
        # an agent whose clock is an hour behind: the deadline had passed when the server stored it
        ("behind", envelope("behind", sent_at=now - 3600, deadline=now - 3600 + 60)),
        # an agent whose clock is three days ahead: a deadline far beyond the longest wait
        ("ahead", envelope("ahead", sent_at=now + 3 * 86400, deadline=now + 3 * 86400 + 60)),
        ("fine", envelope("fine")),
    ])
    approver.expect("asked fine")
    wait_for(lambda: stored_decisions(nats_server) >= 3)
    approver.stop()
    for unique, said in (("behind", "clock is behind"), ("ahead", "clock is ahead")):
        value = read_decision(nats_server, unique)
        assert value is not None, unique
        reply = value["reply"]
        assert (reply["type"], reply["code"], reply["id"]) == ("error", "clock_skew", unique)
        assert said in reply["message"]
    refused = {event["detail"].split(": ")[1]: event for event in approver.events("refused")
               if event["code"] == "clock_skew"}
    assert sorted(refused) == ["request ahead", "request behind"]
    assert approver.lines == []
    assert [row["request_id"] for row in approver.decisions()] == ["fine"]


def test_an_agent_with_a_skewed_clock_is_told_at_once(tmp_path: Path, nats_server: NatsServer,
                                                      approvers: list[Approver]) -> None:
    """The real client under faketime: an hour behind, its request is refused (``clock_skew``) at once
    instead of expiring; its own wait is on the monotonic clock either way."""
    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    (behind,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}],
                          env=skewed("-1h"))
    assert behind["error"] == "ProtocolError" and behind["message"].startswith("clock_skew: ")
    (fine,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}],
                        env=skewed("+20s"))
    assert fine["decision"]["decision"] == "allow_once"


def test_an_approver_with_a_skewed_clock_counts_deadlines_on_the_servers(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    """An approver whose clock is an hour ahead (faketime) would find every request long past its
    deadline and deny it at once; it measures its clock against the server's and answers as usual."""
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk", env=skewed("+1h"))
    approvers.append(approver)
    (answer,) = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "allow", "args": {}}])
    assert (answer["decision"]["decision"], answer["decision"]["decided_by"]) == ("allow_once", "user")
    approver.stop()
    clock = [event["detail"] for event in approver.events("relay") if event["code"] == "clock"]
    assert len(clock) == 1 and "clock is 3600 s ahead of the NATS server's" in clock[0]
