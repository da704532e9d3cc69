"""The protocol object in memory: lines in, what it sends collected; no socket anywhere.

Each message type, the refusals, the order of answers, withdrawal on disconnect and shutdown, and
the limits the protocol keeps (token, duplicate ids, calls waiting per peer process).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import wire
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from desktop_approver.core.messages.models import INCOMING
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.transport.connection import HANDLERS, Connection, Context, handles
from desktop_approver.core.transport.peercred import PeerCredentials

ME = PeerCredentials(pid=os.getpid(), uid=os.getuid(), gid=None)
HELLO = {"v": 1, "type": "hello", "client": {"agent": "agent-a", "pid": os.getpid(), "cwd": os.getcwd()}}


def request(request_id: str, command: str = "echo hi", **fields: Any) -> dict[str, Any]:
    return {"v": 1, "type": "request", "id": request_id, "tool": "Bash", "args": {"command": command},
            "session": "s", **fields}


def batch(batch_id: str, *commands: str) -> dict[str, Any]:
    return {"v": 1, "type": "batch", "id": batch_id, "session": "s",
            "calls": [{"tool": "Bash", "args": {"command": command}} for command in commands]}


class Person:
    """A decider whose answers the test gives, ticket by ticket, while the connection waits."""

    def __init__(self) -> None:
        self.tickets: list[Ticket] = []
        self.answers: list[asyncio.Future[list[Verdict]]] = []
        self.withdrawn = 0

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.tickets.append(ticket)
        answer: asyncio.Future[list[Verdict]] = asyncio.get_running_loop().create_future()
        self.answers.append(answer)
        try:
            return await answer
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise

    def answer(self, index: int, decision: str = "allow_once", **fields: Any) -> None:
        ticket = self.tickets[index]
        self.answers[index].set_result([Verdict(decision, "user", **fields) for _ in ticket.calls])  # type: ignore[arg-type]


class Line:
    """A :class:`Connection` on an in-memory line: what it sends is kept, a hang-up is counted."""

    def __init__(self, context: Context, peer: PeerCredentials = ME) -> None:
        self.sent: list[bytes] = []
        self.hang_ups = 0
        self.connection = Connection(context, peer, self.sent.append, self._hang_up)

    def _hang_up(self) -> None:
        self.hang_ups += 1

    def feed(self, *messages: dict[str, Any] | bytes | wire.Oversized) -> None:
        for message in messages:
            self.connection.received(wire.encode(message)[:-1] if isinstance(message, dict) else message)

    def replies(self) -> list[dict[str, Any]]:
        """What the connection sent since the last call, one message per line."""
        out = []
        for payload in self.sent:
            assert payload.endswith(b"\n") and payload.count(b"\n") == 1, payload
            out.append(json.loads(payload))
        self.sent.clear()
        return out


Scenario = Callable[[Context, Person], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, **context_options: Any) -> Broker:
    person = Person()
    broker = Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), mode=modes.ModeState(),
                    default_timeout=30)

    async def main() -> None:
        context = Context(broker, **context_options)
        try:
            await scenario(context, person)
        finally:
            context.close()

    asyncio.run(main())
    return broker


async def turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def until(condition: Callable[[], object]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("condition never became true")


# -- the table ------------------------------------------------------------------------------------

def test_every_client_message_type_has_exactly_one_handler() -> None:
    assert set(HANDLERS) == set(INCOMING)
    with pytest.raises(RuntimeError, match="second handler for 'status'"):
        handles("status")(lambda connection, message: None)
    assert HANDLERS["status"].__name__ == "_status"


# -- each message type ----------------------------------------------------------------------------

def test_hello_is_welcomed_and_names_the_agent(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(HELLO)
        (welcome,) = line.replies()
        assert welcome["type"] == "welcome" and welcome["peer"] == {"pid": ME.pid, "uid": ME.uid}
        assert welcome["default_timeout"] == 30 and welcome["max_line_bytes"] == wire.MAX_LINE_BYTES
        who = line.connection.identity
        assert who.agent == "agent-a" and who.pid_verified and who.cwd_agrees

    run(tmp_path, scenario)


def test_status_counts_the_calls_waiting(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(batch("b1", "echo a", "echo b"))
        await until(lambda: person.tickets)
        line.feed({"v": 1, "type": "status", "id": "st"})
        (status,) = line.replies()
        assert (status["type"], status["id"], status["pending"], status["mode"]) == ("status_reply", "st", 2,
                                                                                    "interactive")
        person.answer(0, "deny")
        await until(lambda: line.sent)

    run(tmp_path, scenario, socket_path="/run/approver.sock")


def test_an_answer_from_session_memory_is_sent_when_the_turn_that_read_the_line_commits(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        line = Line(context)
        line.feed(HELLO, request("r1"))
        (welcome,) = line.replies()                    # the answer waits for the turn's commit
        assert welcome["type"] == "welcome" and line.connection.owes_answers
        assert _committed_rows(context) == 0
        await asyncio.sleep(0)                         # the turn ends: one commit, then the answer
        assert _committed_rows(context) == 1
        (decision,) = line.replies()
        assert (decision["id"], decision["decision"], decision["decided_by"]) == ("r1", "allow_session", "session")
        assert decision["risk"] == {"level": "safe", "reasons": []} and not person.tickets
        assert not line.connection.owes_answers

    broker = run(tmp_path, scenario)
    (entry,) = broker.audit.history()
    assert entry.decided_by == "session"


def _committed_rows(context: Context) -> int:
    """Rows another reader of the audit log sees: only what is committed."""
    reader = AuditLog(context.broker.audit.path, read_only=True)
    try:
        return reader.count()
    finally:
        reader.close()


def test_the_answers_of_one_turn_share_one_commit_and_keep_the_order_of_the_replies(tmp_path: Path) -> None:
    """Whatever the connection says after an answer that waits for its commit comes after it."""
    async def scenario(context: Context, person: Person) -> None:
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        first, second = Line(context), Line(context)
        first.feed(HELLO, request("r1"), {"v": 1, "type": "status", "id": "st"}, request("r2"))
        second.feed(HELLO, request("q1"))
        assert [reply["type"] for reply in first.replies()] == ["welcome"]
        checkpointer = context.broker.audit._checkpointer
        assert checkpointer is not None and checkpointer.written == 0
        await asyncio.sleep(0)
        assert checkpointer.written == 3                # one commit for the three calls
        assert [(reply["type"], reply.get("id")) for reply in first.replies()] == [
            ("decision", "r1"), ("status_reply", "st"), ("decision", "r2")]
        assert [(reply["type"], reply.get("id")) for reply in second.replies()] == [("welcome", None),
                                                                                  ("decision", "q1")]
        first.feed(request("r3"), b"{not json")         # the refusal's own write commits the turn's answers early
        assert [(reply["type"], reply.get("id")) for reply in first.replies()] == [("decision", "r3"),
                                                                                 ("error", None)]
        assert checkpointer.written == 4

    run(tmp_path, scenario)


class _FailingCommit:
    """The audit log's cursor, failing at COMMIT as a full disk does."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self.cursor.execute(sql, *args)


