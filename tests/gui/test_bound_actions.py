"""Every action answers the request it was shown for, or nothing (issue 31): the inbox's buttons,
the tray menu's entries and the dialog's keys when the request shown changes under the person.
(Notifications: test_notification_actions.py and, on dunst, test_notification_race_dunst.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_approver import AsyncClient
from tests.gui.conftest import wait_for


def ask(app: Any, command: str, agent: str = "coder", timeout: float | None = None) -> asyncio.Task[Any]:
    client = AsyncClient(app.service.options.socket_path, agent=agent)
    return asyncio.ensure_future(client.request("Bash", {"command": command}, session="s1", timeout=timeout))


def ticket_of(app: Any, command: str) -> Any:
    return next(t for t in app.decider.tickets() if t.calls[0].args["command"] == command)


def test_the_inbox_answers_only_what_its_buttons_last_named(approver: Any, run: Any) -> None:
    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        make, docs = ask(approver, "make"), ask(approver, "make docs")
        await wait_for(lambda: len(inbox._rows) == 2, what="two rows")
        for ticket in approver.decider.tickets():
            inbox._rows[ticket.key].setSelected(True)
        assert inbox.allow_once.text() == "Allow 2 &once"
        shown = inbox.review.ticket
        other = next(t for t in approver.decider.tickets() if t is not shown)
        # The selection changes without the buttons being told (as a row taken away may do).
        inbox.tree.blockSignals(True)
        inbox._rows[other.key].setSelected(False)
        inbox.tree.blockSignals(False)
        assert inbox.decide_selected("allow_once") == 0  # answers nothing...
        assert "changed" in inbox.selected_label.text() and inbox.allow_once.text() == "Allow &once"
        assert len(approver.decider.tickets()) == 2
        assert inbox.decide_selected("allow_once") == 1  # ...until the buttons say what they do
        answered = make if shown.calls[0].args["command"] == "make" else docs
        assert (await answered).decision == "allow_once"
        approver.decider.answer(other, [_deny()])
        await asyncio.gather(make, docs)

    run(scenario())


def test_a_selected_request_that_leaves_is_never_answered_in_its_place(approver: Any, run: Any) -> None:
    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        first = ask(approver, "make", timeout=200)
        await wait_for(lambda: len(inbox._rows) == 1, what="the first row")
        second = ask(approver, "make docs", timeout=400)
        await wait_for(lambda: len(inbox._rows) == 2, what="two rows")
        inbox.select(ticket_of(approver, "make"))
        assert inbox.review.ticket is ticket_of(approver, "make")
        first.cancel()  # the agent withdraws the request the person is reading
        await wait_for(lambda: len(inbox._rows) == 1, what="the withdrawn row gone")
        assert inbox.decide_selected("allow_once") == 0 and not inbox.allow_once.isEnabled()
        assert inbox.review.ticket is None and not second.done()
        approver.decider.answer(ticket_of(approver, "make docs"), [_deny()])
        assert (await second).decision == "deny"

    run(scenario())


def test_a_tray_entry_whose_request_left_opens_the_inbox_not_another_request(approver: Any, run: Any) -> None:
    approver.set_popups(False)

    async def scenario() -> None:
        first = ask(approver, "make", timeout=200)
        await wait_for(lambda: approver.decider.tickets(), what="the first request")
        gone = approver.decider.tickets()[0]
        second = ask(approver, "make docs", timeout=400)
        await wait_for(lambda: len(approver.decider.tickets()) == 2, what="two requests")
        first.cancel()
        await wait_for(lambda: len(approver.decider.tickets()) == 1, what="the first withdrawn")
        approver.tray.ticket_chosen.emit(gone)  # the menu entry the person picked, built before it left
        assert approver.inbox.isVisible() and not approver.dialog.isVisible()
        assert approver.decider.current is not ticket_of(approver, "make docs")
        approver.decider.answer(ticket_of(approver, "make docs"), [_deny()])
        await second

    run(scenario())


@pytest.fixture
def guarded(tmp_path: Path, run: Any) -> Iterator[Any]:
    """The app with the real arming delay."""
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "s" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=None)
    app = DesktopApprover(options)
    run(app.start())
    yield app
    run(app.close())


def test_a_key_pressed_as_the_shown_request_changes_answers_nothing(guarded: Any, run: Any, qtbot: Any) -> None:
    dialog = guarded.dialog

    async def scenario() -> None:
        first = ask(guarded, "make", timeout=200)
        await wait_for(lambda: dialog.ticket is not None and dialog.allow_once.isEnabled(), what="the armed dialog")
        second = ask(guarded, "make docs", timeout=400)
        await wait_for(lambda: len(guarded.decider.tickets()) == 2, what="two requests")
        assert dialog.ticket is ticket_of(guarded, "make")
        first.cancel()  # withdrawn while the person's hand is on Alt+O
        await wait_for(lambda: dialog.ticket is ticket_of(guarded, "make docs"), what="the next request shown")
        qtbot.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
        assert not second.done() and guarded.decider.tickets() == [dialog.ticket]  # the new one is not answered
        await wait_for(lambda: dialog.allow_once.isEnabled(), what="armed again for the new request")
        qtbot.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
        assert (await second).decision == "allow_once"

    run(scenario())


def _deny() -> Any:
    from desktop_approver.core.decisions.tickets import Verdict

    return Verdict("deny", "user")
