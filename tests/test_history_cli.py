"""``desktop-approver history``: the audit log from a shell, with the app running or not."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import Client
from desktop_approver.commands.history import parse_when
from desktop_approver.core.decisions.tickets import CallInfo, Identity, Verdict
from desktop_approver.core.store.audit import AuditLog
from tests.support.service import ScriptedPerson, ServiceThread
from tests.test_cli import cli

DAY = 86400.0


def history(db: Path, *args: str) -> list[dict[str, Any]]:
    result = cli("history", "--json", "--audit-db", str(db), *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def answer_by_tool(ticket: Any) -> list[Verdict]:
    """deploy is denied with a note, Bash allowed for the session, anything else allowed once."""
    verdicts = {"deploy": Verdict("deny", "user", note="not on a Friday"), "Bash": Verdict("allow_session", "user")}
    return [verdicts.get(call.tool, Verdict("allow_once", "user")) for call in ticket.calls]


def fill(socket_path: Path) -> None:
    with Client(socket_path, agent="builder", session="s-build") as client:
        client.request("Bash", {"command": "rm -rf /"})
        client.request("Bash", {"command": "rm -rf /"})  # remembered: decided by session memory
        client.request("write_file", {"path": "notes_100%.md", "content": "hi"})
    with Client(socket_path, agent="shipper", session="s-ship") as client:
        client.request("deploy", {"env": "prod"}, description="ship it")


def test_history_reads_the_log_while_the_app_runs_and_filters(serve: Any) -> None:
    service = serve(answer_by_tool)
    fill(service.options.socket_path)
    db = service.options.audit_path
    everything = history(db)  # the app is still running and holds the database open
    assert [(e["tool"], e["decision"], e["decided_by"]) for e in everything] == [
        ("deploy", "deny", "user"), ("write_file", "allow_once", "user"),
        ("Bash", "allow_session", "user"), ("Bash", "allow_session", "user")]
    assert everything[0]["note"] == "not on a Friday" and everything[0]["description"] == "ship it"
    assert everything[0]["created_at"] and everything[0]["decided_at"]
    assert [e["tool"] for e in history(db, "--decision", "deny")] == ["deploy"]
    assert history(db, "--decided-by", "session") == []  # the repeated call is destructive: asked again
    assert len(history(db, "--decided-by", "user")) == 4
    assert {e["agent"] for e in history(db, "--agent", "builder")} == {"builder"}
    assert len(history(db, "--session", "s-build", "--tool", "Bash")) == 2
    assert [e["risk_level"] for e in history(db, "--risk", "destructive")] == ["destructive", "destructive"]
    assert [e["tool"] for e in history(db, "--search", "Friday")] == ["deploy"]
    assert [e["tool"] for e in history(db, "--search", "100%")] == ["write_file"]
    assert history(db, "--search", "1_0%") == []  # % and _ are text, not wildcards
    assert len(history(db, "--limit", "2")) == 2 and len(history(db, "--limit", "0")) == 4
    assert len(history(db, "--since", "1h")) == 4 and history(db, "--until", "1h") == []


def test_history_table_is_one_line_per_call_oldest_first(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, ScriptedPerson(answer_by_tool)) as service:
        fill(service.options.socket_path)
    # and the log reads the same after the app has stopped
    result = cli("history", "--audit-db", str(service.options.audit_path))
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["TIME", "AGENT", "TOOL", "CALL", "RISK", "DECISION", "DECIDED", "BY"]
    assert len(rows) == 4
    assert "builder" in rows[0] and "rm -rf /" in rows[0] and "destructive" in rows[0] and "allow_session" in rows[0]
    assert "notes_100%.md" in rows[2]
    assert "shipper" in rows[3] and "deploy" in rows[3] and "deny" in rows[3] and "user" in rows[3]


def _seed(db: Path, ages_in_days: dict[str, float], agent: str = "agent") -> None:
    """Calls of the given tools, made that many days ago, each allowed once."""
    audit = AuditLog(db)
    try:
        for tool, age in ages_in_days.items():
            (audit_id,) = audit.record_calls(Identity(agent=agent), "s", tool, [CallInfo(0, tool, {"tool": tool})])
            audit.record_decisions([(audit_id, Verdict("allow_once", "user"))])
            audit._db.execute("UPDATE requests SET created = ? WHERE id = ?", (time.time() - age * DAY, audit_id))
    finally:
        audit.close()


def test_since_and_until_accept_dates_and_relative_times(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _seed(db, {"ancient": 40, "older": 10, "recent": 2, "now": 0})
    assert [e["tool"] for e in history(db, "--since", "7d")] == ["now", "recent"]
    assert [e["tool"] for e in history(db, "--since", "30d", "--until", "5d")] == ["older"]
    assert [e["tool"] for e in history(db, "--until", "1w")] == ["older", "ancient"]
    three_days_ago = datetime.fromtimestamp(time.time() - 3 * DAY)
    assert [e["tool"] for e in history(db, "--since", three_days_ago.isoformat(timespec="minutes"))] == [
        "now", "recent"]
    # A date alone: from its start for --since, to its end for --until.
    two_days_ago = datetime.fromtimestamp(time.time() - 2 * DAY).date().isoformat()
    assert "recent" in [e["tool"] for e in history(db, "--until", two_days_ago)]
    assert "recent" in [e["tool"] for e in history(db, "--since", two_days_ago)]


def test_parse_when() -> None:
    now = 1_000_000.0
    assert parse_when("30m", now=now) == now - 1800
    assert parse_when("2h", now=now) == now - 7200
    assert parse_when("7d", now=now) == now - 7 * DAY
    assert parse_when("1.5h", now=now) == now - 5400
    assert parse_when("2026-11-02") == datetime(2026, 11, 2).timestamp()
    assert parse_when("2026-11-02", end_of_day=True) == pytest.approx(datetime(2026, 11, 3).timestamp(), abs=1e-3)
    assert parse_when("2026-11-02T14:30:00+00:00") == datetime.fromisoformat("2026-11-02T14:30:00+00:00").timestamp()
    for bad in ("yesterday", "7 days", "-2h", ""):
        with pytest.raises(ValueError):
            parse_when(bad)


@pytest.mark.parametrize("args", [["--since", "yesterday"], ["--until", "2h ago"], ["--decision", "maybe"],
                                  ["--risk", "spicy"], ["--limit", "-1"], ["--prune", "--keep-days", "0"]])
def test_bad_input_exits_2(args: list[str], tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _seed(db, {"x": 0})
    result = cli("history", "--audit-db", str(db), *args)
    assert result.returncode == 2 and result.stdout == ""


def test_prune_deletes_what_is_older_than_the_retention(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _seed(db, {"ancient": 120, "older": 60, "now": 0})
    kept = cli("history", "--prune", "--keep-days", "365", "--audit-db", str(db))
    assert kept.returncode == 0 and "Deleted 0 calls" in kept.stdout
    default = cli("history", "--prune", "--audit-db", str(db))  # 90 days
    assert default.returncode == 0 and "Deleted 1 call " in default.stdout
    assert [e["tool"] for e in history(db)] == ["now", "older"]
    assert "Deleted 1 call " in cli("history", "--prune", "--keep-days", "30", "--audit-db", str(db)).stdout
    assert [e["tool"] for e in history(db)] == ["now"]
    with sqlite3.connect(db) as check:
        assert check.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 1  # decisions went with them


def test_no_log_yet_is_not_an_error_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "none" / "audit.sqlite3"
    for args in ([], ["--json"], ["--prune"]):
        result = cli("history", "--audit-db", str(db), *args)
        assert result.returncode == 0 and result.stdout == "" and "no audit log" in result.stderr
    assert not db.parent.exists()


def test_default_path_and_hidden_characters(tmp_path: Path) -> None:
    from desktop_approver.client.paths import default_audit_path

    audit = AuditLog(default_audit_path())  # the private HOME's default location
    try:
        (audit_id,) = audit.record_calls(Identity(agent="agent\x1b]0;pwned\x07"), "s", "r1",
                                         [CallInfo(0, "Bash", {"command": "echo ok\rrm -rf ~"})])
        audit.record_decisions([(audit_id, Verdict("deny", "timeout"))])
    finally:
        audit.close()
    result = cli("history")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\r" not in result.stdout and "\x07" not in result.stdout
    assert "echo ok\\rrm -rf ~" in result.stdout and "timeout" in result.stdout


def test_read_only_open_never_writes(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _seed(db, {"x": 0})
    audit = AuditLog(db, read_only=True)
    try:
        assert [entry.tool for entry in audit.history()] == ["x"]
        with pytest.raises(sqlite3.OperationalError):
            audit.record_event("refused", "unauthorized", "must not be written")
    finally:
        audit.close()


def test_app_with_history_days_prunes_at_start(tmp_path: Path) -> None:
    service = ServiceThread(tmp_path, ScriptedPerson(answer_by_tool))
    _seed(service.options.audit_path, {"ancient": 45, "recent": 5})
    service.options.history_days = 30
    with service:
        with Client(service.options.socket_path) as client:
            client.request("fresh", {})
        assert [e["tool"] for e in history(service.options.audit_path)] == ["fresh", "recent"]


def test_prune_refuses_to_delete_every_call_by_a_clock_that_looks_wrong(tmp_path: Path) -> None:
    """Red team item 2: a clock far ahead must not wipe the log, by hand either."""
    path = tmp_path / "audit.sqlite3"
    log = AuditLog(path)
    log.record_answered(Identity(agent="a"), "s", "r", [CallInfo(index=0, tool="Bash", args={"command": "ls"})],
                        [Verdict("deny", "user")])
    log._db.execute("UPDATE requests SET created = created - 400 * 86400")
    log.close()
    shown = cli("history", "--prune", "--keep-days", "30", "--audit-db", str(path))
    assert shown.returncode == 2 and "nothing was pruned" in shown.stderr
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1