def test_a_commit_that_fails_answers_each_of_its_requests_with_a_typed_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(context: Context, person: Person) -> None:
        audit = context.broker.audit
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        first, second = Line(context), Line(context)
        first.feed(HELLO)
        second.feed(HELLO)
        first.replies(), second.replies()
        audit._cursor = _FailingCommit(audit._cursor)  # type: ignore[assignment]
        first.feed(request("r1"))
        second.feed(batch("b1", "echo hi", "echo hi"))
        await asyncio.sleep(0)
        (error,) = first.replies()
        (batch_error,) = second.replies()
        assert (error["type"], error["code"], error["id"]) == ("error", "internal", "r1")
        assert (batch_error["code"], batch_error["id"], batch_error["in_reply_to"]) == ("internal", "b1", "batch")
        assert "disk is full" in error["message"] and audit.problem is not None
        audit._cursor = audit._cursor.cursor       # the disk has room again: the next answer is kept
        first.feed(request("r2"))
        await asyncio.sleep(0)
        (decision,) = first.replies()
        assert decision["decision"] == "allow_session" and audit.problem is None
        assert len(audit.history()) == 1          # nothing of the failed group was kept: only r2

    run(tmp_path, scenario)
    assert "could not commit 3 answered calls" in caplog.text


def test_an_answer_held_for_its_commit_goes_out_before_a_refusal_that_hangs_up(tmp_path: Path) -> None:
    """The refusal is not written to the audit log (its budget is spent), so nothing commits the turn
    early: closing the line commits it, and the agent hears its answer, then the refusal."""
    from desktop_approver.core.transport.limits import RefusalBudget

    async def scenario(context: Context, person: Person) -> None:
        context.refusals = RefusalBudget(burst=0, per_second=0.0)
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        line = Line(context)
        line.feed({**HELLO, "token": "sesame"})
        line.replies()
        line.feed(request("r1"), {**HELLO, "token": "wrong"})  # one read: an answer at once, then a bad hello
        assert [(reply["type"], reply.get("id"), reply.get("code")) for reply in line.replies()] == [
            ("decision", "r1", None), ("error", None, "unauthorized")]
        assert line.hang_ups == 1

    broker = run(tmp_path, scenario, token_check=lambda token: token == "sesame")
    assert [entry.decided_by for entry in broker.audit.history()] == ["session"]


