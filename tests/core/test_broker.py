"""The broker's order of decisions, its timeout and cancellation, and its audit trail."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from desktop_approver.core.decisions import broker as broker_module
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.decisions.memory import SessionMemory
from desktop_approver.core.decisions.tickets import Identity, Ticket, Verdict
from desktop_approver.core.messages.models import ToolCall
from desktop_approver.core.policy import Policy
from desktop_approver.core.store.audit import AuditLog
from tests.support.deciders import ScriptedPerson, WaitingPerson, every

WHO = Identity(agent="agent", cwd="/home/me/project", peer_pid=7)


@pytest.fixture
def understood(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call read as fully understood, at the level and with the reasons the reader gives it.

    These tests are about the broker's order of decisions, not about the catalog: their calls
    (``ls``, ``echo hi``, ``npm test``) are everyday commands the catalog reads in full. What an
    automatic answer needs, call by call, is tested through the real reader in
    tests/core/test_automatic_answers.py.
    """
    real = broker_module.assess
    monkeypatch.setattr(broker_module, "assess", lambda *a, **k: replace(real(*a, **k), understood=True))


def allow_all(decision: str = "allow_once", scope: str = "exact") -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [Verdict(decision, "user", scope=scope) for _ in ticket.calls]


def broker_for(tmp_path: Path, decider: ScriptedPerson, *, policy_toml: str | None = None,
               timeout: float = 10) -> Broker:
    policy = Policy.parse(policy_toml, "test.toml") if policy_toml else None
    return Broker(decider, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(), policy=policy,
                  mode=modes.ModeState(tmp_path / "state.json"), default_timeout=timeout)


def call(command: str, tool: str = "Bash") -> list[ToolCall]:
    return [ToolCall(tool=tool, args={"command": command})]


def submit(broker: Broker, calls: list[ToolCall], session: str = "s", request_id: str = "r") -> list[Verdict]:
    return asyncio.run(broker.submit(WHO, session, request_id, "request" if len(calls) == 1 else "batch", calls))


POLICY = """
version = 1
[[rule]]
action = "block"
tool = "Bash"
command = "shutdown*"
note = "never"

[[rule]]
action = "allow"
tool = "Bash"
command = "ls*"

[[rule]]
action = "ask"
tool = "Bash"
command = "git push*"
"""


def test_policy_block_wins_over_every_mode(tmp_path: Path) -> None:
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = submit(broker, call("shutdown now"))[0]
    assert (verdict.decision, verdict.decided_by, verdict.blocked) == ("deny", "policy", True)
    assert verdict.rule


def test_deny_all_mode_wins_over_policy_allow_and_memory(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all())
    broker = broker_for(tmp_path, decider, policy_toml=POLICY)
    broker.memory.remember("s", "Bash", {"command": "pwd"}, agent=WHO.agent)
    broker.mode.set(modes.DENY_ALL)
    for command in ("ls -l", "pwd", "echo hi"):
        verdict = submit(broker, call(command))[0]
        assert (verdict.decision, verdict.decided_by, verdict.blocked) == ("deny", "mode", False)
    assert decider.seen == []


@pytest.mark.usefixtures("understood")
def test_policy_allow_answers_before_approve_all_and_memory(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all())
    broker = broker_for(tmp_path, decider, policy_toml=POLICY)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = submit(broker, call("ls -l"))[0]
    assert (verdict.decision, verdict.decided_by) == ("allow_once", "policy")
    assert decider.seen == []


def test_policy_ask_reaches_the_person_despite_approve_all_and_memory(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all())
    broker = broker_for(tmp_path, decider, policy_toml=POLICY)
    broker.memory.remember("s", "Bash", {}, scope="tool", agent=WHO.agent)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = submit(broker, call("git push origin main"))[0]
    assert verdict.decided_by == "user" and len(decider.seen) == 1


@pytest.mark.usefixtures("understood")
def test_approve_all_allows_ordinary_calls_but_never_destructive_ones(tmp_path: Path) -> None:
    decider = ScriptedPerson(lambda t: [Verdict("deny", "user") for _ in t.calls])
    broker = broker_for(tmp_path, decider)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    safe = submit(broker, call("echo hello"))[0]
    assert (safe.decision, safe.decided_by) == ("allow_once", "mode")
    destructive = submit(broker, call("rm -rf /"))[0]
    assert destructive.risk and destructive.risk["level"] == "destructive"
    assert (destructive.decision, destructive.decided_by) == ("deny", "user")
    assert len(decider.seen) == 1


