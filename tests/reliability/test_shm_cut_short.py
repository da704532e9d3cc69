"""The audit log's ``-shm`` cut short while the app runs (issue 34's fault injection, F18).

SQLite maps the ``-shm`` into the memory of the process; a page cut off the file kills the process
with SIGBUS on its next touch (the agent in flight got EOF, the socket file was left). The log now
gives the file its length back before each use: SQLite rebuilds the index from the ``-wal``, nothing
is lost, the app answers on, and the person is told.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import pytest

from desktop_approver import Client
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


def count(audit: Path, sql: str) -> int:
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        return int(db.execute(sql).fetchone()[0])


@pytest.mark.timeout(300)
def test_a_shm_cut_short_is_given_its_length_back_and_nothing_is_lost(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "allow"\n')
    with AppProcess(tmp_path, "never", policy=policy) as app:
        shm = Path(f"{app.audit_path}-shm")
        with Client(app.socket_path, agent="before") as client:
            for n in range(40):
                assert client.request("Bash", {"command": f"ls {n}"}, timeout=WAIT).decision == "allow_once"
        assert shm.stat().st_size > 0
        for round_ in range(3):  # at rest (the once-a-second watch and the content check find it) and in use
            os.truncate(shm, 0)
            with Client(app.socket_path, agent=f"after-{round_}") as client:
                for n in range(20):
                    assert client.request("Bash", {"command": f"ls {n}"}, timeout=WAIT).decision == "allow_once"
            assert app.alive(), app.stderr()
        wait_for(lambda: count(app.audit_path, "SELECT count(*) FROM events WHERE code = 'shm-restored'") >= 1,
                 "the person to be told")
        assert shm.stat().st_size > 0
        with Client(app.socket_path) as client:
            assert client.status()["pending"] == 0
        assert count(app.audit_path, "SELECT count(*) FROM decisions WHERE decision = 'allow_once'") == 100
    assert app.process.returncode == 0, app.stderr()
    assert "was cut short by another program" in app.stderr()
    assert "Traceback" not in app.stderr()
    with contextlib.closing(sqlite3.connect(app.audit_path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
