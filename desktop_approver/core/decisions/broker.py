"""The broker: every call's way from "asked" to "decided", in two steps.

:meth:`Broker.triage` reads each call (its risk) and decides what needs no person, in this
order: a policy ``block`` or ``deny`` rule; the ``deny_all`` mode; a policy ``ask`` rule (straight
to the person) or ``allow`` rule; the ``approve_all`` mode; session memory. Whatever allows without
the person needs proof (:mod:`..policy.automatic`): an allow rule, approve-all and a session
approval of the whole tool answer only a fully understood call read as safe or moderate (a rule
naming an unknown tool exactly, or accepting ``risk = "destructive"``, is the person's own word);
an exact-call session approval answers the identical call again, never a destructive one. A call
an automatic answer was withheld from goes to the person with the reason in one line
(``CallInfo.asked_because``: the ticket and the audit log carry it). When that
decides every call, the answer is recorded and ready at once; on the server's way in
(:meth:`Broker.take`) its record shares the commit of the loop turn that read the line
(:class:`~desktop_approver.core.store.audit.GroupCommit`), and the agent is answered when that
commit is made, at the end of the same turn. Otherwise :meth:`Broker.ask` puts the rest before the person, through the
:class:`~desktop_approver.core.decisions.tickets.Decider`, with a pausable timeout that ends in a deny and
never remembers anything. :meth:`Broker.submit` is the two in a row; :meth:`Broker.take`, the
server's way in, is the two with the transport's admission in between, the ask started as a task.
Every call and every verdict is written to the audit log before the agent hears the answer, and
the answer recorded is the one the agent received: given the transport's look at the agent's
connection (``gone``), an agent gone before its request was read, before the commit of an answer at
once, or before the person's answer was recorded, is recorded as never answered ("agent gone"), and a
deadline that passed while the app was held up decides ("expired in the queue"; ipc/PROTOCOL.md,
"What recorded means").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ...client.vocabulary import AskKind, RiskReport, RuleAction, Scope
from ...client.wire import canonical_json
from ..calls.risk import LEVELS, RiskAssessment, assess
from ..policy.automatic import unproven
from ..store.audit import AgentGone, AuditLog, Delivery, GroupCommit, undelivered_note
from ..store.logsafe import printable
from . import modes
from .memory import EXACT, WHOLE_TOOL, SessionMemory
from .tickets import CallInfo, Countdown, Decider, Identity, Ticket, Verdict

if TYPE_CHECKING:
    from ..messages.models import AskedCall
    from ..policy import PolicyCall

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 300.0
WITHDRAWN = Verdict("deny", "cancelled", note="cancelled")
"""The answer for a call the agent withdrew (cancel, disconnect) before anyone decided it."""

EXPIRED = "expired in the queue: the deadline passed before the answer was taken (the app was held up)"
"""The note of a call whose deadline passed while the app could not act (stopped, starved) and whose
answer was then taken: the deadline decides, a deny, whatever was answered after it."""

Listener = Callable[[str, Ticket], None]
"""Called with ("added" | "removed", ticket) as tickets start and stop waiting for a person."""
NoticeListener = Callable[[Identity, str, str], None]   # who, kind ("waiting" / "finished" / "info"), text
ShowListener = Callable[[str], None]                      # what the person asked to see: request, inbox, history


@dataclass(eq=False)
class Triage:
    """One request after the first step: its calls as the core sees them, and what needed no person.

    ``verdicts`` holds None for each call the person must decide. ``answered`` is the whole answer
    (recorded, each verdict with its ``risk``) when nothing is left for the person, else None.
    """

    identity: Identity
    session: str
    request_id: str
    kind: AskKind
    infos: list[CallInfo]
    verdicts: list[Verdict | None]
    risks: list[RiskReport | None]
    answered: list[Verdict] | None = None
    recorded: bool = False
    """The calls are in the audit log (answered at once, or :meth:`Broker.ask` has begun)."""
    commit: GroupCommit | None = None
    """Answered at once in a loop turn (:meth:`Broker.take`): the turn's commit, which the answer waits for."""
    asking: asyncio.Task[list[Verdict]] | None = None
    """:meth:`Broker.take`: the person is being asked (the task ends with the whole answer)."""
    over_limit: bool = False
    """:meth:`Broker.take`: the calls left for the person were not admitted (nobody is asked)."""
    gone: AgentGone | None = None
    """Why the agent can no longer receive the answer (its connection closed), or None: looked at
    before the calls are read, before an answer at once is committed and before a person's answer is
    recorded, so the log never says an agent was given an answer it was not there to receive."""
    undeliverable: str | None = None
    """The agent was gone before the request was read (why): recorded as such, nobody is answered."""
    delivery: Delivery | None = None
    """Answered at once with ``gone`` known: its check before the commit (``Delivery.why``: not sent)."""
    facts_due: list[int] = field(default_factory=list)
    """The calls (indexes) whose judgement waits for the facts of what they touch (issue 32): no
    automatic allow answers them before :meth:`Broker.ask` has gathered those facts off the loop."""

    @property
    def waiting(self) -> int:
        """Calls that wait for the person."""
        return sum(verdict is None for verdict in self.verdicts)

    def __repr__(self) -> str:
        decided = ",".join(verdict.decided_by if verdict else "person" for verdict in self.verdicts)
        return (f"<Triage {self.kind} {printable(self.request_id, 40)!r} agent={printable(self.identity.label, 40)!r}"
                f" session={printable(self.session, 40)!r} calls={len(self.infos)} by=[{decided}]"
                f"{' answered' if self.answered is not None else ''}>")


