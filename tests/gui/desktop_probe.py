"""Run the real app on a real X desktop (see tests/support/desktop.py) and report what it saw as JSON.

    python tests/gui/desktop_probe.py SCENARIO   (DISPLAY and DBUS_SESSION_BUS_ADDRESS set)

Scenarios: ``five`` (five requests from three agents: notifications and the dialog),
``batch-alt-o`` (Alt+O typed with xdotool on a batch holding a destructive call), ``fits`` (the
dialog's frame on screen, whatever QT_SCALE_FACTOR says). tests/gui/test_real_desktop.py runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

OLD = "".join(f"def step_{i}(value):\n    return value + {i}\n\n" for i in range(60))
NEW = OLD.replace("return value + 7\n", "return value * 7  # scaled\n").replace("step_30", "stage_30")


async def tool(*argv: str) -> str:
    process = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 30)
    if process.returncode != 0:
        raise RuntimeError(f"{argv}: {err.decode(errors='replace')}")
    return out.decode()


async def until(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()):
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return value


async def frame_of(window_id: int) -> dict[str, int]:
    """The window's frame on the root window, in physical pixels: the client area where the X server
    has it (``xwininfo``'s absolute position) plus the window manager's frame (``_NET_FRAME_EXTENTS``).

    Not ``xdotool getwindowgeometry``: under a reparenting window manager it reports the client
    already moved down by the title bar (Y=20 for a client at 0), so taking the title bar off again
    measured a frame 20 px above the screen as at y=0 (issue 31 review F2).
    """
    values = dict((key.strip(), value.strip()) for key, value in (
        line.split(":", 1) for line in (await tool("xwininfo", "-id", str(window_id))).splitlines() if ":" in line))
    x, y = int(values["Absolute upper-left X"]), int(values["Absolute upper-left Y"])
    width, height = int(values["Width"]), int(values["Height"])
    extents = await tool("xprop", "-id", str(window_id), "_NET_FRAME_EXTENTS")
    left = right = top = bottom = 0
    if "=" in extents:
        left, right, top, bottom = (int(v) for v in extents.split("=", 1)[1].split(","))
    return {"x": x - left, "y": y - top, "width": width + left + right, "height": height + top + bottom,
            "top": top}


async def settled_frame(window_id: int, timeout: float = 10.0) -> dict[str, int]:
    """The frame once it is on the screen, or as it is after ``timeout`` (the X server applies a
    move some moments after the app asks for it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    root = dict(line.split("=", 1) for line in (await tool("xdotool", "getdisplaygeometry", "--shell")).splitlines()
                if "=" in line)
    while True:
        frame = await frame_of(window_id)
        inside = (frame["x"] >= 0 and frame["y"] >= 0 and frame["x"] + frame["width"] <= int(root["WIDTH"])
                  and frame["y"] + frame["height"] <= int(root["HEIGHT"]))
        if inside or loop.time() > deadline:
            return frame
        await asyncio.sleep(0.1)


async def dunst_boxes() -> list[dict[str, int]]:
    process = await asyncio.create_subprocess_exec(
        "xdotool", "search", "--onlyvisible", "--class", "Dunst", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    out, _ = await process.communicate()
    boxes = []
    for window in out.decode().split():
        values = dict(line.split("=", 1) for line in (await tool(
            "xdotool", "getwindowgeometry", "--shell", window)).splitlines() if "=" in line)
        if int(values.get("HEIGHT", 0)) > 10:
            boxes.append({k.lower(): int(values[k]) for k in ("X", "Y", "WIDTH", "HEIGHT")})
    return boxes


async def displayed() -> int:
    return int((await tool("dunstctl", "count", "displayed")).strip())


async def main(scenario: str) -> dict[str, Any]:
    from desktop_approver import Client, previews
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover
    from desktop_approver.notify.freedesktop import DesktopNotifier

    tmp = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=tmp / "s" / "a.sock", audit_path=tmp / "a.sqlite3", policy_path=None,
                             state_path=None)
    approver = DesktopApprover(options, notifier=DesktopNotifier(timeout=10.0))
    await approver.start()
    answers: list[Any] = []

    def ask(agent: str, tool_name: str, args: dict[str, Any], **extra: Any) -> None:
        client = Client(options.socket_path, agent=agent, session=f"{agent}-1")
        threading.Thread(target=lambda: answers.append(client.request(tool_name, args, **extra)), daemon=True).start()

    def ask_batch(agent: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        client = Client(options.socket_path, agent=agent, session=f"{agent}-1")
        threading.Thread(target=lambda: answers.append(client.request_batch(calls)), daemon=True).start()

    dialog = approver.dialog
    result: dict[str, Any] = {"scenario": scenario}
    try:
        if scenario == "five":
            ask("codex", "Bash", {"command": "pytest -q"})
            await until(lambda: dialog.isVisible(), "the dialog")
            ask("codex", "Bash", {"command": "git push --force origin main"})
            ask("claude", "Bash", {"command": "make"})
            ask("claude", "write_file", {"path": "notes.txt", "content": "hello\n"})
            ask("aider", "Bash", {"command": "ls -la"})
            await until(lambda: len(approver.decider.tickets()) == 5, "five requests")
            await until(lambda: len(approver.notifications.shown_agents()) == 3, "three agents notified")
            for _ in range(40):  # let dunst settle: replacements in place must not add windows
                await asyncio.sleep(0.05)
            result["displayed"] = await displayed()
            result["dunst"] = await dunst_boxes()
            result["dialog"] = await frame_of(int(dialog.winId()))
            result["tickets"] = len(approver.decider.tickets())
        elif scenario == "batch-alt-o":
            ask_batch("batcher", [("Bash", {"command": "make"}), ("Bash", {"command": "rm -rf build/"}),
                                  ("Bash", {"command": "make test"})])
            await until(lambda: dialog.isVisible() and dialog.armed, "the armed batch dialog")
            result["label"] = dialog.allow_once.text()
            await tool("xdotool", "windowactivate", "--sync", str(int(dialog.winId())))
            await until(lambda: dialog.isActiveWindow(), "the dialog to be active")
            await tool("xdotool", "key", "--clearmodifiers", "alt+o")
            await until(lambda: answers, "the batch's answer")
            result["decisions"] = [d.decision for d in answers[0]]
        elif scenario == "fits":
            screen = dialog.screen() or approver.dialog.screen()
            result["ratio"] = screen.devicePixelRatio()
            frames = []
            for agent, tool_name, args, extra in (
                    ("codex", "Bash", {"command": "git status"}, {}),
                    ("coder", "write_file", {"path": "steps.py", "content": NEW},
                     {"preview": previews.diff("steps.py", OLD, NEW)}),
                    ("big", "write_file", {"path": "huge.py", "content": NEW * 20},
                     {"preview": previews.diff("huge.py", OLD * 20, NEW * 20)}),
                    ("tall", "write_file", {"path": "tall.py", "content": "x = 1\n" * 3000},
                     {"description": "Rewrites the module. " * 40})):
                ask(agent, tool_name, args, **extra)
                await until(lambda agent=agent: dialog.isVisible() and dialog.ticket is not None
                            and dialog.ticket.identity.agent == agent, f"{agent}'s dialog")
                for _ in range(20):
                    await asyncio.sleep(0.05)
                await until(lambda: not dialog.windowHandle().frameMargins().isNull(), "the window manager's frame")
                await until(lambda: not dialog._frame_watch.isActive(), "the dialog to settle its frame")
                frame = await settled_frame(int(dialog.winId()))
                if os.environ.get("PROBE_SHOTS"):
                    await tool("sh", "-c", f"xwd -root -silent | convert xwd:- png:{os.environ['PROBE_SHOTS']}/"
                                           f"fits-{agent}-x{os.environ.get('QT_SCALE_FACTOR', '1')}.png")
                buttons = [dialog.deny.mapTo(dialog, dialog.deny.rect().bottomRight()),
                           dialog.countdown.mapTo(dialog, dialog.countdown.rect().topLeft())]
                frame["buttons_inside"] = all(dialog.rect().contains(point) for point in buttons)
                frame["deny_visible"] = dialog.deny.isVisible() and not dialog.deny.visibleRegion().isEmpty()
                frames.append(frame)
                await tool("xdotool", "windowactivate", "--sync", str(int(dialog.winId())))
                await until(lambda: dialog.isActiveWindow(), "the dialog to be active")  # else the key is lost
                await tool("xdotool", "key", "--clearmodifiers", "Escape")
                await until(lambda: len(answers) == len(frames), f"{agent}'s answer")
            result["frames"] = frames
            root = dict(line.split("=", 1) for line in (await tool(
                "xdotool", "getdisplaygeometry", "--shell")).splitlines() if "=" in line)
            result["screen"] = {"width": int(root["WIDTH"]), "height": int(root["HEIGHT"])}
        else:
            raise SystemExit(f"unknown scenario {scenario}")
    finally:
        for ticket in approver.decider.tickets():
            from desktop_approver.core.decisions.tickets import Verdict

            approver.decider.answer(ticket, [Verdict("deny") for _ in ticket.calls])
        await asyncio.sleep(0.2)
        await approver.close()
    return result


if __name__ == "__main__":
    import qasync
    from PySide6.QtWidgets import QApplication

    application = QApplication(sys.argv[:1])
    application.setQuitOnLastWindowClosed(False)
    os.environ.setdefault("DESKTOP_APPROVER_PROBE", "1")
    print(json.dumps(qasync.run(main(sys.argv[1]))), flush=True)
