"""Hidden characters: what could make the call that is shown differ from the call that runs."""

from __future__ import annotations

from collections.abc import Iterable

from ..reading import CallReading, Hidden
from .findings import DESTRUCTIVE, MODERATE, Findings

HIDDEN_REASONS = {
    "bidi": "contains a bidi override (text reads differently than it runs)",
    "zero_width": "contains zero-width characters",
    "odd_space": "contains look-alike spaces",
    "escape": "contains terminal escape sequences",
    "control": "contains control characters",
    "spaces": "hides a tail after a long run of spaces",
}


def judge_hidden(found: Iterable[Hidden], reading: CallReading, findings: Findings) -> None:
    """In a command, what could hide code is destructive (the person cannot see what runs); a
    zero-width character inside a quoted message, or anything in a file's text, is moderate."""
    shell_keys = {run.key for run in reading.commands}
    for item in found:
        in_command = item.where in shell_keys
        if in_command and (item.kind != "zero_width" or item.in_code):
            findings.add(DESTRUCTIVE, HIDDEN_REASONS[item.kind])
        elif item.kind != "spaces" or in_command:
            findings.add(MODERATE, HIDDEN_REASONS[item.kind] + (f" ({item.where})" if not in_command else ""))


def lookalike(name: str) -> bool:
    return any(ord(ch) > 127 for ch in name)