class PolicyLike(Protocol):
    def explain(self, call: PolicyCall, *, candidates_only: bool = ...) -> Any: ...


class Unsettled(Exception):
    """Raised by :meth:`Settler.settle` when it is cancelled while its answer may still reach the
    others (a write on the wire): no deny is recorded for it then, since the answer that stands may be
    an allow; the settler has noted the calls as unsettled and records what stands once it can read it."""


class Settler(Protocol):
    """Where an answer must first be agreed with others before it is recorded: the NATS relay, where
    several approvers answer one request and the first answer written stands
    (``relay.approver.RelayApprover``). :meth:`settle` returns the answer that stands, which the
    audit log then records as the decision (this app's own, if it came first)."""

    def settles(self, identity: Identity) -> bool: ...

    async def settle(self, triage: Triage, verdicts: list[Verdict]) -> list[Verdict]: ...


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
        self._looking: dict[object, int] = {}   # facts gatherings queued or running, per agent
        self.pending: dict[str, Ticket] = {}
        self.listeners: list[Listener] = []
        self.notice_listeners: list[NoticeListener] = []
        self.show_listeners: list[ShowListener] = []
        self.problems: dict[str, str] = {}
        """What the app runs without (the service's health, shared): ``status`` reports it."""
        self.settler: Settler | None = None
        """For the requests it :meth:`~Settler.settles`, every answer is settled before it is recorded."""
        self.relay_state: Callable[[], dict[str, Any]] | None = None
        """The relay's state for ``status`` (set by the relay, ``relay.approver``); None without one."""

    def __repr__(self) -> str:
        return (f"<Broker pending={len(self.pending)} mode={self.mode.mode} timeout={self.default_timeout:g}s "
                f"policy={'yes' if self.policy is not None else 'no'}>")

    # -- the two steps ------------------------------------------------------------------------

    def triage(self, identity: Identity, session: str, request_id: str, kind: AskKind,
               calls: Sequence[AskedCall], *, loop: asyncio.AbstractEventLoop | None = None,
               gone: AgentGone | None = None) -> Triage:
        """Read every call and decide what needs no person (rules, mode, session memory).

        When that is every call, the answer is recorded (call and answer in one commit) and in
        ``answered``. Synchronous on purpose: the server answers these in the turn that read the line.
        Given the ``loop``, the record joins the commit this turn shares (``commit``): the answer
        may go out once that is made, not before. Given ``gone`` and the agent gone already (its
        request sat unread while it gave up), nothing is decided: the calls are recorded as never
        answered (``undeliverable``).
        """
        infos = [_read(index, call, identity) for index, call in enumerate(calls)]
        risks = [info.risk_report() for info in infos]
        why = gone() if gone is not None else None
        if why is not None:
            return self._undeliverable(identity, session, request_id, kind, infos, risks, why)
        self.memory.seen(session, agent=identity.memory_agent)
        decided = [self._decide_without_person(info, risk, identity, session)
                   for info, risk in zip(infos, risks, strict=True)]
        due = [info.index for info, (verdict, _) in zip(infos, decided, strict=True)
               if (verdict is None or verdict.allowed and not _the_persons_word(verdict, info)) and consequential(info)]
        decided = [(None, None) if index in due else found for index, found in enumerate(decided)]
        verdicts = [verdict for verdict, _ in decided]
        infos = [info if because is None else replace(info, asked_because=because)
                 for info, (_, because) in zip(infos, decided, strict=True)]
        triage = Triage(identity, session, request_id, kind, infos, verdicts, risks, gone=gone, facts_due=due)
        answered = [verdict for verdict in verdicts if verdict is not None]
        if len(answered) == len(verdicts) and self._settles(identity):
            log.debug("answered at once, to be settled: %r", triage)  # by ask(), which then records it
        elif len(answered) == len(verdicts):  # each verdict made with its risk: the answer as it is sent
            triage.answered = answered
            if loop is None:
                self.audit.record_answered(identity, session, request_id, infos, answered)
            else:
                triage.delivery = Delivery(gone) if gone is not None else None
                triage.commit = self.audit.record_answered_in_turn(identity, session, request_id, infos, answered,
                                                                   loop=loop, delivery=triage.delivery)
            triage.recorded = True
            log.debug("answered at once: %r", triage)
        return triage

    def _undeliverable(self, identity: Identity, session: str, request_id: str, kind: AskKind,
                       infos: list[CallInfo], risks: list[RiskReport | None], why: str) -> Triage:
        """A request read after its agent had gone: recorded as never answered, nothing decided.

        No rule, mode or memory is consulted: an answer nobody receives must not read as one given."""
        verdicts = [Verdict("deny", "cancelled", note=f"agent gone ({why}) before its request was read; "
                            "never answered", risk=risk) for risk in risks]
        triage = Triage(identity, session, request_id, kind, infos, list(verdicts), risks, answered=verdicts,
                        undeliverable=why)
        self.audit.record_answered(identity, session, request_id, infos, verdicts)
        triage.recorded = True
        log.debug("not answered, the agent is gone (%s): %r", why, triage)
        return triage

    async def ask(self, triage: Triage, timeout: float | None = None) -> list[Verdict]:
        """The person decides what triage left open; the whole answer, in the calls' order.

        Calls whose judgement waits for facts (``facts_due``) are first judged with them, gathered
        in an executor (never on the loop); what that proves may still be answered without the
        person (then nobody is asked), the rest goes to the person with the facts to show.
        """
        if triage.answered is not None:
            return triage.answered
        if triage.facts_due:
            await self._judge_with_facts(triage)
            if triage.answered is not None:
                return triage.answered
        identity, session, request_id = triage.identity, triage.session, triage.request_id
        audit_ids = self.audit.record_calls(identity, session, request_id, triage.infos)  # before anyone is asked
        infos = [replace(info, audit_id=audit_id) for info, audit_id in zip(triage.infos, audit_ids, strict=True)]
        triage.infos, triage.recorded = infos, True
        verdicts = list(triage.verdicts)
        undecided = [info for info, verdict in zip(infos, verdicts, strict=True) if verdict is None]
        try:
            answers = await self._ask_person(triage, undecided, timeout) if undecided else []
            for info, verdict in zip(undecided, answers, strict=True):
                verdicts[info.index] = verdict
        except asyncio.CancelledError:  # withdrawn: in this turn's commit, so a thousand withdrawn are one
            cancelled = Verdict("deny", "cancelled", note="the agent cancelled the request or disconnected")
            self.audit.record_decisions_in_turn(((info.audit_id or 0, cancelled) for info in undecided),
                                                loop=asyncio.get_running_loop())
            raise
        except Exception:  # a broken prompt must not leave the agent hanging or the call allowed
            log.exception("asking the person failed for %s", printable(request_id))
            failed = Verdict("deny", "cancelled", note="desktop-approver could not ask the person (internal error)")
            for info in undecided:
                verdicts[info.index] = failed
        # An edited call is a new call: its answer carries the reading of what will run (issue 31).
        final = [replace(verdict or Verdict("deny", "user"),
                         risk=read_again(info, verdict.updated_args, identity).risk_report()
                         if verdict is not None and verdict.updated_args is not None else risk)
                 for verdict, risk, info in zip(verdicts, triage.risks, infos, strict=True)]
        if (gone_already := triage.gone() if triage.gone is not None else None) is not None:
            final = [_undelivered(verdict, gone_already) for verdict in final]  # nothing is remembered for nobody
        if self.settler is not None and self._settles(identity):
            try:
                final = await self.settler.settle(triage, final)
            except asyncio.CancelledError:
                cancelled = Verdict("deny", "cancelled", note="the agent cancelled the request or disconnected")
                self.audit.record_decisions((info.audit_id or 0, cancelled) for info in infos)
                raise
            except Unsettled:  # the answer may still stand: recorded by the settler once it is known
                log.warning("the answer to %s was cancelled while it was being settled", printable(request_id))
                raise asyncio.CancelledError from None
            except Exception:  # which answer stands is unknown: never recorded or sent as an allow
                log.exception("settling the answer to %s failed", printable(request_id))
                final = [replace(verdict, decision="deny", decided_by="cancelled", updated_args=None,
                                 note="desktop-approver could not settle the answer (internal error)")
                         for verdict in final]
        # looked for again just before the commit: the turns until then are a window too (SIGSTOP)
        delivery = Delivery(triage.gone) if triage.gone is not None and gone_already is None else None
        commit = self.audit.record_decisions_in_turn(
            ((info.audit_id or 0, verdict) for info, verdict in zip(infos, final, strict=True)),
            loop=asyncio.get_running_loop(), delivery=delivery)
        await _committed(commit)
        triage.delivery = delivery
        if delivery is not None and delivery.why is not None:  # gone during the commit's turns: recorded so
            return [_undelivered(verdict, delivery.why) for verdict in final]  # and nothing is remembered
        self._remember(final, infos, identity, session)
        return final

    def take(self, identity: Identity, session: str, request_id: str, kind: AskKind, calls: Sequence[AskedCall],
             *, timeout: float | None, admit: Callable[[int], bool], loop: asyncio.AbstractEventLoop,
             gone: AgentGone | None = None) -> Triage:
        """Take a request in, in one step: :meth:`triage` (answered at once: with the ``commit`` of this
        turn of ``loop`` to wait for); then, if the person must decide, ``admit`` (the transport's
        limit on calls waiting for the person, given their number) and :meth:`ask` started as
        ``asking``, a task on ``loop``. Not admitted: ``over_limit``, nobody is asked. ``gone`` says
        whether the agent can still receive an answer (:attr:`Triage.gone`).

        The server's way in: the request goes from the connection to the decider without coming back.
        """
        triage = self.triage(identity, session, request_id, kind, calls, loop=loop, gone=gone)
        if triage.answered is not None:
            return triage
        if not admit(triage.waiting):
            triage.over_limit = True
            return triage
        triage.asking = loop.create_task(self.ask(triage, timeout))
        return triage

    async def submit(self, identity: Identity, session: str, request_id: str, kind: AskKind,
                     calls: Sequence[AskedCall], timeout: float | None = None) -> list[Verdict]:
        """Decide every call (:meth:`triage`, then :meth:`ask` if a person must); answers in the calls' order."""
        triage = self.triage(identity, session, request_id, kind, calls)
        return triage.answered if triage.answered is not None else await self.ask(triage, timeout)

    async def _judge_with_facts(self, triage: Triage) -> None:
        """Gather the facts of the calls that wait for them (off the loop), judge them again, and
        decide what that proves; answered at once (and recorded) when nothing is left for the person."""
        due, triage.facts_due = triage.facts_due, []
        identity = triage.identity
        loop = asyncio.get_running_loop()
        infos = [triage.infos[index] for index in due]
        agent = (identity.peer_pid, identity.relay_user, identity.agent)
        if self._looking.get(agent, 0) >= MAX_LOOKS_PER_AGENT:
            # one agent's flood of calls never starves another's: past its share, its calls go to the person
            judged = [_without_facts(info, "too many of this agent's calls are being looked at at once")
                      for info in infos]
        else:
            self._looking[agent] = self._looking.get(agent, 0) + 1
            try:
                judged = await _looked_at(loop, infos, identity, triage.request_id)
            finally:
                self._looking[agent] -= 1
                if not self._looking[agent]:
                    del self._looking[agent]
        for info in judged:
            risk = info.risk_report()
            triage.infos[info.index], triage.risks[info.index] = info, risk
            verdict, because = self._decide_without_person(info, risk, identity, triage.session)
            triage.verdicts[info.index] = verdict
            if because is not None:
                triage.infos[info.index] = replace(info, asked_because=because)
        log.debug("judged with the facts of what they touch: %r", triage)
        if triage.waiting == 0 and not self._settles(identity):
            answered = [verdict for verdict in triage.verdicts if verdict is not None]
            self.audit.record_answered(identity, triage.session, triage.request_id, triage.infos, answered)
            triage.answered, triage.recorded = answered, True

    def withdrawn(self, triage: Triage) -> list[Verdict]:
        """The answer to a request withdrawn before the person answered it (a cancel, a disconnect):
        what was decided without the person stands, the rest is denied ``cancelled``.

        :meth:`ask` records a withdrawal it was waiting in; one withdrawn before :meth:`ask` began
        (the cancel came in the same read as the request) is recorded here, so no call goes unrecorded.
        """
        final = [replace(verdict or WITHDRAWN, risk=risk) for verdict, risk in zip(triage.verdicts, triage.risks,
                                                                                   strict=True)]
        if not triage.recorded:
            self.audit.record_answered(triage.identity, triage.session, triage.request_id, triage.infos, final)
            triage.recorded = True
        log.debug("withdrawn before the person answered: %r", triage)
        return final

    def _settles(self, identity: Identity) -> bool:
        return self.settler is not None and self.settler.settles(identity)

    def status(self) -> dict[str, Any]:
        return {"pending": sum(len(t.calls) for t in self.pending.values()), "mode": self.mode.mode,
                "mode_until": self.mode.until, "sessions": len(self.memory.sessions()),
                "problems": list(self.problems.values())}

    # -- steps ------------------------------------------------------------------------------

    def _decide_without_person(self, info: CallInfo, risk: RiskReport | None, identity: Identity,
                                session: str) -> tuple[Verdict | None, str | None]:
        """The verdict (told with ``risk``) that needs no person, or None: the person decides. With
        None, the one line saying why an automatic answer that would have applied was withheld
        (``CallInfo.asked_because``), or None when nothing would have answered the call by itself.

        A block or deny rule, deny-all and an ask rule need no proof; everything that *allows*
        without the person does (:mod:`..policy.automatic`): allow rules hold themselves to it,
        approve-all and a session approval of the whole tool answer only a fully understood call
        read as safe or moderate, and an exact-call session approval only a call not read as
        destructive (the person saw exactly it).
        """
        action, verdict, withheld = self._policy_verdict(info, risk, identity)
        if action in ("block", "deny"):
            return verdict, None
        mode = self.mode.mode
        if mode == modes.DENY_ALL:
            return Verdict("deny", "mode", note="desktop-approver is in deny-all mode", risk=risk), None
        if action == "ask":
            return None, None  # the person decides, whatever the mode or session memory would say
        if action == "allow":
            return verdict, None
        unproven_why = _unproven(info)
        passed_over = list(withheld)
        if mode == modes.APPROVE_ALL:
            if unproven_why is None:
                return Verdict("allow_once", "mode", risk=risk), None  # no note: nobody wrote one (decided_by says why)
            passed_over.append("approve-all mode")
        scopes: tuple[Scope, ...] = () if _destructive(info) else (EXACT,) if unproven_why else (EXACT, WHOLE_TOOL)
        if scopes and self.memory.lookup(session, info.tool, info.args, agent=identity.memory_agent,
                                         canonical=info.canonical_args, scopes=scopes) is not None:
            return Verdict("allow_session", "session", risk=risk), None
        held = self.memory.covering(session, info.tool, info.args, agent=identity.memory_agent,
                                    canonical=info.canonical_args)
        if held is not None:
            passed_over.append("the session approval of "
                               + ("the whole tool" if held.scope == WHOLE_TOOL else "this exact call"))
        if not passed_over:
            return None, None
        because = f"{unproven_why or 'not proven harmless'}; not answered by {' or '.join(passed_over)}"
        log.debug("an automatic answer was withheld from %s of agent %s: %s", printable(info.tool, 80),
                  printable(identity.label, 80), printable(because, 400))
        return None, because

    def _policy_verdict(self, info: CallInfo, risk: RiskReport | None,
                        identity: Identity) -> tuple[RuleAction | None, Verdict | None, tuple[str, ...]]:
        """The deciding rule's action (None: no rule), for allow / deny / block its verdict, and the
        allow rules that matched but were withheld (the call is not proven harmless enough)."""
        if self.policy is None:
            return None, None, ()
        try:
            explanation = self.policy.explain(info.policy_call(identity), candidates_only=True)
            found = explanation.verdict
            if found is None or found.action == "ask":
                return (found.action if found else None), None, tuple(rule.describe()
                                                                      for rule, _ in explanation.withheld)
        except Exception:  # a broken rule must never take the app down: fall back to asking
            log.exception("policy evaluation failed; asking the person")
            return None, None, ()
        rule, note = found.rule.describe(), found.rule.note or None  # the rule's own words, never invented ones
        if found.action == "allow":
            return "allow", Verdict("allow_once", "policy", rule=rule, note=note, risk=risk), ()
        return (found.action, Verdict("deny", "policy", rule=rule, note=note, blocked=found.action == "block",
                                      risk=risk), ())

    async def _ask_person(self, triage: Triage, calls: list[CallInfo], timeout: float | None) -> list[Verdict]:
        countdown = Countdown(timeout or self.default_timeout)
        ticket = Ticket(request_id=triage.request_id, kind=triage.kind, calls=calls, session=triage.session,
                        identity=triage.identity, countdown=countdown, batch_size=len(triage.infos))
        self.pending[ticket.key] = ticket
        log.debug("presented %r", ticket)
        self._notify("added", ticket)
        started = asyncio.get_running_loop().time()
        deciding = asyncio.ensure_future(self.decider.decide(ticket))
        try:
            either: set[asyncio.Future[Any]] = {deciding, countdown.expired}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if deciding.done() and countdown.latest() <= 0 and not deciding.cancelled() \
                    and deciding.exception() is None:
                # The app was held up (stopped, starved) past the request's deadline: an answer taken
                # now comes after the agent's wait was over, so the deadline decides, as it would have.
                log.debug("%s expired before its answer was taken: denied", ticket.key)
                return [Verdict("deny", "timeout", note=EXPIRED) for _ in calls]
            if deciding.done():
                verdicts = deciding.result()
                if len(verdicts) != len(calls):
                    raise RuntimeError(f"decider answered {len(verdicts)} of {len(calls)} calls")
                verdicts = [_no_session_scope_from_timeout(v) for v in verdicts]
                log.debug("%s decided in %.3f s: %s", ticket.key, asyncio.get_running_loop().time() - started,
                          _Decisions(verdicts))
                return verdicts
            log.debug("%s timed out after %.3f s: denied", ticket.key, asyncio.get_running_loop().time() - started)
            return [Verdict("deny", "timeout", note="nobody answered in time") for _ in calls]
        except asyncio.CancelledError:
            log.debug("%s withdrawn after %.3f s", ticket.key, asyncio.get_running_loop().time() - started)
            raise
        finally:
            countdown.cancel()
            if not deciding.done():
                deciding.cancel()
            self.pending.pop(ticket.key, None)
            self._notify("removed", ticket)

    def _remember(self, verdicts: list[Verdict], infos: list[CallInfo], identity: Identity, session: str) -> None:
        for verdict, info in zip(verdicts, infos, strict=True):
            if verdict.updated_args is not None:  # what is remembered is what will run, read again
                info = read_again(info, verdict.updated_args, identity)
            if verdict.decision == "allow_session" and verdict.decided_by == "user" and not _destructive(info):
                self.memory.remember(session, info.tool, verdict.updated_args or info.args, scope=verdict.scope,
                                     agent=identity.memory_agent, risk=info.risk.shown if info.risk else None)

    def tell(self, identity: Identity, kind: str, text: str) -> None:
        """An agent's notice for the person (the GUI shows it); it never touches a decision."""
        for listener in list(self.notice_listeners):
            try:
                listener(identity, kind, text)
            except Exception:
                log.exception("notice listener failed")

    def show(self, what: str) -> bool:
        """The person asked to see the waiting request or a window; False when nobody shows windows."""
        shown = False
        for listener in list(self.show_listeners):
            try:
                listener(what)
                shown = True
            except Exception:
                log.exception("show listener failed")
        return shown

    def _notify(self, event: str, ticket: Ticket) -> None:
        for listener in list(self.listeners):
            try:
                listener(event, ticket)
            except Exception:
                log.exception("ticket listener failed")


