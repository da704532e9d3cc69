"""512 connections, each with a request waiting for the person (issue 35's point, server side),
against the real app process: a newcomer's request is refused ``too_many_connections`` at once,
``status`` is answered, and SIGTERM is obeyed (every waiting agent told ``shutting_down``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverError
from tests.reliability.app import AppProcess
from tests.reliability.test_faults_live import pending_requests
from tests.support.waiting import WAIT, wait_for

HOLDER = r"""
import json, os, socket, sys
path, count = sys.argv[1], int(sys.argv[2])
held = []
for n in range(count):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    lines = [{"v": 1, "type": "hello", "client": {"agent": "holder", "pid": os.getpid()}},
             {"v": 1, "type": "request", "id": f"h{n}", "tool": "Bash", "args": {"command": f"rm -rf build{n}"}}]
    sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    held.append(sock)
print("sent", flush=True)
sys.stdin.read()  # until the test is done
codes = []
for sock in held:
    sock.settimeout(30)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    codes += [json.loads(line).get("code") or json.loads(line).get("type") for line in data.splitlines()]
print(json.dumps(codes), flush=True)
"""


@pytest.mark.timeout(300)
def test_512_waiting_connections_a_newcomer_is_refused_at_once_status_answered_sigterm_obeyed(
        tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "never") as app:
        holders = [subprocess.Popen([sys.executable, "-c", HOLDER, str(app.socket_path), "64"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True) for _ in range(8)]
        try:
            for holder in holders:
                assert holder.stdout is not None and holder.stdout.readline().strip() == "sent"
            wait_for(lambda: pending_requests(app.audit_path) == 512,  # read from the log: a status would take a slot
                     "512 requests to wait for the person")
            started = time.monotonic()
            with Client(app.socket_path, agent="newcomer") as client, pytest.raises(ApproverError) as refused:
                client.request("Bash", {"command": "ls"}, timeout=WAIT)
            figures["512 waiting connections: a newcomer's request refused after"] = \
                f"{(time.monotonic() - started) * 1000:.0f} ms"
            assert "too_many_connections" in str(refused.value) or "512 connections" in str(refused.value)
            started = time.monotonic()
            with Client(app.socket_path) as client:
                assert client.status()["pending"] == 512
            figures["512 waiting connections: status answered after"] = f"{(time.monotonic() - started) * 1000:.0f} ms"
            started = time.monotonic()
            app.process.send_signal(signal.SIGTERM)
            app.process.wait(WAIT)
            figures["512 waiting connections: SIGTERM obeyed after"] = f"{time.monotonic() - started:.2f} s"
            told = []
            for holder in holders:
                out, _ = holder.communicate("", timeout=WAIT)
                told += json.loads(out.strip().splitlines()[-1])
            assert told.count("shutting_down") == 512, told
        finally:
            for holder in holders:
                if holder.poll() is None:
                    holder.kill()
                    holder.communicate()
    assert app.process.returncode == 0 and "Traceback" not in app.stderr()
    assert not app.socket_path.exists()
