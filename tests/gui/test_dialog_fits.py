"""A dialog that fits: sized to its content, inside the screen, remembered per kind of call."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client, previews
from desktop_approver.gui import placement
from desktop_approver.gui.processes import agent_command, display_command, tilde_paths
from tests.gui.conftest import wait_for

Rect = placement.Rect


def ask(app: Any, tool: str, args: dict, **extra: Any) -> asyncio.Future[Any]:
    client = Client(app.service.options.socket_path, agent="codex")
    return asyncio.get_running_loop().run_in_executor(None, lambda: client.request(tool, args, session="f", **extra))


async def shown(app: Any) -> Any:
    dialog = app.dialog
    await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
    for _ in range(5):  # the deferred re-fit after the first show
        await asyncio.sleep(0.02)
    return dialog


def inside(box: Any, area: Any) -> bool:
    return (box.x() >= area.x() and box.y() >= area.y() and box.right() <= area.right()
            and box.bottom() <= area.bottom())


def test_a_one_line_command_gets_a_compact_dialog_with_the_json_folded(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask(approver, "Bash", {"command": "git status"})
        dialog = await shown(approver)
        preview = dialog.review.preview
        assert preview.args_covered and not preview.args_browser.isVisibleTo(preview)
        assert "every one is shown above" in preview.args_toggle.text()
        # (the height keeps two lines for the "Also waiting" strip: an arrival never moves the call down)
        assert dialog.width() <= 700 and dialog.height() <= 560, dialog.size()
        assert dialog.legend.isVisibleTo(dialog) and "Alt+O allow once" in dialog.legend.text()
        preview.args_toggle.click()  # unfold on request
        assert preview.args_browser.isVisibleTo(preview) and '"git status"' in preview.args_browser.toPlainText()
        dialog.deny.click()
        await answer

    run(scenario())


def test_arguments_the_preview_does_not_show_stay_unfolded_and_long_values_are_cut(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        content = "x" * 5000
        answer = ask(approver, "upload", {"name": "blob", "data": content})
        dialog = await shown(approver)
        preview = dialog.review.preview
        assert not preview.args_covered and preview.args_browser.isVisibleTo(preview)
        text = preview.args_browser.toPlainText()
        assert "4,600 more characters" in text and "Show all" in text and content not in text
        preview._args_link(__import__("PySide6.QtCore", fromlist=["QUrl"]).QUrl("json:show-all"))
        assert content in preview.args_browser.toPlainText()
        dialog.deny.click()
        await answer

    run(scenario())


def test_a_huge_diff_never_makes_the_dialog_larger_than_the_screen(approver: Any, run: Any) -> None:
    old = "".join(f"line {i}\n" for i in range(3000))
    new = "".join(f"line {i} changed with a much longer text to widen the diff a lot {'=' * 80}\n"
                  for i in range(3000))

    async def scenario() -> None:
        answer = ask(approver, "write_file", {"path": "big.txt", "content": new},
                     preview=previews.diff("big.txt", old, new))
        dialog = await shown(approver)
        area = dialog.available()
        assert inside(dialog.geometry(), area), (dialog.geometry(), area)
        assert dialog.height() <= area.height() - placement.FRAME[1]
        for button in (dialog.allow_once, dialog.deny):
            assert button.isVisibleTo(dialog)
            assert dialog.rect().contains(button.geometry())
        assert dialog.rect().contains(dialog.countdown.geometry())
        dialog.deny.click()
        await answer

    run(scenario())


def test_size_and_place_are_remembered_per_kind_of_call(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        first = ask(approver, "Bash", {"command": "ls"})
        dialog = await shown(approver)
        placed = dialog.geometry()
        dialog.move(placed.x() + 4, placed.y() + 20)  # the window manager's frame shifting our placement
        dialog._save_geometry()
        assert approver.settings.value("dialog-geometry/Bash:auto") is None  # not a choice of the person's
        dialog.setGeometry(40, 60, 600, 420)
        dialog._save_geometry()  # what a move or resize by the person triggers
        dialog.deny.click()
        await first
        second = ask(approver, "Bash", {"command": "pwd"})
        await wait_for(lambda: dialog.ticket is not None and dialog.ticket.calls[0].args["command"] == "pwd",
                       what="the second request")
        await asyncio.sleep(0.05)
        assert (dialog.x(), dialog.y(), dialog.width(), dialog.height()) == (40, 60, 600, 420)
        assert approver.settings.value("dialog-geometry/Bash:auto") == "40,60,600,420"
        dialog.deny.click()
        await second
        other = ask(approver, "fetch", {"url": "https://example.org"})
        await wait_for(lambda: dialog.ticket is not None and dialog.ticket.calls[0].tool == "fetch", what="fetch")
        await asyncio.sleep(0.05)
        assert (dialog.width(), dialog.height()) != (600, 420)  # another kind: sized to its content
        dialog.deny.click()
        await other

    run(scenario())


@pytest.mark.parametrize("area", [Rect(0, 0, 1280, 772), Rect(0, 0, 640, 386), Rect(0, 0, 1920, 1050)])
@pytest.mark.parametrize("want", [(560, 440), (980, 760), (1600, 1400)])
def test_placement_stays_inside_and_off_the_notification_corner_when_there_is_room(
        area: Rect, want: tuple[int, int]) -> None:
    width, height = placement.fit_size(*want, area)
    x, y = placement.place_away_from(area, width, height, placement.NOTIFICATION_AREA)
    framed = Rect(x, y, width + placement.FRAME[0], height + placement.FRAME[1])
    assert framed.x >= area.x and framed.y >= area.y and framed.right <= area.right and framed.bottom <= area.bottom
    reserved = placement.NOTIFICATION_AREA.rect(area)
    free_below = area.height - reserved.height - 12 >= height + placement.FRAME[1]
    free_beside = area.width - reserved.width - 12 >= width + placement.FRAME[0]
    if free_below or free_beside:
        assert not framed.intersects(reserved), (framed, reserved)


def test_a_remembered_geometry_is_clamped_to_todays_screen() -> None:
    box = placement.clamp(Rect(900, 700, 1200, 900), Rect(0, 0, 640, 386))
    assert box.right <= 640 - placement.FRAME[0] and box.bottom <= 386 - placement.FRAME[1] and box.x >= 0


def fake_proc(root: Path, pid: int, argv: list[str], ppid: int) -> None:
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (root / str(pid) / "stat").write_text(f"{pid} (x y) S {ppid} 1 1 0")


def test_the_agents_command_line_not_the_interpreter(tmp_path: Path) -> None:
    home = os.path.expanduser("~")
    fake_proc(tmp_path, 10, ["python3.11", f"{home}/agents/coder.py", "--task", "fix it"], 1)
    assert agent_command(10, tmp_path) == ("python3.11 ~/agents/coder.py --task 'fix it'", None)
    fake_proc(tmp_path, 20, ["node", "/usr/bin/claude"], 1)
    fake_proc(tmp_path, 21, ["/usr/bin/python3", "/venv/bin/desktop-approver", "hook", "claude-code"], 20)
    assert agent_command(21, tmp_path) == ("node /usr/bin/claude", "desktop-approver hook")
    assert agent_command(99, tmp_path) is None
    assert display_command(["a" * 300]).endswith("…")


def test_tilde_paths_are_resolved() -> None:
    home = os.path.expanduser("~")
    assert tilde_paths({"path": "~/notes.txt"}) == [("~/notes.txt", f"{home}/notes.txt")]
    assert tilde_paths({}, ["rm -rf ~/important && ls '~/quoted'"]) == [
        ("~/important", f"{home}/important"), ("~/quoted", f"{home}/quoted")]
    assert tilde_paths({"path": "/abs"}, ["echo hi"]) == []


def test_the_review_says_what_tilde_is(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask(approver, "Bash", {"command": "rm -rf ~/important"})
        dialog = await shown(approver)
        assert f"~/important is {os.path.expanduser('~')}/important" in dialog.review.reasons.text()
        assert "command " in dialog.review.identity.text()  # this test process's command line
        dialog.deny.click()
        await answer

    run(scenario())
