"""A log that checks its content (issue 34, item 1), against the real app process.

Bytes are written over pages of the audit database while the app runs: the file, its inode and
its header stay as they were, so only a look at the content can tell. The app must find it within
seconds, refuse requests meanwhile (fail closed), say so, move the damaged file aside with what
can be read out of it, and answer again into a new log, without a restart.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverError
from tests.reliability.app import AppProcess
from tests.support.waiting import wait_for

PAGE = 1024  # core.store.audit.PAGE_SIZE


def ask(app: AppProcess, command: str) -> str:
    """Who decided the call, or "refused" when the app refused it (its log cannot take it)."""
    try:
        with Client(app.socket_path, agent="content") as client:
            return client.request("Bash", {"command": command}, timeout=30).decided_by
    except ApproverError:
        return "refused"


def count(path: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.mark.timeout(240)
def test_pages_overwritten_while_running_are_found_the_log_moved_aside_and_a_new_one_started(
        tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "allow") as app:
        for n in range(300):  # past the checkpointer's threshold: the rows reach the database file
            assert ask(app, f"echo {n}") == "user"
        wait_for(lambda: app.audit_path.stat().st_size > 40 * PAGE, "the rows to be copied into the database file")
        with open(app.audit_path, "r+b") as file:  # four pages in the middle: the header stays whole
            file.seek(20 * PAGE)
            file.write(os.urandom(4 * PAGE))
        started = time.monotonic()
        answers: list[str] = []

        def recovered() -> bool:
            answers.append(ask(app, f"echo after {len(answers)}"))
            return bool(list(tmp_path.glob("audit.sqlite3.broken-*.recovered"))) and answers[-1] == "user"

        wait_for(recovered, "the damaged log to be moved aside and a new one started")
        figures["damaged audit log: found, moved aside and a new log answering after"] = \
            f"{time.monotonic() - started:.1f} s"
        stderr = app.stderr()
        assert "is damaged" in stderr and "a new log was started" in stderr
        [salvaged] = tmp_path.glob("audit.sqlite3.broken-*.recovered")
        assert count(salvaged, "requests") > 200  # most of what the damaged file held was read out of it
        with contextlib.closing(sqlite3.connect(f"{app.audit_path.as_uri()}?mode=ro", uri=True)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            [detail] = db.execute("SELECT detail FROM events WHERE kind = 'audit' AND code = 'recovered'").fetchone()
            assert "was damaged" in detail and str(salvaged) in detail
            decided = db.execute("SELECT d.decided_by FROM requests r JOIN decisions d ON d.request = r.id"
                                 " WHERE r.args LIKE '%echo after%'").fetchall()
        assert ("user",) in decided  # every answer given after the new log began is in it
        assert ask(app, "echo again") == "user"
        with Client(app.socket_path) as client:
            assert "problems" not in client.status()
    assert "Traceback" not in app.stderr()
