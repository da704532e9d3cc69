"""The app killed, its clients killed, floods and descriptor exhaustion: all from outside.

The app core runs in its own process (``tests/reliability/app.py``); clients are threads of this
process or processes of their own. Figures go to BENCHMARKS.md through the ``figures`` fixture.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from desktop_approver import AsyncClient, Client
from desktop_approver.client.errors import ApproverUnavailable
from tests.reliability.app import ROOT, AppProcess
from tests.support.waiting import WAIT, wait_for


def pending(app: AppProcess) -> int:
    with Client(app.socket_path) as client:
        return int(client.status()["pending"])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.timeout(300)
def test_kill_9_with_pending_requests_then_restart(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "allow") as app:
        with Client(app.socket_path, agent="before") as client:
            answered = [client.request("deploy", {"n": n}).decision for n in range(80)]
        assert answered == ["allow_once"] * 80
        app.process.kill()                                   # kill -9 right after answering
        app.process.wait(WAIT)
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] >= 80

    app = AppProcess(tmp_path, "never", max_pending=1000)   # the stale socket is replaced
    failures: list[float] = []

    async def hundred() -> None:
        agents = [AsyncClient(app.socket_path, agent=f"a{i}") for i in range(4)]

        async def ask(agent: AsyncClient, n: int) -> None:
            try:
                await agent.request("deploy", {"n": n}, timeout=3600)
            except ApproverUnavailable:
                failures.append(time.perf_counter())

        tasks = [asyncio.ensure_future(ask(agents[n % 4], n)) for n in range(100)]
        try:
            await asyncio.get_running_loop().run_in_executor(None, lambda: wait_for(lambda: pending(app) == 100,
                                                                                     "100 pending requests"))
            killed = time.perf_counter()
            os.kill(app.pid, signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(*tasks), WAIT)
        finally:  # a failure here leaves no connection for the garbage collector to find in a later test
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for agent in agents:
                await agent.aclose()
        figures["kill -9 with 100 pending: slowest client told"] = f"{(max(failures) - killed) * 1000:.1f} ms"

    try:
        asyncio.run(hundred())
        assert len(failures) == 100                          # every client failed closed, none hung
    finally:
        app.process.kill()                                   # not killed yet if the test failed first
        app.process.communicate(timeout=WAIT)
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 180   # asked calls recorded first
    with AppProcess(tmp_path, "deny") as again:
        assert Client(again.socket_path).request("deploy", {}).decision == "deny"


def test_a_killed_client_takes_its_request_with_it(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "never") as app:
        script = ("import sys\nfrom desktop_approver import Client\n"
                  "Client(sys.argv[1], agent='doomed').request('Bash', {'command': 'sleep 1'}, timeout=3600)\n")
        client = subprocess.Popen([sys.executable, "-c", script, str(app.socket_path)],
                                  env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            wait_for(lambda: pending(app) == 1, "the request to wait")
            client.kill()
            killed = time.perf_counter()
            wait_for(lambda: pending(app) == 0, "the request to go")
            withdrawn_after = time.perf_counter() - killed
            figures["client killed mid-request: request withdrawn after"] = f"{withdrawn_after * 1000:.0f} ms"
        finally:  # killed and reaped even when a wait failed: no process outlives the test
            client.kill()
            client.wait(WAIT)
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        assert db.execute("SELECT decided_by FROM decisions").fetchall() == [("cancelled",)]


FLOODER = r"""
import socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
count = int(sys.argv[2])
sock.sendall(b"".join(b'{"v":1,"type":"request","id":"f%d","tool":"Bash","args":{"command":"echo %d"}}\n' % (i, i)
                      for i in range(count)))
errors, data = 0, b""
while errors < count - 128:
    data += sock.recv(1 << 16)
    errors = data.count(b'"too_many_pending"')