class _Decisions:
    """Verdicts for a debug line, formatted only when the line is written."""

    __slots__ = ("verdicts",)

    def __init__(self, verdicts: list[Verdict]) -> None:
        self.verdicts = verdicts

    def __str__(self) -> str:
        return ", ".join(f"{v.decision} by {v.decided_by}" for v in self.verdicts)


def _read(index: int, call: AskedCall, identity: Identity) -> CallInfo:
    """The call as the core keeps it, straight from the validated message, with the app's risk reading."""
    hints = call.hints.as_dict() if call.hints is not None else {}
    canonical = canonical_json(call.args)  # validated JSON: it always serialises
    return CallInfo(index=index, tool=call.tool, args=call.args, description=call.description,
                    preview=call.preview.model_dump(exclude_none=True) if call.preview is not None else None,
                    hints=hints, risk=_assess_where(call.tool, call.args, identity, hints, canonical),
                    canonical_args=canonical)


def read_again(info: CallInfo, args: dict[str, Any], identity: Identity) -> CallInfo:
    """The call with the person's edited arguments, read as a new call (issue 31): its own risk
    and understanding; the agent's preview (a picture of the old arguments) dropped. The agent's
    hints stay: they can only raise a level."""
    canonical = canonical_json(args)
    return replace(info, args=args, preview=None, canonical_args=canonical, asked_because=None, consequences=None,
                   risk=_assess_where(info.tool, args, identity, info.hints, canonical))


