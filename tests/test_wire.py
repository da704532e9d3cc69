"""The thin client's value types and framing, without any socket."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_approver.client.wire import Decision, LineFramer, canonical_json, deny


def test_decision_is_immutable_and_compares_by_content() -> None:
    first = Decision.from_wire({"type": "decision", "id": "r1", "decision": "deny", "decided_by": "policy",
                                "rule": "rule 2", "blocked": True})
    assert first.blocked and not first.allowed
    again = Decision("deny", decided_by="policy", rule="rule 2", request_id="r1")
    assert first == again and not again.blocked          # ``extra`` is not part of the identity
    with pytest.raises(AttributeError):
        first.decision = "allow_once"  # type: ignore[misc]
    assert "decided_by='policy'" in repr(first)
    with pytest.raises(TypeError):
        hash(first)


def test_decision_json_keeps_stable_keys() -> None:
    decision = Decision("allow_session", note=None, updated_args={"a": 1}, request_id="x")
    assert decision.to_json() == {"decision": "allow_session", "allowed": True, "note": None, "decided_by": "user",
                                  "rule": None, "blocked": False, "updated_args": {"a": 1}, "id": "x"}
    assert deny("app unreachable", "unavailable").to_json()["allowed"] is False


@pytest.mark.parametrize("data", [{"decision": "maybe"}, {"decision": "allow_once", "updated_args": [1]}])
def test_decision_from_wire_refuses_nonsense(data: dict) -> None:
    with pytest.raises(ValueError):
        Decision.from_wire(data)


def test_canonical_json_ignores_key_order() -> None:
    assert canonical_json({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == canonical_json({"a": [2, {"c": 4, "d": 3}], "b": 1})


def test_line_framer_joins_pieces_and_skips_oversized_lines() -> None:
    from desktop_approver.client.wire import Oversized

    framer = LineFramer(limit=10)
    assert list(framer.feed(b'{"a"')) == []
    assert list(framer.feed(b':1}\n\n{"b":2}\n')) == [b'{"a":1}', b'{"b":2}']
    out = list(framer.feed(b"x" * 25))              # over the limit, no newline yet: not buffered
    assert out == [] and len(framer._buffer) == 0
    out = list(framer.feed(b"yyy\nok\n"))
    assert isinstance(out[0], Oversized) and out[0].size == 28 and out[1:] == [b"ok"]
    out = list(framer.feed(b"z" * 11 + b"\nfine\n"))
    assert isinstance(out[0], Oversized) and out[1:] == [b"fine"]


class CountingBuffer(bytearray):
    """The framer's buffer, counting every byte a newline search looks at."""

    examined = 0

    def find(self, sub: Any, start: Any = 0, *rest: Any) -> int:  # type: ignore[override]
        CountingBuffer.examined += len(self) - (start or 0)
        return super().find(sub, start, *rest)


def test_line_framer_is_linear_however_the_line_is_cut() -> None:
    size = 64 * 1024
    framer = LineFramer(limit=2 * size)
    framer._buffer = CountingBuffer()
    CountingBuffer.examined = 0
    out: list[Any] = []
    for _ in range(size):                 # one byte per write, as a slow or hostile client sends
        out += framer.feed(b"x")
    out += framer.feed(b"\nnext\n")
    assert out == [b"x" * size, b"next"]
    assert CountingBuffer.examined <= 3 * size, f"examined {CountingBuffer.examined} bytes for a {size}-byte line"


def test_line_framer_oversized_line_in_pieces_then_a_good_one() -> None:
    from desktop_approver.client.wire import Oversized

    framer = LineFramer(limit=8)
    out: list[Any] = []
    for piece in (b"0123", b"45678", b"9abc", b"de\nok", b"\n"):
        out += framer.feed(piece)
    assert isinstance(out[0], Oversized) and out[0].size == 15 and out[1:] == [b"ok"]
    assert framer.pending_bytes == 0


def test_the_wire_spells_the_decisions_as_the_vocabulary_does() -> None:
    """``wire`` spells the answers itself (the client imports no typing); they must stay the vocabulary's."""
    from desktop_approver.client import vocabulary, wire

    assert wire.DECISIONS == vocabulary.DECISIONS
    assert wire.ALLOW_DECISIONS == vocabulary.ALLOW_DECISIONS
