"""A private D-Bus session bus per test, and a notification test server on it.

The bus is a real ``dbus-daemon`` with a minimal configuration of our own rather than
``--session``: the distribution's session config lists service directories, and D-Bus
activation would start the machine's real notification daemon (dunst, ...) on our bus.
Tests skip only when ``dbus-daemon`` is not installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir={tmpdir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@dataclass
class PrivateBus:
    address: str
    pid: int

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_private_bus(config_dir: Path) -> PrivateBus:
    """Start a forked dbus-daemon; its socket lives in the (short) system temp dir, not tmp_path:
    unix socket paths are limited to ~107 bytes and pytest's tmp paths can be longer."""
    binary = shutil.which("dbus-daemon")
    if binary is None:
        pytest.skip("dbus-daemon is not installed")
    config = config_dir / "bus.conf"
    config.write_text(BUS_CONFIG.format(tmpdir=tempfile.gettempdir()))
    out = subprocess.run([binary, f"--config-file={config}", "--fork", "--print-address=1", "--print-pid=1"],
                         capture_output=True, text=True, timeout=20, check=True)
    address, pid = out.stdout.split()[:2]
    return PrivateBus(address, int(pid))


@pytest.fixture
def private_bus(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[PrivateBus]:
    """A session bus of the test's own, exported as DBUS_SESSION_BUS_ADDRESS while the test runs."""
    bus = start_private_bus(tmp_path_factory.mktemp("dbus"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
    try:
        yield bus
    finally:
        bus.stop()


@pytest.fixture
def start_notification_server(private_bus: PrivateBus) -> Iterator[Callable[..., Any]]:
    """Start test notification servers on the private bus (options: with_actions, body_markup)."""
    from tests.support.notification_server import ServerThread

    started: list[ServerThread] = []

    def start(**options: Any) -> ServerThread:
        thread = ServerThread(private_bus.address, **options)
        started.append(thread)
        return thread.start()

    yield start
    for thread in started:
        thread.stop()


@pytest.fixture
def notification_server(start_notification_server: Callable[..., Any]) -> Any:
    """A test notification server with action buttons, on the private bus."""
    return start_notification_server()