def consequential(info: CallInfo) -> bool:
    """The call's judgement depends on this machine's files (issue 32): no automatic allow before
    the facts of what it touches are in (:meth:`Broker._judge_with_facts`)."""
    from ..calls.risk.touching import needs_facts_of
    return info.consequences is None and needs_facts_of(info.tool, info.args, info.canonical_args)


def _the_persons_word(verdict: Verdict, info: CallInfo) -> bool:
    """An allow rule that accepted a call read as destructive (``risk = "destructive"``): the
    person's own declaration, which no fact about the files changes."""
    return verdict.decided_by == "policy" and _destructive(info)


def facts_unavailable(identity: Identity) -> str | None:
    """Why this machine cannot see the agent's files, or None: it can (a local agent)."""
    if identity.relay_user is not None:
        return "the agent is on another machine (over the relay)"
    if identity.cwd_agrees is False:
        return "the agent's directory is not its process's (a forwarded socket: its files are elsewhere)"
    if identity.peer_cwd is None:
        # the kernel names no directory: a forwarded socket (``ssh -R``: the peer is the forwarder,
        # not the agent), a /proc the app cannot read; a claimed path that exists here proves nothing
        return "the kernel does not vouch for the agent's directory (a forwarded socket: its files may be elsewhere)"
    return None


