"""A call's outcome, on its own so that the messages (which encode it) and the tickets (which
produce it) both use it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...client.vocabulary import DecidedBy, DecisionName, RiskReport, Scope

__all__ = ["Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The outcome for one call. ``blocked`` marks a policy violation, not a person's no."""

    decision: DecisionName
    decided_by: DecidedBy = "user"
    note: str | None = None
    rule: str | None = None
    blocked: bool = False
    updated_args: dict[str, Any] | None = None
    scope: Scope = "exact"        # for allow_session: "exact" arguments or the whole "tool"
    risk: RiskReport | None = None  # the app's assessment, told to the agent with the answer

    @property
    def allowed(self) -> bool:
        return self.decision in ("allow_once", "allow_session")
