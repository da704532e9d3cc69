"""Secrets by content: a file's text scanned by ``detect-secrets`` (Yelp's maintained scanner, its
default plugins: private keys, cloud and service tokens, high-entropy strings and keyword
assignments), beside the reader's own patterns (:func:`..reading.secrets_in`).

A list of names is a denylist; what a file holds is not. A read is proven free of secrets only by
a scan that finished: a file too large, unreadable, or a scanner that is missing proves nothing.
``detect-secrets`` keeps its settings in a global, so scans take a lock (gathering runs in an
executor's threads).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from typing import Any

from ..reading import secrets_in
from .model import Secret

__all__ = ["MAX_FILE_BYTES", "Unscannable", "scan", "warm"]

MAX_FILE_BYTES = 1_000_000
"""A file larger than this is not scanned (and so not proven free of secrets)."""

_lock = threading.Lock()
_settings: Any = None


_CREDENTIAL_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("netrc password", re.compile(r"^\s*(?:machine\s+\S+\s+)?(?:login\s+\S+\s+)?password\s+\S+", re.M)),
    ("pgpass entry", re.compile(r"^[^:#\s]+:(?:\d+|\*):[^:\s]+:[^:\s]+:\S+$", re.M)),
    ("Authorization header", re.compile(r"Authorization:\s*(?:Bearer|Basic|token|Token|Digest)\s+\S{8,}", re.I)),
    ("password on a command line", re.compile(r"\bsshpass\s+-p\s*\S+|\b(?:mysql|mysqladmin)\b[^\n]*\s-p\S+"
                                              r"|--password[=\s]+\S+")),
    ("password hash (htpasswd)", re.compile(r"^[^:\s]+:(?:\$apr1\$|\$2[aby]\$|\$[156]\$|\{SHA\})\S+", re.M)),
    ("credentials in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@[^\s/]+", re.I)),
)
"""Credential file formats and shapes that detect-secrets' default plugins do not report (a
``.netrc`` password, a ``.pgpass`` line, an ``Authorization:`` header, ``sshpass -p``, htpasswd
hashes): structure, not names, so a value of any shape is found. Kept here rather than as a
detect-secrets plugin because its plugins are loaded from files by path into its global settings."""


class Unscannable(Exception):
    """The file could not be scanned: why, in a few words."""


def _scanner() -> Any:
    global _settings
    if _settings is None:
        try:
            from detect_secrets.core import scan as detect_scan
            from detect_secrets.settings import default_settings
        except ImportError as exc:  # the app extra brings it; without it nothing is proven
            raise Unscannable("the secrets scanner (detect-secrets) is not installed") from exc
        _settings = (detect_scan, default_settings)
    return _settings


def warm() -> None:
    """Import the scanner now (once per process), so its cost is never counted against a call."""
    try:
        _scanner()
    except Unscannable:
        pass    # said again, for the file, by scan()


def scan(path: str, shown_as: str) -> list[Secret]:
    """The secrets in the file at ``path`` (named ``shown_as`` to the person); raises
    :class:`Unscannable` when the file cannot be read whole within the bounds."""
    try:
        # Never block: a FIFO or a device opened for reading waits for a writer forever. Opened
        # without blocking, then checked on the open descriptor (a swap after the check is seen).
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise Unscannable(f"`{shown_as}` is not a regular file: what it gives is not known")
            if info.st_size > MAX_FILE_BYTES:
                raise Unscannable(f"`{shown_as}` is larger than {MAX_FILE_BYTES // 1_000_000} MB")
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise Unscannable(f"`{shown_as}` could not be read ({exc.strerror or exc})") from exc
    if len(data) > MAX_FILE_BYTES:
        raise Unscannable(f"`{shown_as}` is larger than {MAX_FILE_BYTES // 1_000_000} MB")
    if b"\0" in data[:8192]:
        raise Unscannable(f"`{shown_as}` is binary: its content cannot be checked")
    text = data.decode("utf-8", errors="replace")
    detect_scan, default_settings = _scanner()
    found: list[Secret] = []
    with _lock, default_settings():
        for hit in detect_scan.scan_file(path):
            secret = Secret(shown_as, str(hit.type), int(hit.line_number or 0))
            if secret not in found:
                found.append(secret)
    lines = {secret.line for secret in found}
    for kind, pattern in _CREDENTIAL_FORMATS:
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            if line not in lines:
                found.append(Secret(shown_as, kind, line))
                lines.add(line)
    for kind in secrets_in(text):     # the reader's own patterns, where the scanner saw nothing on that line
        line = _line_of(text, kind)
        if line not in lines:
            found.append(Secret(shown_as, kind, line))
            lines.add(line)
    return found


def _line_of(text: str, kind: str) -> int:
    from ..reading import SECRET_PATTERNS
    for name, pattern in SECRET_PATTERNS:
        if name == kind:
            match = pattern.search(text)
            if match:
                return text.count("\n", 0, match.start()) + 1
    return 0
