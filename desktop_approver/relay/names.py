"""The relay's names and envelope, shared by agents and approvers (standard library only).

Subjects and keys carry the NATS user, so the server's per-subject permissions are what binds a
request to its sender: an agent may publish only on ``approver.req.<its user>.>`` and read only
``<its user>.*`` decisions; the approver takes the user from the subject, never from the payload.

An envelope is one JSON object per message on the stream::

    {"relay": 1, "id": "<unique id>", "client": {hello's client}, "sent_at": <epoch s>,
     "deadline": <epoch s>, "message": {the protocol message, its "id" replaced by the unique id}}

A decision is one JSON object in the bucket: ``{"relay": 1, "approver": "<name>", "reply": {the
protocol's decision, batch_decision or error message}}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

RELAY_VERSION = 1
STREAM = "APPROVER_REQUESTS"
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


def decode_envelope(data: bytes) -> dict[str, Any]:
    """The envelope's outer shape, checked; the ``message`` inside goes through the app's own ladder."""
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EnvelopeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict) or value.get("relay") != RELAY_VERSION:
        raise EnvelopeError("not a relay envelope of a version this app speaks")
    if not is_token(value.get("id")):
        raise EnvelopeError("its id is not 1 to 64 letters, digits, '_' or '-'")
    if not isinstance(value.get("message"), dict):
        raise EnvelopeError("it carries no message object")
    if not isinstance(value.get("client", {}), dict):
        raise EnvelopeError("its client is not an object")
    for field in ("sent_at", "deadline"):
        number = value.get(field)
        if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))):
            raise EnvelopeError(f"its {field} is not a number")
    return value


def decode_decision(data: bytes) -> dict[str, Any]:
    """A decision value from the bucket: ``approver`` and the protocol ``reply``."""
    value = json.loads(data)
    if not isinstance(value, dict) or not isinstance(value.get("reply"), dict):
        raise ValueError("not a relay decision")
    return value
