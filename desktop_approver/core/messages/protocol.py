"""The validation ladder: one raw line in, one typed message or one typed refusal out.

No sockets here (tests feed it lines). Each rung names the first thing wrong with a line, so a
client author gets one precise error: size, UTF-8, JSON, object, values the app holds (numbers,
strings, nesting), version, then type and fields. The ladder has two halves, :func:`read` (up to
the version) and :func:`validate` (type and fields), because a connection that owes a token is
checked between them (``core/transport/connection.py``): the token's place in a message depends on
the version, and a client that has not shown it learns nothing about the fields. ``ipc/PROTOCOL.md``
("For implementers") lists the rungs in this order.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from ...client import wire
from . import models

if TYPE_CHECKING:
    from ..decisions.tickets import Verdict


@dataclass(frozen=True)
class Refusal:
    """A line we will not act on, and the error reply it earns."""

    code: models.ErrorCode
    message: str
    id: str | None = None
    in_reply_to: models.MessageType | None = None    # the refused message's type, when it could be read

    def reply(self) -> models.ErrorMessage:
        return models.ErrorMessage(id=self.id, code=self.code, message=self.message, in_reply_to=self.in_reply_to)


MAX_INT = 2 ** 63 - 1
"""Integers anywhere in a message lie within a signed 64-bit range, as most JSON readers hold them."""
MAX_DEPTH = 64
"""Objects and arrays nest at most this deep in a message (the message itself is level 1). Deeper
input is refused at the door, so nothing past it (rendering, audit, session memory) recurses
without bound, and the limit is a number rather than wherever the JSON reader's recursion gives up."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_NEEDS_STRICT_NUMBERS = re.compile(r"[0-9NI](?:[0-9]{15}|[eE][-+]?[0-9]{3}|aN|nfinity)")
"""What a line must hold before :class:`_Numbers` can find anything wrong with it: a run of 16
digits (an integer past 64 bits has 19 or more), an exponent of three digits after a digit (a
finite double ends at e308; in JSON an exponent always follows one), or a constant. A line without
any (nearly every line) is read by the C reader alone. Every alternative starts with one of a few
characters, and only ASCII digits (the C reader's numbers), so the search skips most of a line at
once: about 1.3 µs for a typical request, where the plain alternatives with ``\\d`` took 7.6."""


class _NotJSON(ValueError):
    """``NaN``, ``Infinity``, ``-Infinity``: Python's json reads them; JSON has no such tokens."""


class _Numbers:
    """json.loads hooks that read strictly: non-JSON constants fail the line; numbers out of range
    and member names given twice are noted (the message is refused, but its ``id`` can still be
    read for the error)."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self.repeated: set[str] = set()

    def members(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        """An object's members, noting any name given twice: JSON readers disagree on which one
        counts (Python's and JavaScript's take the last, others the first or refuse), so a filter
        in front of the app could read another call than the app would. Refused, not resolved."""
        members = dict(pairs)
        if len(members) != len(pairs):
            seen: set[str] = set()
            for name, _ in pairs:
                if name in seen:
                    self.repeated.add(name)
                seen.add(name)
            if self.problem is None:
                self.problem = f"member {shorten(sorted(self.repeated)[0])} is given twice in one object"
        return members

    def integer(self, text: str) -> int:
        digits = text.lstrip("-")
        if len(digits) > 19 or not -MAX_INT - 1 <= (value := int(text)) <= MAX_INT:
            self.problem = self.problem or (f"integer {text[:24]}{'…' if len(text) > 24 else ''} is out of range "
                                            "(integers must fit in 64 bits)")
            return 0
        return value

    def real(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            self.problem = self.problem or f"number {text[:24]} is out of range (it is not a finite double)"
            return 0.0
        return value

    @staticmethod
    def constant(name: str) -> Any:
        raise _NotJSON(f"{name} is not JSON")


class _Repeated(ValueError):
    """A member name given twice: the line is read again by :class:`_Numbers`, which says which."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _Repeated
    return members


