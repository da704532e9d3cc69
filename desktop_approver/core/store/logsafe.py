"""Client text in the app's own log, made harmless.

Request ids, agent names and error texts come from clients; written raw, an ANSI escape would
recolour or rewrite the terminal the app logs to, and a newline would forge a log line. Every
log call that carries client text passes it through :func:`printable` (or :class:`Printable`, which
defers the work until the line is written), and the app's handler
formats through :class:`EscapingFormatter` as a second line of defence.
"""

from __future__ import annotations

import logging
import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
LIMIT = 200


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, limit: int = LIMIT) -> str:
    """``value`` as one line of visible characters, control and invisible ones escaped, cut at ``limit``."""
    text = _CONTROL.sub(_escape, str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Printable:
    """``printable(value)`` for a log call's arguments, made only when the line is written: the hot
    path pays for a debug line nobody reads no more than an object's construction."""

    __slots__ = ("value", "limit")

    def __init__(self, value: object, limit: int = LIMIT) -> None:
        self.value = value
        self.limit = limit

    def __str__(self) -> str:
        return printable(self.value, self.limit)

    def __repr__(self) -> str:
        return repr(printable(self.value, self.limit))


class EscapingFormatter(logging.Formatter):
    """Escapes control characters in the whole record (tracebacks keep their line breaks)."""

    def format(self, record: logging.LogRecord) -> str:
        return _CONTROL_BUT_NEWLINE.sub(_escape, super().format(record))


def install(level: int = logging.WARNING) -> logging.Handler:
    """The app's stderr handler, escaping; returns it (tests remove it again)."""
    handler = logging.StreamHandler()
    handler.setFormatter(EscapingFormatter("desktop-approver: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > level or root.level == logging.NOTSET:
        root.setLevel(level)
    return handler
