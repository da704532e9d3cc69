"""A real little desktop for window tests and screenshots: Xvfb, openbox, trayer, a private D-Bus, dunst.

Each part is a real program, started on a display number Xvfb picks itself (``-displayfd``), so
parallel runs never collide. ``Desktop.start(...)`` returns once every part is up; ``stop()``
ends exactly the processes it started. Missing programs raise :class:`Missing` (tests skip on it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.dbus import PrivateBus, start_private_bus

DUNSTRC = """\
[global]
    monitor = 0
    follow = none
    width = 400
    height = 300
    origin = top-right
    offset = 10x10
    font = DejaVu Sans 10
    frame_width = 2
    frame_color = "#5b7fa6"
    separator_height = 2
    padding = 8
    horizontal_padding = 10
    format = "<b>%s</b>\\n%b"
    markup = full
    show_indicators = yes
    notification_limit = 0
[urgency_low]
    background = "#1f2329"
    foreground = "#e6e6e6"
    timeout = 0
[urgency_normal]
    background = "#1f2329"
    foreground = "#e6e6e6"
    timeout = 0
[urgency_critical]
    background = "#5a1414"
    foreground = "#ffffff"
    timeout = 0
"""

PROGRAMS = ("Xvfb", "openbox", "trayer", "dbus-daemon", "dunst", "dunstctl", "xdotool", "xprop", "xwininfo", "xwd",
            "convert")


class Missing(RuntimeError):
    """A program the desktop needs is not installed."""


@dataclass
class Desktop:
    display: str
    env: dict[str, str]
    bus: PrivateBus
    workdir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(cls, width: int = 1280, height: int = 800, *, notifications: bool = True, tray: bool = True) -> Desktop:
        for program in PROGRAMS:
            if shutil.which(program) is None:
                raise Missing(f"{program} is not installed")
        workdir = Path(tempfile.mkdtemp(prefix="approver-desktop-"))
        read_fd, write_fd = os.pipe()
        with (workdir / "Xvfb.log").open("w") as xvfb_log:  # the child keeps its own copy of the file
            # -noreset: by default the server resets when its last client leaves, and a client
            # connecting meanwhile is refused (openbox, started just after the readiness check's xprop
            # left, said "Failed to open the display" one start in a few under load).
            xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{width}x{height}x24",
                                     "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,),
                                    stdout=subprocess.DEVNULL, stderr=xvfb_log)
        os.close(write_fd)
        with os.fdopen(read_fd) as numbers:
            number = numbers.readline().strip()
        if not number:
            xvfb.kill()
            raise RuntimeError("Xvfb did not report a display")
        bus = start_private_bus(workdir)
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
        env.update(DISPLAY=f":{number}", DBUS_SESSION_BUS_ADDRESS=bus.address, QT_QPA_PLATFORM="xcb")
        desktop = cls(f":{number}", env, bus, workdir, [xvfb])
        try:
            # The display answers before anything is started on it: openbox gives up at once on a
            # display it cannot open (seen with several servers starting together on busy cores).
            desktop._wait(desktop._display_answers, "Xvfb")
            desktop._spawn("openbox", ["openbox", "--sm-disable"])
            desktop._wait(lambda: desktop._has_window_manager(), "openbox")
            if tray:
                desktop._spawn("trayer", ["trayer", "--edge", "bottom", "--align", "right", "--widthtype", "request",
                                          "--height", "28", "--transparent", "false", "--tint", "0x303030",
                                          "--SetDockType", "true", "--SetPartialStrut", "true"])
            if notifications:
                config = workdir / "dunstrc"
                config.write_text(DUNSTRC)
                desktop._spawn("dunst", ["dunst", "-config", str(config)])
                desktop._wait(lambda: desktop.run("dunstctl", "count", "displayed", check=False) is not None,
                              "dunst on the bus")
        except BaseException:
            desktop.stop()
            raise
        return desktop

    def run(self, *argv: str, check: bool = True) -> str | None:
        """Run a tool on this desktop; its output, or None when it failed and ``check`` is off."""
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            if check:
                raise RuntimeError(f"{argv} failed: {done.stderr.strip()}")
            return None
        return done.stdout

    def notifications_displayed(self) -> int:
        return int((self.run("dunstctl", "count", "displayed") or "0").strip())

    def screenshot(self, path: Path, crop: tuple[int, int, int, int] | None = None) -> None:
        area = f"-crop {crop[2]}x{crop[3]}+{crop[0]}+{crop[1]} +repage " if crop else ""
        self.run("sh", "-c", f"xwd -root -silent -display {self.display} | convert xwd:- {area}png:{path}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(10)
        self.bus.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- internals --------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.workdir / f"{name}.log").open("w") as log:  # the child keeps its own copy of the file
            self.processes.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT))

    def _display_answers(self) -> bool:
        return subprocess.run(["xprop", "-root", "-len", "0"], env=self.env, capture_output=True,
                              timeout=10, check=False).returncode == 0

    def _has_window_manager(self) -> bool:
        out = subprocess.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=self.env, capture_output=True,
                             text=True, timeout=10)
        return "window id" in out.stdout

    def _wait(self, predicate: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start")
            for process in self.processes:
                if process.poll() is not None:
                    log = self.workdir / f"{process.args[0]}.log"
                    raise RuntimeError(f"{process.args[0]} exited: {log.read_text()[-500:] if log.exists() else ''}")
            time.sleep(0.05)

