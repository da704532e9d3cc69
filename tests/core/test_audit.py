"""The audit log: WAL, records and their filters, events, pruning, and surviving kill -9."""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions.tickets import CallInfo, Identity, Verdict
from desktop_approver.core.store import audit as audit_module
from desktop_approver.core.store.audit import AuditLog

ALICE = Identity(agent="alice", cwd="/w", peer_pid=11, peer_uid=1000)
BOB = Identity(agent="bob", cwd="/w", peer_pid=12, peer_uid=1000)


def info(tool: str, args: dict, index: int = 0, description: str | None = None) -> CallInfo:
    return CallInfo(index=index, tool=tool, args=args, description=description, risk=assess(tool, args, cwd="/w"))


def record(log: AuditLog, who: Identity, tool: str, args: dict, verdict: Verdict | None,
           description: str | None = None) -> int:
    calls = [info(tool, args, description=description)]
    if verdict is None:
        return log.record_calls(who, "s-" + (who.agent or ""), "r", calls)[0]
    return log.record_answered(who, "s-" + (who.agent or ""), "r", calls, [verdict])[0]


@pytest.fixture
def log(tmp_path: Path) -> AuditLog:
    audit = AuditLog(tmp_path / "audit.sqlite3")
    yield audit
    audit.close()


def test_wal_mode_is_on(log: AuditLog) -> None:
    assert log._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_history_filters(log: AuditLog) -> None:
    start = time.time()
    record(log, ALICE, "Bash", {"command": "ls 100%_done"}, Verdict("allow_once", "policy", rule="r1"))
    record(log, ALICE, "Bash", {"command": "rm -rf /"}, Verdict("deny", "user", note="no way"))
    record(log, BOB, "edit", {"path": "a.py"}, Verdict("allow_session", "user"), description="fix typo")
    pending = record(log, BOB, "Bash", {"command": "echo"}, None)
    assert log.count() == 4
    assert [e.id for e in log.history()][0] == pending                     # newest first
    assert {e.tool for e in log.history(agent="bob")} == {"edit", "Bash"}
    assert len(log.history(tool="Bash")) == 3
    assert [e.args for e in log.history(decision="deny")] == [{"command": "rm -rf /"}]
    assert {e.tool for e in log.history(decision="allow")} == {"Bash", "edit"}
    assert [e.id for e in log.history(decision="pending")] == [pending]
    assert [e.decided_by for e in log.history(decided_by="policy")] == ["policy"]
    assert [e.args["command"] for e in log.history(risk="destructive")] == ["rm -rf /"]
    assert len(log.history(since=start - 1, until=time.time() + 1)) == 4
    assert log.history(since=time.time() + 100) == [] and log.history(until=start - 100) == []
    assert [e.tool for e in log.history(text="typo")] == ["edit"]
    assert [e.note for e in log.history(text="no way")] == ["no way"]
    assert len(log.history(text="100%_")) == 1
    assert log.history(text="0%_d")[0].args == {"command": "ls 100%_done"}
    assert log.history(text="x%x") == []                                   # % is not a wildcard
    assert len(log.history(limit=2)) == 2
    entry = log.history(decision="deny")[0]
    assert entry.agent == "alice" and entry.peer_pid == 11 and entry.risk_reasons


def test_events_newest_first_and_by_kind(log: AuditLog) -> None:
    log.record_event("refused", "invalid_json", "bad line", 5, 1000)
    log.record_event("mode", None, "deny_all")
    log.record_event("refused", "unauthorized", "x" * 5000)
    refused = log.events("refused")
    assert [e["code"] for e in refused] == ["unauthorized", "invalid_json"]
    assert len(refused[0]["detail"]) == 2000 and refused[1]["peer_pid"] == 5
    assert len(log.events()) == 3 and len(log.events(limit=1)) == 1


def test_prune_removes_only_what_is_older_than_the_retention(log: AuditLog) -> None:
    old = record(log, ALICE, "Bash", {"command": "old"}, Verdict("deny", "user"))
    log.record_event("refused", "invalid_json")
    long_ago = time.time() - 40 * 86400
    log._db.execute("UPDATE requests SET created = ? WHERE id = ?", (long_ago, old))
    log._db.execute("UPDATE events SET at = ?", (long_ago,))
    record(log, ALICE, "Bash", {"command": "new"}, Verdict("deny", "user"))
    assert log.prune(30) == 1
    assert [e.args["command"] for e in log.history()] == ["new"]
    assert log.events() == []
    assert log._db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 1


