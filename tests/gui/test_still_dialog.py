"""A still dialog: its size and its buttons stay where they are from one request to the next."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint

from desktop_approver import Client, previews
from tests.gui.conftest import wait_for
from tests.support.projects import work_where_it_loses_data

OLD = "".join(f"def step_{i}(value):\n    return value + {i}\n\n" for i in range(40))
NEW = OLD.replace("return value + 7\n", "return value * 7\n")


def ask(app: Any, tool: str, args: dict[str, Any], **extra: Any) -> asyncio.Future[Any]:
    def request() -> Any:
        with Client(app.service.options.socket_path, agent="coder") as client:
            return client.request(tool, args, session="s", **extra)

    return asyncio.get_running_loop().run_in_executor(None, request)


async def settled() -> None:
    for _ in range(15):  # the lazy diff rendering and any deferred fit
        await asyncio.sleep(0.02)


def where(dialog: Any) -> tuple[Any, ...]:
    def spot(button: Any) -> tuple[int, int, int, int]:
        at = button.mapToGlobal(QPoint(0, 0))
        return at.x(), at.y(), button.width(), button.height()

    return (dialog.geometry().getRect(), spot(dialog.allow_once), spot(dialog.deny))


def test_the_dialog_and_its_buttons_do_not_move_between_requests(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answers = [ask(approver, "Bash", {"command": "git status"})]
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the first dialog")
        await settled()
        answers.append(ask(approver, "write_file", {"path": "steps.py", "content": NEW},
                           preview=previews.diff("steps.py", OLD, NEW)))
        answers.append(ask(approver, "Bash", {"command": "rm -rf build/"}))
        await wait_for(lambda: len(approver.decider.tickets()) == 3, what="three requests")
        first = where(dialog)
        tickets = approver.decider.tickets()
        seen = []
        for ticket in [*tickets, *tickets]:  # each once, then each seen again
            approver.decider.show(ticket)
            await settled()
            assert dialog.ticket is ticket
            seen.append(where(dialog))
            if ticket.calls[0].tool == "write_file":
                preview = dialog.review.preview
                # The diff's labels whole, and its pane tall enough to read: not clipped.
                assert preview.diff_summary.isVisibleTo(preview)
                assert preview.diff_summary.width() >= preview.diff_summary.sizeHint().width()
                assert preview.diff_summary.text() == "1 change (2 lines) · 1 hunk"
                assert preview.diff_browser.viewport().height() >= 3 * preview.diff_browser.fontMetrics().height()
        assert all(place == first for place in seen), (first, seen)
        for _ in range(3):
            dialog.deny.click()
        await asyncio.gather(*answers)

    run(scenario())


def test_one_changed_line_is_one_line(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "write_file", {"path": "a.txt", "content": "b\n"},
                     preview=previews.diff("a.txt", "", "b\n"))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        assert dialog.review.preview.diff_summary.text() == "1 change (1 line) · 1 hunk"
        dialog.deny.click()
        await answer

    run(scenario())


def test_a_batch_keeps_the_single_requests_button_slots(approver: Any, run: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work_where_it_loses_data(tmp_path))   # not the checkout's own build/ or git state
    dialog = approver.dialog
    commands = [f"make target-{i}" for i in range(8)] + ["git reset --hard"]
    approver.decider.settle_s = 0.0  # the batch waits behind the request in view

    async def scenario() -> None:
        single = ask(approver, "Bash", {"command": "git status"})
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the single request")
        await settled()

        def batch() -> Any:
            with Client(approver.service.options.socket_path, agent="ops") as client:
                return client.request_batch([("Bash", {"command": c}) for c in commands], session="b")

        batched = asyncio.get_running_loop().run_in_executor(None, batch)
        await wait_for(lambda: len(approver.decider.tickets()) == 2, what="the batch waiting")
        before = where(dialog)
        texts = (dialog.allow_once.text(), dialog.allow_session.text())
        approver.decider.show(next(t for t in approver.decider.tickets() if len(t.calls) > 1))
        await settled()
        assert len(dialog.ticket.calls) == 9
        assert texts == ("Allow &once", "Allow for &session")
        assert dialog.allow_once.text().startswith("Allow 8 &once")  # the batch's own labels, in the same slots
        assert where(dialog) == before  # same slots: nothing moved under the pointer
        assert dialog.button_row.direction() == dialog.button_row.Direction.LeftToRight
        for button in (dialog.allow_once, dialog.allow_session):
            assert button.width() >= button.sizeHint().width()  # read whole, or cut with the whole in the tooltip
            if button.text().endswith("…"):
                assert "git reset" in button.toolTip()
        dialog.deny.click()
        dialog.deny.click()
        await asyncio.gather(single, batched)

    run(scenario())


def top_of(widget: Any) -> int:
    return widget.mapToGlobal(QPoint(0, 0)).y()


def test_nothing_above_the_call_moves_on_a_touch_an_arrival_or_the_clock(approver: Any, run: Any) -> None:
    """Issue 31: the countdown line growing on first touch, the "Also waiting" line appearing or
    changing length used to push the call (and the pointer's target) down by 10 to 46 px."""
    dialog = approver.dialog

    async def scenario() -> None:
        answers = [ask(approver, "Bash", {"command": "git status"})]
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        await settled()
        review = dialog.review
        before = (top_of(review), top_of(review.preview), where(dialog))
        dialog.pause_countdown()  # the first touch: the countdown says much more
        await wait_for(lambda: "paused" in dialog.countdown.text(), what="the paused countdown")
        await settled()
        assert (top_of(review), top_of(review.preview), where(dialog)) == before
        answers.append(ask(approver, "Bash", {"command": "make " + "target " * 40}))
        answers.append(ask(approver, "write_file", {"path": "a" * 200 + ".txt", "content": "x"}))
        await wait_for(lambda: "Also waiting" in dialog.next_strip.text() and len(approver.decider.tickets()) == 3,
                       what="the others, also waiting")
        await settled()
        assert (top_of(review), top_of(review.preview), where(dialog)) == before
        assert dialog.next_strip.height() == dialog.next_strip.maximumHeight()  # its fixed lines
        for _ in range(3):
            dialog.deny.click()
        await asyncio.gather(*answers)

    run(scenario())


def test_browsing_a_batch_never_shortens_what_is_above_its_list(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="coder")
        calls = [("Bash", {"command": "rm -rf ~/build ~/cache ~/tmp"}), ("Bash", {"command": "ls"}),
                 ("Bash", {"command": "cat ~/notes.txt ~/todo.txt"}), ("Bash", {"command": "pwd"})]
        answer = asyncio.get_running_loop().run_in_executor(None, lambda: client.request_batch(calls, session="s"))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the batch")
        await settled()
        review = dialog.review
        tops = []
        for row in [*range(review.calls.count()), 0]:
            review.calls.setCurrentRow(row)
            await settled()
            tops.append(top_of(review.calls))
        assert tops == sorted(tops), tops  # it may make room once; it never jumps back up under the pointer
        assert tops[-1] == tops[-2]
        dialog.deny.click()
        await answer
        client.close()

    run(scenario())


def test_on_a_short_screen_an_arrival_moves_nothing_and_nothing_is_cut(
        approver: Any, run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """At scale 2 on 1280x800 (640x386 of room) the "Also waiting" line was given only while others
    waited: an arrival moved the call 48 px under the pointer, and its one line wrapped into half
    of a second, cut mid-glyph (issue 31 review F5, F7). There the position line says how many
    wait (its tooltip names them) and no strip takes the call's room."""
    from PySide6.QtCore import QRect

    from desktop_approver.gui.dialog import COMPACT_BELOW, ApprovalDialog

    monkeypatch.setattr(ApprovalDialog, "available", lambda self: QRect(0, 0, 640, 386))
    dialog = approver.dialog

    async def scenario() -> None:
        answers = [ask(approver, "write_file", {"path": "steps.py", "content": NEW},
                       preview=previews.diff("steps.py", OLD, NEW))]
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        assert dialog.available().height() < COMPACT_BELOW
        await wait_for(lambda: not dialog.reading() and dialog.allow_once.isEnabled(), what="the diff read")
        await settled()
        review = dialog.review
        before = (top_of(review), top_of(review.badge), top_of(review.preview), where(dialog))
        answers.append(ask(approver, "Bash", {"command": "make " + "target " * 40}))  # not more urgent: stays behind
        await wait_for(lambda: "2 waiting" in dialog.position.text(), what="the other, also waiting")
        await settled()
        assert (top_of(review), top_of(review.badge), top_of(review.preview), where(dialog)) == before
        assert dialog.ticket is not None and dialog.ticket.calls[0].tool == "write_file"  # still the first
        assert not dialog.next_strip.isVisible()  # no half line anywhere
        assert "▲ Moderate — “coder”" in dialog.position.toolTip()
        for _ in range(2):
            dialog.deny.click()
        await asyncio.gather(*answers)

    run(scenario())
