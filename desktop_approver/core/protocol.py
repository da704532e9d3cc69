"""The validation ladder: one raw line in, one typed message or one typed refusal out.

No sockets here (tests feed it lines). Each rung names the first thing wrong with a line, so a
client author gets one precise error: size, UTF-8, JSON, object, version, type, fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import wire
from . import models


@dataclass(frozen=True)
class Refusal:
    """A line we will not act on, and the error reply it earns."""

    code: str
    message: str
    id: str | None = None

    def reply(self) -> models.ErrorMessage:
        return models.ErrorMessage(id=self.id, code=self.code, message=self.message)  # type: ignore[arg-type]


def decode(line: bytes | wire.Oversized) -> BaseModel | Refusal:
    if isinstance(line, wire.Oversized):
        return Refusal("line_too_long", f"message of {line.size} bytes exceeds the limit of {wire.MAX_LINE_BYTES}")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal("invalid_utf8", f"not UTF-8 at byte {exc.start}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Refusal("invalid_json", f"not JSON: {exc.msg} at column {exc.colno}")
    except RecursionError:
        return Refusal("invalid_json", "not JSON: nested too deeply")
    if not isinstance(data, dict):
        return Refusal("invalid_message", f"a message is a JSON object, not {type(data).__name__}")
    message_id = data.get("id") if isinstance(data.get("id"), str) else None
    version = data.get("v")
    if version is None:
        return Refusal("invalid_message", 'missing protocol version "v"', message_id)
    if version not in wire.SUPPORTED_VERSIONS or isinstance(version, bool):
        supported = ", ".join(map(str, wire.SUPPORTED_VERSIONS))
        return Refusal("unsupported_version", f"protocol version {version!r} is not supported (supported: {supported})",
                       message_id)
    kind = data.get("type")
    model = models.INCOMING.get(kind) if isinstance(kind, str) else None
    if model is None:
        known = ", ".join(sorted(models.INCOMING))
        return Refusal("unknown_type", f"unknown message type {kind!r} (known: {known})", message_id)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return Refusal("invalid_message", describe_errors(exc), message_id)
    except RecursionError:
        return Refusal("invalid_message", "message nested too deeply", message_id)


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


def encode_dict(message: dict[str, Any]) -> bytes:
    return wire.encode(message)
