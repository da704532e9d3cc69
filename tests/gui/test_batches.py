"""Safe batches: a badge per call, destructive calls unticked, no button allows one it does not name."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_approver import Client
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions.tickets import CallInfo
from desktop_approver.gui import batch
from tests.gui.conftest import wait_for


def calls(*commands: str) -> list[CallInfo]:
    return [CallInfo(index=i, tool="Bash", args={"command": c}, risk=assess("Bash", {"command": c}, cwd="/w"))
            for i, c in enumerate(commands)]


BATCH = calls("make", "rm -rf build/", "make test", "git status")


@pytest.mark.parametrize("ticked, once, session", [
    # destructive call left out: the button says which call it leaves out
    ([True, False, True, True], ("Allow 3 &once (not rm -rf build/)", True),
     ("Allow 3 for &session (not rm -rf build/)", True)),
    # destructive call ticked: the button names it, and the session is off
    ([True, True, True, True], ("Allow all 4 &once, incl. ⚠ rm -rf build/", True), ("Allow 4 for &session", False)),
    ([False, True, False, False], ("Allow 1 &once, incl. ⚠ rm -rf build/ (not the 3 unticked)", True),
     ("Allow 1 for &session", False)),
    ([False, False, False, False], ("Allow &once (none ticked)", False), ("Allow for &session (none ticked)", False)),
])
def test_button_labels_name_every_destructive_call_they_allow(ticked: list[bool], once: tuple[str, bool],
                                                              session: tuple[str, bool]) -> None:
    got_once = batch.allow_once_choice(BATCH, ticked)
    got_session = batch.allow_session_choice(BATCH, ticked)
    assert (got_once.label, got_once.enabled) == once
    assert (got_session.label, got_session.enabled) == session
    for choice in (got_once, got_session):
        if choice.enabled and "rm -rf" not in choice.label:
            assert not ticked[1]  # an enabled button that allows rm -rf always names it


def test_destructive_calls_start_unticked_and_a_single_call_is_its_own_subject() -> None:
    assert batch.initial_ticks(BATCH) == [True, False, True, True]
    assert batch.initial_ticks(calls("rm -rf ~/old-checkout")) == [True]
    single = calls("rm -rf ~/old-checkout")
    assert batch.allow_once_choice(single, [True]).label == "Allow &once"
    assert not batch.allow_session_choice(single, [True]).enabled


def test_an_ampersand_in_a_command_is_not_a_mnemonic() -> None:
    two = calls("make && make install", "rm -rf out")
    label = batch.allow_once_choice(two, [False, True]).label
    assert label.endswith("(not make &&&& make install)")  # "&&" shows one "&"


def ask_batch(app: Any, commands: list[str]) -> asyncio.Future[Any]:
    client = Client(app.service.options.socket_path, agent="batcher")
    return asyncio.get_running_loop().run_in_executor(None, lambda: client.request_batch(
        [("Bash", {"command": c}) for c in commands], session="b"))


def test_alt_o_on_a_batch_allows_only_the_calls_it_names(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask_batch(approver, ["make", "rm -rf build/", "make test"])
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the batch dialog")
        items = [dialog.review.calls.item(i) for i in range(3)]
        assert [item.checkState() == Qt.CheckState.Checked for item in items] == [True, False, True]
        assert items[1].text().startswith("⚠ Destructive") and "deletes" in items[1].text()
        assert items[0].text().startswith("▲ Moderate") and "runs make" in items[0].text()
        assert dialog.allow_once.text() == "Allow 2 &once (not rm -rf build/)"
        qtbot.keyClick(dialog, Qt.Key.Key_O, Qt.KeyboardModifier.AltModifier)
        decisions = await answer
        assert [d.decision for d in decisions] == ["allow_once", "deny", "allow_once"]

    run(scenario())


def test_ticking_a_destructive_call_renames_the_button_and_blocks_the_session(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask_batch(approver, ["make", "rm -rf ~/important"])
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the batch dialog")
        assert dialog.allow_session.isEnabled()
        dialog.review.calls.item(1).setCheckState(Qt.CheckState.Checked)
        # Named on the button (cut to its slot, which keeps the ⚠ in view) and whole in its tooltip.
        assert dialog.allow_once.text().startswith("Allow all 2 &once, incl. ⚠")
        assert "Allow all 2 once, incl. ⚠ rm -rf ~/important" in dialog.allow_once.toolTip()
        assert not dialog.allow_session.isEnabled()
        dialog.allow_session.click()  # disabled: nothing happens
        dialog._answer("allow_session")  # and the dialog refuses it even when asked directly
        assert dialog.ticket is not None
        dialog.review.calls.item(1).setCheckState(Qt.CheckState.Unchecked)
        dialog.allow_session.click()
        decisions = await answer
        assert [d.decision for d in decisions] == ["allow_session", "deny"]

    run(scenario())


def test_inbox_never_allows_several_requests_with_a_destructive_one(approver: Any, run: Any) -> None:
    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        first = ask_batch(approver, ["make", "rm -rf dist"])
        client = Client(approver.service.options.socket_path, agent="other")
        second = asyncio.get_running_loop().run_in_executor(None, lambda: client.request("Bash", {"command": "ls"}))
        await wait_for(lambda: len(inbox._rows) == 2, what="two inbox rows")
        for row in inbox._rows.values():
            row.setSelected(True)
        assert inbox.allow_once.text() == "Allow 2 &once" and not inbox.allow_once.isEnabled()
        assert inbox.deny.text() == "&Deny 2"
        assert inbox.decide_selected("allow_once") == 0
        assert inbox.decide_selected("deny") == 2
        assert [d.decision for d in await first] == ["deny", "deny"]
        assert (await second).decision == "deny"

    run(scenario())


def test_batch_notification_names_the_most_dangerous_call_first() -> None:
    from desktop_approver.core.decisions.tickets import Countdown, Identity, Ticket
    from desktop_approver.gui.notifications import notification_text

    async def build() -> Ticket:
        return Ticket(request_id="b", kind="batch", calls=calls("ls", "cat a", "make", "rm -rf ~/important"),
                      session="s", identity=Identity(agent="bot"), countdown=Countdown(60), batch_size=4)

    _title, body = notification_text(asyncio.run(build()))
    assert body.splitlines()[0] == "⚠ Destructive Bash: rm -rf ~/important"
    assert "… and 1 more" in body


def test_space_ticks_and_unticks_the_current_batch_call(approver: Any, run: Any, qtbot: Any) -> None:
    """The contract's keys (ipc/PROTOCOL.md, "What the person sees"): Up / Down pick a call of the
    batch, Space ticks or unticks it, and the buttons follow."""
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask_batch(approver, ["make", "rm -rf build/"])
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the batch dialog")
        calls = dialog.review.calls
        calls.setFocus()
        calls.setCurrentRow(0)
        qtbot.keyClick(calls, Qt.Key.Key_Down)
        assert calls.currentRow() == 1 and calls.item(1).checkState() == Qt.CheckState.Unchecked
        qtbot.keyClick(calls, Qt.Key.Key_Space)
        assert calls.item(1).checkState() == Qt.CheckState.Checked
        assert dialog.allow_once.text().startswith("Allow all 2 &once, incl. ⚠")
        qtbot.keyClick(calls, Qt.Key.Key_Space)
        assert calls.item(1).checkState() == Qt.CheckState.Unchecked
        dialog.deny.click()
        assert [d.decision for d in await answer] == ["deny", "deny"]

    run(scenario())
