"""The broker: every call's way from "asked" to "decided", in one place.

For each call, in this order: a policy ``block`` or ``deny`` rule; the ``deny_all`` mode; a
policy ``ask`` rule (straight to the person) or ``allow`` rule; the ``approve_all`` mode (never
for destructive calls); session memory (never for destructive calls either, whatever the scope
the person chose); and only then the person, through the :class:`~desktop_approver.core.tickets.Decider`. The
person's part has a pausable timeout that ends in a deny and never remembers anything. Every
call and every verdict is written to the audit log before the agent hears the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from . import modes
from .audit import AuditLog
from .logsafe import printable
from .memory import SessionMemory
from .policy import PolicyCall
from .risk import LEVELS, RiskAssessment, assess
from .tickets import CallInfo, Countdown, Decider, Identity, Ticket, Verdict

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 300.0

Listener = Callable[[str, Ticket], None]
NoticeListener = Callable[[Identity, str, str], None]   # who, kind ("waiting" / "finished" / "info"), text
"""Called with ("added" | "removed", ticket) as tickets start and stop waiting for a person."""


@dataclass(frozen=True)
class Prepared:
    """Calls as the core sees them, and the verdicts that needed no person (None: ask)."""

    infos: list[CallInfo]
    verdicts: list[Verdict | None]

    def risks(self) -> list[dict[str, Any] | None]:
        """The app's assessment of each call, as the agent is told it with any answer."""
        return [_risk_for_agent(info) for info in self.infos]


class PolicyLike(Protocol):
    def evaluate(self, call: Any) -> Any: ...