def test_a_second_log_on_the_same_file_sees_committed_rows(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    writer, reader, read_only = AuditLog(path), AuditLog(path), None
    try:
        record(writer, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
        assert reader.count() == 1
        read_only = AuditLog(path, read_only=True)
        assert read_only.history()[0].decision == "allow_once"
    finally:
        for log in (writer, reader, read_only):
            if log is not None:
                log.close()


def test_read_only_needs_an_existing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AuditLog(tmp_path / "missing.sqlite3", read_only=True)


WRITER = """
import sys
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.decisions.tickets import CallInfo, Identity, Verdict
log = AuditLog(sys.argv[1])
who = Identity(agent="loop")
n = 0
while True:
    ids = log.record_calls(who, "s", f"r{n}", [CallInfo(index=0, tool="Bash", args={"n": n})])
    log.record_decisions([(ids[0], Verdict("allow_once", "user"))])
    print(n, flush=True)
    n += 1
"""


def test_survives_kill_9_mid_stream(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                               cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    committed = -1
    try:
        assert process.stdout is not None
        while committed < 200:
            line = process.stdout.readline()
            assert line, "the writer died on its own"
            committed = int(line)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
    db = sqlite3.connect(str(path))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    log = AuditLog(path)
    try:
        seen = {entry.args["n"]: entry.decision for entry in log.history(limit=100_000)}
    finally:
        log.close()
    assert all(seen.get(n) == "allow_once" for n in range(committed + 1))


# -- a second table of filters and retention -------------------------------------------------------

def record_as(log: AuditLog, agent: str, tool: str, args: dict, verdict: Verdict | None, session: str = "s") -> int:
    who = Identity(agent=agent, cwd="/home/me/p", peer_pid=11, peer_uid=1000)
    call = CallInfo(index=0, tool=tool, args=args, description=f"{tool} for {agent}",
                    risk=assess(tool, args, cwd="/home/me/p"))
    (row,) = log.record_calls(who, session, f"r-{time.monotonic_ns()}", [call])
    if verdict is not None:
        log.record_decisions([(row, verdict)])
    return row


def test_wal_mode_and_a_second_reader_sees_committed_rows(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    assert log._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    record_as(log, "coder", "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    reader = AuditLog(path, read_only=True)
    assert reader.count() == 1 and reader.history()[0].decision == "allow_once"
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    reader.close()
    log.close()


def test_history_filters_by_every_field(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    record_as(log, "coder", "Bash", {"command": "git status"}, Verdict("allow_once", "user"))
    record_as(log, "coder", "Bash", {"command": "rm -rf build"}, Verdict("deny", "user", note="no deleting"))
    record_as(log, "ops", "deploy", {"env": "prod_eu"}, Verdict("deny", "policy", rule="rule 1", blocked=True), "o")
    record_as(log, "ops", "Bash", {"command": "uptime"}, Verdict("allow_session", "session"), "o")
    record_as(log, "ops", "Bash", {"command": "sleep 1"}, None, "o")

    def tools(**filters: object) -> list[str]:
        return [f"{e.tool}:{e.args}" for e in log.history(**filters)]  # type: ignore[arg-type]

    assert len(log.history()) == 5 and log.history()[0].args == {"command": "sleep 1"}       # newest first
    assert len(tools(agent="coder")) == 2
    assert tools(decision="deny", agent="ops") == ["deploy:{'env': 'prod_eu'}"]
    assert len(tools(decision="allow")) == 2 and len(tools(decision="pending")) == 1
    assert tools(decided_by="session") == ["Bash:{'command': 'uptime'}"]
    assert tools(risk="destructive") == ["Bash:{'command': 'rm -rf build'}"]
    assert len(tools(session="o")) == 3
    assert tools(text="no deleting") == ["Bash:{'command': 'rm -rf build'}"]       # the note is searched
    assert tools(text="prod_") == ["deploy:{'env': 'prod_eu'}"] and tools(text="prod%") == []  # literal
    blocked = log.history(decided_by="policy")[0]
    assert blocked.blocked and blocked.rule == "rule 1" and blocked.risk_level == "moderate"
    assert len(tools(since=time.time() - 60)) == 5 and tools(until=time.time() - 60) == []
    assert len(log.history(limit=2)) == 2


def test_events_and_retention(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    log.record_event("refused", "unauthorized", "wrong token", peer_pid=9, peer_uid=1000)
    log.record_event("mode", "deny_all", "tray menu")
    assert [e["kind"] for e in log.events()] == ["mode", "refused"]
    assert log.events(kind="refused")[0]["detail"] == "wrong token"
    old = record_as(log, "coder", "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    log._db.execute("UPDATE requests SET created = created - 100 * 86400 WHERE id = ?", (old,))
    record_as(log, "coder", "Bash", {"command": "pwd"}, Verdict("allow_once", "user"))
    assert log.prune(90) == 1
    assert [e.args for e in log.history()] == [{"command": "pwd"}]
    assert log.count() == 1


def test_a_failing_write_is_reported_and_so_is_the_recovery(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.sqlite3")
    heard: list[str | None] = []
    audit.health_listeners.append(heard.append)
    audit.record_event("fine")
    assert heard == [] and audit.problem is None
    audit._db.execute("CREATE TRIGGER refuse BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'full'); END")
    with pytest.raises(sqlite3.Error):
        audit.record_event("lost")
    assert audit.problem is not None and "full" in audit.problem and heard == [audit.problem]
    audit._db.execute("DROP TRIGGER refuse")
    audit.record_event("fine again")
    assert audit.problem is None and heard[-1] is None and len(heard) == 2
    audit.close()


# -- commits and checkpoints ------------------------------------------------------------------------

def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)


def test_the_app_connection_never_checkpoints_a_thread_of_its_own_does(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_module, "CHECKPOINT_AFTER", 4)
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    try:
        assert log._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        checkpointer = log._checkpointer
        assert checkpointer is not None
        for batch in range(50):  # 200 commits of 4 pages each: 3 MiB of log if nobody copied it back
            done = checkpointer.checkpoints
            for _ in range(4):
                record(log, ALICE, "Bash", {"command": f"ls {batch}"}, Verdict("allow_once", "session"))
            wait_for(lambda done=done: checkpointer.checkpoints > done, "a checkpoint")
        assert checkpointer._thread is not None and checkpointer._thread.name == "audit-checkpoint"
        assert Path(f"{path}-wal").stat().st_size < 1024 * 1024  # copied back, and the log starts over
        assert log.count() == 200
    finally:
        log.close()
    assert checkpointer._thread is not None and not checkpointer._thread.is_alive()
    assert not Path(f"{path}-wal").exists()  # the last connection closed copies what is left
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 200
    finally:
        db.close()


def test_a_short_lived_or_in_memory_log_starts_no_thread(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    assert log._checkpointer is not None and log._checkpointer._thread is None
    log.close()
    memory = AuditLog(":memory:")
    record(memory, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    assert memory._checkpointer is None and memory.count() == 1
    memory.close()


def test_a_log_dropped_without_close_ends_its_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_module, "CHECKPOINT_AFTER", 2)
    log = AuditLog(tmp_path / "audit.sqlite3")
    for _ in range(2):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    assert log._checkpointer is not None
    thread = log._checkpointer._thread
    assert thread is not None
    del log
    gc.collect()
    thread.join(30)
    assert not thread.is_alive()


def test_a_checkpointer_that_cannot_open_the_file_changes_nothing_else(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(audit_module, "CHECKPOINT_AFTER", 2)
    log = AuditLog(tmp_path / "audit.sqlite3")
    assert log._checkpointer is not None
    log._checkpointer.path = str(tmp_path / "no such folder" / "audit.sqlite3")
    with caplog.at_level(logging.ERROR, logger="desktop_approver.core.store.audit"):
        for _ in range(4):
            record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
        thread = log._checkpointer._thread
        assert thread is not None
        thread.join(30)
    assert "cannot open" in caplog.text
    assert log.count() == 4 and log.problem is None
    log.close()


def test_a_failed_write_leaves_nothing_half_written(log: AuditLog) -> None:
    log._db.execute("CREATE TRIGGER refuse BEFORE INSERT ON decisions BEGIN SELECT RAISE(ABORT, 'full'); END")
    with pytest.raises(sqlite3.Error):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "session"))
    assert log.count() == 0 and not log._db.in_transaction   # the call's row went with its decision
    assert log.problem is not None
    log._db.execute("DROP TRIGGER refuse")
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "session"))
    assert [entry.decision for entry in log.history()] == ["allow_once"] and log.problem is None


def test_stored_json_keeps_its_form(log: AuditLog) -> None:
    """Key-sorted with the default separators and non-ASCII as written: what history searches."""
    call = CallInfo(index=0, tool="Bash", args={"z": 1, "command": "grüß ls"}, preview={"kind": "command"},
                    hints={"read_only": True}, risk=assess("Bash", {"command": "ls"}, cwd="/w"))
    log.record_answered(ALICE, "s", "r", [call], [Verdict("allow_once", "user", updated_args={"b": 2, "a": 1})])
    row = log._db.execute("SELECT args, preview, hints, risk_reasons FROM requests").fetchone()
    assert row[:3] == ('{"command": "grüß ls", "z": 1}', '{"kind": "command"}', '{"read_only": true}')
    assert json.loads(row[3]) == list(call.risk.reasons)
    assert log._db.execute("SELECT updated_args FROM decisions").fetchone()[0] == '{"a": 1, "b": 2}'


def test_every_kind_of_write_counts_toward_a_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events, decisions and prunes fill the write-ahead log too: a log that only gets those is still copied back."""
    monkeypatch.setattr(audit_module, "CHECKPOINT_AFTER", 8)
    log = AuditLog(tmp_path / "audit.sqlite3")
    try:
        checkpointer = log._checkpointer
        assert checkpointer is not None
        for number in range(8):
            log.record_event("notice", "info", f"event {number}")
        wait_for(lambda: checkpointer.checkpoints >= 1, "a checkpoint after events alone")
        log.record_decisions([(1, Verdict("deny", "user"))])
        log.prune(365)
        assert checkpointer.written in (2, 10)   # counted (the thread may not have reset the count yet)
    finally:
        log.close()


# -- the log knows it is the record (issue 20) ------------------------------------------------------

def _pending_call(log: AuditLog) -> int:
    return record(log, ALICE, "Bash", {"command": "make deploy"}, None)


@pytest.mark.logs("was deleted", "works again", "write-ahead log of the file")
def test_a_deleted_log_fails_closed_at_once_and_a_fresh_one_is_started_without_a_restart(tmp_path: Path) -> None:
    """Item 3: 313 decisions went into the unlinked file, silently, and were gone after a restart."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    heard: list[str | None] = []
    log.health_listeners.append(heard.append)
    waiting = _pending_call(log)
    path.unlink()
    log.watch()                                           # the once-a-second look, no write needed
    assert log.lost is not None and "was deleted" in log.lost and heard == [log.problem]
    with pytest.raises(audit_module.LogFileLost):
        record(log, BOB, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log.watch()                                           # the path is free: a fresh log is started there
    assert log.problem is None and heard[-1] is None and path.exists()
    log.record_decisions([(waiting, Verdict("deny", "user"))])    # the waiting call was written again
    (entry,) = log.history()
    assert (entry.args, entry.decision) == ({"command": "make deploy"}, "deny")
    assert log.events(kind="audit")[0]["code"] == "recovered"
    log.close()


@pytest.mark.logs("no longer a database", "works again", "write-ahead log of the file")
def test_a_log_overwritten_in_place_fails_closed_until_the_path_holds_a_database(tmp_path: Path) -> None:
    """Item 3/4: 310 more allows went into a file overwritten in place."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    with open(path, "r+b") as handle:                     # in place: same inode
        handle.write(b"this is not a database at all" * 100)
    with pytest.raises(audit_module.LogFileLost, match="no longer a database"):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log.watch()
    assert log.lost is not None                          # still not a database: still refused
    os.rename(path, tmp_path / "kept")
    log.watch()
    assert log.lost is None and log.problem is None
    record(log, ALICE, "Bash", {"command": "pwd"}, Verdict("allow_once", "policy"))
    assert [entry.args for entry in log.history()] == [{"command": "pwd"}]
    log.close()


@pytest.mark.logs("was replaced", "works again", "write-ahead log of the file")
def test_a_replaced_log_is_noticed_and_the_new_database_is_opened(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    waiting = _pending_call(log)
    other = AuditLog(tmp_path / "restored.sqlite3")
    for n in range(3):
        record(other, BOB, "Bash", {"n": n}, Verdict("deny", "user"))
    other.close()
    os.replace(tmp_path / "restored.sqlite3", path)
    with pytest.raises(audit_module.LogFileLost, match="replaced"):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    assert log.recover()
    log.record_decisions([(waiting, Verdict("allow_once", "user"))])
    decided = {entry.args.get("command", entry.args.get("n")): entry.decision for entry in log.history()}
    assert decided == {0: "deny", 1: "deny", 2: "deny", "make deploy": "allow_once"}
    log.close()


@pytest.mark.logs("could not be opened")
def test_a_log_that_is_not_a_database_at_start_is_moved_aside_and_a_fresh_one_started(tmp_path: Path) -> None:
    """Item 4: the next start died with an uncaught traceback and no socket."""
    path = tmp_path / "audit.sqlite3"
    path.write_bytes(b"garbage, not SQLite" * 1000)
    with pytest.raises(sqlite3.DatabaseError):
        AuditLog(path).close()                           # the history CLI's prune: never moves anything
    (tmp_path / "audit.sqlite3-wal").write_bytes(b"old wal")
    log = AuditLog(path, move_broken_aside=True)
    assert log.moved_aside is not None and log.moved_aside.read_bytes() == b"garbage, not SQLite" * 1000
    assert log.moved_aside.with_name(log.moved_aside.name + "-wal").read_bytes() == b"old wal"
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    assert log.count() == 1
    log.close()


@pytest.mark.logs("works again")
def test_a_log_locked_by_another_process_is_a_quick_failure_not_a_frozen_loop(tmp_path: Path) -> None:
    """Item 5: each write waited SQLite's 5 s busy timeout on the event loop."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")                    # another process holds the write lock
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
        assert time.monotonic() - started < 2.5          # a bound against a hang, far above the 0.1 s it waits
        assert audit_module.BUSY_TIMEOUT <= 0.25 and log.problem is not None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    log.watch()
    assert log.problem is None
    log.close()


@pytest.mark.logs("works again")
def test_a_read_only_start_recovers_once_the_file_can_be_written(tmp_path: Path) -> None:
    """Item 2: after a read-only start the app answered "attempt to write a readonly database" until restarted.
    SQLite opens a file it cannot write read-only; here that connection is made by hand (the tests run as root)."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log._db.close()
    log._db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    log._cursor = log._db.cursor()
    assert log._file is not None  # closing the only connection removed the -wal: the hand-made one has none
    log._file.companions = tuple((name, None) for name, _ in log._file.companions)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log.watch()                                           # writable now: reopened, without a restart
    assert log.problem is None
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    assert log.count() == 1
    log.close()


class _Clocks:
    """Both clocks the log reads, the wall one settable."""

    def __init__(self) -> None:
        self.wall, self.monotonic_now = 1_000_000.0, 50.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.monotonic_now

    def strftime(self, fmt: str, when: time.struct_time | None = None) -> str:
        return time.strftime(fmt) if when is None else time.strftime(fmt, when)

    def localtime(self, seconds: float | None = None) -> time.struct_time:
        return time.localtime(seconds)


def test_a_decision_records_the_monotonic_wait_when_the_wall_clock_jumped(log: AuditLog,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 11: rows keep wall-clock times, and the monotonic wait where the two disagree."""
    clocks = _Clocks()
    monkeypatch.setattr(audit_module, "time", clocks)
    steady, jumped = _pending_call(log), _pending_call(log)
    clocks.wall += 20
    clocks.monotonic_now += 20
    log.record_decisions([(steady, Verdict("deny", "user"))])
    clocks.wall -= 3600                                   # the clock is set back an hour
    clocks.monotonic_now += 5
    log.record_decisions([(jumped, Verdict("deny", "timeout"))])
    rows = dict(log._db.execute("SELECT request, monotonic_seconds FROM decisions").fetchall())
    assert rows == {steady: None, jumped: 25.0}


@pytest.mark.logs("cannot be opened", "works again")
def test_a_log_that_cannot_be_opened_at_start_refuses_every_write_until_it_can(tmp_path: Path) -> None:
    """Item 2: a log SQLite cannot open at all (here its directory is a file) does not stop the app:
    writes are refused until the path can take it, then the log is opened without a restart."""
    blocker = tmp_path / "logs"
    blocker.write_text("a file where the log's directory should be")
    log = AuditLog(blocker / "audit.sqlite3", move_broken_aside=True, refuse_until_open=True)
    assert log.problem is not None and "cannot be opened" in log.problem and log.history() == []
    with pytest.raises(audit_module.LogFileLost):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log.watch()
    assert log.problem is not None                       # still impossible
    blocker.unlink()
    blocker.mkdir()
    log.watch()
    assert log.problem is None
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    assert log.count() == 1 and (blocker / "audit.sqlite3").exists()
    log.close()


def test_prune_refuses_when_the_wall_clock_moved_against_the_boot_clock(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team item 2: a clock set far ahead while the app runs must not prune the log away."""
    clocks = _Clocks()
    monkeypatch.setattr(audit_module, "time", clocks)
    log = AuditLog(tmp_path / "audit.sqlite3")
    record(log, ALICE, "Bash", {"command": "today"}, Verdict("deny", "user"))
    clocks.wall += 400 * 86400                               # set ahead; the boot clock moved 0 s
    with pytest.raises(audit_module.PruneRefused, match="wall clock moved"):
        log.prune(30)
    assert log.count() == 1
    log.close()


def test_prune_of_a_log_older_than_the_retention_waits_until_the_app_ran_that_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team item 2: a start whose clock makes every earlier call old prunes nothing; the same log
    is pruned once the app has run (by the boot clock) for the retention, and its own rows are kept."""
    path = tmp_path / "audit.sqlite3"
    clocks = _Clocks()
    monkeypatch.setattr(audit_module, "time", clocks)
    earlier = AuditLog(path)
    record(earlier, ALICE, "Bash", {"command": "earlier"}, Verdict("deny", "user"))
    earlier.close()
    clocks.wall += 40 * 86400
    log = AuditLog(path)
    with pytest.raises(audit_module.PruneRefused, match="every call"):
        log.prune(30)
    clocks.wall += 31 * 86400
    clocks.monotonic_now += 31 * 86400                       # the app really ran 31 days
    record(log, ALICE, "Bash", {"command": "this run"}, Verdict("deny", "user"))
    assert log.prune(30) == 1
    assert [entry.args["command"] for entry in log.history()] == ["this run"]
    log.close()


@pytest.mark.logs("lost its -shm file", "copied the", "works again")
def test_a_lost_shm_is_noticed_by_the_watch_and_nothing_committed_is_lost(tmp_path: Path) -> None:
    """Red team item 1: the watch looks at the -shm too; the recovery checkpoints before it reopens."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    for n in range(20):
        record(log, ALICE, "Bash", {"command": f"echo {n}"}, Verdict("allow_once", "policy"))
    Path(f"{path}-shm").unlink()
    log.watch()
    assert log.lost is not None and "lost its -shm file" in log.lost
    with pytest.raises(audit_module.LogFileLost):
        record(log, ALICE, "Bash", {"command": "refused"}, Verdict("allow_once", "policy"))
    log.watch()                                             # checkpointed through the open connection, reopened
    assert log.problem is None and log.lost is None
    log._db.close()                                         # as a kill would: only the files count
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 20


@pytest.mark.logs("not the app's audit log")
@pytest.mark.parametrize("tables", [
    "CREATE TABLE requests (id INTEGER PRIMARY KEY, url TEXT)",
    "CREATE TABLE events (id INTEGER PRIMARY KEY, at REAL NOT NULL, kind TEXT NOT NULL)",
    "CREATE TABLE notes (id INTEGER PRIMARY KEY); PRAGMA application_id = 7",
])
def test_a_database_that_is_not_the_apps_is_refused_and_never_written(tmp_path: Path, tables: str) -> None:
    """Red team item 7: someone else's database is neither adopted (our tables added to it) nor moved aside."""
    path = tmp_path / "audit.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(tables)
    theirs = path.read_bytes()
    log = AuditLog(path, move_broken_aside=True, refuse_until_open=True)
    assert log.lost is not None and "not the app's audit log" in log.lost and log.moved_aside is None
    with pytest.raises(audit_module.LogFileLost):
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    assert log.recover() is False
    log.close()
    assert path.read_bytes() == theirs


@pytest.mark.logs("works again")
def test_an_older_log_of_the_apps_is_adopted_and_marked(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log._db.execute("PRAGMA application_id = 0")            # as a version before the marker made it
    log.close()
    again = AuditLog(path, move_broken_aside=True, refuse_until_open=True)
    assert again.problem is None and again.count() == 1
    assert again._db.execute("PRAGMA application_id").fetchone()[0] == audit_module.APPLICATION_ID
    again.close()


@pytest.mark.logs("cannot be written", "closed 2 calls an earlier run", "works again")
def test_calls_an_earlier_run_left_waiting_are_closed_when_a_locked_log_works_again(tmp_path: Path) -> None:
    """Red team item 4: a start whose log was locked closes what an earlier run left waiting once it can."""
    path = tmp_path / "audit.sqlite3"
    earlier = AuditLog(path)
    first, second = (record(earlier, ALICE, "Bash", {"command": f"make {n}"}, None) for n in range(2))
    earlier._db.close()                                       # killed: no decisions
    log = AuditLog(path, move_broken_aside=True, refuse_until_open=True)
    this_run = record(log, ALICE, "Bash", {"command": "this run"}, None)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        log.close_abandoned()
    holder.execute("ROLLBACK")
    holder.close()
    log.watch()                                               # the log works again: they are closed now
    entries = {entry.id: entry for entry in log.history()}
    assert {(entries[row].decision, entries[row].decided_by) for row in (first, second)} == {("deny", "cancelled")}
    assert entries[first].note == audit_module.STOPPED_BEFORE_AN_ANSWER
    assert entries[this_run].decision is None                 # this run's call still waits
    log.close()


def _move_away(path: Path) -> None:
    os.rename(path, path.with_name(path.name + ".moved"))


def _replace(path: Path) -> None:
    other = path.with_name("other")
    other.write_bytes(path.read_bytes())
    os.replace(other, path)


def _overwrite_in_place(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.write(b"this is not a database at all")


def _rename_parent(path: Path) -> None:
    os.rename(path.parent, path.parent.with_name("renamed"))


@pytest.mark.logs("audit log", "write-ahead log")
@pytest.mark.parametrize(("suffix", "change"), [
    ("", os.unlink), ("", _move_away), ("", _replace), ("", _overwrite_in_place),
    ("-wal", os.unlink), ("-wal", _move_away), ("-wal", _replace), ("", _rename_parent)],
    ids=["log deleted", "log moved away", "log replaced", "log overwritten", "wal deleted", "wal moved away",
         "wal replaced", "a parent directory renamed"])
def test_a_log_changed_under_a_quiet_directory_fails_closed_at_the_first_write(
        tmp_path: Path, suffix: str, change: Callable[[Path], None]) -> None:
    """However the file at the path stops being the log, the very next write is refused: also after
    the directory has been still for a while (a check that trusted its times would miss some)."""
    path = tmp_path / "logs" / "audit.sqlite3"
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    time.sleep(0.1)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    change(path.with_name(f"audit.sqlite3{suffix}"))
    with pytest.raises(audit_module.LogFileLost):
        record(log, BOB, "Bash", {"command": "rm -rf /"}, Verdict("allow_once", "policy"))
    log.close()


@pytest.mark.logs("audit log", "write-ahead log")
@pytest.mark.parametrize("change", [os.unlink, _replace], ids=["target deleted", "target replaced"])
def test_a_log_reached_through_a_symlink_fails_closed_when_its_target_changes(
        tmp_path: Path, change: Callable[[Path], None]) -> None:
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "audit.sqlite3"
    link = tmp_path / "audit.sqlite3"
    link.symlink_to(target)
    log = AuditLog(link)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    change(target)
    with pytest.raises(audit_module.LogFileLost):
        record(log, BOB, "Bash", {"command": "rm -rf /"}, Verdict("allow_once", "policy"))
    log.close()


def test_arguments_stored_from_their_canonical_form_are_stored_as_they_always_were(log: AuditLog) -> None:
    """The broker's calls carry their canonical JSON; the stored form read back from it is the one
    encoding the arguments gives (key-sorted, default separators, non-ASCII as written)."""
    from desktop_approver.client.wire import canonical_json

    args = {"z": [1.5, -0.0, 1e300, 2 ** 62, None, True], "command": "grüß \u202e ls",
            "a": {"y": "\U0001f600", "b": {}}}
    direct = CallInfo(index=0, tool="Bash", args=args)
    from_canonical = CallInfo(index=0, tool="Bash", args=args, canonical_args=canonical_json(args))
    log.record_answered(ALICE, "s", "r", [direct, from_canonical], [Verdict("deny", "user")] * 2)
    stored = [row[0] for row in log._db.execute("SELECT args FROM requests ORDER BY id")]
    assert stored[0] == stored[1] == json.dumps(args, ensure_ascii=False, sort_keys=True)


@pytest.mark.logs("audit log", "write-ahead log", "could not copy")
def test_a_wal_cut_short_in_place_fails_closed_and_the_database_is_not_overwritten_with_its_hole(
        tmp_path: Path) -> None:
    """Red team: `: > audit.sqlite3-wal` (or a copy-and-truncate rotation) went unnoticed; the next
    writes filled the hole's offsets and the last checkpoint copied zeros over the database: every
    row was gone. Now the next write is refused, and what the database file held stays readable."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "checkpointed"}, Verdict("allow_once", "policy"))
    log._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    record(log, ALICE, "Bash", {"command": "only in the -wal"}, Verdict("allow_once", "policy"))
    os.truncate(path.with_name("audit.sqlite3-wal"), 0)
    with pytest.raises(audit_module.LogFileLost, match="cut short"):
        record(log, BOB, "Bash", {"command": "rm -rf /"}, Verdict("allow_once", "policy"))
    log.watch()
    record(log, BOB, "Bash", {"command": "after"}, Verdict("allow_once", "policy"))
    log.close()
    with sqlite3.connect(path) as db:
        kept = {json.loads(args)["command"] for (args,) in db.execute("SELECT args FROM requests")}
    assert {"checkpointed", "after"} <= kept and "rm -rf /" not in kept


class _TurnLoop:
    """A loop whose turn the test ends: what ``call_at_turn_end`` was given runs at :meth:`end_turn`."""

    def __init__(self) -> None:
        self.waiting: list[Any] = []

    def call_at_turn_end(self, callback: Any) -> None:
        self.waiting.append(callback)

    def end_turn(self) -> None:
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            callback()


@pytest.mark.logs("audit log", "write-ahead log", "could not copy")
def test_a_wal_cut_short_while_a_group_commits_answers_go_out_is_noticed(tmp_path: Path) -> None:
    """Red team: with the -wal's size noted only after the answers went out, an agent that cut the
    -wal back (to its size before the commit) as soon as it had its answer was not noticed: the next
    write was taken, and closing the log left a file that was no database. The size is noted before
    anyone hears an answer, so the cut is refused at the next write."""
    path = tmp_path / "audit.sqlite3"
    wal = path.with_name("audit.sqlite3-wal")
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "first"}, Verdict("allow_once", "policy"))
    size_before = wal.stat().st_size
    loop = _TurnLoop()
    call = CallInfo(index=0, tool="Bash", args={"command": "x" * 20_000})
    group = log.record_answered_in_turn(ALICE, "s", "r1", [call], [Verdict("allow_once", "policy")], loop=loop)
    heard: list[BaseException | None] = []

    def agent_cuts_the_wal(error: BaseException | None) -> None:
        heard.append(error)
        assert wal.stat().st_size > size_before  # the commit grew it
        os.truncate(wal, size_before)

    group.when_done(agent_cuts_the_wal)
    loop.end_turn()
    assert heard == [None]
    with pytest.raises(audit_module.LogFileLost, match="cut short"):
        log.record_event("mode", "changed", "the next write")
    log.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.logs("audit log", "write-ahead log")
def test_a_database_file_emptied_in_place_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
    log._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    record(log, ALICE, "Bash", {"command": "pwd"}, Verdict("allow_once", "policy"))
    os.truncate(path, 0)
    with pytest.raises(audit_module.LogFileLost, match="emptied"):
        record(log, BOB, "Bash", {"command": "rm -rf /"}, Verdict("allow_once", "policy"))
    log.close()


@pytest.mark.logs("audit log", "write-ahead log", "could not copy")
def test_a_wal_cut_short_right_after_the_first_write_of_a_reopened_log_is_noticed(tmp_path: Path) -> None:
    """Red team: the size was noted only at each check, so a log just opened (its -wal empty)
    took its first write, and a -wal emptied right after it passed the next check."""
    path = tmp_path / "audit.sqlite3"
    first = AuditLog(path)
    record(first, ALICE, "Bash", {"command": "an earlier run"}, Verdict("allow_once", "policy"))
    first.close()
    log = AuditLog(path)
    record(log, ALICE, "Bash", {"command": "the first write"}, Verdict("allow_once", "policy"))
    os.truncate(path.with_name("audit.sqlite3-wal"), 0)
    with pytest.raises(audit_module.LogFileLost, match="cut short"):
        record(log, BOB, "Bash", {"command": "rm -rf /"}, Verdict("allow_once", "policy"))
    log.close()
    with sqlite3.connect(path) as db:
        kept = {json.loads(args)["command"] for (args,) in db.execute("SELECT args FROM requests")}
    assert "an earlier run" in kept and "rm -rf /" not in kept


def test_the_history_says_not_understood_where_the_dialog_did(log: AuditLog) -> None:
    """The reader's level for a call it did not understand is a guess: the history shows the
    dialog's "not understood" (``HistoryEntry.shown_level``), and the risk filter goes by it."""
    record(log, ALICE, "Bash", {"command": "ls --zzz"}, Verdict("allow_once", "user"))     # read as safe, a guess
    record(log, ALICE, "Bash", {"command": "git status"}, Verdict("allow_once", "user"))   # understood, safe
    record(log, ALICE, "Bash", {"command": "rm -rf /"}, Verdict("deny", "user"))
    shown = {json.dumps(e.args): (e.risk_level, e.risk_understood, e.shown_level) for e in log.history()}
    assert shown['{"command": "ls --zzz"}'] == ("safe", False, "not understood")
    assert shown['{"command": "git status"}'] == ("safe", True, "safe")
    assert shown['{"command": "rm -rf /"}'][2] == "destructive"
    unread = log.history(risk="not understood")
    assert [e.args for e in unread] == [{"command": "ls --zzz"}]
    assert unread[0].risk_gaps == ["option `--zzz` of `ls`"]
    assert [e.args for e in log.history(risk="safe")] == [{"command": "git status"}]


def test_a_log_from_before_understanding_was_recorded_stays_readable(tmp_path: Path) -> None:
    """A row an older version wrote has no ``risk_understood``: it shows the level it recorded,
    read-only (beside a running app) and once a writing app added the columns."""
    path = tmp_path / "audit.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(audit_module.SCHEMA.replace(", risk_understood INTEGER, risk_gaps TEXT", "")
                      .replace(",\n    monotonic_seconds REAL", ""))
    old.execute("INSERT INTO requests (created, agent, tool, args, risk_level, risk_reasons) VALUES (?,?,?,?,?,?)",
                (time.time(), "alice", "Bash", '{"command": "ls --zzz"}', "safe", "[]"))
    old.close()
    reader = AuditLog(path, read_only=True)
    (entry,) = reader.history()
    assert (entry.risk_understood, entry.shown_level, entry.risk_gaps) == (None, "safe", [])
    assert [e.id for e in reader.history(risk="safe")] == [entry.id]
    assert reader.history(risk="not understood") == []
    reader.close()
    writer = AuditLog(path)
    record(writer, ALICE, "Bash", {"command": "ls --zzz"}, Verdict("allow_once", "user"))
    assert [e.shown_level for e in writer.history()] == ["not understood", "safe"]
    writer.close()