_FACTS_POOL: list[ThreadPoolExecutor] = []


def _facts_pool() -> ThreadPoolExecutor:
    """The threads that gather facts: the broker's own, never the loop's default executor. Under
    qasync that executor is made of QThreads, which the app does not wait for when it ends, and Qt
    aborts the process for a QThread still running at exit (every waiting agent then got EOF
    instead of ``shutting_down``)."""
    if not _FACTS_POOL:
        _FACTS_POOL.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="call-facts"))
    return _FACTS_POOL[0]


FACTS_TIMEOUT = 10.0
"""Seconds one call's facts may take in all before the person decides without them (the gathering's
own budget is far smaller: this is for a look stuck in the kernel, a network file system, a lock)."""


MAX_LOOKS_PER_AGENT = 4
"""Fact gatherings one agent may have queued or running at once (the pool has two threads)."""
FACTS_QUEUE_TIMEOUT = 60.0
"""Seconds a gathering may wait for a thread; its own ``FACTS_TIMEOUT`` counts from when it starts."""


async def _looked_at(loop: asyncio.AbstractEventLoop, infos: list[CallInfo], identity: Identity,
                     request_id: str) -> list[CallInfo]:
    """The calls judged with their facts, in the facts pool. The time bound counts from when the
    look starts, not while it waits behind other agents' looks."""
    began = asyncio.Event()

    def look() -> list[CallInfo]:
        loop.call_soon_threadsafe(began.set)
        return _with_facts(infos, identity)

    future = loop.run_in_executor(_facts_pool(), look)
    try:
        async with asyncio.timeout(FACTS_QUEUE_TIMEOUT):
            await began.wait()
        # the budget bounds each look; this bounds a look stuck in the kernel (never a hang)
        async with asyncio.timeout(FACTS_TIMEOUT * max(1, len(infos))):
            return await future
    except TimeoutError:
        future.cancel()
        log.warning("the facts of %d call(s) of %s took too long: the person decides", len(infos),
                    printable(request_id, 80))
        return [_without_facts(info, "looking at its files took too long") for info in infos]


