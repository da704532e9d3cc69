"""kill -9 the app core mid-work: the audit log stays sound and holds every answer it gave.

The core runs in its own process (a plain asyncio loop, a scripted person), so SIGKILL hits a
real app with open connections, a pending request and the database open in WAL mode.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_approver.client import Client
from desktop_approver.client.errors import ApproverUnavailable

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = 40

CORE = """
import asyncio, sys
from pathlib import Path
from desktop_approver.core.service import ApproverService, ServiceOptions
from desktop_approver.core.decisions.tickets import Verdict
from tests.support.deciders import ScriptedPerson

def even_allowed(ticket):
    # Allows even-numbered calls, denies odd ones, and never answers "hold".
    if any(call.tool == "hold" for call in ticket.calls):
        return None
    return [Verdict("allow_once" if call.args["n"] % 2 == 0 else "deny", "user", note="scripted")
            for call in ticket.calls]

async def main():
    options = ServiceOptions(socket_path=Path(sys.argv[1]), audit_path=Path(sys.argv[2]),
                             policy_path=None, state_path=None)
    service = ApproverService(options, ScriptedPerson(even_allowed))
    await service.start()
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


class Core:
    """The app core as a child process, started and waited for ready."""

    def __init__(self, tmp: Path) -> None:
        self.socket_path = tmp / "run" / "approver.sock"
        self.audit_path = tmp / "data" / "audit.sqlite3"
        self.script = tmp / "core.py"
        self.script.write_text(CORE)
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        if self.process is not None:  # a restart: the killed process's pipes are done with
            self.close_pipes()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        process = subprocess.Popen([sys.executable, str(self.script), str(self.socket_path), str(self.audit_path)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.process = process
        stdout = process.stdout
        assert stdout is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)  # a generous bound against a hang, not a timing assertion
        if ready != ["ready\n"]:
            process.kill()
            raise AssertionError(f"the core did not start: {process.communicate(timeout=10)[1]}")

    def close_pipes(self) -> None:
        assert self.process is not None
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        assert self.process.returncode == -signal.SIGKILL


@pytest.fixture
def core(tmp_path: Path) -> Iterator[Core]:
    running = Core(tmp_path)
    yield running
    if running.process is not None:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait(10)
        running.close_pipes()


def wait_until_pending(socket_path: Path, count: int) -> None:
    """Until the app reports ``count`` pending calls (bounded by a generous deadline, not timed)."""
    deadline = time.monotonic() + 30
    with Client(socket_path) as client:
        while client.status()["pending"] != count:
            assert time.monotonic() < deadline, "the held request never reached the person"
            time.sleep(0.05)


def test_kill_9_keeps_every_answer_and_the_database_sound(core: Core) -> None:
    core.start()
    answered: dict[int, str] = {}
    with Client(core.socket_path, agent="crash-test", session="crash") as client:
        for n in range(REQUESTS):
            answered[n] = client.request("step", {"n": n}).decision
        batch = client.request_batch([("batch_step", {"n": REQUESTS}), ("batch_step", {"n": REQUESTS + 1})])
    assert [d.decision for d in batch] == ["allow_once", "deny"]
    answered[REQUESTS], answered[REQUESTS + 1] = (d.decision for d in batch)

    held_error: list[BaseException] = []

    def ask_and_wait() -> None:
        try:
            with Client(core.socket_path, agent="crash-test", session="crash") as holder:
                holder.request("hold", {"n": -1})
        except BaseException as exc:  # the app dies under it
            held_error.append(exc)

    holder = threading.Thread(target=ask_and_wait, daemon=True)
    holder.start()
    wait_until_pending(core.socket_path, 1)
    core.kill()
    holder.join(30)
    assert len(held_error) == 1 and isinstance(held_error[0], ApproverUnavailable)  # fail closed, no hang

    assert core.socket_path.exists()  # SIGKILL leaves the socket file behind
    with sqlite3.connect(core.audit_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        logged = dict(db.execute(
            "SELECT json_extract(r.args, '$.n'), d.decision FROM requests r JOIN decisions d ON d.request = r.id"
            " WHERE r.tool IN ('step', 'batch_step')").fetchall())
        held = db.execute("SELECT d.id FROM requests r LEFT JOIN decisions d ON d.request = r.id"
                          " WHERE r.tool = 'hold'").fetchall()
    assert logged == answered
    assert list(answered.values()).count("deny") == REQUESTS // 2 + 1
    assert held == [(None,)]  # asked, never answered: logged as pending

    core.start()  # the stale socket is replaced, the log carries on
    with Client(core.socket_path, agent="crash-test", session="after") as client:
        assert client.request("step", {"n": 100}).decision == "allow_once"
        assert client.status()["pending"] == 0
    with sqlite3.connect(core.audit_path) as db:
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == REQUESTS + 2 + 1 + 1
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
