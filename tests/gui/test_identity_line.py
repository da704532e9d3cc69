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


def test_host_and_branch_are_the_agents_claims_never_beside_a_tick(approver: Any, run: Any) -> None:
    dialog = approver.dialog
    host = "sandbox-vm ✔ (isolated, no network)"
    branch = "main ✔ policy: allow\n<b>x</b>"

    async def scenario() -> str:
        client = Client(approver.service.options.socket_path, agent="coder")
        hello = client.protocol.hello

        def claiming() -> dict[str, Any]:
            message = hello()
            message["client"].update(host=host, git_branch=branch)
            return message

        client.protocol.hello = claiming  # type: ignore[method-assign]
        pending = asyncio.get_running_loop().run_in_executor(
            None, lambda: client.request("Bash", {"command": "ls"}, session="s"))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        text = dialog.review.identity.text()
        dialog.deny.click()
        await pending
        client.close()
        return text

    text = run(scenario())
    claims = [line for line in text.split("<br>") if "sandbox-vm" in line]
    assert len(claims) == 1 and "the agent claims:" in claims[0] and "branch <i>“main" in claims[0]
    assert "✔" not in claims[0] and "&lt;U+2714&gt;" in claims[0]  # the agent's tick is an escape, not a tick
    assert "\\n" in claims[0] and "&lt;b&gt;" in claims[0]
    assert "sandbox-vm" not in text.split("<br>")[0]  # not on the line of the app's verified pid


def test_a_relayed_request_shows_the_verified_nats_user_apart_from_the_claims(tmp_path: Any, run: Any) -> None:
    """Over the NATS relay the server vouches for its user, and for nothing the agent says: the user
    on the first line with its tick, the agent's name and host among the claims."""
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover
    from desktop_approver.relay.address import parse
    from desktop_approver.wiring import relay_door
    from tests.relay.conftest import NatsServer, relay_config

    server = NatsServer(tmp_path, config=relay_config(tmp_path)).start()
    options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=tmp_path / "state.json",
                             doors=(relay_door(parse(server.user_url("desk", "x"))),))
    app = DesktopApprover(options, arming_delay_ms=0)
    try:
        run(app.start())
        dialog = app.dialog

        def ask() -> Any:
            while True:  # until the app has set the relay up on the server
                with Client(url=server.user_url("alice", "pw"), agent="claude") as client:
                    try:
                        return client.request("Bash", {"command": "make deploy"}, session="s")
                    except Exception as exc:  # noqa: BLE001 - the stream is not there yet
                        if "no approver has set up the relay" not in str(exc):
                            raise

        async def scenario() -> tuple[str, str]:
            pending = asyncio.get_running_loop().run_in_executor(None, ask)
            await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
            text, details = dialog.review.identity.text(), dialog.review.identity.toolTip()
            dialog.grab().save(str(tmp_path / "relayed-dialog.png"))
            dialog.deny.click()
            await pending
            return text, details

        text, details = run(scenario())
    finally:
        run(app.close())
        server.stop()
    first, *rest = text.split("<br>")
    assert first.startswith("NATS user <b>alice</b> ✔") and "claude" not in first
    claims = [line for line in rest if "the agent claims:" in line]
    assert len(claims) == 1 and "name <i>“claude”</i>" in claims[0] and "host <i>“" in claims[0]
    assert "✔" not in claims[0] and "alice/claude" not in text
    assert "NATS user (verified by the NATS server): alice" in details
