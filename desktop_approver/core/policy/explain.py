"""How the policy explains a call: per part, the deciding rule, the others that matched, and why
the rest did not. ``desktop-approver policy explain`` and the rules window print :meth:`Explanation.render`.

An ``allow`` rule whose conditions hold but which may not answer the call (read as destructive,
not fully understood) is *withheld*, with the reason; one that answers a call of a tool the
catalog does not know because it names that tool exactly is marked as the person's declaration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .automatic import not_understood
from .rules import PolicyCall, PolicyVerdict, Rule


@dataclass(frozen=True)
class RuleCheck:
    """One rule against one part: did it match, and if not, why not.

    ``withheld``: an allow rule whose conditions hold, kept from answering (``why`` says why);
    ``declared``: the declaration an allow rule answers by (a tool the catalog does not know).
    """

    rule: Rule
    matched: bool
    why: str = ""
    declared: str = ""
    withheld: bool = False


@dataclass(frozen=True)
class PartExplanation:
    text: str
    action: str | None
    rule: Rule | None
    checks: tuple[RuleCheck, ...]
    declared: str = ""


@dataclass(frozen=True)
class Explanation:
    """Which rule decides a call, which others matched, and why the rest did not, per part."""

    call: PolicyCall
    verdict: PolicyVerdict | None
    parts: tuple[PartExplanation, ...]
    source: str = ""

    @property
    def outcome(self) -> str:
        if self.verdict is not None and self.verdict.action != "ask":
            return self.verdict.action
        return "ask"

    @property
    def withheld(self) -> tuple[tuple[Rule, str], ...]:
        """Each allow rule that matched but may not answer this call, with the reason (once each)."""
        found: dict[int, tuple[Rule, str]] = {}
        for part in self.parts:
            for check in part.checks:
                if check.withheld:
                    found.setdefault(id(check.rule), (check.rule, check.why))
        return tuple(found.values())

    def reading(self) -> str:
        """The reader's verdict the allow rules were held to, in one line."""
        level = self.call.risk or "not read"
        return f"{level}, fully understood" if self.call.understood else f"{level}, {not_understood(self.call.gaps)}"

    def render(self) -> str:
        """The human-readable form printed by ``desktop-approver policy explain``."""
        args = json.dumps(self.call.args, sort_keys=True)
        lines = [f"call: {self.call.tool} {args if len(args) <= 300 else args[:297] + '...'}",
                 f"read: {self.reading()}"]
        if self.verdict is None:
            uncovered = [str(i) for i, part in enumerate(self.parts, 1) if part.rule is None]
            gap = f" (no rule covers part {', '.join(uncovered)})" if len(self.parts) > 1 else ""
            lines.append(f"decision: ask the person: no rule decides{gap}")
        else:
            lines.append(f"decision: {self.verdict.action} by {self.verdict.rule.describe()}")
            lines.append(f"reason: {self.verdict.reason}")
        for number, part in enumerate(self.parts, 1):
            lines.append(f"part {number}: {part.text}")
            if part.rule is not None:
                lines.append(f"  decided: {part.action} by {part.rule.describe()}")
                if part.declared:
                    lines.append(f"  declared: {part.declared}")
            else:
                lines.append("  decided: no rule")
            for check in part.checks:
                if check.rule is part.rule:
                    continue
                state = ("also matches" if check.matched else f"withheld: {check.why}" if check.withheld
                         else f"no: {check.why}")
                lines.append(f"  {check.rule.id}: {state}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        verdict = None
        if self.verdict is not None:
            verdict = {"action": self.verdict.action, "rule": self.verdict.rule.describe(),
                       "reason": self.verdict.reason}
        return {
            "source": self.source, "outcome": self.outcome, "verdict": verdict,
            "call": {"tool": self.call.tool, "args": self.call.args, "agent": self.call.agent,
                     "cwd": self.call.cwd, "risk": self.call.risk, "understood": self.call.understood,
                     "gaps": list(self.call.gaps)},
            "parts": [{"text": part.text, "action": part.action,
                       "rule": part.rule.describe() if part.rule else None, "declared": part.declared or None,
                       "checks": [{"rule": c.rule.id, "matched": c.matched, "why": c.why, "withheld": c.withheld}
                                  for c in part.checks]}
                      for part in self.parts],
        }
