"""Edits are new calls (issue 31): edited arguments are read again at once, the buttons, badge,
reasons, preview and title follow the new reading, the answer carries it, and nothing is
remembered that the person did not see read."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from PySide6.QtCore import Qt

from desktop_approver import AsyncClient
from tests.gui.conftest import wait_for


def ask(app: Any, command: str) -> asyncio.Task[Any]:
    client = AsyncClient(app.service.options.socket_path, agent="editor-test")
    return asyncio.ensure_future(client.request("Bash", {"command": command}, session="s1"))


async def edit(dialog: Any, command: str) -> None:
    if not dialog.review.edit_button.isChecked():
        dialog.review.edit_button.click()
    dialog.review.args_editor.editor.setPlainText(json.dumps({"command": command}))
    assert not dialog.allow_once.isEnabled()  # not read yet: nothing may be approved
    await wait_for(lambda: dialog.review.edits_valid(), what="the edit read again")


def test_an_edit_that_makes_a_call_destructive_is_read_and_shown_as_such(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: dialog.isVisible() and dialog.allow_session.isEnabled(), what="the armed dialog")
        assert dialog.review.badge.level == "moderate" and dialog.review.whole_tool.isEnabled()
        await edit(dialog, "rm -rf ~/projects")
        assert dialog.review.badge.level == "destructive"
        assert dialog.review.reasons.text().startswith("Your edit, read again as a new call")
        assert dialog.windowTitle().startswith("⚠ Destructive “Bash”: rm -rf ~/projects")
        assert dialog.allow_once.isEnabled() and not dialog.allow_session.isEnabled()
        assert not dialog.review.whole_tool.isEnabled() and not dialog.review.whole_tool.isChecked()
        assert dialog.review.preview._content[1] == {"command": "rm -rf ~/projects"}  # what is shown is what runs
        dialog.allow_session.click()  # disabled: nothing happens
        dialog._answer("allow_session")  # and the dialog refuses it even when asked directly
        assert approver.decider.tickets()
        dialog.allow_once.click()
        decision = await answer
        assert decision.decision == "allow_once" and decision.updated_args == {"command": "rm -rf ~/projects"}
        assert decision.risk is not None and decision.risk["level"] == "destructive"  # the new reading
        assert approver.service.memory.entries() == []

    run(scenario())


def test_allow_for_session_remembers_only_the_edited_call_it_showed_read(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: dialog.isVisible() and dialog.allow_session.isEnabled(), what="the armed dialog")
        await edit(dialog, "ls -la")
        assert dialog.review.badge.level == "safe" and dialog.allow_session.isEnabled()
        assert dialog.windowTitle().startswith("✔ Safe “Bash”: ls -la")
        dialog.allow_session.click()
        decision = await answer
        assert decision.decision == "allow_session" and decision.risk is not None
        assert decision.risk["level"] == "safe"
        remembered = [(e.tool, json.loads(e.args_json or "null")) for e in approver.service.memory.entries()]
        assert remembered == [("Bash", {"command": "ls -la"})]

    run(scenario())


def test_edited_back_to_the_agents_arguments_is_no_edit(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the armed dialog")
        await edit(dialog, "rm -rf ~/projects")
        assert dialog.review.badge.level == "destructive"
        await edit(dialog, "make")
        assert dialog.review.badge.level == "moderate" and dialog.allow_session.isEnabled()
        assert dialog.review.edited_args() == {}
        dialog.allow_once.click()
        decision = await answer
        assert decision.updated_args is None and decision.risk is not None and decision.risk["level"] == "moderate"

    run(scenario())


def test_an_edit_in_a_batch_goes_to_the_call_it_was_made_on(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        client = AsyncClient(approver.service.options.socket_path, agent="editor-test")
        answer = asyncio.ensure_future(client.request_batch(
            [{"tool": "Bash", "args": {"command": "make"}}, {"tool": "Bash", "args": {"command": "make docs"}}],
            session="s1"))
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the armed dialog")
        dialog.review.edit_button.click()
        dialog.review.calls.setCurrentRow(dialog.review.row_of(1))  # the editor now holds the second call
        await edit(dialog, "rm -rf ~/projects")
        review = dialog.review
        assert review.calls.item(review.row_of(1)).text().startswith("⚠ Destructive")
        assert review.calls.item(review.row_of(0)).text().startswith("▲ Moderate")
        assert not dialog.allow_session.isEnabled()  # a ticked call is now destructive
        assert "incl. ⚠" in dialog.allow_once.toolTip() + dialog.allow_once.text()  # the button names it
        qtbot.keyClick(dialog, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)
        decisions = await answer
        assert [d.decision for d in decisions] == ["deny", "deny"]

    run(scenario())


def test_the_inbox_follows_an_edit_too(approver: Any, run: Any) -> None:
    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: len(inbox._rows) == 1, what="the row")
        inbox.select(approver.decider.tickets()[0])
        assert inbox.allow_session.isEnabled()
        review = inbox.review
        review.edit_button.click()
        review.args_editor.editor.setPlainText(json.dumps({"command": "rm -rf ~/projects"}))
        assert not inbox.allow_once.isEnabled() and inbox.decide_selected("allow_once") == 0  # not read yet
        await wait_for(lambda: review.edits_valid() and inbox.allow_once.isEnabled(), what="the edit read again")
        assert review.badge.level == "destructive" and not inbox.allow_session.isEnabled()
        assert inbox.decide_selected("allow_session") == 0
        assert inbox.decide_selected("allow_once") == 1
        decision = await answer
        assert decision.updated_args == {"command": "rm -rf ~/projects"} and decision.risk["level"] == "destructive"
        assert approver.service.memory.entries() == []

    run(scenario())


def test_closing_the_editor_at_once_keeps_the_edit_and_reads_it(approver: Any, run: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the armed dialog")
        review = dialog.review
        review.edit_button.click()
        review.args_editor.editor.setPlainText(json.dumps({"command": "rm -rf ~/projects"}))
        review.edit_button.click()  # closed before the pause that reads it
        assert review.edits_valid() and review.badge.level == "destructive" and not dialog.allow_session.isEnabled()
        dialog.allow_once.click()
        decision = await answer
        assert decision.updated_args == {"command": "rm -rf ~/projects"}

    run(scenario())


def test_an_edit_open_when_another_request_is_shown_stays_with_its_own_request(approver: Any, run: Any) -> None:
    """Editing one request, the person moves to another (next, a notification's Review): the editor's
    text belonged to the first; it must never become the second's edit (approving that would run
    the first request's edited arguments in the second's place)."""
    dialog = approver.dialog

    async def scenario() -> None:
        first = ask(approver, "make")
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the armed dialog")
        second = ask(approver, "ls")
        await wait_for(lambda: len(approver.decider.tickets()) == 2, what="the second request")
        shown = dialog.ticket
        dialog.review.edit_button.click()
        dialog.review.args_editor.editor.setPlainText(json.dumps({"command": "rm -rf ~/projects"}))
        other = next(t for t in approver.decider.tickets() if t is not shown)
        approver.decider.show(other)
        await wait_for(lambda: dialog.ticket is other, what="the other request in the dialog")
        assert not dialog.review.has_edit() and not dialog.review.edited_args()
        assert dialog.review.badge.level == other.shown_level
        await wait_for(lambda: dialog.allow_once.isEnabled(), what="the armed dialog")
        dialog.allow_once.click()
        answers = {id(task): task for task in (first, second)}
        done, _ = await asyncio.wait(list(answers.values()), return_when=asyncio.FIRST_COMPLETED)
        decision = done.pop().result()
        assert decision.updated_args is None  # the request shown ran as its agent asked
        approver.decider.answer(approver.decider.tickets()[0], [_deny()])
        await asyncio.gather(first, second)

    run(scenario())


def _deny() -> Any:
    from desktop_approver.core.decisions.tickets import Verdict

    return Verdict("deny", "user")