print(errors, flush=True)
sys.stdin.read()
"""


def test_a_flood_is_refused_with_typed_errors_and_others_are_served(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "never") as app:
        with subprocess.Popen([sys.executable, "-c", FLOODER, str(app.socket_path), "10000"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as flooder:
            assert flooder.stdout is not None and flooder.stdin is not None
            try:
                assert int(flooder.stdout.readline()) == 10000 - 128
                started = time.perf_counter()
                assert pending(app) == 128                   # the flooder's limit, counted in calls
                figures["flood of 10,000 requests: another client's status answered in"] = \
                    f"{(time.perf_counter() - started) * 1000:.1f} ms"
            finally:  # even after a failed assertion: its stdin closed, it ends, it is reaped
                flooder.stdin.close()
                flooder.wait(WAIT)
        wait_for(lambda: pending(app) == 0, "the flooder's requests to be cancelled")


def test_a_client_that_never_reads_costs_the_app_bounded_memory(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "deny") as app:
        before = rss_kib(app.pid)
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(app.socket_path))
        sock.setblocking(False)
        line = b'{"v":1,"type":"status","id":"s"}\n' * 2000
        sent = 0
        stalled_since: float | None = None
        while sent < 200 * 1024 * 1024:
            try:
                sent += sock.send(line)
                stalled_since = None
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 2:     # the app has stopped reading us
                    break
                time.sleep(0.01)
        grown = rss_kib(app.pid) - before
        assert sent < 200 * 1024 * 1024, "the app read everything although nobody read its replies"
        assert grown < 64 * 1024, f"the app grew by {grown} KiB"
        figures["client that never reads: app growth"] = f"{grown / 1024:.1f} MiB after {sent / 1024:.0f} KiB sent"
        sock.close()
        assert pending(app) == 0


HOLDER = r"""
import select, socket, sys
held, refused = [], 0
for _ in range(int(sys.argv[2])):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(sys.argv[1])
    sock.settimeout(0.2)
    try:
        data = sock.recv(4096)
    except socket.timeout:
        held.append(sock)
        continue
    refused += b"too_many_connections" in data
    sock.close()