def _without_facts(info: CallInfo, why: str) -> CallInfo:
    """The call with no facts, so not understood: it goes to the person, who is told why."""
    from ..calls.facts import Facts
    facts = Facts.unavailable(why)
    risk = replace(info.risk, understood=False, gaps=(*info.risk.gaps, f"facts about its paths are unavailable: "
                                                                       f"{why}")) if info.risk else None
    return replace(info, risk=risk, consequences=facts)


def _with_facts(infos: list[CallInfo], identity: Identity) -> list[CallInfo]:
    """Blocking (an executor's thread): each call judged with the facts of what it touches."""
    from ..calls.risk.touching import assess_touching
    unavailable = facts_unavailable(identity)
    out = []
    for info in infos:
        risk: RiskAssessment | None
        try:
            risk, facts = assess_touching(info.tool, info.args, cwd=identity.policy_cwd, hints=info.hints,
                                          unavailable=unavailable)
        except Exception:  # facts not gathered prove nothing: the call keeps its reading, and goes to the person
            log.exception("judging %s with its facts failed", printable(info.tool, 80))
            out.append(_without_facts(info, "looking at its files failed (internal error)"))
            continue
        if info.risk is not None and risk is not None and LEVELS.index(info.risk.level) > LEVELS.index(risk.level) \
                and identity.cwd and identity.cwd != identity.policy_cwd:
            # the claimed directory's reading was worse: it stands (a claim never lowers a level)
            risk = replace(risk, level=info.risk.level, reasons=info.risk.reasons)
        out.append(replace(info, risk=risk, consequences=facts))
    return out