_plain_decode = json.JSONDecoder(object_pairs_hook=_unique_members).decode
"""The reader of a line without a number or constant to check (nearly every line): made once, where
``json.loads`` with a hook builds a reader for every call (a third of the cost). A name given twice
sends the line to the full reader, whose hooks note which (the error names it)."""


def _strings(value: Any) -> Iterator[str]:
    """Every string in a decoded message, keys included, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield key
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def _nested_deeper_than(data: Any, limit: int) -> bool:
    """Whether objects and arrays in ``data`` (itself level 1) nest more than ``limit`` levels: level
    by level, without recursion (a comprehension per level is about twice as fast as a stack)."""
    level, depth = [data], 1
    while level:
        level = [child for item in level for child in (item.values() if isinstance(item, dict) else item)
                 if isinstance(child, (dict, list))]
        if level:
            depth += 1
            if depth > limit:
                return True
    return False


def _too_deep(text: str, data: Any) -> bool:
    """A message nested past :data:`MAX_DEPTH`; cheap for nearly every line, which holds fewer
    brackets (in strings or not) than the limit and so cannot nest past it."""
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return False
    return _nested_deeper_than(data, MAX_DEPTH)


def _lone_surrogate(data: Any) -> bool:
    for text in _strings(data):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
    return False


def readable_id(data: dict[str, Any]) -> str | None:
    """The message's ``id`` when an error may echo it: a string of 1 to 128 encodable characters."""
    value = data.get("id")
    if not isinstance(value, str) or not 1 <= len(value) <= 128:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


TOO_DEEP = f"objects and arrays nest deeper than {MAX_DEPTH} levels"


def shorten(value: Any, limit: int = 40) -> str:
    """A value as JSON spells it (``null``, ``"1"``, ``true``), cut to ``limit`` characters for an error message."""
    shown = json.dumps(value)  # ASCII: a name may hold a lone surrogate, which the reply could not carry
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def read(line: bytes | wire.Oversized) -> dict[str, Any] | Refusal:
    """The ladder's first half: framing, UTF-8, strict JSON, an object, values the app holds, and a
    supported version. What passes is a JSON object whose ``v`` the app speaks (not a message yet)."""
    if isinstance(line, wire.Oversized):
        return Refusal("line_too_long", f"message of {line.size} bytes exceeds the limit of {wire.MAX_LINE_BYTES}")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal("invalid_utf8", f"not UTF-8 at byte {exc.start}")
    numbers = _Numbers()
    try:
        if _NEEDS_STRICT_NUMBERS.search(text) is None:
            # nothing the number hooks could object to: the same values, faster
            try:
                data = _plain_decode(text)
            except _Repeated:
                data = json.loads(text, object_pairs_hook=numbers.members)
        else:
            data = json.loads(text, parse_int=numbers.integer, parse_float=numbers.real,
                              parse_constant=numbers.constant, object_pairs_hook=numbers.members)
    except json.JSONDecodeError as exc:
        if text.startswith("\ufeff"):  # Python's own words ("decode using utf-8-sig") advise the reader, not the client
            return Refusal("invalid_json", "not JSON: a byte order mark (U+FEFF) at column 1")
        return Refusal("invalid_json", f"not JSON: {exc.msg} at column {exc.colno}")
    except _NotJSON as exc:
        return Refusal("invalid_json", f"not JSON: {exc}")
    except RecursionError:  # nested past what the reader itself can go: past MAX_DEPTH, and no id to read
        return Refusal("invalid_message", TOO_DEEP)
    except ValueError as exc:  # anything else the reader objects to: still a typed refusal
        return Refusal("invalid_json", f"not JSON: {exc}")
    if not isinstance(data, dict):
        return Refusal("invalid_message", f"a message is a JSON object, not {type(data).__name__}")
    message_id = readable_id(data) if "id" not in numbers.repeated else None
    in_reply_to = message_type(data) if "type" not in numbers.repeated else None
    if numbers.problem:
        return Refusal("invalid_message", numbers.problem, message_id, in_reply_to)
    if _SURROGATE_ESCAPE.search(text) and _lone_surrogate(data):
        return Refusal("invalid_message", "a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff "
                                          "not in a high-low pair), which no UTF-8 text can carry",
                       message_id, in_reply_to)
    if _too_deep(text, data):
        return Refusal("invalid_message", TOO_DEEP, message_id, in_reply_to)
    if "v" not in data:  # absent only: any value present, null included, is a version (unsupported unless 1)
        return Refusal("invalid_message", 'missing protocol version "v"', message_id, in_reply_to)
    version = data["v"]
    if version not in wire.SUPPORTED_VERSIONS or isinstance(version, bool):
        supported = ", ".join(map(str, wire.SUPPORTED_VERSIONS))
        return Refusal("unsupported_version",
                       f"protocol version {shorten(version)} is not supported (supported: {supported})",
                       message_id, in_reply_to)
    return data


