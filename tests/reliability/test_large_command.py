"""One huge command line (issue 34's fault injection, F9), against the real app process.

An agent sends a 900 KiB ``ls a a a ...`` (under the 1 MiB line cap) that an allow rule's pattern
(``ls *``) would match. Reading it took the event loop 59 s: every other agent and ``status``
waited, and then the rule allowed a call nobody had read. Now the reading is bounded: the call is
"not understood" (too long to read), so no rule answers it and it waits for the person, and the app
goes on answering everyone else meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from desktop_approver import Client
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for

HUGE = "ls " + "a " * 460_800
"""900 KiB of command line, 460,801 words."""


def risk_of(audit: Path, request_id: str) -> tuple[str, str]:
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT risk_level, risk_reasons FROM requests WHERE request_id = ?", (request_id,)).fetchone()
    assert row is not None, "the huge call is not in the log"
    return row[0], row[1]


def read_line(sock: socket.socket) -> bytes:
    """One line, byte by byte: nothing after it is taken from the socket."""
    line = b""
    while not line.endswith(b"\n"):
        byte = sock.recv(1)
        assert byte, "the app closed the connection"
        line += byte
    return line


@pytest.mark.timeout(300)
def test_a_900_kib_command_is_not_read_and_never_holds_the_other_agents(
        tmp_path: Path, figures: dict[str, str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('version = 1\n[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls *"\n')
    with AppProcess(tmp_path, "never", policy=policy) as app:
        with Client(app.socket_path, agent="small") as client:
            assert client.request("Bash", {"command": "ls -la"}, timeout=WAIT).decided_by == "policy"
        line = {"v": 1, "type": "request", "id": "huge", "tool": "Bash", "args": {"command": HUGE}}
        hello = {"v": 1, "type": "hello", "client": {"agent": "huge", "pid": os.getpid()}}
        payload = b"".join(json.dumps(m).encode() + b"\n" for m in (hello, line))
        assert 900 * 1024 < len(payload) < 1024 * 1024
        with socket.socket(socket.AF_UNIX) as huge:
            huge.settimeout(WAIT)
            huge.connect(str(app.socket_path))
            sender = threading.Thread(target=huge.sendall, args=(payload,))
            sent = time.monotonic()
            sender.start()
            latencies: list[float] = []
            answers: list[str] = []

            def waiting() -> bool:
                asked = time.monotonic()
                with Client(app.socket_path, agent="other") as other:
                    pending = other.status()["pending"]
                    answers.append(other.request("Bash", {"command": "ls -la"}, timeout=WAIT).decided_by)
                latencies.append(time.monotonic() - asked)
                return pending == 1

            wait_for(waiting, "the huge call to wait for the person")
            sender.join(WAIT)
            figures["900 KiB command: waiting for the person after"] = f"{time.monotonic() - sent:.2f} s"
            for _ in range(20):  # and the app goes on answering everyone while it waits
                waiting()
            figures["900 KiB command: another agent's status + rule-answered call, slowest"] = \
                f"{max(latencies) * 1000:.0f} ms over {len(latencies)}"
            assert set(answers) == {"policy"}
            welcome = json.loads(read_line(huge))
            assert welcome["type"] == "welcome", welcome
            huge.setblocking(False)
            with pytest.raises(BlockingIOError):  # no rule answered a call nobody read
                huge.recv(65536, socket.MSG_PEEK)
            level, reasons = risk_of(app.audit_path, "huge")
            assert "too long to read" in reasons, reasons
        wait_for(lambda: Client(app.socket_path).status()["pending"] == 0, "the huge call to be withdrawn")
    assert "Traceback" not in app.stderr()
