"""Reading ``policy.toml``: the bytes (bounded), the TOML, the model's verdict, and where a problem is.

Every refusal is a :class:`PolicyError` naming the file, the line and the reason, as
``policy check`` prints it and the tray shows it. tomllib gives the line of a syntax error; for the
rest the line is found in the text tomllib already accepted (:class:`_Lines`), looked up only for
the rules and keys that need one, so loading stays linear in the size of the file.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..store.files import FileTooLarge, NotARegularFile, read_regular_file
from .model import PolicyFile, Problem, RuleTable, file_problem, rule_problem
from .rules import MAX_POLICY_BYTES, PolicyError, Rule


def read_policy_file(path: Path) -> str:
    """The file's text, refused with a reason when it is missing, not a regular file (a FIFO, a
    device: read without blocking, :mod:`~desktop_approver.core.store.files`), unreadable, not
    UTF-8 or too big."""
    try:
        return read_regular_file(path, MAX_POLICY_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise PolicyError(path, None, "no such file") from None
    except NotARegularFile as exc:
        raise PolicyError(path, None, f"{exc}; the rules must be in a file") from None
    except FileTooLarge as exc:
        raise PolicyError(path, None, _too_big(exc.size)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(path, None, f"cannot read: {exc}") from None


def read_rules(text: str, source: str | os.PathLike[str] | None = None) -> tuple[Rule, ...]:
    """The rules of a policy file's text: the ``[[rule]]`` tables in order, then the ``[tools]`` shorthand."""
    if len(text) > MAX_POLICY_BYTES:  # characters: at least as many bytes
        raise PolicyError(source, None, _too_big(len(text.encode("utf-8", "surrogatepass"))))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, reason = _toml_error_location(str(exc), text)
        raise PolicyError(source, line, f"TOML syntax: {reason}") from None
    lines = _Lines(text)
    try:
        model = PolicyFile.model_validate(data)
    except ValidationError as exc:
        problem = file_problem(exc, data)
        raise PolicyError(source, _line_of(problem, lines), problem.reason) from None

    src = str(source) if source is not None else ""
    rules = [build_rule(table, index=number, line=lines.rule_header(number), source=src)
             for number, table in enumerate(model.rule, 1)]
    for offset, (name, entry) in enumerate(model.tools.items(), len(rules) + 1):
        table = (RuleTable(action=entry, tool=name) if isinstance(entry, str)
                 else RuleTable(action=entry.action, tool=name, note=entry.note))
        rules.append(build_rule(table, index=offset, line=lines.tools_key(name), source=src, label=f"tools.{name}"))
    return tuple(rules)


def rule_from_dict(rule: dict[str, Any], source: str = "") -> Rule:
    """Validate a rule given as a dict (from the dialog's editor); raises :class:`PolicyError`."""
    try:
        table = RuleTable.model_validate(rule)
    except ValidationError as exc:
        raise PolicyError(source or None, None, rule_problem(exc, rule).reason) from None
    return build_rule(table, source=source)


def build_rule(table: RuleTable, *, index: int = 0, line: int | None = None, source: str = "",
               label: str | None = None) -> Rule:
    return Rule(
        action=table.action, index=index, line=line, source=source, label=label,
        tools=table.condition("tool"), commands=table.condition("command"), paths=table.condition("path"),
        operations=table.condition("operation"), agents=table.condition("agent"), cwds=table.condition("cwd"),
        risks=table.condition("risk"), note=table.note, expires=table.expiry(),
    )


def _line_of(problem: Problem, lines: _Lines) -> int | None:
    if problem.rule is not None:
        return lines.rule_key(problem.rule, problem.key)
    if problem.tool is not None:
        return lines.tools_key(problem.tool)
    return lines.top_key(problem.top) if problem.top is not None else None


def _too_big(size: int) -> str:
    return (f"the file is {size:,} bytes; a policy file may be at most {MAX_POLICY_BYTES:,} "
            "(8,000 rules take about 0.5 MB)")


def _toml_error_location(message: str, text: str) -> tuple[int | None, str]:
    found = re.search(r"\s*\(at line (\d+), column \d+\)\s*$", message)
    if found:
        return int(found.group(1)), message[:found.start()]
    found = re.search(r"\s*\(at end of document\)\s*$", message)
    if found:
        return max(1, text.count("\n") + (0 if text.endswith("\n") else 1)), message[:found.start()]
    return None, message


class _Lines:
    """Finds where a rule or key is written, by scanning the text tomllib already accepted."""

    _HEADER = re.compile(r"^\s*\[")
    _RULE = re.compile(r"^\s*\[\[\s*rule\s*\]\]")
    _TOOLS = re.compile(r"^\s*\[\s*tools\s*\]")

    _TABLE_KEY = re.compile(r"""^\s*(?:"([^"\\]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        # Indexed once, on first use: looking each rule up by scanning the text again made loading
        # quadratic in the number of rules (8,000 rules took a minute).
        self._rule_headers: list[int] | None = None
        self._tools_keys: dict[str, int] | None = None

    def _key_in(self, start: int, key: str) -> int | None:
        pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
        for number in range(start, len(self.lines)):
            text = self.lines[number]
            if number > start and self._HEADER.match(text):
                return None
            if pattern.match(text):
                return number + 1
        return None

    def top_key(self, key: str) -> int | None:
        for number, text in enumerate(self.lines):
            if self._HEADER.match(text):
                break
            if re.match(rf"^\s*{re.escape(key)}\s*[=.]", text):
                return number + 1
        return self.table_header(key)

    def table_header(self, key: str) -> int | None:
        header = re.compile(rf"^\s*\[\[?\s*{re.escape(key)}\s*[\].]")
        return next((n + 1 for n, text in enumerate(self.lines) if header.match(text)), None)

    def rule_header(self, number: int) -> int | None:
        if self._rule_headers is None:
            self._rule_headers = [n for n, text in enumerate(self.lines) if self._RULE.match(text)]
        headers = self._rule_headers
        return headers[number - 1] + 1 if number <= len(headers) else self.top_key("rule")

    def rule_key(self, number: int, key: str | None) -> int | None:
        header = self.rule_header(number)
        if key is None or header is None or not self._RULE.match(self.lines[header - 1]):
            return header
        return self._key_in(header - 1, key) or header

    def tools_key(self, name: str) -> int | None:
        if self._tools_keys is None:
            self._tools_keys = self._index_tools()
        found = self._tools_keys.get(name)
        if found is not None:
            return found
        for number, text in enumerate(self.lines):  # a name written with escapes: look it up the slow way
            if self._TOOLS.match(text):
                return self._key_in(number, name) or number + 1
        return self.top_key("tools")

    def _index_tools(self) -> dict[str, int]:
        """Line of every plainly written key of the ``[tools]`` table, in one pass."""
        keys: dict[str, int] = {}
        inside = False
        for number, text in enumerate(self.lines):
            if self._HEADER.match(text):
                inside = bool(self._TOOLS.match(text))
                continue
            found = self._TABLE_KEY.match(text) if inside else None
            if found:
                keys.setdefault(next(group for group in found.groups() if group is not None), number + 1)
        return keys


