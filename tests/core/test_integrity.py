"""The audit log's content checked while it runs, and what is read out of a damaged one (issue 34, item 1)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import pytest

from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.core.store import integrity
from desktop_approver.core.store.audit import SCHEMA, AuditLog, LogFileLost
from tests.core.test_audit import ALICE, record
from tests.support.waiting import wait_for

PAGE = 1024


def filled_log(path: Path, rows: int = 400) -> None:
    """A closed log of ``rows`` answered calls, all of them in the database file (no -wal left)."""
    log = AuditLog(path)
    for n in range(rows):
        record(log, ALICE, "Bash", {"command": f"echo {n}"}, Verdict("allow_once", "policy"))
    log.close()


def overwrite(path: Path, first_page: int, pages: int) -> None:
    with open(path, "r+b") as file:
        file.seek(first_page * PAGE)
        file.write(os.urandom(pages * PAGE))


def test_a_whole_log_passes_the_look_and_pages_written_over_do_not(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    filled_log(path)
    assert integrity.quick_look(str(path)) is None
    overwrite(path, 20, 4)
    assert integrity.quick_look(str(path)) is not None


def test_salvage_reads_every_row_it_can_past_the_damaged_pages(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    filled_log(path)
    overwrite(path, 20, 4)
    target, counts = integrity.salvage(path, SCHEMA)
    assert target == tmp_path / "audit.sqlite3.recovered"
    assert 300 < counts["requests"] < 400 and counts["decisions"] > 300
    with contextlib.closing(sqlite3.connect(target)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == counts["requests"]


@pytest.mark.logs("audit log")
def test_a_log_damaged_while_open_fails_closed_then_is_moved_aside_and_a_new_one_started(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    filled_log(path)
    log = AuditLog(path, move_broken_aside=True, check_content=0.05)
    told: list[str | None] = []
    moved: list[str] = []
    log.health_listeners.append(told.append)
    log.moved_listeners.append(moved.append)
    try:
        overwrite(path, 20, 4)

        def found() -> bool:
            log.watch()
            return log.lost is not None

        wait_for(found, "the content check to find the damage")
        assert told and told[-1] is not None and "is damaged" in told[-1]
        with pytest.raises(LogFileLost, match="is damaged"):  # fails closed: no call is allowed unrecorded
            record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
        log.watch()  # the next look: moved aside, a new log at the path
        assert log.lost is None and told[-1] is None
        assert log.moved_aside is not None and log.moved_aside.exists()
        assert moved and str(log.moved_aside) in moved[0] and ".recovered" in moved[0]
        record(log, ALICE, "Bash", {"command": "ls"}, Verdict("allow_once", "policy"))
        assert [entry.args["command"] for entry in log.history()] == ["ls"]
        assert log.events("audit")[0]["code"] == "recovered"
    finally:
        log.close()


@pytest.mark.logs("audit log")
def test_sqlite_finding_the_pages_damaged_on_a_write_is_a_lost_log(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.sqlite3", move_broken_aside=True)
    try:
        error = sqlite3.DatabaseError("database disk image is malformed")
        error.sqlite_errorcode = 11  # type: ignore[attr-defined]  # SQLITE_CORRUPT, as SQLite raises it
        log._failed(error)
        assert log.lost is not None and "is damaged" in log.lost
        assert log.recover() and log.moved_aside is not None
    finally:
        log.close()


def test_a_fifo_in_the_logs_place_never_holds_the_look_or_its_stop(tmp_path: Path) -> None:
    """A FIFO put where the log was: the look passes it by (SQLite opening it would block with no
    writer), and stopping the check never waits on a look for long (fault injection of issue 34:
    the app hung for good, SIGTERM ignored)."""
    path = tmp_path / "audit.sqlite3"
    os.mkfifo(path)
    assert integrity.quick_look(str(path)) is None  # returns: it did not open the FIFO
    check = integrity.ContentCheck(str(path), every=0.01)
    check.start()
    wait_for(lambda: check.looks >= 3, what="three looks past the FIFO")
    check.stop()
    assert not check._thread.is_alive() and check.damage is None