def test_a_failing_health_listener_never_keeps_an_answer_from_its_agent(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(context: Context, person: Person) -> None:
        audit = context.broker.audit
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        line = Line(context)
        line.feed(HELLO)
        line.replies()
        audit.problem = "the disk was full"            # a write failed before: the next commit reports recovery

        def broken(problem: str | None) -> None:
            raise RuntimeError("the tray's listener broke")

        audit.health_listeners.append(broken)
        line.feed(request("r1"), {"v": 1, "type": "status", "id": "st"})
        await asyncio.sleep(0)
        assert [(reply["type"], reply.get("id")) for reply in line.replies()] == [("decision", "r1"),
                                                                                ("status_reply", "st")]
        assert audit.problem is None and not line.connection.owes_answers

    run(tmp_path, scenario)
    assert "health listener failed" in caplog.text


def test_a_half_closed_client_gets_its_answer_from_the_commit_and_is_then_hung_up_on(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        line = Line(context)
        line.feed(HELLO, request("r1"))
        line.connection.half_closed = True          # as the transport marks a client that shut its writing side
        line.connection.close_when_idle()
        assert line.hang_ups == 0                   # its answer is still owed
        await asyncio.sleep(0)
        assert [reply["type"] for reply in line.replies()] == ["welcome", "decision"] and line.hang_ups == 1

    run(tmp_path, scenario)


def test_a_client_gone_before_the_commit_still_has_its_calls_kept(tmp_path: Path) -> None:
    """Its connection closes with the answer held: the turn is committed then (the answer goes to a
    transport that is closing, which writes nothing), never dropped."""
    async def scenario(context: Context, person: Person) -> None:
        context.broker.memory.remember("s", "Bash", {"command": "echo hi"}, agent="agent-a")
        line = Line(context)
        line.feed(HELLO, request("r1"))
        line.connection.connection_lost()
        assert _committed_rows(context) == 1 and not line.connection.owes_answers
        await asyncio.sleep(0)

    broker = run(tmp_path, scenario)
    assert [entry.decided_by for entry in broker.audit.history()] == ["session"]


def test_the_person_answers_a_request_and_a_batch_in_order_of_answering(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"), batch("b1", "echo a", "rm -rf /home/me/important"))
        await until(lambda: len(person.tickets) == 2)
        assert line.replies() == []
        assert len(person.tickets[1].calls) == 2         # the batch is one ticket of two calls
        person.answers[1].set_result([Verdict("allow_once", "user"), Verdict("deny", "user", note="no")])
        await until(lambda: line.sent)
        (answer,) = line.replies()
        assert answer["type"] == "batch_decision" and [d["index"] for d in answer["decisions"]] == [0, 1]
        assert [d["decision"] for d in answer["decisions"]] == ["allow_once", "deny"]
        assert answer["decisions"][1]["note"] == "no" and answer["decisions"][1]["risk"]["level"] == "destructive"
        line.feed({"v": 1, "type": "status", "id": "st"})   # a status is answered while r1 still waits
        assert line.replies()[0]["pending"] == 1
        person.answer(0, "allow_once")
        await until(lambda: line.sent)
        (decision,) = line.replies()
        assert (decision["type"], decision["id"], decision["decision"]) == ("decision", "r1", "allow_once")
        assert not line.connection.tasks and not context.pending_by_peer

    run(tmp_path, scenario)


def test_session_memory_messages_are_the_agents_own(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        memory = context.broker.memory
        memory.remember("s", "Bash", {"command": "ls"}, agent="agent-a")
        memory.remember("s", "Bash", {"command": "ls"}, agent="agent-b")
        line = Line(context)
        line.feed(HELLO, {"v": 1, "type": "sessions", "id": "m1"})
        _, listed = line.replies()
        assert [(e["agent"], e["tool"], e["scope"]) for e in listed["entries"]] == [("agent-a", "Bash", "exact")]
        line.feed({"v": 1, "type": "revoke", "id": "m2", "tool": "Bash"},
                  {"v": 1, "type": "end_session", "id": "m3", "session": "s"})
        revoked, ended = line.replies()
        assert (revoked["type"], revoked["count"]) == ("revoked", 1)
        assert (ended["type"], ended["forgotten"]) == ("session_ended", 0)
        assert [entry.agent for entry in memory.entries()] == ["agent-b"]

    broker = run(tmp_path, scenario)
    assert broker.audit.events(kind="revoke")[0]["detail"].startswith("agent=agent-a")


def test_a_notice_is_told_and_acknowledged(tmp_path: Path) -> None:
    told: list[tuple[str | None, str, str]] = []

    async def scenario(context: Context, person: Person) -> None:
        context.broker.notice_listeners.append(lambda who, kind, text: told.append((who.agent, kind, text)))
        line = Line(context)
        line.feed(HELLO, {"v": 1, "type": "notice", "id": "n1", "kind": "finished", "text": "done"})
        assert line.replies()[1] == {"v": 1, "type": "noticed", "id": "n1"}

    run(tmp_path, scenario)
    assert told == [("agent-a", "finished", "done")]


# -- withdrawal -----------------------------------------------------------------------------------

def test_cancel_answers_deny_cancelled_and_the_person_stops_being_asked(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"))
        await until(lambda: person.tickets)
        line.feed({"v": 1, "type": "cancel", "id": "r1"})
        await until(lambda: line.sent)
        (decision,) = line.replies()
        assert (decision["id"], decision["decision"], decision["decided_by"]) == ("r1", "deny", "cancelled")
        assert person.withdrawn == 1 and not context.broker.pending

    broker = run(tmp_path, scenario)
    assert broker.audit.history()[0].decided_by == "cancelled"


def test_a_request_cancelled_in_the_same_read_is_answered_and_recorded(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(batch("b1", "echo a", "echo b"), {"v": 1, "type": "cancel", "id": "b1"})
        await until(lambda: line.sent)
        (answer,) = line.replies()
        assert [(d["decision"], d["decided_by"]) for d in answer["decisions"]] == [("deny", "cancelled")] * 2
        assert person.tickets == []                     # never put before the person

    broker = run(tmp_path, scenario)
    assert [entry.decided_by for entry in broker.audit.history()] == ["cancelled", "cancelled"]


def test_a_client_that_goes_away_withdraws_its_requests_and_hears_nothing(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"), request("r2"))
        await until(lambda: len(person.tickets) == 2)
        line.connection.connection_lost()
        await until(lambda: person.withdrawn == 2)
        await turns()
        assert line.sent == [] and line.hang_ups == 1
        assert not line.connection.tasks and not context.pending_by_peer and not context.broker.pending

    broker = run(tmp_path, scenario)
    assert {entry.decided_by for entry in broker.audit.history()} == {"cancelled"}


def test_shutdown_tells_every_pending_request_then_hangs_up(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"), batch("b1", "echo a"))
        await until(lambda: len(person.tickets) == 2)
        line.connection.shutdown()
        errors = line.replies()
        assert [(e["code"], e["id"], e["in_reply_to"]) for e in errors] == [("shutting_down", "r1", "request"),
                                                                             ("shutting_down", "b1", "batch")]
        await until(lambda: person.withdrawn == 2)
        await turns()
        assert line.sent == [] and line.hang_ups == 1    # the withdrawn answers go nowhere

    run(tmp_path, scenario)


def test_a_half_closed_client_is_hung_up_on_after_its_last_answer(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"))
        await until(lambda: person.tickets)
        line.connection.half_closed = True
        person.answer(0, "deny", note="later")
        await until(lambda: line.hang_ups)
        assert line.replies()[0]["note"] == "later"

    run(tmp_path, scenario)


# -- refusals and limits --------------------------------------------------------------------------

@pytest.mark.parametrize("raw, code", [
    (b"{not json", "invalid_json"),
    (wire.Oversized(wire.MAX_LINE_BYTES + 1), "line_too_long"),
    (wire.encode({"v": 1, "type": "approve", "id": "x"})[:-1], "unknown_type"),
    (wire.encode({"v": 9, "type": "status", "id": "x"})[:-1], "unsupported_version"),
], ids=["json", "size", "type", "version"])
def test_a_bad_line_is_refused_audited_and_the_conversation_goes_on(tmp_path: Path, raw: Any, code: str) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(raw, {"v": 1, "type": "status", "id": "st"})
        error, status = line.replies()
        assert (error["type"], error["code"]) == ("error", code) and status["type"] == "status_reply"
        assert line.hang_ups == 0

    broker = run(tmp_path, scenario)
    assert [event["code"] for event in broker.audit.events(kind="refused")] == [code]


def test_duplicate_and_unknown_ids_are_refused_naming_the_message(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(request("r1"))
        await until(lambda: person.tickets)
        line.feed(request("r1"), {"v": 1, "type": "cancel", "id": "nope"})
        duplicate, unknown = line.replies()
        assert (duplicate["code"], duplicate["id"], duplicate["in_reply_to"]) == ("duplicate_id", "r1", "request")
        assert (unknown["code"], unknown["id"], unknown["in_reply_to"]) == ("unknown_id", "nope", "cancel")
        assert len(person.tickets) == 1
        person.answer(0)
        await until(lambda: line.sent)

    run(tmp_path, scenario)


def test_without_the_token_a_client_gets_one_refusal_and_is_hung_up_on(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        silent = Line(context)
        silent.feed({"v": 1, "type": "status", "id": "st"})
        (refused,) = silent.replies()
        assert (refused["code"], refused["id"], refused["in_reply_to"]) == ("unauthorized", "st", "status")
        assert silent.hang_ups == 1 and silent.connection.closed
        silent.feed({"v": 1, "type": "status", "id": "st2"})
        assert silent.replies() == []                   # closed: nothing more goes out

        guesser = Line(context)
        guesser.feed({**HELLO, "token": "guess"})
        assert guesser.replies()[0]["code"] == "unauthorized" and guesser.hang_ups == 1

        friend = Line(context)
        friend.feed({**HELLO, "token": "sesame"}, {"v": 1, "type": "status", "id": "st"})
        assert [reply["type"] for reply in friend.replies()] == ["welcome", "status_reply"]

    run(tmp_path, scenario, token_check=lambda token: token == "sesame")


def test_calls_waiting_are_limited_per_peer_process_across_its_connections(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        first, second = Line(context), Line(context)
        first.feed(batch("b1", "echo a", "echo b"))
        second.feed(request("r1"))
        await until(lambda: len(person.tickets) == 2)
        second.feed(request("r2"))                      # 2 + 1 waiting: a fourth call passes the limit of 3
        (refused,) = second.replies()
        assert (refused["code"], refused["id"], refused["in_reply_to"]) == ("too_many_pending", "r2", "request")
        other = Line(context, PeerCredentials(pid=None, uid=os.getuid(), gid=None))
        other.feed(request("r3"))                       # another process has its own count
        await until(lambda: len(person.tickets) == 3)
        person.answer(1)
        await until(lambda: second.sent)
        second.replies()
        second.feed(request("r2"))                      # a slot is free again
        await until(lambda: len(person.tickets) == 4)
        assert context.pending_by_peer == {ME.pid: 3, None: 1}
        for line in (first, second, other):
            line.connection.connection_lost()

    run(tmp_path, scenario, max_pending_per_client=3)


def test_our_own_failure_is_an_internal_error_not_silence(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(context: Context, person: Person) -> None:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("the broker broke")

        context.broker.triage = broken  # type: ignore[method-assign]
        line = Line(context)
        line.feed(request("r1"))
        (error,) = line.replies()
        assert (error["code"], error["id"], error["in_reply_to"]) == ("internal", "r1", "request")
        assert "the broker broke" in error["message"]

    broker = run(tmp_path, scenario)
    assert broker.audit.events(kind="refused")[0]["code"] == "internal"
    (logged,) = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert logged.getMessage() == "request r1 failed" and logged.exc_info is not None  # with its traceback


# -- what it tells the log ------------------------------------------------------------------------

def test_state_changes_are_debug_lines_with_client_text_escaped(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="desktop_approver")

    async def scenario(context: Context, person: Person) -> None:
        context.broker.memory.remember("s", "Bash", {"command": "ls"}, agent="agent-\x1b[31m")
        line = Line(context)
        line.feed({**HELLO, "client": {"agent": "agent-\x1b[31m"}}, request("r0", "ls"), request("r1\x1b[2J"))
        await until(lambda: person.tickets)
        person.answer(0, "deny")
        await until(lambda: len(line.sent) == 3)
        context.broker.mode.set(modes.DENY_ALL, reason="test")

    run(tmp_path, scenario)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "\x1b" not in text and "agent-\\x1b[31m" in text
    for expected in ("hello from <Connection", "session memory: Bash", "answered at once: <Triage request 'r0'",
                     "presented <Ticket t", "decided in", "deny by user", "mode: interactive -> deny_all (test)"):
        assert expected in text, expected
    assert {record.name for record in caplog.records} >= {"desktop_approver.core.transport.connection",
                                                         "desktop_approver.core.decisions.broker",
                                                         "desktop_approver.core.decisions.memory",
                                                         "desktop_approver.core.decisions.modes"}


def test_reprs_say_what_the_object_is_doing(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(HELLO, batch("b1", "echo a", "echo b"))
        await until(lambda: person.tickets)
        assert repr(line.connection) == f"<Connection pid={ME.pid} uid={ME.uid} agent='agent-a' pending=1>"
        ticket = repr(person.tickets[0])
        assert ticket.startswith("<Ticket t") and "batch 'b1' calls=2/2 agent='agent-a'" in ticket
        assert repr(context.broker).startswith("<Broker pending=1 mode=interactive")
        assert repr(context) == "<Context waiting=2 peers=1 token=no>"
        line.connection.connection_lost()
        assert repr(line.connection).endswith("pending=1 closed>")
        memory, mode = context.broker.memory, context.broker.mode
        memory.remember("s", "Bash", {"command": "ls"}, agent="agent-a")
        assert repr(memory) == "<SessionMemory entries=1 sessions=1 idle=28800s>"
        assert repr(mode) == "<ModeState interactive path=None>"

    run(tmp_path, scenario)


class _FullDisk:
    """The audit log's cursor on a full disk: every write and commit fails."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.startswith(("INSERT", "COMMIT")):
            raise sqlite3.OperationalError("database or disk is full")
        return self.cursor.execute(sql, *args)


def test_a_full_disk_keeps_the_connection_its_waiting_request_and_the_withdrawal_is_recorded_later(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 20, item 1: a notice or a malformed line on a connection with a request waiting got EOF,
    the request vanished, and its row stayed "pending" for good."""
    async def scenario(context: Context, person: Person) -> None:
        audit = context.broker.audit
        line = Line(context)
        line.feed(HELLO, request("r1", "make deploy"))
        await until(lambda: person.tickets)
        line.replies()
        audit._cursor = _FullDisk(audit._cursor)  # type: ignore[assignment]
        line.feed({"v": 1, "type": "notice", "id": "n1", "kind": "info", "text": "still here"}, b"{not json",
                  {"v": 1, "type": "revoke", "id": "v1", "session": "s"})
        replies = line.replies()
        assert [(reply["type"], reply.get("id"), reply.get("code")) for reply in replies] == [
            ("error", "n1", "internal"), ("error", None, "invalid_json"), ("revoked", "v1", None)]
        assert replies[0]["in_reply_to"] == "notice" and "could not be recorded" in replies[0]["message"]
        assert line.hang_ups == 0 and "r1" in line.connection.tasks and audit.problem is not None
        line.connection.connection_lost()          # the agent gives up: its request is withdrawn
        await until(lambda: not line.connection.tasks)
        assert [entry.decision for entry in audit.history()] == [None]   # not written yet: owed
        audit._cursor = audit._cursor.cursor       # the disk has room again
        audit.watch()                              # the app's once-a-second look recovers and writes what it owes
        (entry,) = audit.history()
        assert (entry.decision, entry.decided_by) == ("deny", "cancelled") and audit.problem is None
        assert not audit.history(decision="pending")

    run(tmp_path, scenario)
    assert "could not record a notice" in caplog.text


def test_a_decision_that_cannot_be_written_is_owed_as_a_refusal_never_as_an_allow(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="desktop_approver.core.transport.connection")

    async def scenario(context: Context, person: Person) -> None:
        audit = context.broker.audit
        line = Line(context)
        line.feed(HELLO, request("r1", "make deploy"))
        await until(lambda: person.tickets)
        line.replies()
        audit._cursor = _FullDisk(audit._cursor)  # type: ignore[assignment]
        person.answer(0, "allow_once")
        await until(lambda: line.sent)
        (reply,) = line.replies()
        assert (reply["type"], reply["code"]) == ("error", "internal")   # not allowed: it could not be recorded
        audit._cursor = audit._cursor.cursor
        audit.record_event("probe")               # the next write that works writes what is owed first
        (entry,) = audit.history()
        assert (entry.decision, entry.decided_by) == ("deny", "cancelled")
        assert entry.note is not None and "allow_once by user" in entry.note

    run(tmp_path, scenario)
    # The audit log's failure is told by its health signal, once; the request only at DEBUG, with no traceback.
    assert "request r1 refused: the audit log cannot be written" in caplog.text and "Traceback" not in caplog.text


def test_status_reports_what_the_app_runs_without(tmp_path: Path) -> None:
    async def scenario(context: Context, person: Person) -> None:
        line = Line(context)
        line.feed(HELLO, {"v": 1, "type": "status", "id": "s1"})
        assert "problems" not in line.replies()[-1]
        context.broker.problems["policy"] = "The rules file cannot be used: every call is asked."
        line.feed({"v": 1, "type": "status", "id": "s2"})
        assert line.replies()[-1]["problems"] == ["The rules file cannot be used: every call is asked."]

    run(tmp_path, scenario)
