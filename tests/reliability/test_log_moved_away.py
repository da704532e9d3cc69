"""The audit log's file moved away while the app runs (issue 34's fault injection, F14(dir)/F6).

The app noticed (the file at the path was gone or another) and started a new log, but SQLite never
copies a write-ahead log into a moved file: the rows answered before the move were in neither
database, only in a ``-wal`` kept aside. Now the moved file is followed (its inode, through the
descriptor the app holds): the ``-wal`` is copied into it first, and the person is told where it is.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from desktop_approver import Client
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


def allows(audit: Path) -> int:
    """Allows in the file alone (no ``-wal`` beside a moved file: what anyone opening it reads)."""
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT count(*) FROM decisions WHERE decision = 'allow_once'").fetchone()[0])


def answered(app: AppProcess) -> bool:
    with Client(app.socket_path, agent="after") as client:
        try:
            return client.request("Bash", {"command": "ls"}, timeout=WAIT).decision == "allow_once"
        except Exception:
            return False


@pytest.mark.timeout(300)
@pytest.mark.parametrize("in_its_place", ["nothing", "a directory"])
def test_a_log_moved_away_keeps_every_row_and_the_person_is_told_where(tmp_path: Path, in_its_place: str) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "allow"\n')
    with AppProcess(tmp_path, "never", policy=policy) as app:
        with Client(app.socket_path, agent="before") as client:
            for _ in range(30):
                assert client.request("Bash", {"command": "ls"}, timeout=WAIT).decision == "allow_once"
        moved = tmp_path / "audit.moved"
        app.audit_path.rename(moved)
        if in_its_place == "a directory":
            app.audit_path.mkdir()
            wait_for(lambda: "was replaced by another file" in app.stderr(), "the move to be noticed")
            app.audit_path.rmdir()
        wait_for(lambda: answered(app), "the app to answer again, with a new log")
        assert allows(moved) == 30  # every row answered before the move, in the moved file itself
        assert allows(app.audit_path) >= 1
        with contextlib.closing(sqlite3.connect(f"{app.audit_path.as_uri()}?mode=ro", uri=True)) as db:
            [told] = db.execute("SELECT detail FROM events WHERE code = 'recovered'").fetchone()
        assert str(moved) in told and "everything it recorded until then is in that file" in told
    assert f"was moved away while the app ran (to {moved})" in app.stderr()
    assert "Traceback" not in app.stderr()
