"""The product's words as types, declared once: decisions, who decided, risk levels, modes, scopes, rule actions.

Standard library only (the thin client may import it, and a hook starts once per tool call), so
these are ``Literal`` types rather than enums: a value on the wire and in the code is the same
plain string, and mypy rejects a misspelt one (``Verdict("allow-once")`` does not type-check).
The tuples beside them are the same words at run time, read from the types so the two cannot
drift apart. The app's pydantic models (``core/messages/models.py``), the broker, the policy and the
client all use these; ``ipc/PROTOCOL.md`` describes them for other languages.
"""

from __future__ import annotations

from typing import Literal, TypedDict, get_args

DecisionName = Literal["allow_once", "allow_session", "deny"]
"""What was decided about one call."""
DecidedBy = Literal["user", "session", "policy", "mode", "timeout", "cancelled"]
"""Who (or what) decided it: the person, session memory, a rule, the global mode, the countdown, a withdrawal."""
RiskLevel = Literal["safe", "moderate", "destructive"]
"""The app's reading of a call, mildest first."""
Mode = Literal["interactive", "approve_all", "deny_all", "do_not_disturb"]
"""The global mode (``core/decisions/modes.py``)."""
Scope = Literal["exact", "tool"]
"""What ``allow_session`` remembers: the exact arguments, or the whole tool for the session."""
RuleAction = Literal["allow", "ask", "deny", "block"]
"""What a policy rule does with a call it matches."""
NoticeKind = Literal["waiting", "finished", "info"]
"""What an agent's notice tells the person."""
ShowWhat = Literal["request", "inbox", "history"]
"""What ``desktop-approver show`` raises: the most urgent waiting request, the inbox, the history."""
AskKind = Literal["request", "batch"]
"""The two messages that ask: one call, or several under one prompt."""

DECISIONS: tuple[DecisionName, ...] = get_args(DecisionName)
ALLOW_DECISIONS: frozenset[DecisionName] = frozenset(("allow_once", "allow_session"))
DECIDED_BY: tuple[DecidedBy, ...] = get_args(DecidedBy)
RISK_LEVELS: tuple[RiskLevel, ...] = get_args(RiskLevel)
MODES: tuple[Mode, ...] = get_args(Mode)
SCOPES: tuple[Scope, ...] = get_args(Scope)
RULE_ACTIONS: tuple[RuleAction, ...] = get_args(RuleAction)


class RiskReport(TypedDict):
    """The app's assessment as the agent is told it with every answer (the wire's ``risk``)."""

    level: RiskLevel
    reasons: list[str]
