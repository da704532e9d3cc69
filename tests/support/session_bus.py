"""A session bus the test can kill, and dunst on it: for faults in the notification path.

Unlike :func:`tests.support.dbus.private_bus` (a forked daemon at a fresh address), this bus listens
at a fixed path, so a test can kill it and start it again where the running app looks for it; and
dunst runs on it as a child the test can stop (SIGSTOP), kill and start again. The display is
tests/support/desktop.py's, without its own notification server. ``session``
(tests/reliability/conftest.py) starts one per test and stops it after.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any

from tests.support.dbus import BUS_CONFIG
from tests.support.desktop import DUNSTRC
from tests.support.waiting import WAIT, wait_for


class Session:
    """A display (tests/support/desktop.py, without its notification server) with a session bus at a
    fixed path, so the test can kill the bus and start it again where the app looks for it, and
    dunst on that bus, which the test can kill and start again."""

    def __init__(self, desktop: Any) -> None:
        self.desktop = desktop
        self.workdir: Path = desktop.workdir
        self.bus_path = self.workdir / "session-bus"
        self.bus_config = self.workdir / "session-bus.conf"
        self.bus_config.write_text(BUS_CONFIG.replace("unix:tmpdir={tmpdir}", f"unix:path={self.bus_path}"))
        self.env = dict(desktop.env, DBUS_SESSION_BUS_ADDRESS=f"unix:path={self.bus_path}")
        self.bus: subprocess.Popen[bytes] | None = None
        self.dunst: subprocess.Popen[bytes] | None = None
        self.start_bus()

    def start_bus(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.bus_path.unlink()  # what a killed daemon leaves behind
        self.bus = subprocess.Popen(["dbus-daemon", f"--config-file={self.bus_config}", "--nofork", "--nopidfile"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self.bus_path.exists(), "the session bus")

    def kill_bus(self) -> None:
        assert self.bus is not None
        self.bus.kill()
        self.bus.wait(WAIT)
        if self.dunst is not None:  # dunst ends with its bus
            try:
                self.dunst.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.kill_dunst()

    def start_dunst(self) -> None:
        config = self.workdir / "dunstrc"
        config.write_text(DUNSTRC)
        with (self.workdir / "dunst.log").open("a") as log:
            self.dunst = subprocess.Popen(["dunst", "-config", str(config)], env=self.env, stdout=log,
                                          stderr=subprocess.STDOUT)
        wait_for(lambda: self.count("displayed") is not None, "dunst on the bus")

    def kill_dunst(self) -> None:
        assert self.dunst is not None
        self.dunst.kill()
        self.dunst.wait(WAIT)
        self.dunst = None

    def count(self, which: str = "displayed") -> int | None:
        done = subprocess.run(["dunstctl", "count", which], env=self.env, capture_output=True, text=True,
                              timeout=WAIT)
        return int(done.stdout.strip()) if done.returncode == 0 else None

    def shown(self) -> int:
        """The notifications on screen once dunst has taken in every ``Notify`` sent before this call.

        dunst handles its D-Bus calls in order, so these ``dunstctl`` calls are answered after the
        app's earlier ``Notify`` calls; a notification it has not yet moved from its queue to the
        screen is waited for (read as two counts, it could be missed or counted twice).
        """
        wait_for(lambda: self.count("waiting") == 0, "dunst to display what it was sent")
        return self.count("displayed") or 0

    def stop(self) -> None:
        for process in (self.dunst, self.bus):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(WAIT)
        self.desktop.stop()