@pytest.mark.usefixtures("understood")
def test_approve_all_comes_before_session_memory(tmp_path: Path) -> None:
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()))
    broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent=WHO.agent)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert submit(broker, call("echo hi"))[0].decided_by == "mode"


def test_session_memory_answers_before_the_person(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all())
    broker = broker_for(tmp_path, decider)
    broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent=WHO.agent)
    verdict = submit(broker, call("echo hi"))[0]
    assert (verdict.decision, verdict.decided_by) == ("allow_session", "session")
    assert decider.seen == []


def test_timeout_denies_and_is_never_remembered(tmp_path: Path) -> None:
    decider = WaitingPerson()
    broker = broker_for(tmp_path, decider, timeout=0.2)
    verdict = submit(broker, call("echo hi"))[0]
    assert (verdict.decision, verdict.decided_by) == ("deny", "timeout")
    assert decider.cancelled == 1 and broker.pending == {}
    assert broker.memory.entries() == []
    assert broker.audit.history()[0].decided_by == "timeout"


def test_a_decider_cannot_make_a_non_user_verdict_remembered(tmp_path: Path) -> None:
    broker = broker_for(tmp_path, ScriptedPerson(lambda t: [Verdict("allow_session", "timeout")]))
    verdict = submit(broker, call("echo hi"))[0]
    assert verdict.decision == "allow_once" and broker.memory.entries() == []


def test_cancellation_cancels_the_decider_and_is_audited(tmp_path: Path) -> None:
    decider = WaitingPerson()
    broker = broker_for(tmp_path, decider)
    events: list[str] = []
    broker.listeners.append(lambda event, ticket: events.append(event))

    async def scenario() -> None:
        task = asyncio.ensure_future(broker.submit(WHO, "s", "r1", "request", call("echo hi")))
        while not decider.seen:
            await asyncio.sleep(0.01)
        assert len(broker.pending) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

    asyncio.run(scenario())
    assert decider.cancelled == 1 and broker.pending == {}
    assert events == ["added", "removed"]
    entry = broker.audit.history()[0]
    assert (entry.decision, entry.decided_by) == ("deny", "cancelled")


def test_allow_session_exact_remembers_only_the_same_arguments(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all("allow_session"))
    broker = broker_for(tmp_path, decider)
    submit(broker, call("echo a"))
    assert submit(broker, call("echo a"))[0].decided_by == "session"
    assert submit(broker, call("echo b"))[0].decided_by == "user"
    assert submit(broker, call("echo a"), session="other")[0].decided_by == "user"


@pytest.mark.usefixtures("understood")
def test_allow_session_tool_scope_covers_every_call_of_the_tool_in_that_session(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all("allow_session", scope="tool"))
    broker = broker_for(tmp_path, decider)
    submit(broker, call("echo a"))
    assert submit(broker, call("echo b"))[0].decided_by == "session"
    assert submit(broker, call("echo b", tool="Shell"))[0].decided_by == "user"
    assert submit(broker, call("echo b"), session="other")[0].decided_by == "user"


@pytest.mark.usefixtures("understood")
def test_batch_partial_approval_in_order(tmp_path: Path) -> None:
    decider = ScriptedPerson(lambda t: [Verdict("allow_once" if i % 2 == 0 else "deny", "user", note=None if i % 2 == 0
                                          else "not that one") for i in range(len(t.calls))])
    broker = broker_for(tmp_path, decider, policy_toml=POLICY)
    calls = call("echo a") + call("ls") + call("echo b") + call("echo c")
    verdicts = submit(broker, calls, request_id="b1")
    assert [(v.decision, v.decided_by) for v in verdicts] == [
        ("allow_once", "user"), ("allow_once", "policy"), ("deny", "user"), ("allow_once", "user")]
    assert verdicts[2].note == "not that one"
    ticket = decider.seen[0]
    assert [c.index for c in ticket.calls] == [0, 2, 3] and ticket.batch_size == 4


