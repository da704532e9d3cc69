"""The app's wiring: every choice in the tray, the dialog, the notifications and the settings window
leaves as a signal, and the app's connections do what the person asked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import settings
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import Verdict
from tests.gui.conftest import ask_bash as ask
from tests.gui.conftest import wait_for


@pytest.fixture
def ruled(tmp_path: Path, run: Any) -> Iterator[Any]:
    """The app with a policy file ("Always allow…" is offered)."""
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "s" / "a.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=tmp_path / "policy.toml", state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


def action(menu: Any, text: str) -> Any:
    found = [item for item in menu.actions() if item.text().replace("&", "") == text]  # without the mnemonics
    assert found, f"no {text!r} in {[item.text() for item in menu.actions()]}"
    return found[0]


def test_the_tray_menu_opens_the_windows_and_quits(approver: Any) -> None:
    menu = approver.tray.menu
    action(menu, "Open inbox…").trigger()
    assert approver.inbox.isVisible()
    action(menu, "History…").trigger()
    assert approver.history_window is not None and approver.history_window.isVisible()
    action(menu, "Remembered approvals…").trigger()
    assert approver.sessions_window is not None and approver.sessions_window.isVisible()
    action(menu, "Settings and rules…").trigger()
    assert approver.settings_window is not None and approver.settings_window.isVisible()
    approver.quit_requested = asyncio.Event()
    action(menu, "Quit desktop-approver").trigger()
    assert approver.quit_requested.is_set()


def test_the_mode_menu_sets_the_mode_through_the_app(approver: Any) -> None:
    mode_menu = action(approver.tray.menu, "Mode").menu()
    action(mode_menu, "Deny everything").trigger()
    assert approver.service.mode.mode == modes.DENY_ALL and approver.tray.state.value == "deny-all"
    action(action(approver.tray.menu, "Mode").menu(), "Approve all for 1 hour (not destructive)").trigger()
    assert approver.service.mode.mode == modes.APPROVE_ALL
    assert 3500 < (approver.service.mode.until or 0) - time.time() <= 3600


def test_the_popups_switch_agrees_in_the_tray_and_the_settings_window(approver: Any) -> None:
    action(approver.tray.menu, "Pop up a dialog for each request").trigger()  # on -> off
    assert not approver.popups_enabled() and not approver.decider.show_dialogs
    window = approver.open_settings()
    assert not window.popup.isChecked()
    window.popup.setChecked(True)                  # the settings window turns them on again
    assert approver.popups_enabled() and approver.decider.show_dialogs
    assert action(approver.tray.menu, "Pop up a dialog for each request").isChecked()


def test_settings_chosen_in_the_window_are_saved_and_applied(approver: Any) -> None:
    window = approver.open_settings()
    window.timeout.setValue(42)
    assert window.save_settings()
    assert approver.preferences.timeout == 42 and approver.service.broker.default_timeout == 42
    assert settings.load().timeout == 42


def test_a_tray_entry_and_a_notification_bring_their_request_up(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        first, second = ask(approver, "make one"), ask(approver, "make two")
        await wait_for(lambda: len(approver.decider.tickets()) == 2, what="two tickets")
        shown = approver.dialog.ticket
        other = next(ticket for ticket in approver.decider.tickets() if ticket is not shown)
        entry = next(item for item, ticket in approver.tray._waiting_actions if ticket is other)
        entry.trigger()
        assert approver.dialog.ticket is other
        approver.dialog.navigate.emit(1)
        assert approver.dialog.ticket is shown
        from desktop_approver.gui.notifications import TicketNotifications

        class Notifier:
            on_action = None

        notes = TicketNotifications(approver.decider, approver.service.mode, Notifier())
        notes.review_requested.connect(approver.open_review)
        notes._shown["coder"] = other
        notes._bound[notes.key(other)] = ("coder", other)
        notes._on_action(notes.key(other), "review")
        assert approver.dialog.ticket is other and approver.dialog.isVisible()
        for ticket in approver.decider.tickets():
            approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        await asyncio.gather(first, second, return_exceptions=True)

    run(scenario())


def test_always_allow_in_the_dialog_opens_the_rule_editor(ruled: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask(ruled, "npm run lint")
        await wait_for(lambda: ruled.dialog.ticket is not None and ruled.dialog.always_allow.isEnabled(),
                       what="the dialog armed")
        ruled.dialog.always_allow.click()
        assert ruled.rule_dialog is not None and ruled.rule_dialog.isVisible()
        assert ruled.dialog.ticket.countdown.paused
        ruled.rule_dialog.reject()
        ruled.dialog.deny.click()
        assert (await answer).decision == "deny"

    run(scenario())


def test_the_stateful_objects_say_what_they_hold(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask(approver, "make")
        await wait_for(lambda: approver.dialog.ticket is not None, what="the dialog")
        key = approver.dialog.ticket.key
        assert f"current='{key}'" in repr(approver.decider) and "waiting=1" in repr(approver.decider)
        assert repr(approver.dialog).startswith(f"<ApprovalDialog ticket='{key}'")
        assert "<Tray state='waiting'" in repr(approver.tray)
        assert "mode='interactive'" in repr(approver) and "<GuiDecider" in repr(approver)
        approver.dialog.deny.click()
        assert (await answer).decision == "deny"
        assert "current=None" in repr(approver.decider)

    run(scenario())
