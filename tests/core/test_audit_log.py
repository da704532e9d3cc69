"""The audit log: append-only SQLite in WAL mode that answers the history's questions."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from desktop_approver.core.audit import AuditLog
from desktop_approver.core.risk import assess
from desktop_approver.core.tickets import CallInfo, Identity, Verdict


def record(log: AuditLog, agent: str, tool: str, args: dict, verdict: Verdict | None, session: str = "s") -> int:
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
    record(log, "coder", "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    reader = AuditLog(path, read_only=True)
    assert reader.count() == 1 and reader.history()[0].decision == "allow_once"
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    reader.close()
    log.close()


def test_history_filters(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3")
    record(log, "coder", "Bash", {"command": "git status"}, Verdict("allow_once", "user"))
    record(log, "coder", "Bash", {"command": "rm -rf build"}, Verdict("deny", "user", note="no deleting"))
    record(log, "ops", "deploy", {"env": "prod_eu"}, Verdict("deny", "policy", rule="rule 1", blocked=True), "o")
    record(log, "ops", "Bash", {"command": "uptime"}, Verdict("allow_session", "session"), "o")
    record(log, "ops", "Bash", {"command": "sleep 1"}, None, "o")

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
    old = record(log, "coder", "Bash", {"command": "ls"}, Verdict("allow_once", "user"))
    log._db.execute("UPDATE requests SET created = created - 100 * 86400 WHERE id = ?", (old,))
    record(log, "coder", "Bash", {"command": "pwd"}, Verdict("allow_once", "user"))
    assert log.prune(90) == 1
    assert [e.args for e in log.history()] == [{"command": "pwd"}]
    assert log.count() == 1