@pytest.mark.usefixtures("understood")
def test_every_request_and_decision_reaches_the_audit_log(tmp_path: Path) -> None:
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)
    submit(broker, call("ls"), request_id="a")            # policy, answered at once
    submit(broker, call("echo x"), request_id="b")        # the person
    submit(broker, call("shutdown"), request_id="c")      # blocked
    history = {entry.tool + ":" + entry.args["command"]: entry for entry in broker.audit.history()}
    assert len(history) == 3 and broker.audit.count() == 3
    assert history["Bash:ls"].decided_by == "policy"
    assert history["Bash:echo x"].decided_by == "user"
    assert history["Bash:shutdown"].blocked
    assert all(entry.decision for entry in history.values())


@pytest.mark.parametrize("failure", ["raises", "wrong_count"])
def test_a_broken_decider_denies_and_the_broker_survives(tmp_path: Path, failure: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    def broken(ticket: Ticket) -> list[Verdict]:
        if failure == "raises":
            raise RuntimeError("the dialog crashed")
        return []

    broker = broker_for(tmp_path, ScriptedPerson(broken))
    verdict = submit(broker, call("echo hi"))[0]
    assert verdict.decision == "deny" and broker.pending == {}
    assert broker.audit.history()[0].decision == "deny"
    broker.decider = ScriptedPerson(allow_all())
    assert submit(broker, call("echo hi"), request_id="r2")[0].decision == "allow_once"
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failed] == ["asking the person failed for r"]
    assert "decider answered 0 of 1 calls" in caplog.text or failure == "raises"


def test_a_failing_policy_falls_back_to_asking(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def explain(self, call: object) -> object:
            raise ValueError("bad rule")

    decider = ScriptedPerson(allow_all())
    broker = broker_for(tmp_path, decider)
    broker.policy = Broken()
    assert submit(broker, call("echo hi"))[0].decided_by == "user"
    assert "policy evaluation failed; asking the person" in caplog.text


# -- flow, with a person who answers or waits ------------------------------------------------------

def make(tmp_path: Path, person: ScriptedPerson, timeout: float = 5) -> Broker:
    return Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(), default_timeout=timeout)


def calls(*commands: str) -> list[ToolCall]:
    return [ToolCall(tool="Bash", args={"command": command}) for command in commands]


def test_timeout_denies_and_remembers_nothing(tmp_path: Path) -> None:
    person = WaitingPerson()
    broker = make(tmp_path, person, timeout=0.2)
    verdict = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert (verdict.decision, verdict.decided_by) == ("deny", "timeout")
    assert broker.memory.entries() == [] and broker.pending == {}
    entry = broker.audit.history()[0]
    assert entry.decided_by == "timeout" and entry.tool == "Bash"


@pytest.mark.usefixtures("understood")
def test_allow_session_is_remembered_per_session_and_scope(tmp_path: Path) -> None:
    person = ScriptedPerson(lambda t: [Verdict("allow_session", "user", scope="tool") for _ in t.calls])
    broker = make(tmp_path, person)
    asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))
    again = asyncio.run(broker.submit(WHO, "s", "r2", "request", calls("pwd")))[0]
    assert again.decided_by == "session" and len(person.seen) == 1        # whole tool remembered
    other = asyncio.run(broker.submit(WHO, "t", "r3", "request", calls("ls")))[0]
    assert other.decided_by == "user" and len(person.seen) == 2


def test_edited_arguments_are_what_gets_remembered(tmp_path: Path) -> None:
    person = ScriptedPerson(lambda t: [Verdict("allow_session", "user", updated_args={"command": "ls -a"})])
    broker = make(tmp_path, person)
    first = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert first.updated_args == {"command": "ls -a"}
    assert asyncio.run(broker.submit(WHO, "s", "r2", "request", calls("ls -a")))[0].decided_by == "session"
    assert asyncio.run(broker.submit(WHO, "s", "r3", "request", calls("ls")))[0].decided_by == "user"


