"""The whole path: an agent thread asks over the real socket, the test clicks the real dialog."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt

from desktop_approver import Client
from tests.gui.conftest import wait_for


def ask(approver: Any, tool: str, args: dict, session: str, **extra: Any) -> asyncio.Future[Any]:
    def request() -> Any:
        with Client(approver.service.options.socket_path, agent="test-agent") as client:
            return client.request(tool, args, session=session, **extra)

    return asyncio.get_running_loop().run_in_executor(None, request)


def test_allow_session_then_remembered_then_other_session_asks(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        first = ask(approver, "write_file", {"path": "a.txt", "content": "hi"}, "run-42")
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        assert dialog.review.tool.text() == "write_file"
        assert "a.txt" in dialog.review.preview.args_browser.toPlainText()
        assert "a.txt" in dialog.review.preview.caption.text()
        await wait_for(lambda: dialog.allow_session.isEnabled(), what="armed buttons")
        qtbot.mouseClick(dialog.allow_session, Qt.MouseButton.LeftButton)
        decision = await first
        assert decision.decision == "allow_session" and decision.decided_by == "user"

        again = await ask(approver, "write_file", {"path": "a.txt", "content": "hi"}, "run-42")
        assert again.decision == "allow_session" and again.decided_by == "session"
        assert not dialog.isVisible()

        other = ask(approver, "write_file", {"path": "a.txt", "content": "hi"}, "run-43")
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="a dialog for another session")
        assert dialog.ticket.session == "run-43"
        dialog.review.note.setText("not in this session")
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        denied = await other
        assert denied.decision == "deny" and denied.note == "not in this session" and not denied.allowed

    run(scenario())


def test_disconnecting_client_makes_dialog_go_away(approver: Any, run: Any) -> None:
    dialog = approver.dialog
    path = str(approver.service.options.socket_path)

    async def scenario() -> None:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(b'{"v":1,"type":"request","id":"x","tool":"Bash","args":{"command":"ls"}}\n')
        await writer.drain()
        await wait_for(lambda: dialog.isVisible(), what="the dialog")
        assert approver.decider.tickets()
        writer.close()
        await wait_for(lambda: not dialog.isVisible(), what="the dialog to go away")
        assert approver.decider.tickets() == []
        history = approver.service.audit.history()
        assert history[0].decided_by == "cancelled"

    run(scenario())


def test_queue_shows_one_dialog_and_position(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answers = [ask(approver, "Bash", {"command": f"echo {i}"}, f"s{i}") for i in range(3)]
        await wait_for(lambda: len(approver.decider.tickets()) == 3, what="three waiting tickets")
        assert dialog.position.text().startswith("Request #1 · 3 waiting")
        assert "3 requests waiting" in approver.tray.toolTip()
        for _ in range(3):
            await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the next ticket")
            qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
            await asyncio.sleep(0.05)
        results = await asyncio.gather(*answers)
        assert [r.decision for r in results] == ["allow_once"] * 3
        assert "0 requests waiting" in approver.tray.toolTip()

    run(scenario())


def test_timeout_denies_and_closes_dialog(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "Bash", {"command": "sleep 1"}, "t1", timeout=0.5)
        await wait_for(lambda: dialog.isVisible(), what="the dialog")
        decision = await answer
        assert decision.decision == "deny" and decision.decided_by == "timeout"
        await wait_for(lambda: not dialog.isVisible(), what="the dialog to close")
        assert approver.service.memory.entries() == []

    run(scenario())


def test_escape_denies(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "Bash", {"command": "ls"}, "e1")
        await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
        decision = await answer
        assert decision.decision == "deny" and decision.decided_by == "user"

    run(scenario())