def _unproven(info: CallInfo) -> str | None:
    """Why approve-all or a whole-tool session approval may not answer the call; None when they may."""
    risk = info.risk
    if risk is None:
        return unproven(None, False, ())
    return unproven(risk.level, risk.understood, risk.gaps)


def _destructive(info: CallInfo) -> bool:
    """The risk assessment prepared for the call says destructive: only a person may allow it."""
    return info.risk is not None and info.risk.level == "destructive"


async def _committed(commit: GroupCommit) -> None:
    """Wait for the turn's commit of a decision (many requests timing out together share one). The
    decision is in the log once it is made: a cancel arriving meanwhile no longer changes the answer
    (the agent is answered what was recorded), so the wait is finished, not abandoned."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished(error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)

    commit.when_done(finished)
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        if not done.done():
            await done  # the commit ends within this turn; its outcome decides
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        done.result()


def _undelivered(verdict: Verdict, why: str) -> Verdict:
    """The record of an answer its agent was not there to receive: not allowed, and why."""
    return replace(verdict, decision="deny", decided_by="cancelled", updated_args=None, blocked=False,
                   note=undelivered_note(verdict, why))


def _no_session_scope_from_timeout(verdict: Verdict) -> Verdict:
    """Only a person can make something remembered; anything else is at most allow_once."""
    if verdict.decision == "allow_session" and verdict.decided_by != "user":
        return replace(verdict, decision="allow_once")
    return verdict


def _assess_where(tool: str, args: dict[str, Any], identity: Identity, hints: dict[str, Any],
                  canonical: str | None = None) -> RiskAssessment:
    """The risk judged from the directory the kernel says the agent is in; where the agent claims
    another one, the worse of the two readings (a claim must never move a path inside)."""
    found = assess(tool, args, cwd=identity.policy_cwd, hints=hints, canonical_args=canonical)
    if identity.cwd and identity.cwd != identity.policy_cwd:
        claimed = assess(tool, args, cwd=identity.cwd, hints=hints, canonical_args=canonical)
        if LEVELS.index(claimed.level) > LEVELS.index(found.level):
            return claimed
    return found