def test_an_edit_is_read_again_its_answer_carries_the_new_reading_and_destructive_is_not_remembered(
        tmp_path: Path) -> None:
    """Issue 31: whatever a decider answers, the edited call is what is read, told and remembered."""
    person = ScriptedPerson(lambda t: [Verdict("allow_session", "user", updated_args={"command": "rm -rf ~/x"},
                                               scope="tool")])
    broker = make(tmp_path, person)
    first = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert first.risk is not None and first.risk["level"] == "destructive"  # not the agent's "ls"
    assert broker.memory.entries() == []  # a destructive call is never remembered, edited or not
    assert asyncio.run(broker.submit(WHO, "s", "r2", "request", calls("pwd")))[0].decided_by == "user"


def test_batch_gets_one_verdict_per_call_in_order_and_all_are_audited(tmp_path: Path) -> None:
    person = ScriptedPerson(lambda t: [Verdict("allow_once" if i % 2 == 0 else "deny", "user")
                                       for i in range(len(t.calls))])
    broker = make(tmp_path, person)
    broker.memory.remember("s", "Bash", {"command": "b"}, agent=WHO.agent)
    verdicts = asyncio.run(broker.submit(WHO, "s", "batch-1", "batch", calls("a", "b", "c", "d")))
    assert [(v.decision, v.decided_by) for v in verdicts] == [
        ("allow_once", "user"), ("allow_session", "session"), ("deny", "user"), ("allow_once", "user")]
    assert len(person.seen[0].calls) == 3                  # the remembered call never reached the person
    history = broker.audit.history()
    assert len(history) == 4 and all(entry.decision for entry in history)


def test_a_broken_prompt_denies_and_is_audited(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def explode(ticket: Ticket) -> list[Verdict]:
        raise RuntimeError("the dialog fell over")

    broker = make(tmp_path, ScriptedPerson(explode))
    verdict = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert verdict.decision == "deny" and "internal error" in (verdict.note or "")
    assert broker.audit.history()[0].decision == "deny"
    assert "asking the person failed for r1" in caplog.text


@pytest.mark.usefixtures("caplog")  # the error it logs is expected (asserted in the broken-decider test)
def test_a_decider_answering_the_wrong_number_of_calls_fails_closed(tmp_path: Path) -> None:
    broker = make(tmp_path, ScriptedPerson(lambda t: []))
    verdicts = asyncio.run(broker.submit(WHO, "s", "r1", "batch", calls("a", "b")))
    assert [v.decision for v in verdicts] == ["deny", "deny"]


def test_listeners_see_tickets_come_and_go(tmp_path: Path) -> None:
    events: list[str] = []
    broker = make(tmp_path, ScriptedPerson(lambda t: [Verdict("deny", "user")]))
    broker.listeners.append(lambda event, ticket: events.append(event))
    asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))
    assert events == ["added", "removed"]


# -- policy against modes and memory; risk in every answer -----------------------------------------

def broker_with_policy(tmp_path: Path, policy_text: str, person: ScriptedPerson) -> Broker:
    mode = modes.ModeState(tmp_path / "state.json")
    return Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(),
                  policy=Policy.parse(policy_text), mode=mode, default_timeout=5)


def ask(b: Broker, command: str, session: str = "s") -> Verdict:
    call = ToolCall(tool="Bash", args={"command": command})
    return asyncio.run(b.submit(WHO, session, "r", "request", [call]))[0]


@pytest.mark.usefixtures("understood")
def test_ask_rule_beats_approve_all_and_session_memory(tmp_path: Path) -> None:
    person = ScriptedPerson(every("deny", note="asked"))
    b = broker_with_policy(tmp_path, '[[rule]]\naction = "ask"\ntool = "Bash"\ncommand = "git push *"\n', person)
    b.mode.set(modes.APPROVE_ALL, seconds=600)
    b.memory.remember("s", "Bash", {"command": "git push origin main"}, agent=WHO.agent)
    verdict = ask(b, "git push origin main")
    assert verdict.decided_by == "user" and verdict.note == "asked" and len(person.seen) == 1
    other = ask(b, "npm test")                         # no rule: approve-all answers
    assert other.decided_by == "mode" and other.decision == "allow_once"


def test_deny_all_still_beats_an_ask_rule(tmp_path: Path) -> None:
    person = ScriptedPerson(every("deny", note="asked"))
    b = broker_with_policy(tmp_path, '[[rule]]\naction = "ask"\ntool = "Bash"\n', person)
    b.mode.set(modes.DENY_ALL)
    verdict = ask(b, "ls")
    assert verdict.decided_by == "mode" and person.seen == []


