"""No display: the tray exits 1 with a sentence that says what it found, before Qt is asked (Qt
would abort the process), and agents get "not reachable" at once (ipc/PROTOCOL.md, "Running
without a display")."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_approver.gui.display import display_problem, x_server_addresses
from tests.test_cli import ROOT


def listening(address: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(1)
    return server


@pytest.fixture
def x_server() -> Iterator[str]:
    """A DISPLAY whose (abstract) X socket accepts connections, as a real X server's does."""
    for number in range(7300, 7400):
        try:
            server = listening(f"\0/tmp/.X11-unix/X{number}")
        except OSError:
            continue
        with server:
            yield f":{number}"
        return
    pytest.skip("no free abstract X socket name")


def test_nothing_set_is_no_display() -> None:
    problem = display_problem({}, "linux")
    assert problem is not None and "neither DISPLAY nor WAYLAND_DISPLAY is set" in problem
    assert "QT_QPA_PLATFORM=offscreen" in problem  # and what to do


def test_a_display_nothing_listens_on_is_no_display(tmp_path: Path) -> None:
    problem = display_problem({"DISPLAY": ":7999", "WAYLAND_DISPLAY": "wayland-9", "XDG_RUNTIME_DIR": str(tmp_path)},
                              "linux")
    assert problem is not None
    assert f"WAYLAND_DISPLAY=wayland-9 (nothing listens at {tmp_path / 'wayland-9'})" in problem
    assert "DISPLAY=:7999 (no X server listens at /tmp/.X11-unix/X7999)" in problem


def test_a_display_that_answers_is_enough(tmp_path: Path, x_server: str) -> None:
    assert display_problem({"DISPLAY": x_server}, "linux") is None
    assert display_problem({"DISPLAY": f"{x_server}.0", "WAYLAND_DISPLAY": "gone"}, "linux") is None
    with listening(str(tmp_path / "wayland-1")):
        assert display_problem({"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": str(tmp_path)}, "linux") is None
        assert display_problem({"WAYLAND_DISPLAY": str(tmp_path / "wayland-1"), "DISPLAY": ":7999"}, "linux") is None


def test_what_only_qt_can_judge_is_left_to_qt() -> None:
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") is None  # chosen by hand
    assert display_problem({}, "darwin") is None and display_problem({}, "win32") is None
    assert x_server_addresses("unix:3") == ["\0/tmp/.X11-unix/X3", "/tmp/.X11-unix/X3"]
    assert x_server_addresses("nonsense") is None


def test_a_display_on_another_host_or_at_a_path_is_asked_too(tmp_path: Path) -> None:
    """An SSH forward (``localhost:10``: TCP 6010) or a socket's path with nothing behind it is no
    display; one that answers is enough (Qt aborted on the first, where the docs promise exit 1)."""
    assert x_server_addresses("localhost:10.0") == [("localhost", 6010)]
    assert x_server_addresses("/tmp/.X11-unix/X7999") == ["/tmp/.X11-unix/X7999"]
    assert x_server_addresses("/private/tmp/launchd-1/org.xquartz:0") == ["/private/tmp/launchd-1/org.xquartz"]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        unused = free.getsockname()[1]
    if unused > 6000:
        problem = display_problem({"DISPLAY": f"127.0.0.1:{unused - 6000}"}, "linux")
        assert problem is not None and f"127.0.0.1 port {unused}" in problem
    assert display_problem({"DISPLAY": str(tmp_path / "X5")}, "linux") is not None
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        if port > 6000:
            assert display_problem({"DISPLAY": f"127.0.0.1:{port - 6000}"}, "linux") is None


@pytest.mark.parametrize("display", [None, ":7999"])
def test_the_tray_without_a_display_exits_1_saying_so(tmp_path: Path, display: str | None) -> None:
    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(ROOT)
    if display is not None:
        env["DISPLAY"] = display
    sock = tmp_path / "run" / "app.sock"
    result = subprocess.run([sys.executable, "-m", "desktop_approver", "tray", "--socket", str(sock)], env=env,
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 1, result  # not Qt's abort (-6)
    assert result.stderr.startswith("desktop-approver: no display to show dialogs on: "), result.stderr
    assert "qt.qpa" not in result.stderr and not sock.exists()
