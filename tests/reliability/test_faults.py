"""Faults injected into the running app from outside (issue 20): the audit log's file and disk,
the rules file, a held lock. Against the real app core in its own process (``app.py``).

Each test asserts what the issue asks of every fault: no allow that is not in the audit log, a
typed answer for the client, the person told (the app's stderr: its log, where the health signal
the tray shows is written too), and recovery without a restart where the fault goes away.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ProtocolError
from desktop_approver.core.service import AUDIT_WATCH_INTERVAL
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


def rows(audit: Path) -> list[tuple[str, str | None, str | None]]:
    """(args, decision, decided_by) of every call in the log at ``audit``."""
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        return db.execute("SELECT r.args, d.decision, d.decided_by FROM requests r"
                          " LEFT JOIN decisions d ON d.request = r.id ORDER BY r.id").fetchall()


def allows_recorded(audit: Path, allowed: list[str]) -> None:
    """Every call the client was allowed is in the log with an allow."""
    recorded = {json.loads(args)["command"] for args, decision, _ in rows(audit)
                if decision in ("allow_once", "allow_session")}
    assert set(allowed) <= recorded, set(allowed) - recorded


class RawLine:
    """A client speaking the protocol line by line, to send what the Python client never would."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(WAIT)
        self.sock.connect(str(path))
        self.buffer = b""
        self.send({"v": 1, "type": "hello", "client": {"agent": "raw", "pid": os.getpid(), "cwd": os.getcwd()}})
        assert self.read()["type"] == "welcome"

    def send(self, message: dict[str, Any] | bytes) -> None:
        self.sock.sendall(message + b"\n" if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")

    def read(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("the app hung up")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        self.sock.close()


def ask(app: AppProcess, command: str, agent: str = "faults") -> str:
    with Client(app.socket_path, agent=agent) as client:
        return client.request("Bash", {"command": command}, timeout=30).decided_by


# -- the rules file ----------------------------------------------------------------------------------

APPROVE_ALL_FOR_AN_HOUR = {"mode": "approve_all", "until": time.time() + 3600, "seconds": 3600}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault", ["invalid TOML", "FIFO", "device", "too large"])
def test_a_rules_file_unreadable_at_start_means_the_person_is_asked_for_everything(
        tmp_path: Path, fault: str, figures: dict[str, str]) -> None:
    """Items 6 and 7: a deny rule became approve-all's allow; a FIFO hung the app in open() for good."""
    policy, state = tmp_path / "policy.toml", tmp_path / "state.json"
    state.write_text(json.dumps({**APPROVE_ALL_FOR_AN_HOUR, "until": time.time() + 3600}))
    if fault == "invalid TOML":
        policy.write_text('[tools]\nBash = "deny"\n[[rule]\n')
    elif fault == "FIFO":
        os.mkfifo(policy)
    elif fault == "device":
        policy.symlink_to("/dev/zero")
    else:
        policy.write_text('[tools]\nBash = "deny"\n')
        os.truncate(policy, 50 * 1024 * 1024)            # 50 MB, as in the issue
    started = time.monotonic()
    with AppProcess(tmp_path, "deny", policy=policy, state=state) as app:
        figures[f"rules file {fault} at start: app ready in"] = f"{time.monotonic() - started:.2f} s"
        assert ask(app, "ls") == "user"              # not the stored approve-all: the person decided
        assert "every call is asked" in app.stderr()
        with Client(app.socket_path) as client:
            assert any("every call is asked" in problem for problem in client.status()["problems"])
        if fault == "FIFO":
            policy.unlink()
        policy.unlink(missing_ok=True)
        policy.write_text('[tools]\nBash = "deny"\n')   # fixed: in force without a restart
        wait_for(lambda: ask(app, "ls") == "policy", "the fixed rules to be in force")
        with Client(app.socket_path) as client:
            assert "problems" not in client.status()
        assert "rules works again" in app.stderr() or "policy works again" in app.stderr()
    assert all(decision == "deny" for _, decision, _ in rows(app.audit_path))


# -- the audit log's file ------------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_a_deleted_audit_log_fails_closed_and_a_fresh_one_is_started(tmp_path: Path,
                                                                       figures: dict[str, str]) -> None:
    """Item 3: 313 decisions went into the unlinked file; after a restart they were gone."""
    with AppProcess(tmp_path, "allow") as app:
        allowed = [f"echo {n}" for n in range(5)]
        for command in allowed:
            assert ask(app, command) == "user"
        app.audit_path.unlink()
        refused = answered_after = 0
        started = time.monotonic()
        while not app.audit_path.exists() or answered_after < 20:
            command = f"after {refused + answered_after}"
            try:
                ask(app, command)
            except ProtocolError as error:
                assert error.code == "internal"
                refused += 1
            else:
                allowed.append(command)
                answered_after += 1
            assert time.monotonic() - started < WAIT
        assert "was deleted" in app.stderr()
        figures["audit log deleted: requests refused before a fresh log"] = str(refused)
        allows_recorded(app.audit_path, allowed[5:])   # every allow after the fault is in the new file
        assert app.alive()


@pytest.mark.timeout(120)
def test_an_audit_log_overwritten_in_place_refuses_until_it_is_moved_away(tmp_path: Path) -> None:
    """Item 3: 310 more allows went into a file overwritten in place."""
    with AppProcess(tmp_path, "allow") as app:
        assert ask(app, "before") == "user"
        with open(app.audit_path, "r+b") as handle:
            handle.write(b"overwritten " * 1000)
        for n in range(5):
            with pytest.raises(ProtocolError) as refused:
                ask(app, f"during {n}")
            assert refused.value.code == "internal"
        assert "no longer a database" in app.stderr()
        os.rename(app.audit_path, tmp_path / "kept.sqlite3")    # the person moves it away
        wait_for(lambda: app.audit_path.exists(), "a fresh log")
        wait_for(lambda: _answers(app, "after"), "the log to work again")
        allows_recorded(app.audit_path, ["after"])


def _answers(app: AppProcess, command: str) -> bool:
    try:
        return ask(app, command) == "user"
    except ProtocolError:
        return False


@pytest.mark.timeout(120)
def test_an_audit_log_that_is_not_a_database_at_start_is_moved_aside(tmp_path: Path) -> None:
    """Item 4: the start died with an uncaught traceback (PRAGMA journal_mode=WAL), and no socket."""
    audit = tmp_path / "audit.sqlite3"
    audit.write_bytes(b"not a database " * 1000)
    with AppProcess(tmp_path, "allow") as app:
        assert ask(app, "ls") == "user"
        kept = list(tmp_path.glob("audit.sqlite3.broken-*"))
        assert [path.read_bytes() for path in kept if not path.name.endswith(("-wal", "-shm"))] == [
            b"not a database " * 1000]
        assert "moved to" in app.stderr() and "Traceback" not in app.stderr()
        allows_recorded(audit, ["ls"])


@pytest.mark.timeout(120)
def test_a_locked_audit_log_is_a_quick_typed_error_and_status_keeps_answering(tmp_path: Path,
                                                                                figures: dict[str, str]) -> None:
    """Item 5: each write waited 5 s on the event loop; six requests took 50 s and status said "not running"."""
    with AppProcess(tmp_path, "allow") as app:
        assert ask(app, "before") == "user"
        holder = sqlite3.connect(app.audit_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            for n in range(6):
                with pytest.raises(ProtocolError) as refused:
                    ask(app, f"locked {n}")
                assert refused.value.code == "internal" and "locked" in str(refused.value)
            with Client(app.socket_path) as client:
                status = client.status()
                assert status["pid"] == app.pid and "locked" in " ".join(status["problems"])
            figures["audit log locked: six refused requests and a status took"] = \
                f"{time.monotonic() - started:.2f} s (50 s before)"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        wait_for(lambda: _answers(app, "after"), "the log to work again")
        allows_recorded(app.audit_path, ["before", "after"])


# -- a full disk, a read-only file system --------------------------------------------------------------

@contextlib.contextmanager
def small_disk(path: Path, size: str = "400k") -> Iterator[Path]:
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.timeout(180)
def test_a_full_disk_keeps_refusals_notices_and_the_waiting_request(tmp_path: Path) -> None:
    """Item 1: on a full disk a notice or a malformed line got EOF, the waiting request vanished and its
    row stayed "pending" for good."""
    with small_disk(tmp_path / "disk") as disk:
        with AppProcess(tmp_path, "never", audit_path=disk / "audit.sqlite3") as app:
            line = RawLine(app.socket_path)
            line.send({"v": 1, "type": "request", "id": "r1", "tool": "Bash", "args": {"command": "make deploy"},
                       "timeout": 3600})
            wait_for(lambda: _pending(app) == 1, "the request to wait for the person")
            filler = disk / "filler"
            with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as handle:
                while True:
                    handle.write(b"\0" * 4096)
            line.send({"v": 1, "type": "notice", "id": "n1", "kind": "info", "text": "x" * 1500})
            line.send(b"{not json")
            first, second = line.read(), line.read()
            assert (first["type"], first.get("id"), second["type"], second["code"]) == (
                "error", "n1", "error", "invalid_json")
            assert _pending(app) == 1                      # the connection and its request stayed
            line.close()                                   # withdrawn, on a full disk
            wait_for(lambda: _pending(app) == 0, "the withdrawal")
            filler.unlink()                                # room again: what is owed is written
            wait_for(lambda: all(decision is not None for _, decision, _ in rows(app.audit_path)),
                       "the withdrawal's row")
            assert rows(app.audit_path)[-1][1:] == ("deny", "cancelled")
            assert "cannot be written" in app.stderr()


def _pending(app: AppProcess) -> int:
    with Client(app.socket_path) as client:
        return int(client.status()["pending"])


@pytest.mark.timeout(180)
@pytest.mark.parametrize("before", ["quit", "killed"])
def test_a_read_only_start_recovers_without_a_restart(tmp_path: Path, before: str) -> None:
    """Item 2: after a read-only start the app answered "attempt to write a readonly database" until restarted.
    ``quit``: no -shm is left, SQLite cannot open the log at all; ``killed``: it opens it read-only."""
    with small_disk(tmp_path / "disk", "2m") as disk:
        audit = disk / "audit.sqlite3"
        with AppProcess(tmp_path, "allow", audit_path=audit) as first:
            assert ask(first, "first run") == "user"
            if before == "killed":
                first.process.kill()
                first.process.wait(WAIT)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with AppProcess(tmp_path, "allow", audit_path=audit) as app:
            with pytest.raises(ProtocolError) as refused:
                ask(app, "read only")
            assert refused.value.code == "internal"
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
            wait_for(lambda: _answers(app, "writable again"), "the log to work again")
            allows_recorded(audit, ["first run", "writable again"])
            assert "works again" in app.stderr()


# -- the clock -------------------------------------------------------------------------------------

LIBFAKETIME = next((path for path in (Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"),
                                      Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"),
                                      Path("/usr/lib/faketime/libfaketimeMT.so.1")) if path.exists()), None)


@pytest.mark.timeout(120)
@pytest.mark.skipif(LIBFAKETIME is None, reason="libfaketime is not installed (apt install faketime; .ci/run does)")
def test_approve_all_ends_on_time_when_the_wall_clock_is_set_back_an_hour(tmp_path: Path,
                                                                         figures: dict[str, str]) -> None:
    """Item 11: a clock set back an hour turned a 20-second approve-all into an hour. The app runs under
    libfaketime, its wall clock moved back an hour while approve-all runs; its monotonic clock is real."""
    clock_file, state = tmp_path / "faketime", tmp_path / "state.json"
    clock_file.write_text("+0\n")
    state.write_text(json.dumps({"mode": "approve_all", "until": time.time() + 4, "seconds": 4}))
    faked = {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME_TIMESTAMP_FILE": str(clock_file), "FAKETIME_NO_CACHE": "1",
             "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    with AppProcess(tmp_path, "deny", state=state, env=faked) as app:
        started = time.monotonic()
        assert ask(app, "ls") == "mode"                     # approve-all, for 4 s
        clock_file.write_text("-1h\n")                      # the wall clock goes back an hour
        with Client(app.socket_path) as client:
            assert client.status()["mode"] == "approve_all"
        wait_for(lambda: ask(app, "ls") == "user", "approve-all to end", timeout=30)
        figures["approve-all of 4 s with the wall clock set back 1 h ended after"] = \
            f"{time.monotonic() - started:.1f} s"
    assert rows(app.audit_path)[-1][1:] == ("deny", "user")


# -- issue 20, the red team's second round -------------------------------------------------------------

def _status_problems(app: AppProcess) -> str:
    with Client(app.socket_path) as client:
        return " ".join(client.status().get("problems", []))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["deleted", "replaced"])
def test_a_lost_write_ahead_log_is_noticed_and_no_answered_allow_is_lost(tmp_path: Path, fault: str,
                                                                        figures: dict[str, str]) -> None:
    """Red team item 1: the -wal deleted while the app ran went unnoticed; 605 allows answered, then
    kill -9: all 605 missing from the log (the deleted -wal held them), no log line, no degraded."""
    with AppProcess(tmp_path, "allow") as app:
        allowed = [f"echo {n}" for n in range(120)]     # fewer than a checkpoint's worth: all in the -wal
        for command in allowed:
            assert ask(app, command) == "user"
        wal = app.audit_path.with_name(app.audit_path.name + "-wal")
        wal.unlink()
        if fault == "replaced":
            wal.write_bytes(b"")
        changed = time.monotonic()
        refused = 0
        while True:                                       # refused until the log is reopened, then answered
            command = f"after {refused}"
            try:
                ask(app, command)
            except ProtocolError as error:
                assert error.code == "internal"
                refused += 1
            else:
                allowed.append(command)
                break
        # Closed at once, not after the next write; unless this machine stalled the test for as long as
        # the app's once-a-second watch takes to notice and reopen the log (then nothing was unsafe).
        assert refused > 0 or time.monotonic() - changed > AUDIT_WATCH_INTERVAL
        figures[f"audit -wal {fault}: requests refused before the log was reopened"] = str(refused)
        log = app.stderr()
        assert "lost its -wal file" in log and "degraded (audit)" in log and "audit works again" in log
        app.process.kill()                                # kill -9: only what is in the files counts
        app.process.wait(WAIT)
    allows_recorded(app.audit_path, allowed)


WITHOUT_ROOTS_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
"""The tests run as root, whom no file mode stops: the app runs without the capabilities that let it."""


@pytest.mark.timeout(120)
@pytest.mark.parametrize("what", ["directory", "database"])
def test_an_audit_log_it_may_not_open_at_start_is_refused_not_moved_aside(tmp_path: Path, what: str) -> None:
    """Red team item 3: the directory chmod 000 killed the start (PermissionError in move_aside, no socket);
    the database chmod 000 was called "not a SQLite database", moved aside and a fresh log started."""
    folder = tmp_path / "audit"
    folder.mkdir()
    audit = folder / "audit.sqlite3"
    with AppProcess(tmp_path, "allow", audit_path=audit) as first:
        assert ask(first, "first run") == "user"
    locked = folder if what == "directory" else audit
    locked.chmod(0)
    try:
        with AppProcess(tmp_path, "allow", audit_path=audit, prefix=WITHOUT_ROOTS_OVERRIDE) as app:
            with pytest.raises(ProtocolError) as refused:
                ask(app, "while locked")
            assert refused.value.code == "internal"
            assert "permission denied" in _status_problems(app)
            assert "Traceback" not in app.stderr()
            locked.chmod(0o700 if what == "directory" else 0o600)   # permissions given back: no restart
            wait_for(lambda: _answers(app, "given back"), "the log to work again")
            assert "audit works again" in app.stderr()
    finally:
        locked.chmod(0o700 if what == "directory" else 0o600)
    assert sorted(path.name for path in folder.iterdir() if ".broken-" in path.name or ".stale-" in path.name) == []
    allows_recorded(audit, ["first run", "given back"])           # one history, not split


@pytest.mark.timeout(120)
def test_a_deleted_audit_directory_is_made_again_with_a_fresh_log(tmp_path: Path) -> None:
    """Red team item 5: deleting the log's directory locked everything out for good (the message promised
    a fresh log; the directory was never made again, the real reason only at DEBUG)."""
    folder = tmp_path / "audit"
    with AppProcess(tmp_path, "allow", audit_path=folder / "audit.sqlite3") as app:
        assert ask(app, "before") == "user"
        subprocess.run(["rm", "-rf", str(folder)], check=True)
        wait_for(lambda: _answers(app, "after"), "a fresh log in a directory made again")
        assert "was deleted with its directory" in app.stderr()
        assert (folder.stat().st_mode & 0o777) == 0o700
        allows_recorded(app.audit_path, ["after"])


def _history(audit: Path, *options: str) -> list[dict[str, Any]]:
    """``desktop-approver history --json`` on ``audit``: what the person sees."""
    shown = subprocess.run([sys.executable, "-m", "desktop_approver", "history", "--json", "--limit", "0",
                            "--audit-db", str(audit), *options], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in shown.stdout.splitlines()]


@pytest.mark.timeout(120)
def test_calls_left_waiting_by_a_killed_app_are_closed_as_denied_at_the_next_start(tmp_path: Path) -> None:
    """Red team item 4: after kill -9 with 30 requests waiting, their rows stayed "pending" for good."""
    with AppProcess(tmp_path, "never") as app:
        line = RawLine(app.socket_path)
        for n in range(30):
            line.send({"v": 1, "type": "request", "id": f"r{n}", "tool": "Bash", "args": {"command": f"make {n}"},
                       "timeout": 3600})
        wait_for(lambda: _pending(app) == 30, "30 requests waiting for the person")
        app.process.kill()
        app.process.wait(WAIT)
        line.close()
    assert len(_history(app.audit_path, "--decision", "pending")) == 30
    with AppProcess(tmp_path, "never") as again:
        line = RawLine(again.socket_path)                # a request of this run waits: it is not closed
        line.send({"v": 1, "type": "request", "id": "now", "tool": "Bash", "args": {"command": "make now"},
                   "timeout": 3600})
        wait_for(lambda: _pending(again) == 1, "this run's request to wait")
        shown = _history(again.audit_path)
        assert [entry["args"]["command"] for entry in _history(again.audit_path, "--decision", "pending")] == [
            "make now"]
        closed = [entry for entry in shown if entry["args"]["command"] != "make now"]
        assert len(closed) == 30
        assert {(entry["decision"], entry["decided_by"]) for entry in closed} == {("deny", "cancelled")}
        assert all("the app stopped before an answer" in entry["note"] for entry in closed)
        assert "closed 30 calls an earlier run of the app left waiting" in again.stderr()
        line.close()


def _someone_elses_database(path: Path) -> bytes:
    """A database of another program's, with a table named like the log's: its bytes."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE requests (id INTEGER PRIMARY KEY, url TEXT)")
        db.execute("INSERT INTO requests (url) VALUES ('https://example.org')")
        db.commit()
    return path.read_bytes()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("when", ["at start", "while running"])
def test_someone_elses_database_at_the_path_is_refused_with_the_true_reason_and_never_written(
        tmp_path: Path, when: str) -> None:
    """Red team item 7: the reason said "replaced by another file … until the path holds a database" though it
    was one; the cause ("no such column: created") only at DEBUG; three tracebacks per refused request."""
    audit, foreign = tmp_path / "audit.sqlite3", tmp_path / "theirs.sqlite3"
    theirs = _someone_elses_database(foreign)
    if when == "at start":
        os.rename(foreign, audit)
    with AppProcess(tmp_path, "allow") as app:
        if when == "while running":
            assert ask(app, "before") == "user"
            os.rename(foreign, audit)
        for n in range(10):
            with pytest.raises(ProtocolError) as refused:
                ask(app, f"refused {n}")
            assert refused.value.code == "internal"
        wait_for(lambda: "not the app's audit log" in _status_problems(app), "the true reason")
        assert "database of another shape" in _status_problems(app)
        log = app.stderr()
        assert "Traceback" not in log
        assert sum("another shape" in line for line in log.splitlines()) <= 3   # per change, not per request
        assert audit.read_bytes() == theirs                                     # never written into
        os.rename(audit, tmp_path / "theirs-again.sqlite3")                     # the person moves it away
        wait_for(lambda: _answers(app, "after"), "a fresh log")
    assert (tmp_path / "theirs-again.sqlite3").read_bytes() == theirs
    allows_recorded(audit, ["after"])


@pytest.mark.timeout(120)
@pytest.mark.skipif(LIBFAKETIME is None, reason="libfaketime is not installed (apt install faketime; .ci/run does)")
def test_a_wall_clock_far_ahead_at_start_prunes_nothing_and_says_so(tmp_path: Path) -> None:
    """Red team item 2: --history-days 30 with the wall clock 400 days ahead at start wiped the log
    ("pruned 2304 entries")."""
    with AppProcess(tmp_path, "allow") as first:
        allowed = [f"echo {n}" for n in range(20)]
        for command in allowed:
            assert ask(first, command) == "user"
    clock_file = tmp_path / "faketime"
    clock_file.write_text("+400d\n")
    ahead = {"LD_PRELOAD": str(LIBFAKETIME), "FAKETIME_TIMESTAMP_FILE": str(clock_file), "FAKETIME_NO_CACHE": "1",
             "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    with AppProcess(tmp_path, "allow", env=ahead, history_days=30) as app:
        wait_for(lambda: "nothing was pruned" in app.stderr(), "the refusal to prune")
        assert ask(app, "while ahead") == "user"
        allowed.append("while ahead")
        assert "pruned 20" not in app.stderr() and "clock looks wrong" in app.stderr()
    allows_recorded(app.audit_path, allowed)


@pytest.mark.timeout(180)
def test_a_full_disk_stays_degraded_until_a_write_really_succeeds(tmp_path: Path) -> None:
    """Red team item 6: on a disk still full the degraded state flickered ("audit works again", "no longer
    degraded") between refusals."""
    with small_disk(tmp_path / "disk") as disk:
        with AppProcess(tmp_path, "allow", audit_path=disk / "audit.sqlite3") as app:
            assert ask(app, "before") == "user"
            filler = disk / "filler"
            with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as handle:
                while True:
                    handle.write(b"\0" * 4096)
            refused, answered = 0, []
            deadline = time.monotonic() + 8                 # several of the watch's looks (once a second)
            while time.monotonic() < deadline:
                command = f"full {refused + len(answered)} " + "x" * 3000
                try:
                    ask(app, command)
                except ProtocolError as error:
                    assert error.code == "internal"
                    refused += 1
                else:
                    answered.append(command)
                time.sleep(0.05)
            assert refused > 0
            log = app.stderr()
            assert "degraded (audit)" in log and "audit works again" not in log, log[-3000:]
            filler.unlink()                                  # room again: works again, said once
            wait_for(lambda: _answers(app, "room again"), "the log to work again")
            assert app.stderr().count("audit works again") == 1
            allows_recorded(app.audit_path, ["before", *answered, "room again"])
