"""The notifier against a real notification daemon: dunst on Xvfb, on a private D-Bus bus.

dunst shows the action buttons in its context menu (``dunstctl context``, through a "dmenu" of
our own that picks a label) and a left click on the notification runs the "default" action.
Also takes a picture of the notification: into docs/screenshots/notification.png when
DESKTOP_APPROVER_SCREENSHOTS=1 (to refresh the README's), else into the test's temp dir. Skips only
when Xvfb, dunst or xdotool are missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.gui.notifications import ACTIONS
from desktop_approver.notify.freedesktop import DesktopNotifier

pytestmark = [pytest.mark.xvfb, pytest.mark.slow]

README_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "notification.png"
OFFSET = 10  # dunst's window sits this far from the screen's top-left corner (see DUNSTRC)

DUNSTRC = """\
[global]
    monitor = 0
    follow = none
    width = 460
    height = 300
    origin = top-left
    offset = {offset}x{offset}
    font = DejaVu Sans 11
    frame_width = 2
    frame_color = "#5b7fa6"
    separator_height = 2
    padding = 10
    horizontal_padding = 12
    format = "<b>%s</b>\\n%b"
    markup = full
    show_indicators = yes
    mouse_left_click = do_action, close_current
    mouse_middle_click = close_current
    mouse_right_click = close_all
    dmenu = {dmenu}
    browser = /bin/false
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

# dunst pipes one line per action ("#Allow for session (desktop-approver) [1]" or similar) into
# "dmenu" and runs the line it reads back; ours picks the label named in a file the test writes.
DMENU = """#!/bin/sh
tee "{menu}" | grep -m1 -F -- "$(cat "{choice}")"
"""


def need(*binaries: str) -> None:
    for binary in binaries:
        if shutil.which(binary) is None:
            pytest.skip(f"{binary} is not installed")


@pytest.fixture
def display() -> Iterator[str]:
    """An Xvfb on a display number it picks itself (-displayfd), so parallel runs never collide."""
    need("Xvfb", "xdotool")
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "800x600x24", "-nolisten", "tcp",
                             "-noreset"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as numbers:
        number = numbers.readline().strip()
    if not number:
        xvfb.kill()
        pytest.fail("Xvfb did not report a display")
    try:
        yield f":{number}"
    finally:
        xvfb.terminate()
        xvfb.wait(10)


@pytest.fixture
def dunst(display: str, private_bus: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    need("dunst", "dunstctl")
    menu, choice, dmenu = tmp_path / "menu.txt", tmp_path / "choice.txt", tmp_path / "dmenu.sh"
    dmenu.write_text(DMENU.format(menu=menu, choice=choice))
    dmenu.chmod(0o755)
    config = tmp_path / "dunstrc"
    config.write_text(DUNSTRC.format(offset=OFFSET, dmenu=dmenu))
    env = {k: v for k, v in os.environ.items() if k != "WAYLAND_DISPLAY"}
    env.update(DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=private_bus.address)
    log = (tmp_path / "dunst.log").open("w")
    process = subprocess.Popen(["dunst", "-config", str(config)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        # On the bus before anyone looks for it: an app started earlier finds no server, says so and
        # later "works again", which is another test's story (a busy machine starts dunst slowly).
        deadline = time.monotonic() + 60
        while subprocess.run(["dunstctl", "is-paused"], env=env, capture_output=True, timeout=30).returncode != 0:
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "dunst.log").read_text()
            time.sleep(0.05)
        yield {"env": env, "menu": menu, "choice": choice, "log": tmp_path / "dunst.log", "process": process}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


async def until(predicate: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := predicate()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return value


async def tool(env: dict[str, str], *argv: str) -> str:
    process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0, f"{argv} failed: {err.decode(errors='replace')}"
    return out.decode()


async def dunst_window(env: dict[str, str]) -> tuple[int, int, int, int] | None:
    """(x, y, width, height) of dunst's visible window, once it is mapped."""
    process = await asyncio.create_subprocess_exec(
        "xdotool", "search", "--onlyvisible", "--class", "Dunst", "getwindowgeometry", "--shell", "%@",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(process.communicate(), 20)
    values = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
    if not {"X", "Y", "WIDTH", "HEIGHT"} <= values.keys() or int(values["HEIGHT"]) < 10:
        return None
    return int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"])


async def window(env: dict[str, str]) -> tuple[int, int, int, int]:
    for _ in range(300):
        geometry = await dunst_window(env)
        if geometry:
            return geometry
        await asyncio.sleep(0.05)
    raise AssertionError("dunst's window never appeared")


@pytest.mark.logs("No notification server on the session bus")  # when the notifier starts before dunst has the name
def test_dunst_shows_actions_and_a_click_runs_them(dunst: dict[str, Any], tmp_path: Path) -> None:
    refresh = os.environ.get("DESKTOP_APPROVER_SCREENSHOTS") == "1"
    SCREENSHOT = README_SCREENSHOT if refresh else tmp_path / "notification.png"
    env = dunst["env"]
    clicks: list[tuple[str, str]] = []

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=lambda key, action: clicks.append((key, action)), timeout=10.0)
        assert await notifier.start()
        # dunst takes the name once it has opened the display; the notifier follows the owner.
        await until(lambda: notifier.server is not None and notifier.capabilities, "dunst on the bus")
        assert notifier.server_info is not None and notifier.server_info[0] == "dunst"
        assert notifier.supports_actions

        body = "path: notes/todo.txt\ncontent: buy <milk> & eggs\nRisk: moderate (writes a file in the workspace)"
        first = await notifier.show("ticket-1", "test-agent wants to run write_file", body, ACTIONS)
        assert first is not None
        x, y, width, height = await window(env)
        await asyncio.sleep(0.3)  # let dunst finish drawing before the picture
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        pipeline = (f"xwd -root -silent -display {env['DISPLAY']} | convert xwd:- "
                    f"-crop {width}x{height}+{x}+{y} "
                    f"+repage png:{SCREENSHOT}")
        await tool(env, "sh", "-c", pipeline)

        # A specific button, through dunst's context menu and our "dmenu".
        dunst["choice"].write_text("Allow for session")
        await tool(env, "dunstctl", "context")
        await until(lambda: clicks, "ActionInvoked for allow_session")
        assert clicks == [("ticket-1", "allow_session")]
        menu = dunst["menu"].read_text()
        for label in ("Allow once", "Allow for session", "Deny"):
            assert label in menu, menu
        await notifier.withdraw("ticket-1")  # as the app does once the ticket is decided

        # A left click on the body runs the "default" action.
        second = await notifier.show("ticket-2", "test-agent wants to run Bash", "ls -la", ACTIONS)
        assert second is not None
        await window(env)
        await tool(env, "xdotool", "mousemove", str(OFFSET + 30), str(OFFSET + 15), "click", "1")
        await until(lambda: len(clicks) == 2, "ActionInvoked for the body click")
        assert clicks[1] == ("ticket-2", "default")
        await notifier.close()

    try:
        asyncio.run(asyncio.wait_for(scenario(), 90))
    finally:
        sys.stderr.write(dunst["log"].read_text()[-2000:])
    assert SCREENSHOT.exists() and SCREENSHOT.stat().st_size > 1000
