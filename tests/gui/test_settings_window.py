"""Settings and rules from the tray; the statistics tab of the history window."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import settings
from desktop_approver.core.decisions import modes
from tests.gui.conftest import ask_bash as ask
from tests.gui.conftest import wait_for
from tests.gui.test_rules_file import POLICY


@pytest.fixture
def ruled(tmp_path: Path, run: Any) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    options = ServiceOptions(socket_path=tmp_path / "s" / "a.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=policy, state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


def test_the_tray_opens_the_rules_with_times_used(ruled: Any, run: Any) -> None:
    async def scenario() -> None:
        assert (await ask(ruled, "npm test")).decided_by == "policy"
        assert "&Settings and rules…" in [a.text() for a in ruled.tray.menu.actions()]
        window = ruled.open_settings()
        table = window.table
        assert table.topLevelItemCount() == 3
        first = table.topLevelItem(0)
        assert [first.text(c) for c in (0, 1, 2, 3, 6)] == ["1", "✔", "allow", 'tool="Bash" command="npm test*"',
                                                              "1"]
        assert table.topLevelItem(1).text(4) == "git history is not to be deleted by an agent"

    run(scenario())


def test_disable_delete_reorder_and_undo_take_effect_without_a_restart(ruled: Any, run: Any) -> None:
    window = ruled.open_settings()
    path = ruled.service.options.policy_path

    async def scenario() -> None:
        window.select(3)  # deny curl/wget
        assert window.toggle_selected()
        assert "#~ [[rule]]" in path.read_text() and window.table.topLevelItem(2).text(1) == "—"
        ruled.service.policy_watcher.check()
        answer = ask(ruled, "curl https://example.org")
        await wait_for(lambda: ruled.dialog.ticket is not None, what="the disabled rule no longer denies")
        ruled.dialog.deny.click()
        await answer
        window.select(1)
        assert window.move_selected(1) and window.selected_number() == 2
        assert [window.table.topLevelItem(i).text(2) for i in range(3)] == ["block", "allow", "deny"]
        assert window.delete_selected()
        assert "npm test" not in path.read_text()
        window.undo()
        assert "npm test" in path.read_text()
        window.select(1)
        assert not window.edit_selected('action = "permit"\n')  # refused, nothing written
        assert "not changed" in window.status.text()
        assert window.edit_selected('action = "block"\npath = "./.git/**"\noperation = ["delete", "write"]\n')
        assert 'operation = ["delete", "write"]' in path.read_text()
        assert "# Never delete git history." in path.read_text()  # comments stay

    run(scenario())


def test_settings_are_saved_and_applied_live(ruled: Any, run: Any) -> None:
    window = ruled.open_settings()
    window.show_tab("settings")
    window.timeout.setValue(42)
    window.notify.setChecked(False)
    window.quiet.setText("25:00-07:00")
    assert not window.save_settings() and "quiet hours" in window.settings_status.text()
    window.quiet.setText("22:00-07:30")
    assert window.save_settings()
    saved = settings.load()
    assert saved.timeout == 42 and saved.notifications is False and saved.quiet_hours == "22:00-07:30"
    assert ruled.service.broker.default_timeout == 42
    ruled.check_quiet_hours(datetime.time(23, 15))
    assert ruled.service.mode.mode == modes.DO_NOT_DISTURB
    ruled.check_quiet_hours(datetime.time(8, 0))
    assert ruled.service.mode.mode == modes.INTERACTIVE
    window.popup.setChecked(False)
    assert not ruled.popups_enabled()
    assert "version" not in settings.default_path().read_text()  # only the settings live there


def test_the_explain_tab_says_what_the_cli_says(ruled: Any) -> None:
    window = ruled.open_settings()
    window.explain_args.setText('{"command": "npm test && curl x"}')
    text = window.explain()
    assert "deny" in text and "curl" in text
    window.explain_args.setText("[1]")
    assert window.explain().startswith("✖")


def test_settings_file_errors_are_clear(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('# mine\ntheme = "dark"\n')
    assert settings.load(path).theme == "dark"
    settings.save(settings.Settings(theme="light", timeout=60), path)
    assert path.read_text().startswith("# mine") and settings.load(path).timeout == 60
    path.write_text("colour = 1\n")
    with pytest.raises(settings.SettingsError, match="unknown setting colour"):
        settings.load(path)
    path.write_text('theme = "purple"\n')
    with pytest.raises(settings.SettingsError, match="theme"):
        settings.load(path)
    assert settings.Settings(quiet_hours="22:00-07:00").quiet_now(datetime.time(3, 0))
    assert not settings.Settings(quiet_hours="22:00-07:00").quiet_now(datetime.time(12, 0))
    assert settings.Settings(quiet_hours="12:00-13:00").quiet_now(datetime.time(12, 30))


def test_statistics_tab(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        for agent in ("codex", "codex", "claude"):
            answer = ask(approver, "make", agent)
            await wait_for(lambda: approver.dialog.allow_once.isEnabled(), what="the dialog")
            approver.dialog.allow_once.click()
            await answer

    run(scenario())
    history = approver.open_history()
    history.show_statistics()
    stats = history.statistics.stats
    assert stats.requests == 3 and stats.per_agent == [("codex", 2), ("claude", 1)]
    assert stats.decided_by == [("person", 3)] and stats.median_seconds_to_decide is not None
    agents = history.statistics.agents
    assert agents.topLevelItem(0).text(0) == "codex" and agents.topLevelItem(0).text(2) == "█" * 28
    assert "3 calls asked for" in history.statistics.headline.text()
    # The log counts calls (a batch of three is three): no column or title calls them requests.
    from PySide6.QtWidgets import QLabel

    for table in (agents, history.statistics.days):
        assert table.headerItem().text(1) == "Calls"
    titles = [label.text() for label in history.statistics.findChildren(QLabel)]
    assert "<b>Calls per agent</b>" in titles and not any("Requests" in title for title in titles)


def _active_editor(window: Any, qtbot: Any) -> Any:
    """The open rule editor, once it is the active window (as it is on a desktop when it opens)."""
    qtbot.waitUntil(lambda: window.rule_editor is not None)  # a mnemonic clicks its button after a moment
    editor = window.rule_editor
    assert editor.isVisible(), "no rule editor open"
    editor.activateWindow()
    qtbot.waitUntil(editor.isActiveWindow)
    return editor


def test_edit_from_the_button_and_alt_e_opens_the_editor_and_ctrl_s_saves(ruled: Any, qtbot: Any) -> None:
    from PySide6.QtCore import Qt

    window = ruled.open_settings()
    path = ruled.service.options.policy_path
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    window.select(3)
    window.edit_button.click()          # once failed: "not changed: Unexpected character: '\x00'"
    editor = _active_editor(window, qtbot)
    assert "not changed" not in window.status.text()
    assert 'command = ["curl *", "wget *"]' in editor.text()
    editor.editor.setPlainText('action = "deny"\ncommand = ["curl *", "wget *", "nc *"]\n')
    qtbot.keyClick(editor.editor, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert window.rule_editor is None
    assert '"nc *"' in path.read_text() and "rule 3 saved" in window.status.text()

    window.select(1)
    window.activateWindow()  # the window manager's part, when a dialog closes
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window.table, Qt.Key.Key_E, Qt.KeyboardModifier.AltModifier)
    editor = _active_editor(window, qtbot)
    assert 'command = "npm test*"' in editor.text()
    editor.editor.setPlainText('action = "permit"\n')   # invalid: the keys cannot save it
    qtbot.keyClick(editor.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert window.rule_editor is editor and "✖" in editor.status.text()
    qtbot.keyClick(editor.editor, Qt.Key.Key_Escape)
    assert window.rule_editor is None and 'command = "npm test*"' in path.read_text()


def test_a_new_rule_from_the_keyboard_is_added_last_and_in_force(ruled: Any, run: Any, qtbot: Any) -> None:
    from PySide6.QtCore import Qt

    window = ruled.open_settings()
    path = ruled.service.options.policy_path
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window.table, Qt.Key.Key_N, Qt.KeyboardModifier.AltModifier)
    editor = _active_editor(window, qtbot)
    assert editor.windowTitle().endswith("new rule") and editor.editor.hasFocus()
    editor.editor.setPlainText('action = "allow"\ntool = "Bash"\ncommand = "make lint"\n')
    qtbot.keyClick(editor.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert window.table.topLevelItemCount() == 4 and window.selected_number() == 4
    assert path.read_text().endswith('[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "make lint"\n')
    assert "# Never delete git history." in path.read_text()
    ruled.service.policy_watcher.check()

    async def scenario() -> None:
        assert (await ask(ruled, "make lint")).decided_by == "policy"

    run(scenario())


def test_tab_in_the_rule_editor_moves_the_focus_instead_of_typing_a_tab(ruled: Any, qtbot: Any) -> None:
    from PySide6.QtCore import Qt

    window = ruled.open_settings()
    window.select(1)
    window.edit_selected()
    editor = _active_editor(window, qtbot)
    before = editor.text()
    qtbot.keyClick(editor.editor, Qt.Key.Key_Tab)
    assert editor.text() == before and "\t" not in editor.text()
    assert not editor.editor.hasFocus()


def test_settings_show_the_theme_in_force_from_the_command_line(tmp_path: Path, run: Any) -> None:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui import theme
    from desktop_approver.gui.app import DesktopApprover

    theme.apply("light")  # as run_app does for `--theme light`; the settings file says "auto"
    options = ServiceOptions(socket_path=tmp_path / "s" / "a.sock", audit_path=tmp_path / "audit.sqlite3",
                             state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0, theme_from_cli="light")
    run(app.start())
    try:
        window = app.open_settings()
        assert window.theme.currentData() == "light"
        assert "--theme" in window.theme_note.text() and "saved: auto" in window.theme_note.text()
        window.timeout.setValue(99)
        assert window.save_settings()
        assert settings.load().theme == "auto" and theme.choice() == "light"  # --theme stays, and is not saved
        window.theme.setCurrentIndex(window.theme.findData("dark"))  # the person's pick wins, and is saved
        assert settings.load().theme == "dark" and theme.choice() == "dark" and window.theme_note.text() == ""
    finally:
        run(app.close())
        theme.apply("auto")


def test_the_relay_is_a_setting_for_the_next_start(tmp_path: Path) -> None:
    """Issue 24: the relay's address and credentials are saved like any setting, checked first."""
    from desktop_approver.client import settings

    path = tmp_path / "settings.toml"
    settings.save(settings.Settings(relay="nats://relay.example:4222", relay_creds="/home/me/desk.creds"), path)
    assert settings.load(path).relay == "nats://relay.example:4222"
    assert settings.load(path).relay_creds == "/home/me/desk.creds"
    for wrong in (settings.Settings(relay="http://relay.example"), settings.Settings(relay_creds="/x.creds")):
        with pytest.raises(settings.SettingsError, match="relay"):
            wrong.validated()


def test_the_settings_window_saves_the_relay(tmp_path: Path, run: Any) -> None:
    from desktop_approver.client import settings
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "s" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=None)
    app = DesktopApprover(options, arming_delay_ms=0)

    async def scenario() -> None:
        await app.start()
        window = app.open_settings()
        window.relay.setText("nats://relay.example:4222")
        window.relay_creds.setText(str(tmp_path / "desk.creds"))
        assert window.save_settings()
        assert settings.load().relay == "nats://relay.example:4222"
        window.relay.setText("ftp://nope")
        assert not window.save_settings() and "relay" in window.settings_status.text()
        window.close()

    try:
        run(scenario())
    finally:
        run(app.close())