def message_type(data: dict[str, Any]) -> models.MessageType | None:
    """The object's ``type`` when it names a message a client may send (what an error answers)."""
    kind = data.get("type")
    return cast("models.MessageType", kind) if isinstance(kind, str) and kind in models.INCOMING else None


def validate(data: dict[str, Any]) -> models.Incoming | Refusal:
    """The ladder's second half, for what :func:`read` passed: a known ``type``, then its fields."""
    message_id = readable_id(data)
    kind = data.get("type") if isinstance(data.get("type"), str) else None
    model = models.INCOMING.get(kind) if kind is not None else None
    if model is None:
        known = ", ".join(sorted(models.INCOMING))
        shown = repr(data.get("type"))
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        return Refusal("unknown_type", f"unknown message type {shown} (known: {known})", message_id)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return Refusal("invalid_message", describe_errors(exc), message_id, message_type(data))


def decode(line: bytes | wire.Oversized) -> models.Incoming | Refusal:
    """The whole ladder: a typed message, or the refusal of the first rung it fails."""
    data = read(line)
    return data if isinstance(data, Refusal) else validate(data)


def describe_errors(exc: ValidationError, limit: int = 3) -> str:
    """pydantic's errors as one readable line: ``tool: Input should be a valid string; ...``."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "message"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def encode(message: BaseModel) -> bytes:
    return message.model_dump_json(exclude_none=True).encode("utf-8") + b"\n"


_DECISION_HEAD = b'{"v":%d,"type":"decision","id":' % wire.PROTOCOL_VERSION


def encode_decision(request_id: str, verdict: Verdict) -> bytes:
    """The ``decision`` line for one verdict, byte for byte ``encode(DecisionMessage.of(verdict, id=request_id))``.

    The verdict's part is validated and encoded once per distinct verdict: the answers an agent gets
    from session memory or a rule are the same few again and again (the app's busiest reply).
    """
    risk = verdict.risk
    if verdict.updated_args is not None or risk is None:  # rare, and not to be cached: the model, every time
        return encode(models.DecisionMessage.of(verdict, id=request_id))
    fields = _decision_fields(verdict.decision, verdict.decided_by, verdict.note, verdict.rule, verdict.blocked,
                              risk["level"], tuple(risk["reasons"]))
    return b"".join((_DECISION_HEAD, to_json(request_id), b",", fields, b"}\n"))


@functools.lru_cache(maxsize=512)
def _decision_fields(decision: str, decided_by: str, note: str | None, rule: str | None, blocked: bool,
                     level: str, reasons: tuple[str, ...]) -> bytes:
    """A verdict's wire fields as they follow the ``id`` in a ``decision`` (validated by the model)."""
    fields = models.DecisionFields.model_validate({
        "decision": decision, "decided_by": decided_by, "note": note, "rule": rule, "blocked": blocked,
        "risk": {"level": level, "reasons": list(reasons)}})
    return fields.model_dump_json(exclude_none=True).encode("utf-8")[1:-1]


def encode_dict(message: dict[str, Any]) -> bytes:
    return wire.encode(message)
