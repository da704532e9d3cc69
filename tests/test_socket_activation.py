"""Socket activation for real: ``systemd-socket-activate`` (what the systemd socket unit does,
without a running systemd) holds the socket, the first agent request starts the app, and the
app serves on the socket it was passed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAIT = 30.0
ACTIVATOR = shutil.which("systemd-socket-activate")

pytestmark = pytest.mark.skipif(ACTIVATOR is None, reason="needs systemd-socket-activate (Debian: systemd)")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=WAIT)


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _socket_mode_0600(path: Path) -> None:
    """What SocketMode=0600 (packaging/linux/desktop-approver.socket) does for systemd, which
    systemd-socket-activate cannot: clients refuse a socket open to others (issue 10), and with
    activation the first client connects before the app has run to fix the mode itself."""
    os.chmod(path, 0o600)


@pytest.fixture
def activator(tmp_path: Path, private_home: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, dict[str, str]]]:
    """systemd-socket-activate listening on a temp path, set to start the tray app offscreen."""
    socket_path = tmp_path / "runtime" / "desktop-approver" / "approver.sock"
    socket_path.parent.mkdir(parents=True)
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\naction = "allow"\ntool = "ping"\n')
    env = dict(os.environ)
    passed = {name: env[name] for name in ("QT_QPA_PLATFORM", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                            "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "PYTHONPATH") if name in env}
    passed["QT_QPA_PLATFORM"] = "offscreen"
    command = [ACTIVATOR, "-l", str(socket_path),
               *(f"-E{name}={value}" for name, value in passed.items()),
               sys.executable, "-m", "desktop_approver", "tray", "--no-notifications", "--policy", str(policy)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: socket_path.exists(), "systemd-socket-activate to listen")
        _socket_mode_0600(socket_path)
        yield process, socket_path, env
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # the app by then: it exec'd into it
            try:
                process.wait(WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()


Activator = tuple[subprocess.Popen[bytes], Path, dict[str, str]]


def test_first_request_starts_the_app_on_the_passed_socket(activator: Activator) -> None:
    process, socket_path, env = activator
    socket = str(socket_path)
    answered = _cli("request", "--socket", socket, "--tool", "ping", "--args", "{}", env=env)
    assert answered.returncode == 0, answered.stderr
    decision = json.loads(answered.stdout)
    assert decision["decision"] == "allow_once" and decision["decided_by"] == "policy"

    # The documented modes: the app sets them itself on the socket it was passed.
    assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700

    status = json.loads(_cli("status", "--json", "--socket", socket, env=env).stdout)
    assert status["running"] is True and status["pid"] == process.pid and status["socket"] == socket

    second = _cli("tray", "--no-notifications", "--socket", socket, "--audit-db",
                  str(socket_path.parent.parent / "second.sqlite3"), env=dict(env, QT_QPA_PLATFORM="offscreen"))
    assert second.returncode == 1
    assert "already running" in second.stderr

    # Quitting leaves the socket to the service manager: the next request would start the app again.
    process.send_signal(signal.SIGTERM)
    assert process.wait(WAIT) == 0
    assert process.stderr is not None
    assert b"passed by the service manager" in process.stderr.read()
    assert stat.S_ISSOCK(socket_path.lstat().st_mode)


def test_the_installed_units_start_the_app_on_the_first_request(tmp_path: Path, private_home: Path) -> None:
    """`install --systemd`, then what systemd would do with the units it wrote: listen where the
    socket unit says, run the service's ExecStart on the first connection. The agent uses the
    default socket path, with no option at all."""
    fake = tmp_path / "bin" / "systemctl"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != "DBUS_SESSION_BUS_ADDRESS"}
    env["PATH"] = f"{fake.parent}{os.pathsep}{env['PATH']}"
    installed = _cli("install", "--systemd", env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    units = Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user"
    listen = _unit_value(units / "desktop-approver.socket", "ListenStream").replace("%t", env["XDG_RUNTIME_DIR"])
    command = shlex.split(_unit_value(units / "desktop-approver.service", "ExecStart"))
    assert Path(listen) == Path(env["XDG_RUNTIME_DIR"]) / "desktop-approver" / "approver.sock"
    Path(listen).parent.mkdir(mode=0o700)
    policy = Path(env["XDG_CONFIG_HOME"]) / "desktop-approver" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text('[[rule]]\naction = "allow"\ntool = "ping"\n')
    passed = [f"-E{name}={env[name]}" for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                                                  "XDG_RUNTIME_DIR")]
    process = subprocess.Popen([str(ACTIVATOR), "-l", listen, "-EQT_QPA_PLATFORM=offscreen", *passed, *command],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(lambda: Path(listen).exists(), "systemd-socket-activate to listen")
        _socket_mode_0600(Path(listen))
        answered = _cli("request", "--tool", "ping", "--args", "{}", env=env)
        assert answered.returncode == 0, answered.stderr
        assert json.loads(answered.stdout)["decided_by"] == "policy"
        status = json.loads(_cli("status", "--json", env=env).stdout)
        assert status["pid"] == process.pid and status["socket"] == listen
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _unit_value(path: Path, key: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"{key}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"no {key}= in {path}")
