"""The relay's names and envelope, shared by agents and approvers (standard library only).

Subjects and keys carry the NATS user, so the server's per-subject permissions are what binds a
request to its sender: an agent may publish only on ``approver.req.<its user>.>`` and read only
``<its user>.*`` decisions; the approver takes the user from the subject, never from the payload.

An envelope is one JSON object per message on the stream::

    {"relay": 1, "id": "<unique id>", "client": {hello's client}, "sent_at": <epoch s>,
     "deadline": <epoch s>, "message": {the protocol message, its "id" replaced by the unique id}}

Every field is checked strictly (:func:`decode_envelope`): ``relay`` the integer 1, ``id`` a token,
``client`` an object, ``sent_at`` a finite time after 2020, ``deadline`` (requests and batches
only, required there) a finite time after ``sent_at`` by at most :data:`MAX_WAIT`, the message's
``timeout`` a finite number of seconds in (0, :data:`MAX_TIMEOUT`], and no other field. What the
clocks may say is :func:`deadline_problem`'s.

A decision is one JSON object in the bucket: ``{"relay": 1, "approver": "<name>", "instance": "<the
writing app's own id>", "reply": {the protocol's decision, batch_decision or error message}}``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

RELAY_VERSION = 1
STREAM = "APPROVER_REQUESTS"
"""The one stream every user shared before each had its own (an approver replaces it, saying so)."""
STREAM_PREFIX = "APPROVER_REQUESTS_"
"""Each agent user's requests are in a stream of its own, ``APPROVER_REQUESTS_<user>``, with its own
limits: one user that fills its stream is refused, and nobody else is (:func:`stream_of`)."""
SUBJECT_ROOT = "approver.req"
ALIVE_ROOT = "approver.alive"
"""Agents' heartbeats (plain NATS, not stored): ``approver.alive.<user>.<agent>``, the ids they wait for."""
BUCKET = "approver_decisions"
KV_STREAM = f"KV_{BUCKET}"
KV_SUBJECT_ROOT = f"$KV.{BUCKET}"
MSG_ID_HEADER = "Nats-Msg-Id"
RETENTION_SECONDS = 49 * 3600.0
"""How long requests and decisions stay on the server (the stream's and the bucket's max age): past
the latest deadline a request can have (the protocol's longest timeout, 24 h, doubled by the pause
allowance), so a request is never dropped while it may still be answered. An approver that joins
reads what is still there, and records the requests already answered with their answers."""

MAX_TIMEOUT = 24 * 3600.0
"""The protocol's longest timeout (``core.messages.models.MAX_TIMEOUT``; this module is stdlib-only)."""
DEADLINE_FACTOR = 2.0
"""An envelope's deadline is ``sent_at + timeout × DEADLINE_FACTOR``: the timeout and the person's
pause allowance, and some room for the way there and back."""
MAX_WAIT = MAX_TIMEOUT * DEADLINE_FACTOR
"""The longest an approver keeps a relayed request open, whatever its deadline says."""
CLOCK_TOLERANCE = 60.0
"""How far apart an agent's clock and the NATS server's may be before a deadline is refused."""
HEARTBEAT_IDS = 100
"""Request ids one heartbeat lists at most: an agent waiting for more says so in several."""
MAX_HEARTBEAT_BYTES = 16 * 1024
"""The largest heartbeat an approver reads (:data:`HEARTBEAT_IDS` ids of 64 characters fit in half);
a larger one is dropped unread, counted against its user."""
EPOCH_FLOOR = 1_577_836_800.0
"""2020-01-01: a ``sent_at`` before it is a clock that was never set, or not a time at all."""
ENVELOPE_FIELDS = frozenset(("relay", "id", "client", "sent_at", "deadline", "message"))
ASKING = ("request", "batch")

_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class EnvelopeError(ValueError):
    """A message on the stream that is not a relay envelope (the approver refuses and audits it)."""


def is_token(text: object) -> bool:
    """A name usable as one subject token and one key part: letters, digits, ``_`` and ``-``."""
    return isinstance(text, str) and _TOKEN.fullmatch(text) is not None


def subject_token(name: str) -> str:
    """``name`` made into one subject token (an agent's name may hold dots, spaces, ``*``)."""
    return _UNSAFE.sub("_", name).strip("_")[:64] or "agent"


def stream_of(user: str) -> str:
    """The stream that holds ``user``'s requests (every subject ``approver.req.<user>.>``)."""
    return f"{STREAM_PREFIX}{user}"


def user_of_stream(stream: str) -> str | None:
    user = stream.removeprefix(STREAM_PREFIX)
    return user if stream.startswith(STREAM_PREFIX) and is_token(user) else None


def request_ttl(deadline_seconds: float) -> float:
    """How long the server keeps a request (its ``Nats-TTL``): until the approvers have stopped
    waiting for it (its deadline, and a minute to write an answer) and a minute more. Past that it
    is removed: an expired request holds none of its user's quota."""
    return math.ceil(deadline_seconds + 120.0)


def request_subject(user: str, agent: str) -> str:
    return f"{SUBJECT_ROOT}.{user}.{subject_token(agent)}"


def alive_subject(user: str, agent: str) -> str:
    return f"{ALIVE_ROOT}.{user}.{subject_token(agent)}"