class Broker:
    def __init__(self, decider: Decider, *, audit: AuditLog, memory: SessionMemory | None = None,
                 policy: PolicyLike | None = None, mode: modes.ModeState | None = None,
                 default_timeout: float = DEFAULT_TIMEOUT) -> None:
        self.decider = decider
        self.audit = audit
        self.memory = memory or SessionMemory()
        self.policy = policy
        self.mode = mode or modes.ModeState()
        self.default_timeout = default_timeout
        self.pending: dict[str, Ticket] = {}
        self.listeners: list[Listener] = []
        self.notice_listeners: list[NoticeListener] = []

    def prepare(self, identity: Identity, session: str, calls: Sequence[dict[str, Any]]) -> Prepared:
        """Assess every call and decide what needs no person (rules, mode, session memory)."""
        infos = [self._inspect(index, call, identity) for index, call in enumerate(calls)]
        self.memory.seen(session, agent=identity.agent)
        return Prepared(infos, [self._decide_without_person(info, identity, session) for info in infos])

    def answer_now(self, identity: Identity, session: str, request_id: str, prepared: Prepared) -> list[Verdict] | None:
        """The verdicts, recorded (call and answer in one commit), when no call needs a person; else None.

        Synchronous on purpose: the server answers these in the same loop step that read the line.
        """
        if any(verdict is None for verdict in prepared.verdicts):
            return None
        answered = [replace(v, risk=_risk_for_agent(info)) for v, info in zip(prepared.verdicts, prepared.infos) if v]
        self.audit.record_answered(identity, session, request_id, prepared.infos, answered)
        return answered

    async def submit(self, identity: Identity, session: str, request_id: str, kind: str,
                     calls: Sequence[dict[str, Any]], timeout: float | None = None,
                     prepared: Prepared | None = None) -> list[Verdict]:
        """Decide every call; the answer list is in the calls' order."""
        prepared = prepared or self.prepare(identity, session, calls)
        answered = self.answer_now(identity, session, request_id, prepared)
        if answered is not None:
            return answered
        infos, verdicts = prepared.infos, list(prepared.verdicts)

        audit_ids = self.audit.record_calls(identity, session, request_id, infos)  # before anyone is asked
        infos = [replace(info, audit_id=audit_id) for info, audit_id in zip(infos, audit_ids)]
        undecided = [info for info, verdict in zip(infos, verdicts) if verdict is None]
        try:
            if undecided:
                for info, verdict in zip(undecided, await self._ask_person(
                        identity, session, request_id, kind, undecided, len(infos), timeout)):
                    verdicts[info.index] = verdict
        except asyncio.CancelledError:
            cancelled = Verdict("deny", "cancelled", note="the agent cancelled the request or disconnected")
            self.audit.record_decisions((info.audit_id or 0, cancelled) for info in undecided)
            raise
        except Exception:  # a broken prompt must not leave the agent hanging or the call allowed
            log.exception("asking the person failed for %s", printable(request_id))
            failed = Verdict("deny", "cancelled", note="desktop-approver could not ask the person (internal error)")
            for info in undecided:
                verdicts[info.index] = failed
        final = [replace(verdict or Verdict("deny", "user"), risk=_risk_for_agent(info))
                 for verdict, info in zip(verdicts, infos)]
        self._remember(final, infos, identity, session)
        self.audit.record_decisions((info.audit_id or 0, verdict) for info, verdict in zip(infos, final))
        return final

    def status(self) -> dict[str, Any]:
        return {"pending": sum(len(t.calls) for t in self.pending.values()), "mode": self.mode.mode,
                "mode_until": self.mode.until, "sessions": len(self.memory.sessions())}

    # -- steps ------------------------------------------------------------------------------

    def _inspect(self, index: int, call: dict[str, Any], identity: Identity) -> CallInfo:
        hints = call.get("hints") or {}
        return CallInfo(index=index, tool=call["tool"], args=call["args"], description=call.get("description"),
                        preview=call.get("preview"), hints=hints, risk=_assess_where(call, identity, hints))

    def _decide_without_person(self, info: CallInfo, identity: Identity, session: str) -> Verdict | None:
        action, verdict = self._policy_verdict(info, identity)
        if action in ("block", "deny"):
            return verdict
        mode = self.mode.mode
        if mode == modes.DENY_ALL:
            return Verdict("deny", "mode", note="desktop-approver is in deny-all mode")
        if action == "ask":
            return None  # the person decides, whatever the mode or session memory would say
        if action == "allow":
            return verdict
        if mode == modes.APPROVE_ALL and not _destructive(info):
            return Verdict("allow_once", "mode")  # no note: nobody wrote one (decided_by says why)
        if _destructive(info):
            return None  # "for this session" never covers a destructive call: the person sees each one
        if self.memory.lookup(session, info.tool, info.args, agent=identity.agent) is not None:
            return Verdict("allow_session", "session")
        return None

    def _policy_verdict(self, info: CallInfo, identity: Identity) -> tuple[str | None, Verdict | None]:
        """The deciding rule's action (None: no rule) and, for allow / deny / block, its verdict."""
        if self.policy is None:
            return None, None
        try:
            found = self.policy.evaluate(PolicyCall(tool=info.tool, args=info.args, agent=identity.agent,
                                                    cwd=identity.policy_cwd,  # the kernel's, not the claim
                                                    risk=info.risk.level if info.risk else None))
        except Exception:  # a broken rule must never take the app down: fall back to asking
            log.exception("policy evaluation failed; asking the person")
            return None, None
        if found is None or found.action == "ask":
            return (found.action if found else None), None
        rule, note = found.rule.describe(), found.rule.note or None  # the rule's own words, never invented ones
        if found.action == "allow":
            return "allow", Verdict("allow_once", "policy", rule=rule, note=note)
        return found.action, Verdict("deny", "policy", rule=rule, note=note, blocked=found.action == "block")

    async def _ask_person(self, identity: Identity, session: str, request_id: str, kind: str,
                          calls: list[CallInfo], batch_size: int, timeout: float | None) -> list[Verdict]:
        countdown = Countdown(timeout or self.default_timeout)
        ticket = Ticket(request_id=request_id, kind=kind, calls=calls, session=session, identity=identity,
                        countdown=countdown, batch_size=batch_size)
        self.pending[ticket.key] = ticket
        self._notify("added", ticket)
        deciding = asyncio.ensure_future(self.decider.decide(ticket))
        try:
            await asyncio.wait({deciding, countdown.expired}, return_when=asyncio.FIRST_COMPLETED)
            if deciding.done():
                verdicts = deciding.result()
                if len(verdicts) != len(calls):
                    raise RuntimeError(f"decider answered {len(verdicts)} of {len(calls)} calls")
                return [_no_session_scope_from_timeout(v) for v in verdicts]
            return [Verdict("deny", "timeout", note="nobody answered in time") for _ in calls]
        finally:
            countdown.cancel()
            if not deciding.done():
                deciding.cancel()
            self.pending.pop(ticket.key, None)
            self._notify("removed", ticket)

    def _remember(self, verdicts: list[Verdict], infos: list[CallInfo], identity: Identity, session: str) -> None:
        for verdict, info in zip(verdicts, infos):
            if verdict.decision == "allow_session" and verdict.decided_by == "user" and not _destructive(info):
                self.memory.remember(session, info.tool, verdict.updated_args or info.args, scope=verdict.scope,
                                     agent=identity.agent)

    def tell(self, identity: Identity, kind: str, text: str) -> None:
        """An agent's notice for the person (the GUI shows it); it never touches a decision."""
        for listener in list(self.notice_listeners):
            try:
                listener(identity, kind, text)
            except Exception:
                log.exception("notice listener failed")

    def _notify(self, event: str, ticket: Ticket) -> None:
        for listener in list(self.listeners):
            try:
                listener(event, ticket)
            except Exception:
                log.exception("ticket listener failed")


def _destructive(info: CallInfo) -> bool:
    """The risk assessment prepared for the call says destructive: only a person may allow it."""
    return info.risk is not None and info.risk.level == "destructive"


def _risk_for_agent(info: CallInfo) -> dict[str, Any] | None:
    return {"level": info.risk.level, "reasons": list(info.risk.reasons)} if info.risk else None


def _no_session_scope_from_timeout(verdict: Verdict) -> Verdict:
    """Only a person can make something remembered; anything else is at most allow_once."""
    if verdict.decision == "allow_session" and verdict.decided_by != "user":
        return replace(verdict, decision="allow_once")
    return verdict


def _assess_where(call: dict[str, Any], identity: Identity, hints: dict[str, Any]) -> RiskAssessment:
    """The risk judged from the directory the kernel says the agent is in; where the agent claims
    another one, the worse of the two readings (a claim must never move a path inside)."""
    found = assess(call["tool"], call["args"], cwd=identity.policy_cwd, hints=hints)
    if identity.cwd and identity.cwd != identity.policy_cwd:
        claimed = assess(call["tool"], call["args"], cwd=identity.cwd, hints=hints)
        if LEVELS.index(claimed.level) > LEVELS.index(found.level):
            return claimed
    return found