def test_every_answer_carries_the_risk_the_app_found(tmp_path: Path) -> None:
    person = ScriptedPerson(every("deny", note="asked"))
    b = broker_with_policy(tmp_path, '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls"\n', person)
    assert ask(b, "ls").risk == {"level": "safe", "reasons": []}
    denied = ask(b, "rm -rf build")
    assert denied.risk is not None and denied.risk["level"] == "destructive"
    assert "deletes recursively" in denied.risk["reasons"]


@pytest.mark.usefixtures("understood")
@pytest.mark.parametrize("scope", ["tool", "exact"])
def test_session_memory_never_answers_a_destructive_call(tmp_path: Path, scope: str) -> None:
    destructive = "rm -rf /home/me/important"
    decider = ScriptedPerson(allow_all("allow_once"))
    broker = broker_for(tmp_path, decider)
    broker.memory.remember("s", "Bash", {"command": destructive} if scope == "exact" else {}, scope=scope,
                           agent=WHO.agent)
    verdict = submit(broker, call(destructive))[0]
    assert verdict.risk is not None and verdict.risk["level"] == "destructive"
    assert (verdict.decision, verdict.decided_by) == ("allow_once", "user")  # the person was asked
    assert [c.args["command"] for t in decider.seen for c in t.calls] == [destructive]
    if scope == "tool":  # the same approval still covers the tool's ordinary calls
        assert submit(broker, call("ls -la"))[0].decided_by == "session"


def test_a_destructive_call_allowed_for_the_session_is_not_remembered(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all("allow_session", scope="tool"))
    broker = broker_for(tmp_path, decider)
    submit(broker, call("rm -rf /home/me/important"))
    assert broker.memory.entries() == []
    assert submit(broker, call("rm -rf /home/me/important"))[0].decided_by == "user"


def test_another_agent_naming_the_same_session_gets_nothing_from_it(tmp_path: Path) -> None:
    decider = ScriptedPerson(allow_all("allow_session", scope="tool"))
    broker = broker_for(tmp_path, decider)
    submit(broker, call("ls"))                                   # agent A: "Bash, any arguments, session s"
    other = Identity(agent="intruder", cwd="/tmp", peer_pid=8)
    verdict = asyncio.run(broker.submit(other, "s", "r2", "request", call("cat notes.txt")))[0]
    assert verdict.decided_by == "user" and len(decider.seen) == 2


@pytest.mark.usefixtures("understood")
def test_notes_only_where_a_person_or_a_rule_wrote_one(tmp_path: Path) -> None:
    quiet = 'version = 1\n[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls*"\n'
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=quiet)
    by_rule = submit(broker, call("ls -la"))[0]
    assert (by_rule.decided_by, by_rule.note) == ("policy", None)     # the rule has no note: none is made up
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    by_mode = submit(broker, call("echo hi"))[0]
    assert (by_mode.decided_by, by_mode.note) == ("mode", None)
    noted = broker_for(tmp_path / "n", ScriptedPerson(allow_all()), policy_toml=quiet + 'note = "listing is fine"\n')
    assert submit(noted, call("ls"))[0].note == "listing is fine"


def test_risk_is_judged_where_the_kernel_says_the_agent_is_and_a_claim_never_lowers_it() -> None:
    from desktop_approver.core.decisions.broker import _assess_where
    from desktop_approver.core.decisions.tickets import Identity

    write = ("Write", {"file_path": "notes.txt", "content": "x"})
    honest = Identity(agent="a", cwd="/home/u/proj", peer_cwd="/home/u/proj")
    assert _assess_where(*write, honest, {}).level == "moderate"
    lying = Identity(agent="a", cwd="/home/u/proj", peer_cwd="/etc")        # claims a project, sits in /etc
    assert _assess_where(*write, lying, {}).level == "destructive"
    odd = Identity(agent="a", cwd="/etc", peer_cwd="/home/u/proj")          # the worse of the two readings
    assert _assess_where(*write, odd, {}).level == "destructive"
    relayed = Identity(agent="a", cwd="/home/u/proj", peer_cwd=None)        # a forwarded socket: the claim
    assert _assess_where(*write, relayed, {}).level == "moderate"


