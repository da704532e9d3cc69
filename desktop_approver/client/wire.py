"""The wire format, in the standard library only.

Both the thin client and the app's server frame messages with this module, so the two can never
disagree about lines, sizes or versions. The app validates message *contents* with its pydantic
models (``core/messages/models.py``); the client reads and writes plain dicts through the small types
here. The golden exchanges in ``ipc/examples/`` keep both sides in step.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Final

    from .vocabulary import DecidedBy, DecisionName, RiskReport

DECISIONS: tuple[DecisionName, ...] = ("allow_once", "allow_session", "deny")
"""The three answers: ``vocabulary.DECISIONS``, spelled here so the client needs no ``typing``
(a test keeps the two equal)."""
ALLOW_DECISIONS: frozenset[DecisionName] = frozenset(("allow_once", "allow_session"))

PROTOCOL_VERSION: Final = 1
SUPPORTED_VERSIONS = (1,)
MAX_LINE_BYTES = 1024 * 1024
"""A line longer than this (newline excluded) is refused with ``line_too_long``."""
BLANK = b" \t\r"
r"""What a blank line holds, if anything: JSON's own whitespace but the newline that ends the line.
A line of these alone is skipped; any other line (``\f``, ``\v``, a no-break space, a byte order
mark) is read as JSON and refused when it is not, so "blank" means one thing to the framer and the reader."""


class Oversized:
    """Marker yielded by :class:`LineFramer` in place of a line that exceeded the limit."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __repr__(self) -> str:
        return f"Oversized({self.size})"


class LineFramer:
    """Splits a byte stream into lines without ever buffering more than the limit.

    Sans-IO: feed it what the socket gave you and iterate the complete lines. A line over the
    limit is skipped to its newline and reported once as :class:`Oversized`, so a client that
    sends a huge line gets an error and its next line still works.

    Linear time: each byte is searched for a newline once, however the stream is cut (a 1 MiB
    line sent one byte per write costs the same as one sent at once), and consumed lines are
    dropped from the front of the buffer, which a bytearray does without copying the rest.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._scanned = 0       # bytes of _buffer already known to hold no newline
        self._discarding = 0    # bytes of an oversized line skipped so far (0 = not skipping)

    def feed(self, data: bytes) -> Iterator[bytes | Oversized]:
        if self._discarding:
            newline = data.find(b"\n")
            if newline < 0:
                self._discarding += len(data)
                return
            size = self._discarding + newline
            self._discarding = 0
            data = data[newline + 1:]
            yield Oversized(size)
        self._buffer += data
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline < 0:
                self._scanned = len(self._buffer)
                if len(self._buffer) > self.limit:
                    self._discarding = len(self._buffer)
                    self._buffer.clear()
                    self._scanned = 0
                return
            self._scanned = 0
            if newline > self.limit:
                del self._buffer[: newline + 1]
                yield Oversized(newline)
                continue
            line = bytes(self._buffer[:newline])
            del self._buffer[: newline + 1]
            if line.strip(BLANK):
                yield line

    @property
    def pending_bytes(self) -> int:
        """Bytes of the unfinished line held (or skipped) so far."""
        return len(self._buffer) + self._discarding

    @property
    def buffered_bytes(self) -> int:
        """Bytes actually held in memory for the unfinished line."""
        return len(self._buffer)

    @property
    def unfinished_bytes(self) -> int:
        """Bytes held after the last newline: the unfinished line alone, not the complete lines a
        reader has not taken from :meth:`feed` yet."""
        return len(self._buffer) - (self._buffer.rfind(b"\n") + 1)


def encode(message: dict[str, Any]) -> bytes:
    """One message as one compact UTF-8 JSON line; non-ASCII stays readable, newlines escaped."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def canonical_json(value: Any) -> str:
    """Key-sorted compact JSON: the identity of a call's arguments for session memory."""
    return _canonical_encode(value)


_canonical_encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
"""One encoder for every call (``json.dumps`` with options builds a new one each time, a third of its cost)."""


class Decision:
    """What the person (or a rule, memory, mode or timeout) decided about one tool call.

    Immutable. A plain class rather than a dataclass: importing ``dataclasses`` (and ``inspect``
    with it) would cost a hook, which starts once per tool call, a few milliseconds each time.
    """

    __slots__ = ("decision", "note", "decided_by", "rule", "updated_args", "request_id", "risk", "extra")
    _COMPARED = __slots__[:-1]  # ``extra`` (wire details) is not part of a decision's identity

    decision: DecisionName
    note: str | None
    decided_by: DecidedBy | str
    """One of the app's words (:data:`~desktop_approver.client.vocabulary.DecidedBy`); a deny made by the client
    itself (:func:`deny`: the app was unreachable) names its own reason."""
    rule: str | None
    updated_args: dict[str, Any] | None
    request_id: str | None
    risk: RiskReport | None
    extra: dict[str, Any]

    def __init__(self, decision: DecisionName, note: str | None = None, decided_by: DecidedBy | str = "user",
                 rule: str | None = None, updated_args: dict[str, Any] | None = None, request_id: str | None = None,
                 risk: RiskReport | None = None, extra: dict[str, Any] | None = None) -> None:
        values = (decision, note, decided_by, rule, updated_args, request_id, risk, dict(extra or {}))
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Decision is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._COMPARED)

    __hash__ = None  # type: ignore[assignment]  # holds dicts

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._COMPARED)
        return f"Decision({fields})"

    @property
    def allowed(self) -> bool:
        return self.decision in ALLOW_DECISIONS

    @property
    def blocked(self) -> bool:
        """True when a policy rule blocked the call (a violation, not a person's deny)."""
        return self.decided_by == "policy" and self.decision == "deny" and bool(self.extra.get("blocked"))

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Decision:
        try:
            decision = DECISIONS[DECISIONS.index(data.get("decision"))]
        except ValueError:
            raise ValueError(f"unknown decision {data.get('decision')!r}") from None
        updated = data.get("updated_args")
        if updated is not None and not isinstance(updated, dict):
            raise ValueError("updated_args must be an object")
        return cls(
            decision=decision,
            note=data.get("note"),
            decided_by=str(data.get("decided_by", "user")),
            rule=data.get("rule"),
            updated_args=updated,
            request_id=data.get("id"),
            risk=data.get("risk"),
            extra={k: v for k, v in data.items() if k in ("blocked", "index")},
        )

    def to_json(self) -> dict[str, Any]:
        """The shape ``desktop-approver request`` prints: stable keys, nulls kept."""
        out: dict[str, Any] = {
            "decision": self.decision,
            "allowed": self.allowed,
            "note": self.note,
            "decided_by": self.decided_by,
            "rule": self.rule,
            "blocked": self.blocked,
        }
        if self.updated_args is not None:
            out["updated_args"] = self.updated_args
        if self.risk is not None:
            out["risk"] = self.risk
        if self.request_id is not None:
            out["id"] = self.request_id
        return out


def deny(note: str, decided_by: DecidedBy | str) -> Decision:
    """A locally made deny (fail closed), e.g. for adapters when the app is unreachable."""
    return Decision(decision="deny", note=note, decided_by=decided_by)
