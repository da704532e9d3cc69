"""The tray's words: the waiting list in the urgency order naming what each call does, approve-all's
time left, what do-not-disturb let time out, and quitting with requests waiting."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from PySide6.QtWidgets import QMessageBox

from desktop_approver import Client
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.gui.tray import elide_middle
from tests.gui.conftest import wait_for


def ask(app: Any, agent: str, command: str, timeout: float | None = None) -> asyncio.Future[Any]:
    def request() -> Any:
        with Client(app.service.options.socket_path, agent=agent) as client:
            return client.request("Bash", {"command": command}, timeout=timeout)

    return asyncio.get_running_loop().run_in_executor(None, request)


def deny_all(app: Any) -> None:
    for ticket in app.decider.tickets():
        app.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])


def entries(app: Any) -> list[str]:
    return [action.text() for action, _ticket in app.tray._waiting_actions]


def test_entries_follow_the_urgency_order_and_name_the_command(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answers = [ask(approver, "codex", "pytest -q"), ask(approver, "codex", "git push --force origin main"),
                   ask(approver, "codex", "rm -rf build"), ask(approver, "r&d", "ls")]
        await wait_for(lambda: len(approver.tray._waiting_actions) == 4, what="four entries")
        texts = entries(approver)
        # Destructive first (the queue's one order), and each names its command, not only "Bash".
        assert [t.split("  ")[0] for t in texts[:2]] == ["⚠ Destructive"] * 2
        assert {t.split("  ")[1] for t in texts[:2]} == {"“codex”: git push --force origin main",
                                                         "“codex”: rm -rf build"}
        assert [ticket for _a, ticket in approver.tray._waiting_actions] == approver.decider.tickets()
        assert any("“codex”: pytest -q" in t for t in texts[2:])
        assert any("“r&&d”: ls" in t for t in texts[2:])  # an agent's "&" is shown, never a keyboard shortcut
        deny_all(approver)
        await asyncio.gather(*answers)

    run(scenario())


def test_a_long_command_is_elided_in_the_middle_so_its_dangerous_end_shows(approver: Any, run: Any) -> None:
    long = "echo " + "x" * 300 + " && git push --force origin main"

    async def scenario() -> None:
        answer = ask(approver, "a" * 200, long)
        await wait_for(lambda: approver.tray._waiting_actions, what="an entry")
        text = entries(approver)[0]
        assert "…" in text and text.count("…") == 2 and "origin main" in text
        assert len(text) < 150
        deny_all(approver)
        await answer

    run(scenario())
    assert elide_middle("abcdefghij", 5) == "ab…ij" and elide_middle("short", 10) == "short"


def test_approve_all_shows_its_time_left_in_the_tooltip_and_the_menu(approver: Any) -> None:
    tray = approver.tray
    assert "left" not in tray.toolTip()
    approver.choose_mode(modes.APPROVE_ALL, 15 * 60)
    assert "approving all but destructive calls, 15:00 left" in tray.toolTip() \
        or "approving all but destructive calls, 14:59 left" in tray.toolTip()
    first = tray.menu.actions()[0]
    assert first.text().startswith("Approving all but destructive calls, 1") and first.text().endswith("left")
    approver.service.mode._deadline = time.monotonic() + 125  # time passes (approve-all keeps the monotonic clock)
    tray._menu_opening()
    assert tray.menu.actions()[0].text() in ("Approving all but destructive calls, 2:05 left",
                                             "Approving all but destructive calls, 2:04 left")
    tray._approve_all_tick()
    assert "2:0" in tray.toolTip()
    approver.choose_mode(modes.INTERACTIVE, None)
    assert "left" not in tray.toolTip() and "Approving" not in tray.menu.actions()[0].text()


def test_do_not_disturb_says_what_timed_out_when_the_person_returns(approver: Any, run: Any) -> None:
    told: list[str] = []
    approver.tray.showMessage = lambda _title, text, *_args: told.append(text)  # type: ignore[method-assign]
    approver.choose_mode(modes.DO_NOT_DISTURB, None)

    async def scenario() -> None:
        late = ask(approver, "codex", "make deploy", timeout=0.3)
        answered = ask(approver, "ops", "make lint")
        assert (await late).decided_by == "timeout"
        assert "1 request timed out (denied) during do-not-disturb" in approver.tray.toolTip()
        assert not told  # nothing pops up while do-not-disturb is on
        approver.choose_mode(modes.INTERACTIVE, None)
        assert told and "1 request from codex timed out and was denied" in told[0]
        entry = approver.tray.menu.actions()[0]
        assert entry.text().startswith("1 request timed out (denied) during do-not-disturb")
        entry.trigger()  # leads to the history, and is then cleared
        history = approver.history_window
        assert history is not None and history.isVisible()
        assert history.decided_by.currentData() == "timeout"  # what timed out, not the whole history
        assert [entry.decided_by for entry in history.entries] == ["timeout"]
        assert approver.tray.missed is None and not approver.missed
        deny_all(approver)
        await answered

    run(scenario())


@pytest.mark.parametrize("choice", ["keep", "quit"])
def test_quit_with_requests_waiting_asks_first_and_says_what_happens(approver: Any, run: Any, choice: str) -> None:
    approver.quit_requested = asyncio.Event()

    async def scenario() -> None:
        answer = ask(approver, "codex", "make")
        await wait_for(lambda: approver.decider.tickets(), what="a waiting request")
        approver.tray.quit_requested.emit()
        box = approver.quit_question
        assert isinstance(box, QMessageBox) and box.isVisible()
        assert not approver.quit_requested.is_set()
        assert "1 request waiting" in box.text() and "denial" in box.informativeText()
        keep, leave = (next(b for b in box.buttons() if b.text().replace("&", "").startswith(word))
                       for word in ("Keep", "Quit"))
        (keep if choice == "keep" else leave).click()
        assert approver.quit_requested.is_set() == (choice == "quit")
        assert approver.quit_question is None
        deny_all(approver)
        await answer

    run(scenario())


def test_quit_with_nothing_waiting_quits_at_once(approver: Any) -> None:
    approver.quit_requested = asyncio.Event()
    approver.tray.quit_requested.emit()
    assert approver.quit_requested.is_set() and approver.quit_question is None
