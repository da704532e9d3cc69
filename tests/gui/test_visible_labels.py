"""What the person reads is what runs: hidden characters are shown in every label, not only
in the preview (agent names, summaries, the tray menu, the inbox, the history)."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt

from desktop_approver import Client
from desktop_approver.gui.review import summarise_args, visible
from tests.gui.conftest import wait_for

RLO = "\u202e"


def test_visible_marks_bidi_zero_width_and_controls() -> None:
    assert visible(f"a{RLO}b") == "a<U+202E>b"
    assert "\x1b" not in visible("\x1b[31mred")
    assert "\u200b" not in visible("zero\u200bwidth")
    assert summarise_args({"command": f"echo '{RLO}fdp.exe'"}) == "echo '<U+202E>fdp.exe'"


def test_labels_everywhere_show_hidden_characters(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent=f"helper{RLO}tnega")
        pending = asyncio.get_running_loop().run_in_executor(
            None, lambda: client.request("Bash", {"command": f"echo 'txt.{RLO}exe'"}, session="s"))
        await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
        approver.open_inbox()
        from desktop_approver.gui.inbox import AGENT, REQUEST

        row = approver.inbox.tree.topLevelItem(0)
        texts = [row.text(REQUEST), row.text(AGENT), dialog.review.identity.text(), dialog.windowTitle(),
                 dialog.allow_once.text(), row.toolTip(AGENT),
                 *(action.text() for action in approver.tray.menu.actions())]
        assert any("<U+202E>" in text for text in texts[6:]), texts
        assert "<U+202E>" in row.text(AGENT) and "<U+202E>" in dialog.windowTitle()
        for text in texts:
            assert RLO not in text
        assert "&lt;U+202E&gt;" in dialog.review.identity.text()
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        await pending

    run(scenario())
    history = approver.open_history()
    item = history.table.topLevelItem(0)
    from desktop_approver.gui.history_window import COLUMNS

    agent, call = COLUMNS.index("Agent (as claimed)"), COLUMNS.index("Call")
    assert RLO not in item.text(agent) and "<U+202E>" in item.text(agent) and "<U+202E>" in item.text(call)
