"""The verdict's parts: the three levels, the assessment, and the findings collected on the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DESTRUCTIVE", "LEVELS", "MODERATE", "NOT_UNDERSTOOD", "SAFE", "Findings", "RiskAssessment", "max_level"]

LEVELS = ("safe", "moderate", "destructive")
SAFE, MODERATE, DESTRUCTIVE = LEVELS


def max_level(*levels: str) -> str:
    """The highest of ``levels`` (``safe`` when none)."""
    return max(levels, key=LEVELS.index, default=SAFE)


NOT_UNDERSTOOD = "not understood"


@dataclass(frozen=True)
class RiskAssessment:
    """The reader's verdict on one call.

    ``understood`` is the proof an automatic answer needs (a mode, session memory, an allow rule):
    every program, option, ``NAME=value`` prefix, path, tool and argument of the call was known to
    the catalog. It defaults to False so that anything not proven goes to the person; ``gaps`` names
    what was not understood, one short phrase each ("option `--output` of `git log`").
    """

    level: str
    reasons: tuple[str, ...] = ()
    hint_notes: tuple[str, ...] = ()
    understood: bool = False
    gaps: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """What the person is shown: the level, or ``"not understood"`` for a call the reader did not
        understand and does not know to be destructive (its level would be a guess)."""
        return self.level if self.understood or self.level == "destructive" else NOT_UNDERSTOOD

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "reasons": list(self.reasons)}
        if self.hint_notes:
            out["hint_notes"] = list(self.hint_notes)
        return out


@dataclass
class Findings:
    """Reasons collected with their levels; the assessment's level is the highest."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, level: str, reason: str) -> None:
        if (level, reason) not in self.items:
            self.items.append((level, reason))

    @property
    def level(self) -> str:
        return max_level(*(level for level, _ in self.items))

    def reasons(self) -> tuple[str, ...]:
        ordered = sorted(self.items, key=lambda item: -LEVELS.index(item[0]))
        seen: list[str] = []
        for level, reason in ordered:
            if level != SAFE and reason not in seen:
                seen.append(reason)
        return tuple(seen)


