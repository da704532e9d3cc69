"""One queue for every view: the dialog's place, next requests and keys; the tray; remembered counts."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt

from desktop_approver import Client
from tests.gui.conftest import wait_for


def ask(app: Any, agent: str, command: str, session: str = "s") -> asyncio.Future[Any]:
    client = Client(app.service.options.socket_path, agent=agent)
    return asyncio.get_running_loop().run_in_executor(
        None, lambda: client.request("Bash", {"command": command}, session=session))


def test_dialog_shows_its_place_the_next_requests_and_moves_with_keys(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog
    approver.decider.settle_s = 0.0  # past the settling moment: arrivals queue behind the request in view

    async def scenario() -> None:
        first = ask(approver, "coder", "pytest -q")
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the first dialog")
        shown = dialog.ticket
        push = ask(approver, "ops", "git push --force origin main")
        third = ask(approver, "research", "ls")
        await wait_for(lambda: len(approver.decider.tickets()) == 3, what="three tickets")
        await wait_for(lambda: dialog.position.text() == "Request #1 · 3 waiting", what="the count")
        assert dialog.ticket is shown  # an arrival never replaces the request in view
        strip = dialog.next_strip.text()
        push_number = approver.arrival_numbers.number(next(t for t in approver.decider.tickets()
                                                           if t.identity.agent == "ops"))
        assert push_number in (2, 3)  # by arrival (the two arrive together), kept while it waits
        assert f"#{push_number} ⚠ Destructive “Bash”: git push --force origin main — “ops”" in strip
        assert strip.index("ops") < strip.index("research")  # the queue's order: the most urgent first
        assert dialog.windowTitle() == "▲ Moderate “Bash”: pytest -q — from “coder” (as claimed)"

        qtbot.keyClick(dialog, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
        await wait_for(lambda: dialog.ticket is not shown, what="the previous request")
        assert dialog.position.text() == f"Request #{push_number} · 3 waiting" and dialog.ticket.identity.agent == "ops"
        assert dialog.windowTitle().startswith("⚠ Destructive “Bash”: git push --force")
        qtbot.keyClick(dialog, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
        assert dialog.ticket is shown
        qtbot.keyClick(dialog, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
        assert dialog.ticket.identity.agent == "research"
        approver.dialog._strip_link("ticket:" + [t for t in approver.decider.tickets()
                                                  if t.identity.agent == "ops"][0].key)
        assert dialog.ticket.identity.agent == "ops"

        approver.open_inbox()
        dialog.deny.click()
        # Decided: gone from the dialog, the inbox, the tray and the queue in the same step.
        assert len(approver.decider.tickets()) == 2
        assert len(approver.inbox._rows) == 2
        assert approver.tray.toolTip().startswith("desktop-approver — 2 requests waiting")
        assert dialog.ticket is not None and dialog.ticket.identity.agent != "ops"
        assert (await push).decision == "deny"
        for _ in approver.decider.tickets():
            dialog.deny.click()
        await asyncio.gather(first, third)

    run(scenario())


def test_tray_menu_times_stay_current(approver: Any, run: Any) -> None:
    tray = approver.tray

    async def scenario() -> None:
        answer = ask(approver, "coder", "make")
        await wait_for(lambda: tray._waiting_actions, what="a waiting entry")
        action, ticket = tray._waiting_actions[0]
        assert "(waiting 0 s," in action.text() and "left)" in action.text()
        ticket.created -= 95  # as if it had waited a while: the menu must not keep "0 s"
        tray._menu_opening()
        assert "(waiting 95 s," in action.text()
        assert tray._clock.isActive()
        tray.menu.aboutToHide.emit()
        assert not tray._clock.isActive()
        approver.dialog.deny.click()
        await answer

    run(scenario())


def test_remembered_approvals_count_answers_like_the_sessions_command(approver: Any, run: Any) -> None:
    import json
    import sys

    from desktop_approver.gui.sessions_window import COLUMNS

    async def scenario() -> None:
        window = approver.open_sessions()
        first = ask(approver, "coder", "make docs", session="m1")
        await wait_for(lambda: approver.dialog.allow_session.isEnabled(), what="the dialog")
        approver.dialog.allow_session.click()
        await first
        await wait_for(lambda: window.table.topLevelItemCount() == 1, what="the remembered call")
        answered = COLUMNS.index("Answered")
        assert window.table.topLevelItem(0).text(answered) == "0"
        assert (await ask(approver, "coder", "make docs", session="m1")).decided_by == "session"
        entry = approver.service.memory.entries()[0]
        assert entry.hits == 1
        await wait_for(lambda: window.table.topLevelItem(0).text(answered) == "1",
                       what="the window to count the answer")
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "desktop_approver", "sessions", "--json", "--agent", "coder",
            "--socket", str(approver.service.options.socket_path), stdout=asyncio.subprocess.PIPE)
        out, _ = await cli.communicate()
        entries = [json.loads(line) for line in out.splitlines()]
        assert [e["hits"] for e in entries] == [1]  # the window and the command agree

    run(scenario())
