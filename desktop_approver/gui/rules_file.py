"""The rules of a policy file as a list that can be edited, disabled, deleted and reordered (Qt-free).

Changes are made to the file's text, block by block, so its comments and layout stay as the
person wrote them: a rule's block is its ``[[rule]]`` table with the comment lines just above it.
A disabled rule stays in the file, its lines commented out with ``#~ `` (the policy reader skips
comments, and re-enabling removes exactly that prefix). Every change is validated by the same
reader as the app's (:meth:`Policy.parse`) before it is written, and written atomically.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from ..core.policy import Policy, PolicyError

DISABLED = "#~ "
_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class RuleBlock:
    """One ``[[rule]]`` of the file: where it is, whether it is enabled, and its keys."""

    number: int            # 1-based place among the file's [[rule]] tables
    start: int             # first line of its leading comments
    header: int            # the [[rule]] line
    end: int               # one past its last line
    enabled: bool
    body: str              # the table's lines after the header, as written (without the #~ prefix)
    values: dict[str, Any]

    def summary(self) -> str:
        keys = [f"{key}={_short(value)}" for key, value in self.values.items()
                if key not in ("action", "note", "expires")]
        return " ".join(keys) or "every call"


def _short(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value)


class RulesFile:
    """The policy file at ``path`` (it need not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def text(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def rules(self) -> list[RuleBlock]:
        return parse_blocks(self.text())

    # -- changes (each validated, then written) -------------------------------------------------

    def set_enabled(self, number: int, enabled: bool) -> None:
        lines, block = self._lines_and(number)
        if block.enabled == enabled:
            return
        for at in range(block.header, block.end):
            if enabled:
                lines[at] = lines[at][len(DISABLED):] if lines[at].startswith(DISABLED) else lines[at]
            elif lines[at].strip():
                lines[at] = DISABLED + lines[at]
        self._write(lines)

    def delete(self, number: int) -> None:
        lines, block = self._lines_and(number)
        del lines[block.start:block.end]
        self._write(lines)

    def move(self, number: int, step: int) -> int:
        """Swap a rule with its neighbour (comments travel with it); returns its new number."""
        blocks = self.rules()
        other = number + step
        if not (1 <= number <= len(blocks) and 1 <= other <= len(blocks)):
            return number
        lines = self.text().splitlines(keepends=True)
        first, second = sorted((blocks[number - 1], blocks[other - 1]), key=lambda b: b.start)
        middle = lines[first.end:second.start]
        swapped = (lines[:first.start] + _ending(lines[second.start:second.end]) + middle
                   + _ending(lines[first.start:first.end]) + lines[second.end:])
        self._write(swapped)
        return other

    def replace(self, number: int, body: str) -> None:
        """Put new keys into a rule (TOML ``key = value`` lines, comments allowed)."""
        lines, block = self._lines_and(number)
        table = tomlkit.parse(body)  # a syntax error is reported before anything is written
        if "action" not in table:
            raise PolicyError(self.path, None, "a rule needs an action")
        new = [line + "\n" for line in tomlkit.dumps(table).rstrip("\n").split("\n")]
        if not block.enabled:
            new = [DISABLED + line if line.strip() else line for line in new]
        lines[block.header + 1:block.end] = _ending(new)
        self._write(lines)

    def append(self, body: str) -> int:
        """Add a rule (TOML ``key = value`` lines, comments allowed) after the last one; returns its number."""
        table = tomlkit.parse(body)  # a syntax error is reported before anything is written
        if "action" not in table:
            raise PolicyError(self.path, None, "a rule needs an action")
        lines = self.text().splitlines(keepends=True)
        new = [line + "\n" for line in body.strip("\n").split("\n")]
        lines = _ending(lines)
        if lines and lines[-1].strip():
            lines.append("\n")
        self._write([*lines, "[[rule]]\n", *new])
        return len(self.rules())

    def _lines_and(self, number: int) -> tuple[list[str], RuleBlock]:
        blocks = self.rules()
        if not 1 <= number <= len(blocks):
            raise IndexError(f"there is no rule {number}")
        return self.text().splitlines(keepends=True), blocks[number - 1]

    def _write(self, lines: list[str]) -> None:
        text = "".join(lines)
        Policy.parse(text, self.path)  # the app's own validation: a bad edit never reaches the file
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".policy-", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _ending(lines: list[str]) -> list[str]:
    """Lines that end with a newline, so a moved last block does not join the next one."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines


def parse_blocks(text: str) -> list[RuleBlock]:
    lines = text.splitlines(keepends=True)
    headers = []
    for at, line in enumerate(lines):
        if _HEADER.match(line):
            headers.append((at, True))
        elif line.startswith(DISABLED) and _HEADER.match(line[len(DISABLED):]):
            headers.append((at, False))
    blocks = []
    previous_end = 0
    for number, (header, enabled) in enumerate(headers, 1):
        end = header + 1
        while end < len(lines):
            raw = lines[end][len(DISABLED):] if not enabled and lines[end].startswith(DISABLED) else lines[end]
            if not enabled and not lines[end].startswith(DISABLED) and lines[end].strip():
                break
            if (enabled and _ANY_HEADER.match(raw)) or (not enabled and _ANY_HEADER.match(raw)) \
                    or (enabled and lines[end].startswith(DISABLED)):
                break
            end += 1
        while end > header + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
                                    and not lines[end - 1].startswith(DISABLED)):
            end -= 1  # trailing comments and blank lines lead into the next block
        start = header
        while start > previous_end and (lines[start - 1].lstrip().startswith("#")
                                        and not lines[start - 1].startswith(DISABLED)):
            start -= 1
        body_lines = [line[len(DISABLED):] if not enabled and line.startswith(DISABLED) else line
                      for line in lines[header + 1:end]]
        body = "".join(body_lines)
        try:
            values = tomllib.loads(body)
        except tomllib.TOMLDecodeError:
            values = {}
        blocks.append(RuleBlock(number, start, header, end, enabled, body, values))
        previous_end = end
    return blocks
