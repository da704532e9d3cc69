"""What a policy is made of: the call as a rule sees it, the rule, the verdict, and the file error.

Plain frozen dataclasses, validated before they are built (:mod:`.model` checks what a file or the
dialog's editor holds; :mod:`.load` says where in the file a problem is). The vocabulary of the
file (actions, operations, risk levels, the keys of a rule) is declared here once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, get_args

from .globs import _has_glob

Action = Literal["allow", "ask", "deny", "block"]
ACTIONS: tuple[str, ...] = ("block", "deny", "ask", "allow")          # strongest first
_STRENGTH = {action: len(ACTIONS) - i for i, action in enumerate(ACTIONS)}
Operation = Literal["read", "write", "delete"]
OPERATIONS: tuple[str, ...] = get_args(Operation)
Risk = Literal["safe", "moderate", "destructive"]
RISK_LEVELS: tuple[str, ...] = get_args(Risk)
RULE_KEYS: tuple[str, ...] = ("action", "tool", "command", "path", "operation", "agent", "cwd", "risk",
                              "note", "expires")
_TOP_KEYS = ("version", "rule", "tools", "catalog")
SUPPORTED_VERSION = 1

MAX_POLICY_BYTES = 4 * 1024 * 1024
"""A larger policy file is refused with a clear error (the last good rules stay in force). About
60,000 rules: the index decides a call with 50,000 as fast as with 10, and the file is read in a
thread in seconds (BENCHMARKS.md, "Rules at any size"); what grows past it is the reading."""


class PolicyError(ValueError):
    """A policy file (or rule) that cannot be used, with where and why: ``FILE:LINE: reason``."""

    def __init__(self, path: str | os.PathLike[str] | None, line: int | None, reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = reason
        super().__init__(str(self))

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else "<policy>"
        return f"{where}:{self.line}: {self.reason}" if self.line else f"{where}: {self.reason}"


@dataclass(frozen=True)
class PolicyCall:
    """What a rule sees of a call: the tool, its arguments, who asks from where, and the app's reading.

    ``risk``, ``understood`` and ``gaps`` are the reader's verdict (``RiskAssessment``): an ``allow``
    rule answers only a call read as safe or moderate and fully understood (:mod:`.automatic`), so
    a call built without them (risk unknown, not understood) is never allowed by a rule that does
    not accept destructive calls explicitly.
    """

    tool: str
    args: dict[str, Any]
    agent: str | None = None
    cwd: str | None = None
    risk: str | None = None
    understood: bool = False
    gaps: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    """One rule, validated and normalised; conditions that are ``None`` are absent."""

    action: str
    index: int = 0
    line: int | None = None
    source: str = ""
    tools: tuple[str, ...] | None = None
    commands: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    operations: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None
    cwds: tuple[str, ...] | None = None
    risks: tuple[str, ...] | None = None
    note: str | None = None
    expires: datetime | None = None
    label: str | None = None          # "tools.deploy" for the [tools] shorthand

    @property
    def id(self) -> str:
        name = self.label or f"rule {self.index}"
        return f"{name} (line {self.line})" if self.line else name

    @property
    def restrictive(self) -> bool:
        return self.action != "allow"

    def summary(self) -> str:
        """``allow tool="Bash" command="npm run test*"``: the action and its conditions."""
        bits = [f"{key}={_show(values)}" for key, values in self._conditions() if values is not None]
        return f"{self.action} " + (" ".join(bits) if bits else "every call")

    def describe(self) -> str:
        """One line naming the rule and where it is written, as the agent and the audit log see it."""
        where = f" of {Path(self.source).name}" if self.source else ""
        return f"{self.id}{where}: {self.summary()}"

    def specificity(self) -> tuple[int, int, int]:
        """How narrow the rule is: (conditions, literal patterns, pattern length); bigger is narrower."""
        conditions = [values for _, values in self._conditions() if values is not None]
        patterns = [p for values in (self.tools, self.commands, self.paths, self.agents, self.cwds)
                    for p in values or ()]
        literal = sum(1 for p in patterns if not _has_glob(p))
        return len(conditions), literal, sum(len(p) for p in patterns)

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now

    def as_dict(self) -> dict[str, Any]:
        """The rule as a TOML table would hold it (the form :func:`append_rule` takes)."""
        out: dict[str, Any] = {"action": self.action}
        for key, values in self._conditions():
            if values is not None:
                out[key] = values[0] if len(values) == 1 else list(values)
        if self.note is not None:
            out["note"] = self.note
        if self.expires is not None:
            out["expires"] = self.expires
        return out

    def _conditions(self) -> list[tuple[str, tuple[str, ...] | None]]:
        return [("tool", self.tools), ("command", self.commands), ("path", self.paths),
                ("operation", self.operations), ("agent", self.agents), ("cwd", self.cwds),
                ("risk", self.risks)]


@dataclass(frozen=True)
class PolicyVerdict:
    """The policy's answer for a call; ``rules`` lists every deciding rule (one per part)."""

    action: str
    rule: Rule
    reason: str
    rules: tuple[Rule, ...] = ()


def _show(values: tuple[str, ...]) -> str:
    return json.dumps(values[0]) if len(values) == 1 else "[" + ", ".join(json.dumps(v) for v in values) + "]"
