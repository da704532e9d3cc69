"""Helpers that build a request's ``preview`` (standard library only).

::

    from desktop_approver import Client, previews
    Client().request("write_file", args, preview=previews.file_write("a.py", new_text))

The app renders diffs with syntax colours, commands with hidden characters made visible.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

MAX_READ_BYTES = 2 * 1024 * 1024


def diff(path: str | None, old: str, new: str) -> dict[str, Any]:
    """A change from ``old`` to ``new`` text of ``path`` (the app computes the hunks)."""
    preview: dict[str, Any] = {"kind": "diff", "old": old, "new": new}
    if path:
        preview["path"] = path
    return preview


def unified_diff(text: str, path: str | None = None) -> dict[str, Any]:
    """A ready-made unified diff (``git diff`` output, a patch)."""
    preview: dict[str, Any] = {"kind": "diff", "unified": text}
    if path:
        preview["path"] = path
    return preview


def file_write(path: str | os.PathLike[str], content: str) -> dict[str, Any]:
    """Writing ``content`` to ``path``: the current file is read here so the app shows a diff.

    ``old`` is null when the file does not exist (a new file) or cannot be read as text.
    """
    old: str | None = None
    try:
        if os.path.getsize(path) <= MAX_READ_BYTES:
            with open(path, encoding="utf-8") as handle:
                old = handle.read()
    except (OSError, UnicodeDecodeError):
        old = None
    return {"kind": "file_write", "path": os.fspath(path), "content": content, "old": old}


def command(cmd: str | Sequence[str], cwd: str | None = None) -> dict[str, Any]:
    """A shell command (a string) or an argv list, with the directory it runs in."""
    preview: dict[str, Any] = {"kind": "command"}
    if isinstance(cmd, str):
        preview["command"] = cmd
    else:
        preview["argv"] = [str(part) for part in cmd]
    if cwd:
        preview["cwd"] = cwd
    return preview


def text(body: str, *, markdown: bool = False) -> dict[str, Any]:
    return {"kind": "text", "text": body, "format": "markdown" if markdown else "plain"}
