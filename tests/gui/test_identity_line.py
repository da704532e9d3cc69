"""The dialog's identity line: the agent's name marked as a claim, the cwd checked against the
kernel's (a false claim is shown in red beside the real directory)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_approver import Client
from tests.gui.conftest import wait_for


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the real cwd comes from /proc (Linux)")
@pytest.mark.parametrize("claim, expected", [
    ("/claimed/elsewhere", "⚠ really in"),
    (None, "✔"),
])
def test_identity_line_checks_the_claimed_cwd(approver: Any, run: Any, qtbot: Any, claim: str | None,
                                              expected: str) -> None:
    dialog = approver.dialog

    async def scenario() -> str:
        client = Client(approver.service.options.socket_path, agent="coder")
        if claim:
            client.protocol.cwd = claim
        pending = asyncio.get_running_loop().run_in_executor(
            None, lambda: client.request("Bash", {"command": "ls"}, session="s"))
        await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
        text = dialog.review.identity.text()
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        await pending
        client.close()
        return text

    text = run(scenario())
    assert "<b>coder</b> <i>(name as claimed)</i>" in text
    assert expected in text and os.getcwd() in text
    if claim:
        assert "claims <tt>/claimed/elsewhere</tt>" in text
