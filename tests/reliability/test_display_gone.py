"""The display goes away under the tray app (issue 34, item 4), against the real ``desktop-approver tray``.

The X server is killed while agents wait for the person: Qt ends the process as soon as its
display connection breaks, so the app ends there as a SIGTERM ends it: every waiting agent hears
``shutting_down``, their calls are recorded as not allowed, the socket file is removed, no traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.test_faults_live import Agent, decisions_by_request, pending_requests
from tests.support.tray_process import TrayApp
from tests.support.waiting import WAIT, wait_for

WAITING = 6


@pytest.fixture
def display() -> Iterator[subprocess.Popen[bytes]]:
    if shutil.which("Xvfb") is None:
        pytest.skip("needs Xvfb")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x768x24", "-nolisten", "tcp",
                             "-noreset"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as numbers:
        number = numbers.readline().strip()
    server.args = f":{number}"  # the display it serves
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()


@pytest.mark.timeout(300)
def test_the_x_server_killed_ends_the_tray_cleanly(tmp_path: Path, display: subprocess.Popen[bytes],
                                                   apps: list[TrayApp]) -> None:
    socket_path = tmp_path / "run" / "approver.sock"
    env = dict(os.environ, DISPLAY=str(display.args), QT_QPA_PLATFORM="xcb")
    env.pop("WAYLAND_DISPLAY", None)
    app = TrayApp(tmp_path, socket_path=socket_path, env=env)
    apps.append(app)
    agents = [Agent(socket_path, f"agent-{n}") for n in range(WAITING)]
    try:
        for n, agent in enumerate(agents):
            agent.ask(f"r{n}", f"touch file-{n}")
        wait_for(lambda: pending_requests(app.audit_path) == WAITING, f"{WAITING} requests waiting")
        display.kill()
        display.wait()
        assert app.process.wait(WAIT) == 0, app.stderr()[-3000:]
        replies = [agent.receive() for agent in agents]
    finally:
        for agent in agents:
            agent.close()
    for n, reply in enumerate(replies):
        assert reply is not None, f"r{n} got EOF instead of an answer"
        assert (reply["type"], reply["code"], reply["id"]) == ("error", "shutting_down", f"r{n}"), reply
    assert set(decisions_by_request(app.audit_path).values()) == {("deny", "cancelled")}
    assert pending_requests(app.audit_path) == 0
    assert not os.path.lexists(socket_path)
    stderr = app.stderr()
    assert "display went away" in stderr and "Traceback" not in stderr, stderr[-3000:]
