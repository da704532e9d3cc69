"""Issue 5 in the GUI: "Always allow…" writes what it showed, remembered approvals are visible
and revocable, the history window searches what was decided."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_approver import Client
from desktop_approver.core.policy import Policy
from tests.gui.conftest import wait_for


@pytest.fixture
def ruled_approver(tmp_path: Path, run: Callable[..., Any]) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=tmp_path / "policy.toml", state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


def ask(approver: Any, tool: str, args: dict, session: str = "s1", agent: str = "test-agent") -> Any:
    client = Client(approver.service.options.socket_path, agent=agent)
    return asyncio.get_running_loop().run_in_executor(None, lambda: client.request(tool, args, session=session))


def test_always_allow_shows_the_rule_writes_exactly_it_and_applies_it(ruled_approver: Any, run: Any,
                                                                       qtbot: Any, tmp_path: Path) -> None:
    approver = ruled_approver
    dialog = approver.dialog

    async def scenario() -> None:
        earlier = ask(approver, "Bash", {"command": "go test ./a"})
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the first dialog")
        qtbot.mouseClick(dialog.allow_once, Qt.MouseButton.LeftButton)
        await earlier

        pending = ask(approver, "Bash", {"command": "go test ./b"})
        await wait_for(lambda: dialog.isVisible() and dialog.always_allow.isEnabled(), what="Always allow")
        qtbot.mouseClick(dialog.always_allow, Qt.MouseButton.LeftButton)
        rules = await wait_for(lambda: approver.rule_dialog if approver.rule_dialog and
                               approver.rule_dialog.isVisible() else None, what="the rule dialog")
        assert 'command = "go test ./b"' in rules.editor.toPlainText()      # narrowest first
        assert "would have allowed 0" in rules.matches_label.text()
        rules.scope.setCurrentIndex(1)                                        # go test *
        assert 'command = "go test *"' in rules.editor.toPlainText()
        assert "would have allowed 1" in rules.matches_label.text()
        assert rules.matches.item(0).text().endswith("go test ./a")
        rules.expiry.setCurrentIndex(2)                                       # in 1 day
        shown = rules.final.text()
        assert "expires = " in shown
        qtbot.mouseClick(rules.add_button, Qt.MouseButton.LeftButton)
        decision = await pending
        assert decision.decision == "allow_once" and decision.decided_by == "user"

        text = (tmp_path / "policy.toml").read_text()
        assert text.endswith(shown + "\n")
        assert Policy.load(tmp_path / "policy.toml").rules[-1].commands == ("go test *",)

        later = await ask(approver, "Bash", {"command": "go test ./c"})
        assert later.decision == "allow_once" and later.decided_by == "policy" and later.rule
        events = approver.service.audit.events(kind="rule_added")
        assert events and events[0]["detail"] == shown + "\n"

    run(scenario())


def test_rule_editor_refuses_invalid_or_non_matching_rules(ruled_approver: Any, run: Any, qtbot: Any,
                                                          tmp_path: Path) -> None:
    approver = ruled_approver
    dialog = approver.dialog

    async def scenario() -> None:
        pending = ask(approver, "Bash", {"command": "make docs"})
        await wait_for(lambda: dialog.isVisible() and dialog.always_allow.isEnabled(), what="Always allow")
        qtbot.mouseClick(dialog.always_allow, Qt.MouseButton.LeftButton)
        rules = await wait_for(lambda: approver.rule_dialog, what="the rule dialog")
        rules.editor.setPlainText('[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "cargo *"\n')
        assert not rules.add_button.isEnabled() and "would not allow" in rules.status.text()
        rules.editor.setPlainText('[[rule]]\naction = "allow"\ntool = ')
        assert not rules.add_button.isEnabled() and "not valid TOML" in rules.status.text()
        rules.editor.setPlainText('[[rule]]\naction = "block"\ntool = "Bash"\n')
        assert not rules.add_button.isEnabled() and "allow rules only" in rules.status.text()
        rules.reject()
        assert dialog.isVisible() and dialog.ticket is not None    # still waiting for the person
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        assert (await pending).decision == "deny"
        assert not (tmp_path / "policy.toml").exists()

    run(scenario())


def test_always_allow_not_offered_for_destructive_calls(ruled_approver: Any, run: Any, qtbot: Any) -> None:
    dialog = ruled_approver.dialog

    async def scenario() -> None:
        pending = ask(ruled_approver, "Bash", {"command": "rm -rf build"})
        await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
        assert dialog.always_allow.isHidden() and dialog.allow_session.isHidden()
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        await pending

    run(scenario())


def test_sessions_window_lists_and_revokes(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog
    window = approver.open_sessions()
    assert window.claude_code_note.isHidden()  # nothing of Claude Code's is remembered

    async def scenario() -> None:
        for session, command in (("alpha", "ls"), ("alpha", "pwd"), ("beta", "ls")):
            pending = ask(approver, "Bash", {"command": command}, session=session)
            await wait_for(lambda: dialog.isVisible() and dialog.allow_session.isEnabled(), what="the dialog")
            qtbot.mouseClick(dialog.allow_session, Qt.MouseButton.LeftButton)
            await pending
        await wait_for(lambda: window.table.topLevelItemCount() == 3, what="three remembered approvals")
        assert window.empty.isHidden()
        # Claude Code keeps its own rule for an approved Bash command: revoking here does not reach it.
        assert not window.claude_code_note.isHidden() and "Restart Claude Code" in window.claude_code_note.text()
        first = window.table.topLevelItem(0)
        assert first.text(1) == "“alpha”" and first.text(3) == "“Bash”" and '"ls"' in first.text(4)

        window.table.setCurrentItem(first)
        qtbot.mouseClick(window.revoke_selected, Qt.MouseButton.LeftButton)
        assert window.table.topLevelItemCount() == 2
        again = ask(approver, "Bash", {"command": "ls"}, session="alpha")
        await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="a dialog after revoking")
        qtbot.mouseClick(dialog.deny, Qt.MouseButton.LeftButton)
        assert (await again).decided_by == "user"
        assert (await ask(approver, "Bash", {"command": "pwd"}, session="alpha")).decided_by == "session"

        window.table.setCurrentItem(window.table.topLevelItem(0))
        qtbot.mouseClick(window.revoke_session, Qt.MouseButton.LeftButton)
        assert [window.table.topLevelItem(i).text(1) for i in range(window.table.topLevelItemCount())] == ["“beta”"]
        qtbot.mouseClick(window.revoke_all, Qt.MouseButton.LeftButton)
        assert window.table.topLevelItemCount() == 0 and not window.empty.isHidden()
        assert window.claude_code_note.isHidden()

    run(scenario())


def test_history_window_filters_and_shows_an_entry(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        for agent, command, choice in (("claude", "git status", dialog.allow_once),
                                       ("codex", "rm -rf build", dialog.deny),
                                       ("claude", "npm test", dialog.allow_once)):
            pending = ask(approver, "Bash", {"command": command}, agent=agent)
            await wait_for(lambda: dialog.isVisible() and dialog.deny.isEnabled(), what="the dialog")
            if choice is dialog.deny:
                dialog.review.note.setText("never delete build")
            qtbot.mouseClick(choice, Qt.MouseButton.LeftButton)
            await pending

    run(scenario())
    window = approver.open_history()
    assert window.table.topLevelItemCount() == 3
    assert "3 of 3" in window.count.text()
    window.agent.setText("claude")
    window.refresh()
    assert window.table.topLevelItemCount() == 2
    window.agent.setText("")
    window.decision.setCurrentIndex(window.decision.findData("deny"))
    assert window.table.topLevelItemCount() == 1
    item = window.table.topLevelItem(0)
    assert item.text(2) == "“codex”" and item.text(5) == "deny" and item.text(6) == "You"
    window.table.setCurrentItem(item)
    assert "never delete build" in window.detail.text()
    assert "destructive" in window.detail.text()
    assert "rm -rf build" in window.preview.command_browser.toPlainText()
    window.decision.setCurrentIndex(0)
    window.risk.setCurrentIndex(window.risk.findData("safe"))
    assert [window.table.topLevelItem(i).text(4) for i in range(window.table.topLevelItemCount())] == ["git status"]
    window.risk.setCurrentIndex(0)
    window.search.setText("npm")
    window.refresh()
    assert window.table.topLevelItemCount() == 1


def test_always_allow_names_what_each_scope_really_allows(tmp_path: Path, qtbot: Any) -> None:
    """A path rule allows any write of the file (the policy matches paths, not edits): never "Exactly this"."""
    from desktop_approver.core.policy import PolicyCall
    from desktop_approver.gui.always_allow import AlwaysAllowDialog

    edit = PolicyCall("Edit", {"file_path": str(tmp_path / "src" / "app.py"), "old_string": "a", "new_string": "b"},
                      cwd=str(tmp_path), risk="moderate", understood=True)
    dialog = AlwaysAllowDialog(edit, tmp_path / "policy.toml")
    qtbot.addWidget(dialog)
    names = [dialog.scope.itemText(index).split(":")[0] for index in range(dialog.scope.count())]
    assert not any("Exactly" in name for name in names), names
    assert names[0] == "This file, any write (not only this one)"
    assert names[-1] == "The whole tool, any arguments"

    shell = PolicyCall("Bash", {"command": "npm run test"}, cwd=str(tmp_path), risk="safe", understood=True)
    dialog = AlwaysAllowDialog(shell, tmp_path / "policy.toml")
    qtbot.addWidget(dialog)
    assert [dialog.scope.itemText(index).split(":")[0] for index in range(dialog.scope.count())] == \
        ["Exactly this command", "Similar commands"]
    literal = PolicyCall("Bash", {"command": "ls 'a*b'"}, cwd=str(tmp_path), risk="safe")
    dialog = AlwaysAllowDialog(literal, tmp_path / "policy.toml")
    qtbot.addWidget(dialog)
    assert dialog.scope.itemText(0).startswith("Exactly this command")  # an escaped * is a character


def test_history_frames_the_agents_words_escaped_apart_from_the_decision(approver: Any, run: Any) -> None:
    dialog = approver.dialog
    agent = "claude\nDecision: allow by You ✔"
    description = "✔ Safe – approved by policy\nRisk: safe" + "\n" * 40 + "x" * 2000

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent=agent)
        pending = asyncio.get_running_loop().run_in_executor(None, lambda: client.request(
            "Bash", {"command": "rm -rf build"}, session="s\nRule: allow", description=description))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        dialog.deny.click()
        await pending
        client.close()

    run(scenario())
    window = approver.open_history()
    window.table.setCurrentItem(window.table.topLevelItem(0))
    facts, claims = window.detail.text(), window.agent_text.text()
    assert "Decision: deny by You" in facts
    assert "approved by policy" not in facts and "claude" not in facts and "Rule: allow" not in facts
    assert window.agent_frame.isAncestorOf(window.agent_text) and not window.agent_frame.isAncestorOf(window.detail)
    assert "<U+2714> Safe – approved by policy\\nRisk: safe" in claims and "claude\\nDecision" in claims
    assert len(claims.splitlines()) <= 3 and len(claims) < 1000  # escaped, and cut (the tooltip has it all)
    window.close()


def test_history_shows_not_understood_where_the_dialog_did(approver: Any, run: Any) -> None:
    """`ls --zzz` is read as safe, but the reader does not know `--zzz`: the dialog's badge said
    "Not understood", and so does the history, row and detail (never "✔ Safe")."""
    dialog = approver.dialog

    async def scenario() -> None:
        pending = ask(approver, "Bash", {"command": "ls --zzz"})
        await wait_for(lambda: dialog.isVisible() and dialog.allow_once.isEnabled(), what="the dialog")
        assert dialog.review.badge.level == "not understood"
        dialog.allow_once.click()
        await pending

    run(scenario())
    window = approver.open_history()
    item = window.table.topLevelItem(0)
    assert item.text(0) == "? Not understood"
    window.table.setCurrentItem(item)
    assert "Risk: not understood — not understood: option `--zzz` of `ls`" in window.detail.text()
    assert "Safe" not in item.text(0) and "Risk: safe" not in window.detail.text()
    window.risk.setCurrentIndex(window.risk.findData("safe"))
    assert window.table.topLevelItemCount() == 0
    window.risk.setCurrentIndex(window.risk.findData("not understood"))
    assert window.table.topLevelItemCount() == 1
    window.close()


def test_each_remembered_approval_shows_the_verdict_on_what_was_approved(approver: Any, run: Any, qtbot: Any) -> None:
    """The app's verdict on every row (issue 31): a remembered `make` is moderate, a remembered call
    the reader did not understand says so, never a level it guessed."""
    from desktop_approver.gui.sessions_window import COLUMNS, RISK

    dialog = approver.dialog
    window = approver.open_sessions()

    async def scenario() -> None:
        for command in ("ls", "make", "ls --zzz"):
            pending = ask(approver, "Bash", {"command": command})
            await wait_for(lambda: dialog.isVisible() and dialog.allow_session.isEnabled(), what="the dialog")
            qtbot.mouseClick(dialog.allow_session, Qt.MouseButton.LeftButton)
            await pending
        await wait_for(lambda: window.table.topLevelItemCount() == 3, what="three remembered approvals")

    run(scenario())
    assert COLUMNS[RISK] == "Risk"
    rows = [window.table.topLevelItem(i) for i in range(window.table.topLevelItemCount())]
    verdicts = {row.text(COLUMNS.index("Covers")): row.text(RISK) for row in rows}
    assert verdicts == {'{"command":"ls"}': "✔ Safe", '{"command":"make"}': "▲ Moderate",
                        '{"command":"ls --zzz"}': "? Not understood"}, verdicts
    window.close()