def user_of_subject(subject: str, root: str = SUBJECT_ROOT) -> str | None:
    """The NATS user a request (or heartbeat) subject names (the server let only that user publish
    it), or None when the subject is not ``<root>.<user>.<agent>``."""
    parts = subject.split(".")
    if len(parts) != 4 or f"{parts[0]}.{parts[1]}" != root or not is_token(parts[2]) or not is_token(parts[3]):
        return None
    return parts[2]


def decision_key(user: str, request_id: str) -> str:
    return f"{user}.{request_id}"


def decision_subject(user: str, request_id: str) -> str:
    """Where a put to the decision's key is published (a plain subscription sees it as it is written)."""
    return f"{KV_SUBJECT_ROOT}.{decision_key(user, request_id)}"


def direct_get_subject(user: str, request_id: str) -> str:
    """The JetStream direct-get of a decision's last value: the key is in the subject, so the
    server's permissions can confine an agent to its own keys."""
    return f"$JS.API.DIRECT.GET.{KV_STREAM}.{decision_subject(user, request_id)}"


def inbox_prefix(user: str) -> str:
    """A per-user inbox, so an agent may subscribe to its own replies and nobody else's."""
    return f"_INBOX_{user}"


def encode(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes) -> Any:
    """Strict JSON: ``NaN`` and ``Infinity`` (which Python's reader takes by default) are refused."""
    return json.loads(data, parse_constant=_no_constant)


def _is_time(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value >= EPOCH_FLOOR)


def decode_envelope(data: bytes) -> dict[str, Any]:
    """The envelope, every field checked (see the module docstring); the ``message`` inside then goes
    through the app's own ladder. Raises :class:`EnvelopeError` saying what is wrong."""
    try:
        value = load_json(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise EnvelopeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise EnvelopeError("not a JSON object")
    version = value.get("relay")
    if isinstance(version, bool) or version != RELAY_VERSION or not isinstance(version, int):
        raise EnvelopeError("not a relay envelope of a version this app speaks")
    unknown = sorted(set(value) - ENVELOPE_FIELDS)
    if unknown:
        raise EnvelopeError(f"unknown fields {', '.join(repr(name)[:40] for name in unknown[:5])}")
    if not is_token(value.get("id")):
        raise EnvelopeError("its id is not 1 to 64 letters, digits, '_' or '-'")
    message = value.get("message")
    if not isinstance(message, dict):
        raise EnvelopeError("it carries no message object")
    if not isinstance(message.get("type"), str):
        raise EnvelopeError("its message has no type")
    if not isinstance(value.get("client", {}), dict):
        raise EnvelopeError("its client is not an object")
    sent_at, deadline = value.get("sent_at"), value.get("deadline")
    if not _is_time(sent_at):
        raise EnvelopeError(f"its sent_at is not a time: {str(sent_at)[:40]!r}")
    if message["type"] in ASKING:
        if not _is_time(deadline):
            raise EnvelopeError(f"its deadline is not a time: {str(deadline)[:40]!r}")
        assert isinstance(sent_at, (int, float)) and isinstance(deadline, (int, float))
        if not sent_at < deadline <= sent_at + MAX_WAIT:
            raise EnvelopeError(f"its deadline is not within {MAX_WAIT:g} s after its sent_at")
        timeout = message.get("timeout")
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout)
                or not 0 < timeout <= MAX_TIMEOUT):
            raise EnvelopeError(f"its message's timeout is not a number of seconds in (0, {MAX_TIMEOUT:g}]")
    elif deadline is not None:
        raise EnvelopeError(f"a {message['type'][:40]} has no deadline")
    return value


def deadline_problem(deadline: float, stored_at: float | None, now: float) -> str | None:
    """Why a request's ``deadline`` (the agent's clock) cannot be trusted, or None.

    ``stored_at`` is when the NATS server stored the request (the server's clock), ``now`` the
    approver's. A deadline that had already passed, by more than :data:`CLOCK_TOLERANCE`, when the
    server stored the request says the agent's clock is behind (a request that waited on the stream
    while no approver was up is not refused: it expires, a deny by timeout); one further ahead than
    the longest wait (:data:`MAX_WAIT`) and the tolerance says the clock is ahead, or lies.
    """
    reference = stored_at if stored_at is not None else now
    if reference - deadline > CLOCK_TOLERANCE:
        return (f"its deadline had passed {reference - deadline:.0f} s before the NATS server stored it: "
                "the agent's clock is behind")
    if deadline - max(reference, now) > MAX_WAIT + CLOCK_TOLERANCE:
        return (f"its deadline is {deadline - max(reference, now):.0f} s away, more than the longest wait "
                f"({MAX_WAIT:g} s): the agent's clock is ahead")
    return None


def decode_decision(data: bytes) -> dict[str, Any]:
    """A decision value from the bucket: ``approver`` and the protocol ``reply``."""
    try:
        value = load_json(data)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(value, dict) or not isinstance(value.get("reply"), dict):
        raise ValueError("not a relay decision")
    return value


def decision_for(data: bytes, unique: str) -> dict[str, Any]:
    """The decision stored for request ``unique``: as :func:`decode_decision`, and its reply must name
    that request. Anything else on the key (a value copied from another key, a server's answer sent
    there by a reply subject) is no decision: raises ValueError saying why."""
    value = decode_decision(data)
    answers = value["reply"].get("id")
    if answers != unique:
        raise ValueError(f"it answers {str(answers)[:64]!r}, not {unique!r}")
    return value


def unique_of_key(key: str) -> str:
    """The request id of a decision key ``<user>.<id>``."""
    return key.split(".", 1)[-1]
