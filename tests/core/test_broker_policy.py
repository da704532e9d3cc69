"""How the broker weighs policy rules against the modes and session memory, and what it tells
the agent about risk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from desktop_approver.core import modes
from desktop_approver.core.audit import AuditLog
from desktop_approver.core.broker import Broker
from desktop_approver.core.memory import SessionMemory
from desktop_approver.core.policy import Policy
from desktop_approver.core.tickets import Identity, Ticket, Verdict

WHO = Identity(agent="agent", cwd="/home/me/project", peer_pid=1)


class Person:
    def __init__(self) -> None:
        self.asked: list[Ticket] = []

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.asked.append(ticket)
        return [Verdict("deny", "user", note="asked") for _ in ticket.calls]


def broker(tmp_path: Path, policy_text: str, person: Person) -> Broker:
    mode = modes.ModeState(tmp_path / "state.json")
    return Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(),
                  policy=Policy.parse(policy_text), mode=mode, default_timeout=5)


def ask(b: Broker, command: str, session: str = "s") -> Verdict:
    call = {"tool": "Bash", "args": {"command": command}}
    return asyncio.run(b.submit(WHO, session, "r", "request", [call]))[0]


def test_ask_rule_beats_approve_all_and_session_memory(tmp_path: Path) -> None:
    person = Person()
    b = broker(tmp_path, '[[rule]]\naction = "ask"\ntool = "Bash"\ncommand = "git push *"\n', person)
    b.mode.set(modes.APPROVE_ALL, seconds=600)
    b.memory.remember("s", "Bash", {"command": "git push origin main"})
    verdict = ask(b, "git push origin main")
    assert verdict.decided_by == "user" and verdict.note == "asked" and len(person.asked) == 1
    other = ask(b, "npm test")                         # no rule: approve-all answers
    assert other.decided_by == "mode" and other.decision == "allow_once"


def test_deny_all_still_beats_an_ask_rule(tmp_path: Path) -> None:
    person = Person()
    b = broker(tmp_path, '[[rule]]\naction = "ask"\ntool = "Bash"\n', person)
    b.mode.set(modes.DENY_ALL)
    verdict = ask(b, "ls")
    assert verdict.decided_by == "mode" and person.asked == []


def test_every_answer_carries_the_risk_the_app_found(tmp_path: Path) -> None:
    person = Person()
    b = broker(tmp_path, '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls"\n', person)
    assert ask(b, "ls").risk == {"level": "safe", "reasons": []}
    denied = ask(b, "rm -rf build")
    assert denied.risk is not None and denied.risk["level"] == "destructive"
    assert "deletes recursively" in denied.risk["reasons"]
