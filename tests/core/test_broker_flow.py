"""The broker's promises: timeouts deny and remember nothing, batches get one verdict per call in
order, a broken prompt fails closed, and every request and decision reaches the audit log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable

from desktop_approver.core.audit import AuditLog
from desktop_approver.core.broker import Broker
from desktop_approver.core.memory import SessionMemory
from desktop_approver.core.tickets import Identity, Ticket, Verdict

WHO = Identity(agent="agent", cwd="/home/me/project", peer_pid=7)


class Person:
    def __init__(self, answer: Callable[[Ticket], list[Verdict]] | None = None, wait: bool = False) -> None:
        self.answer = answer
        self.wait = wait
        self.seen: list[Ticket] = []

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.seen.append(ticket)
        if self.wait:
            await asyncio.Event().wait()
        assert self.answer is not None
        return self.answer(ticket)


def make(tmp_path: Path, person: Person, timeout: float = 5) -> Broker:
    return Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(), default_timeout=timeout)


def calls(*commands: str) -> list[dict]:
    return [{"tool": "Bash", "args": {"command": command}} for command in commands]


def test_timeout_denies_and_remembers_nothing(tmp_path: Path) -> None:
    person = Person(wait=True)
    broker = make(tmp_path, person, timeout=0.2)
    verdict = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert (verdict.decision, verdict.decided_by) == ("deny", "timeout")
    assert broker.memory.entries() == [] and broker.pending == {}
    entry = broker.audit.history()[0]
    assert entry.decided_by == "timeout" and entry.tool == "Bash"


def test_allow_session_is_remembered_per_session_and_scope(tmp_path: Path) -> None:
    person = Person(lambda t: [Verdict("allow_session", "user", scope="tool") for _ in t.calls])
    broker = make(tmp_path, person)
    asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))
    again = asyncio.run(broker.submit(WHO, "s", "r2", "request", calls("pwd")))[0]
    assert again.decided_by == "session" and len(person.seen) == 1        # whole tool remembered
    other = asyncio.run(broker.submit(WHO, "t", "r3", "request", calls("ls")))[0]
    assert other.decided_by == "user" and len(person.seen) == 2


def test_edited_arguments_are_what_gets_remembered(tmp_path: Path) -> None:
    person = Person(lambda t: [Verdict("allow_session", "user", updated_args={"command": "ls -a"})])
    broker = make(tmp_path, person)
    first = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert first.updated_args == {"command": "ls -a"}
    assert asyncio.run(broker.submit(WHO, "s", "r2", "request", calls("ls -a")))[0].decided_by == "session"
    assert asyncio.run(broker.submit(WHO, "s", "r3", "request", calls("ls")))[0].decided_by == "user"


def test_batch_gets_one_verdict_per_call_in_order_and_all_are_audited(tmp_path: Path) -> None:
    person = Person(lambda t: [Verdict("allow_once" if i % 2 == 0 else "deny", "user") for i in range(len(t.calls))])
    broker = make(tmp_path, person)
    broker.memory.remember("s", "Bash", {"command": "b"})
    verdicts = asyncio.run(broker.submit(WHO, "s", "batch-1", "batch", calls("a", "b", "c", "d")))
    assert [(v.decision, v.decided_by) for v in verdicts] == [
        ("allow_once", "user"), ("allow_session", "session"), ("deny", "user"), ("allow_once", "user")]
    assert len(person.seen[0].calls) == 3                  # the remembered call never reached the person
    history = broker.audit.history()
    assert len(history) == 4 and all(entry.decision for entry in history)


def test_a_broken_prompt_denies_and_is_audited(tmp_path: Path) -> None:
    def explode(ticket: Ticket) -> list[Verdict]:
        raise RuntimeError("the dialog fell over")

    broker = make(tmp_path, Person(explode))
    verdict = asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))[0]
    assert verdict.decision == "deny" and "internal error" in (verdict.note or "")
    assert broker.audit.history()[0].decision == "deny"


def test_a_decider_answering_the_wrong_number_of_calls_fails_closed(tmp_path: Path) -> None:
    broker = make(tmp_path, Person(lambda t: []))
    verdicts = asyncio.run(broker.submit(WHO, "s", "r1", "batch", calls("a", "b")))
    assert [v.decision for v in verdicts] == ["deny", "deny"]


def test_listeners_see_tickets_come_and_go(tmp_path: Path) -> None:
    events: list[str] = []
    broker = make(tmp_path, Person(lambda t: [Verdict("deny", "user")]))
    broker.listeners.append(lambda event, ticket: events.append(event))
    asyncio.run(broker.submit(WHO, "s", "r1", "request", calls("ls")))
    assert events == ["added", "removed"]