@pytest.mark.usefixtures("understood")
def test_take_answers_at_once_admits_or_refuses_then_asks_in_one_step(tmp_path: Path) -> None:
    """The server's way in: triage, the transport's admission, and the person asked, without coming back."""
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)
    admitted: list[int] = []

    async def main() -> list[object]:
        loop = asyncio.get_running_loop()
        ruled = broker.take(WHO, "s", "r1", "request", call("ls -la"), timeout=None, admit=admitted.append, loop=loop)
        refused = broker.take(WHO, "s", "r2", "batch", call("make") + call("make test"), timeout=None,
                              admit=lambda waiting: admitted.append(waiting) or False, loop=loop)
        asked = broker.take(WHO, "s", "r3", "request", call("make"), timeout=None,
                            admit=lambda waiting: admitted.append(waiting) or True, loop=loop)
        assert asked.asking is not None
        answer = await asked.asking
        return [ruled.answered and ruled.answered[0].decided_by, ruled.asking, refused.over_limit, refused.asking,
                [v.decision for v in answer], admitted]

    assert asyncio.run(main()) == ["policy", None, True, None, ["allow_once"], [2, 1]]
    # r2 was not admitted: nobody was asked and its calls are not in the log (the connection audits the refusal)
    assert [entry.args["command"] for entry in broker.audit.history()] == ["make", "ls -la"]


class TakeTheirs:
    """A :class:`~desktop_approver.core.decisions.broker.Settler` for which another answer stood
    (the NATS relay, when another approver wrote first): every answer becomes a deny by ``policy``."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    def settles(self, identity: Identity) -> bool:
        return identity.agent == "remote"

    async def settle(self, triage: broker_module.Triage, verdicts: list[Verdict]) -> list[Verdict]:
        await asyncio.sleep(0)
        self.offered.append([f"{verdict.decision} by {verdict.decided_by}" for verdict in verdicts])
        return [Verdict("deny", "policy", note="answered elsewhere", risk=verdict.risk) for verdict in verdicts]


def test_a_settled_answer_is_what_the_audit_log_records_at_once_or_from_the_person(tmp_path: Path) -> None:
    """The audit log records the answer that stands, never this app's own when another stood: for
    calls a rule answers at once (recorded once settled, not in the turn) and for the person's."""
    broker = broker_for(tmp_path, ScriptedPerson(allow_all("allow_session")), policy_toml=POLICY)
    settler = broker.settler = TakeTheirs()
    remote = replace(WHO, agent="remote")

    async def go() -> list[list[Verdict]]:
        return [await broker.submit(remote, "s", "ruled", "request", call("ls -l")),
                await broker.submit(remote, "s", "asked", "request", call("make")),
                await broker.submit(WHO, "s", "local", "request", call("ls -l"))]

    ruled, asked, local = asyncio.run(go())
    assert settler.offered == [["allow_once by policy"], ["allow_session by user"]]  # the local one is not settled
    assert [(v.decision, v.decided_by) for v in ruled + asked + local] == [
        ("deny", "policy"), ("deny", "policy"), ("allow_once", "policy")]
    recorded = sorted((entry.agent, entry.args["command"], entry.decision, entry.decided_by, entry.note)
                      for entry in broker.audit.history())
    assert recorded == [("agent", "ls -l", "allow_once", "policy", None),
                        ("remote", "ls -l", "deny", "policy", "answered elsewhere"),
                        ("remote", "make", "deny", "policy", "answered elsewhere")]
    assert not broker.memory.entries()  # nothing remembered from an answer that did not stand


@pytest.mark.logs("settling the answer to r failed")
def test_a_settler_that_fails_leaves_a_deny_never_the_allow(tmp_path: Path) -> None:
    class Broken(TakeTheirs):
        async def settle(self, triage: broker_module.Triage, verdicts: list[Verdict]) -> list[Verdict]:
            raise RuntimeError("the relay broke")

    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)
    broker.settler = Broken()
    (verdict,) = asyncio.run(broker.submit(replace(WHO, agent="remote"), "s", "r", "request", call("make")))
    assert (verdict.decision, verdict.decided_by) == ("deny", "cancelled")
    (entry,) = broker.audit.history()
    assert (entry.decision, entry.decided_by) == ("deny", "cancelled") and "could not settle" in (entry.note or "")


