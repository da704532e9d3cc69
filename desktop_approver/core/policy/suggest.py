"""The dialog's "Always allow...": the rule suggested for a call, whether a rule matches it, and writing it.

:func:`suggest_rule_alternatives` offers allow rules narrowest first; :func:`rule_matches` is how
the dialog knows a rule edited by the person still covers the call; :func:`render_rule` and
:func:`append_rule` write exactly the rule shown, at the end of the file, keeping every existing
line and comment, and only after the new text has been read back as a valid policy.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from ..calls.reading import read_call
from .globs import _escape_glob, _squeeze
from .load import rule_from_dict
from .match import Policy
from .model import parse_expiry
from .parts import _Context
from .rules import RULE_KEYS, PolicyCall


def suggest_rule(call: PolicyCall) -> dict[str, Any]:
    """The narrowest sensible allow rule for this call: the exact command, the exact path(s), or the tool."""
    return suggest_rule_alternatives(call)[0]


def suggest_rule_alternatives(call: PolicyCall) -> list[dict[str, Any]]:
    """Allow rules for the call, narrowest first, each matching it (see :func:`rule_matches`).

    Shell calls get the exact command (every part, for a compound one), then each part's first two
    words and ``*``; file calls the exact path(s), then their folders, then the tool; other calls
    the tool. A shell command that cannot be parsed gets only its exact text, which no rule can
    allow (``rule_matches`` says so), rather than a rule for the whole shell tool.
    """
    context = _Context(call)
    tool_only: dict[str, Any] = {"action": "allow", "tool": call.tool}
    reading = read_call(call.tool, call.args)
    command = " ; ".join(run.text for run in reading.commands) if reading.commands else None
    if command is not None:
        parts = [p for p in context.parts if p.command]
        if not command.strip():
            return [tool_only]
        if not parts or not all(p.parsed for p in parts):
            return [{"action": "allow", "tool": call.tool, "command": _escape_glob(_squeeze(command))}]
        exact = _one_or_list(list(dict.fromkeys(_escape_glob(p.command or "") for p in parts)))
        prefixes = _one_or_list(list(dict.fromkeys(
            " ".join(_escape_glob(w) for w in (p.command or "").split(" ")[:2]) + " *" for p in parts)))
        found = [{"action": "allow", "tool": call.tool, "command": exact}]
        if prefixes != exact:
            found.append({"action": "allow", "tool": call.tool, "command": prefixes})
        return found

    touches = [t for part in context.parts for t in part.touches]
    if not touches or any(t.doubt or t.path is None or t.operation is None for t in touches):
        return [tool_only]
    operations = sorted({t.operation for t in touches if t.operation})
    exact_paths = _one_or_list(list(dict.fromkeys("/" + _escape_glob("/".join(t.lexical[0])) for t in touches)))
    folders = _one_or_list(list(dict.fromkeys(
        "/" + _escape_glob("/".join(t.lexical[0][:-1])) + "/**" for t in touches)))
    by_path: dict[str, Any] = {"action": "allow", "tool": call.tool, "path": exact_paths,
                               "operation": _one_or_list(operations)}
    found = [by_path, {**by_path, "path": folders}, tool_only]
    return _keep_matching(found, call) or [tool_only]


def _one_or_list(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


def _keep_matching(rules: list[dict[str, Any]], call: PolicyCall) -> list[dict[str, Any]]:
    return [rule for rule in rules if rule_matches(rule, call)]


def rule_matches(rule: dict[str, Any], call: PolicyCall, *, now: datetime | None = None) -> bool:
    """Whether this rule alone would decide the call (an allow rule: every part of it)."""
    return Policy([rule_from_dict(rule)]).evaluate(call, now=now) is not None


def render_rule(rule: dict[str, Any]) -> str:
    """The ``[[rule]]`` table for a rule dict, keys in the documented order."""
    rule_from_dict(rule)
    lines = ["[[rule]]"]
    for key in RULE_KEYS:
        if rule.get(key) is not None:
            lines.append(f"{key} = {_toml_value(parse_expiry(rule[key]) if key == 'expires' else rule[key])}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    raise TypeError(f"cannot write {type(value).__name__} to the policy file")


def _toml_string(text: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_NEW_FILE_HEADER = """\
# desktop-approver policy: rules that answer tool calls before any dialog.
# The format: docs/policy.md, or `desktop-approver policy docs`.
version = 1
"""


def append_rule(path: str | os.PathLike[str], rule: dict[str, Any]) -> None:
    """Add a ``[[rule]]`` at the end of the file, keeping every existing line and comment.

    The new text is validated as a whole before it replaces the file (atomically), so a file that
    is already broken is left alone and the error raised.
    """
    path = Path(path)
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = _NEW_FILE_HEADER
    if existing and not existing.endswith("\n"):
        existing += "\n"
    text = existing + ("\n" if existing.strip() else "") + render_rule(rule)
    Policy.parse(text, path)
    _write_atomically(path, text)


def _write_atomically(path: Path, text: str) -> None:
    path = Path(os.path.realpath(path))     # a symlinked dotfile stays a symlink
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise

