"""The answer recorded is the answer delivered (issue 34, item 2), against the real app process.

The app is stopped (SIGSTOP) for longer than its clients wait; they give up and close their
connections while their requests still sit unread in the app's sockets. When the app runs again it
reads them: none may be recorded as allowed, since no agent received an answer. Both ways an answer
is made are covered: a rule (answered at once, in the turn's group commit) and the person.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import threading
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverUnavailable
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for

GIVES_UP_AFTER = 0.5
"""The request timeout of the agents that give up: the client waits twice that plus its grace (11 s)."""


def decisions(audit: Path) -> list[tuple[str, str, str, str | None]]:
    """(agent, decision, decided_by, note) of every decided call in the log, in the order asked."""
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        return db.execute("SELECT r.agent, d.decision, d.decided_by, d.note FROM requests r"
                          " JOIN decisions d ON d.request = r.id ORDER BY r.id").fetchall()


def raw_agent_that_gives_up(path: Path, request_id: str, command: str) -> None:
    """Connects, asks, and hangs up without waiting (as a client whose timeout passed does)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(WAIT)
        sock.connect(str(path))
        lines = [{"v": 1, "type": "hello", "client": {"agent": "gives-up-raw", "pid": os.getpid()}},
                 {"v": 1, "type": "request", "id": request_id, "tool": "Bash", "args": {"command": command}}]
        sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))


@pytest.mark.timeout(180)
def test_requests_whose_agents_gave_up_while_the_app_was_stopped_are_never_recorded_as_allowed(
        tmp_path: Path, figures: dict[str, str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "allow"\n')  # "ls" is answered by the rule, "rm -rf build" by the person
    with AppProcess(tmp_path, "allow", policy=policy) as app:
        with Client(app.socket_path, agent="live") as client:
            assert client.request("Bash", {"command": "ls"}, timeout=30).decided_by == "policy"
            assert client.request("Bash", {"command": "rm -rf build"}, timeout=30).decided_by == "user"

        gave_up: list[BaseException] = []

        def client_that_gives_up(command: str) -> None:
            with Client(app.socket_path, agent="gives-up") as client:
                try:
                    client.request("Bash", {"command": command}, timeout=GIVES_UP_AFTER)
                except ApproverUnavailable as exc:
                    gave_up.append(exc)

        app.process.send_signal(signal.SIGSTOP)
        try:
            threads = [threading.Thread(target=client_that_gives_up, args=(command,))
                       for command in ("ls", "rm -rf build", "ls -la", "rm -rf dist")]
            for thread in threads:
                thread.start()
            raw_ids = [f"raw-{n}" for n in range(20)]
            for n, request_id in enumerate(raw_ids):
                raw_agent_that_gives_up(app.socket_path, request_id, "ls" if n % 2 else "rm -rf build")
            for thread in threads:
                thread.join(WAIT)
            assert len(gave_up) == len(threads)  # every client gave up while the app was stopped
        finally:
            app.process.send_signal(signal.SIGCONT)

        expected = 2 + len(threads) + len(raw_ids)
        found = wait_for(lambda: (rows := decisions(app.audit_path)) and len(rows) >= expected and rows,
                         "every request sent while the app was stopped to be recorded")
        assert [(agent, decision) for agent, decision, _, _ in found[:2]] == [("live", "allow_once")] * 2
        gone = found[2:]
        assert len(gone) == expected - 2
        assert all(decision == "deny" and by == "cancelled" and note and "agent gone" in note
                   for _, decision, by, note in gone), gone
        figures["requests of agents gone during a 11 s stop, recorded as never answered"] = str(len(gone))

        with Client(app.socket_path, agent="live") as client:  # and live agents are answered as before
            assert client.request("Bash", {"command": "ls"}, timeout=30).decided_by == "policy"
        assert "Traceback" not in app.stderr()
