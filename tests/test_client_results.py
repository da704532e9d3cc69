"""``ClientProtocol``'s typed readers: one per reply type, an ``error`` becomes its typed exception,
anything else that does not fit is a ``ProtocolError`` (never a silent wrong value). In memory."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_approver import ApproverUnavailable, Blocked, Decision, ProtocolError, Unauthorized
from desktop_approver.client.base import ClientProtocol

RISK = {"level": "safe", "reasons": []}


@pytest.fixture
def protocol() -> ClientProtocol:
    return ClientProtocol(agent="tester", session="run-1")


def test_a_decision(protocol: ClientProtocol) -> None:
    decision = protocol.read_decision({"type": "decision", "id": "r1", "decision": "deny", "decided_by": "user",
                                       "note": "no", "blocked": False, "risk": RISK})
    assert decision == Decision("deny", note="no", request_id="r1", risk=RISK)


def test_a_block_raises_only_when_asked(protocol: ClientProtocol) -> None:
    reply = {"type": "decision", "id": "r1", "decision": "deny", "decided_by": "policy", "rule": "r",
             "blocked": True, "risk": RISK}
    assert protocol.read_decision(reply).blocked
    with pytest.raises(Blocked):
        protocol.read_decision(reply, raise_on_block=True)


def test_a_batch_has_one_decision_per_call(protocol: ClientProtocol) -> None:
    reply = {"type": "batch_decision", "id": "b1", "decisions": [
        {"index": 0, "decision": "allow_once", "decided_by": "user", "blocked": False, "risk": RISK}]}
    [decision] = protocol.read_decisions(reply, 1)
    assert decision.allowed
    with pytest.raises(ProtocolError, match="1 decisions for 2 calls"):
        protocol.read_decisions(reply, 2)


@pytest.mark.parametrize("reply", [
    {"type": "decision", "id": "r1", "decision": "maybe"},
    {"type": "batch_decision", "id": "b1", "decisions": ["allow_once"]},
    {"type": "batch_decision", "id": "b1"},
])
def test_malformed_decisions_are_protocol_errors(protocol: ClientProtocol, reply: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError) as raised:
        protocol.read_decisions(reply, 1) if reply["type"] == "batch_decision" else protocol.read_decision(reply)
    assert raised.value.code == "invalid_message"


def test_admin_replies_are_typed(protocol: ClientProtocol) -> None:
    assert protocol.read_status({"type": "status_reply", "id": "s1", "pending": 0})["pending"] == 0
    assert protocol.read_entries({"type": "sessions_reply", "id": "m1", "entries": [{"tool": "Bash"}]}) == \
        [{"tool": "Bash"}]
    assert protocol.read_count({"type": "revoked", "id": "m1", "count": 2}, "revoked", "count") == 2
    assert protocol.read_count({"type": "session_ended", "id": "m1", "forgotten": 0}, "session_ended",
                               "forgotten") == 0


@pytest.mark.parametrize("reply", [
    {"type": "revoked", "id": "m1", "count": "2"},
    {"type": "revoked", "id": "m1", "count": True},
    {"type": "revoked", "id": "m1"},
])
def test_a_count_that_is_not_an_integer_is_a_protocol_error(protocol: ClientProtocol, reply: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError, match="count is not an integer"):
        protocol.read_count(reply, "revoked", "count")


def test_entries_must_be_objects(protocol: ClientProtocol) -> None:
    with pytest.raises(ProtocolError):
        protocol.read_entries({"type": "sessions_reply", "id": "m1", "entries": ["Bash"]})


def test_the_wrong_reply_type_is_a_protocol_error(protocol: ClientProtocol) -> None:
    with pytest.raises(ProtocolError, match="unexpected reply type 'status_reply'"):
        protocol.read_decision({"type": "status_reply", "id": "r1"})
    with pytest.raises(ProtocolError, match="expected 'revoked'"):
        protocol.read_count({"type": "session_ended", "id": "m1", "forgotten": 1}, "revoked", "count")


@pytest.mark.parametrize(("code", "error"), [("unauthorized", Unauthorized), ("shutting_down", ApproverUnavailable),
                                             ("internal", ProtocolError)])
def test_every_reader_turns_an_error_into_its_typed_exception(protocol: ClientProtocol, code: str,
                                                               error: type[Exception]) -> None:
    reply = {"type": "error", "id": "r1", "code": code, "message": "no"}
    for read in (protocol.read_decision, protocol.read_status, protocol.read_entries,
                 lambda reply: protocol.read_decisions(reply, 1),
                 lambda reply: protocol.read_count(reply, "revoked", "count")):
        with pytest.raises(error):
            read(reply)