print(len(held), refused, flush=True)
sys.stdin.readline()
still_open = sum(1 for sock in held if not select.select([sock], [], [], 0)[0])   # evicted ones have a notice or EOF
print(still_open, flush=True)
sys.stdin.read()
"""


@pytest.mark.timeout(300)
def test_descriptor_exhaustion_is_refused_before_accept_can_fail(tmp_path: Path, figures: dict[str, str]) -> None:
    def low_fd_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    original = subprocess.Popen
    with pytest.MonkeyPatch.context() as patch:  # the app alone gets a low descriptor limit
        patch.setattr(subprocess, "Popen", lambda *a, **k: original(*a, preexec_fn=low_fd_limit, **k))
        app = AppProcess(tmp_path, "never")
    holders: list[subprocess.Popen[str]] = []
    try:
        with Client(app.socket_path, agent="busy") as busy:   # a connection with a request pending is never evicted
            waiting = threading.Thread(target=lambda: _expect_unavailable(busy))
            waiting.start()
            wait_for(lambda: pending(app) == 1, "the busy client's request")
            holders = [subprocess.Popen([sys.executable, "-c", HOLDER, str(app.socket_path), "60"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(20)]
            counts = [tuple(map(int, holder.stdout.readline().split())) for holder in holders]  # type: ignore[union-attr]
            attempted = sum(c[0] + c[1] for c in counts)
            assert attempted == 1200                          # every connection was answered or held
            started = time.perf_counter()
            assert pending(app) == 1                          # a newcomer still gets in (an idle one made room)
            status_ms = (time.perf_counter() - started) * 1000
            for holder in holders:
                holder.stdin.write("\n")  # type: ignore[union-attr]
                holder.stdin.flush()  # type: ignore[union-attr]
            still_open = sum(int(holder.stdout.readline()) for holder in holders)  # type: ignore[union-attr]
            assert still_open <= 256 - 64                     # never more than the descriptor budget
            stderr = app.stop()
            waiting.join(WAIT)
    finally:
        for holder in holders:
            holder.stdin.close()  # type: ignore[union-attr]
            holder.wait(WAIT)
        app.stop()
    figures["1,200 connections against a 256-descriptor app"] = (
        f"at most {256 - 64} open at once ({still_open} at the end), the longest-idle closed to make room; "
        f"a new client's status answered in {status_ms:.1f} ms; a pending request never evicted")
    assert "Too many open files" not in stderr and "Traceback" not in stderr, stderr[-2000:]


def _expect_unavailable(client: Client) -> None:
    with pytest.raises(ApproverUnavailable):     # answered only when the app stops at the end
        client.request("deploy", {"n": 1}, timeout=3600)


def test_an_unauthenticated_flood_costs_one_reply_and_one_audit_row(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "deny", token="sesame") as app, socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(app.socket_path))
        try:
            sock.sendall(b'{"v":1,"type":"status","id":"s"}\n' * 50_000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
        replies = [json.loads(line) for line in data.splitlines()]
        assert len(replies) <= 1 and all(r["code"] == "unauthorized" for r in replies)
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        rows = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'refused'").fetchone()[0]
    assert rows == 1
    figures["50,000 unauthenticated lines"] = f"{len(replies)} reply, {rows} audit row, connection closed"


def test_a_megabyte_line_byte_by_byte_costs_linear_time(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "deny") as app, socket.socket(socket.AF_UNIX) as sock:
        before = cpu_seconds(app.pid)
        sock.connect(str(app.socket_path))
        body = b'{"v":1,"type":"status","id":"s","pad":"' + b"x" * (1024 * 1024 - 60) + b'"}'
        for index in range(len(body)):
            sock.send(body[index:index + 1])
        sock.sendall(b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            reply += sock.recv(65536)
        assert json.loads(reply)["code"] == "invalid_message"     # read whole, answered once
        figures["1 MiB line sent one byte per write: app CPU"] = f"{cpu_seconds(app.pid) - before:.2f} s"


PARTIAL = r"""
import socket, sys
held, overloaded = [], 0
for _ in range(int(sys.argv[2])):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(sys.argv[1])
    try:
        sock.sendall(b"x" * (1024 * 1024 - 1))       # an unfinished line just under the limit
        held.append(sock)
    except (BrokenPipeError, ConnectionResetError):
        overloaded += 1
print(len(held), flush=True)
sys.stdin.readline()
for sock in held:                                  # which of them did the app close as overloaded?
    sock.settimeout(0.2)
    try:
        overloaded += b"overloaded" in sock.recv(4096)
    except (socket.timeout, ConnectionResetError):
        pass
print(overloaded, flush=True)
sys.stdin.read()
"""


def test_many_unfinished_megabyte_lines_share_one_budget(tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "deny") as app:
        before = rss_kib(app.pid)
        holders = [subprocess.Popen([sys.executable, "-c", PARTIAL, str(app.socket_path), "50"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(4)]
        try:
            for holder in holders:
                holder.stdout.readline()  # type: ignore[union-attr]
            grown = rss_kib(app.pid) - before
            for holder in holders:
                holder.stdin.write("\n")  # type: ignore[union-attr]
                holder.stdin.flush()  # type: ignore[union-attr]
            overloaded = sum(int(holder.stdout.readline()) for holder in holders)  # type: ignore[union-attr]
        finally:
            for holder in holders:
                holder.stdin.close()  # type: ignore[union-attr]
                holder.wait(WAIT)
        assert overloaded >= 200 - 64                     # 200 MiB asked for, a 64 MiB budget
        assert grown < 128 * 1024, f"the app grew by {grown} KiB"
        figures["200 connections each sending an unfinished 1 MiB line"] = (
            f"app growth {grown / 1024:.0f} MiB; {overloaded} closed with overloaded")
        assert pending(app) == 0