# -- the answer recorded is the answer delivered (issue 34, item 2) ---------------------------------

@pytest.mark.usefixtures("understood")
def test_an_agent_gone_before_its_request_is_read_is_recorded_as_never_answered(tmp_path: Path) -> None:
    """Its request sat unread while it gave up: no rule is asked, nobody is asked, nothing allowed."""
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)

    async def main() -> broker_module.Triage:
        return broker.take(WHO, "s", "r1", "request", call("ls -la"), timeout=None, admit=lambda _: True,
                           loop=asyncio.get_running_loop(), gone=lambda: "the agent closed its connection")

    triage = asyncio.run(main())
    assert triage.undeliverable == "the agent closed its connection" and triage.asking is None
    [entry] = broker.audit.history()
    assert (entry.decision, entry.decided_by) == ("deny", "cancelled")
    assert entry.note is not None and "agent gone" in entry.note


@pytest.mark.usefixtures("understood")
def test_an_answer_at_once_whose_agent_goes_before_the_commit_is_recorded_as_not_delivered(tmp_path: Path) -> None:
    """The rule allowed it in the turn that read it; by the commit at the turn's end the agent was gone."""
    broker = broker_for(tmp_path, ScriptedPerson(allow_all()), policy_toml=POLICY)
    gone: list[str] = []

    async def main() -> broker_module.Triage:
        triage = broker.take(WHO, "s", "r1", "request", call("ls -la"), timeout=None, admit=lambda _: True,
                             loop=asyncio.get_running_loop(), gone=lambda: gone[0] if gone else None)
        assert triage.answered is not None and triage.answered[0].decision == "allow_once"
        gone.append("the agent closed its connection")
        assert triage.commit is not None
        committed = asyncio.get_running_loop().create_future()
        triage.commit.when_done(committed.set_result)
        assert await committed is None
        return triage

    triage = asyncio.run(main())
    assert triage.delivery is not None and triage.delivery.why == "the agent closed its connection"
    [entry] = broker.audit.history()
    assert (entry.decision, entry.decided_by) == ("deny", "cancelled")
    assert entry.note is not None and "allow_once by policy was never delivered" in entry.note


def test_a_persons_answer_for_an_agent_gone_meanwhile_is_recorded_as_not_delivered_and_not_remembered(
        tmp_path: Path) -> None:
    broker = broker_for(tmp_path, ScriptedPerson(allow_all("allow_session")))
    gone: list[str] = []

    async def main() -> list[Verdict]:
        triage = broker.take(WHO, "s", "r1", "request", call("rm -rf build"), timeout=None, admit=lambda _: True,
                             loop=asyncio.get_running_loop(), gone=lambda: gone[0] if gone else None)
        assert triage.asking is not None
        gone.append("the agent closed its connection")  # before the person's answer is recorded
        return await triage.asking

    [verdict] = asyncio.run(main())
    assert (verdict.decision, verdict.decided_by) == ("deny", "cancelled")
    [entry] = broker.audit.history()
    assert (entry.decision, entry.decided_by) == ("deny", "cancelled")
    assert entry.note is not None and "allow_session by user was never delivered" in entry.note
    assert broker.memory.entries() == []


def test_an_answer_taken_after_the_deadline_passed_is_the_deadlines_deny(tmp_path: Path) -> None:
    """The app was held up past the deadline; the person's answer taken then came after the agent's wait."""
    class HeldUp(ScriptedPerson):
        async def decide(self, ticket: Ticket) -> list[Verdict]:
            time.sleep(0.3)  # the loop itself is held (as by SIGSTOP): the countdown's timer cannot run
            return [Verdict("allow_once", "user") for _ in ticket.calls]

    broker = broker_for(tmp_path, HeldUp(), timeout=0.1)
    [verdict] = submit(broker, call("rm -rf build"))
    assert (verdict.decision, verdict.decided_by) == ("deny", "timeout")
    assert verdict.note == broker_module.EXPIRED
    assert broker.audit.history()[0].decision == "deny"
