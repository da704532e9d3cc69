"""Desktop-wide keys through the XDG GlobalShortcuts portal: bound where a portal offers it, a key
raises what it is for; without a portal (most X11 desktops) nothing breaks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.gui.global_shortcuts import SHORTCUTS, GlobalShortcuts
from tests.gui.conftest import ask_bash, wait_for
from tests.support.dbus import PrivateBus


@pytest.fixture
def keyed(tmp_path: Path, run: Any, private_bus: PrivateBus) -> Iterator[Any]:
    """The app as run_app makes it on Linux: looking for the portal on the (private) session bus."""
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "s" / "a.sock", audit_path=tmp_path / "audit.sqlite3",
                             state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0, global_shortcuts=True)
    yield app
    run(app.close())


def test_without_a_portal_nothing_breaks(keyed: Any, run: Any) -> None:
    async def scenario() -> None:
        await keyed.start()
        assert await wait_for(lambda: keyed._shortcuts_starting.done(), what="the portal looked for")
        assert keyed._shortcuts_starting.result() is False and keyed.shortcuts.session_handle is None
        answer = ask_bash(keyed, "make")  # the app works as ever
        await wait_for(lambda: keyed.dialog.ticket is not None, what="the dialog")
        keyed.dialog.deny.click()
        assert (await answer).decision == "deny"

    run(scenario())


def test_without_a_session_bus_nothing_breaks(run: Any, monkeypatch: pytest.MonkeyPatch, qloop: Any) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/nonexistent")
    pressed: list[str] = []
    shortcuts = GlobalShortcuts(pressed.append, timeout=2.0)
    assert run(shortcuts.start()) is False
    run(shortcuts.close())


def test_a_portal_binds_the_keys_and_each_raises_its_window(keyed: Any, run: Any, private_bus: PrivateBus) -> None:
    from tests.support.portal import FakePortal

    portal = FakePortal(private_bus.address)

    async def scenario() -> None:
        await portal.start()
        try:
            await keyed.start()
            assert await wait_for(lambda: keyed._shortcuts_starting.done(), what="the shortcuts bound")
            assert keyed._shortcuts_starting.result() is True
            assert keyed.shortcuts.bound == [ident for ident, _d, _t in SHORTCUTS] == ["request", "inbox", "history"]
            await portal.press("history")
            await wait_for(lambda: keyed.history_window is not None and keyed.history_window.isVisible(),
                           what="the history raised by its key")
            answer = ask_bash(keyed, "git push --force origin main")
            await wait_for(lambda: keyed.dialog.ticket is not None, what="the dialog")
            keyed.dialog.hide()
            await portal.press("request")
            await wait_for(keyed.dialog.isVisible, what="the waiting request raised by its key")
            assert not answer.done()  # a key shows, it never decides
            keyed.dialog.deny.click()
            await answer
            session = keyed.shortcuts.session_handle
            await keyed.shortcuts.close()  # as the app's close does: the portal's session ends with it
            assert portal.closed == [session] and keyed.shortcuts.session_handle is None
        finally:
            await portal.stop()

    run(scenario())
