"""Keyboard all the way: Escape closes every secondary window, no Alt+letter is taken twice in any
window (tab by tab, as Qt activates only what is visible), the key legend is readable (WCAG AA)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QPalette
from PySide6.QtWidgets import QAbstractButton, QGroupBox, QLabel, QTabWidget, QWidget

from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.gui import theme
from desktop_approver.gui.contrast import AA_NORMAL_TEXT, contrast_ratio
from tests.gui.conftest import ask_bash, wait_for
from tests.gui.test_rules_file import POLICY


@pytest.fixture
def ruled(tmp_path: Path, run: Any) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    (tmp_path / "policy.toml").write_text(POLICY)
    options = ServiceOptions(socket_path=tmp_path / "s" / "a.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=tmp_path / "policy.toml", state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


def mnemonic(text: str) -> str | None:
    """The Alt+letter a widget's text takes (Qt's own reading of the ``&``), or None."""
    sequence = QKeySequence.mnemonic(text)
    return sequence.toString() if not sequence.isEmpty() else None


def taken_keys(window: QWidget) -> list[tuple[str, str]]:
    """(Alt+letter, whose) for everything that answers a mnemonic in the window as it is shown now."""
    found = []
    for widget in window.findChildren(QWidget):
        if not widget.isVisibleTo(window):  # a disabled one counts: it is enabled again later
            continue
        text = None
        if isinstance(widget, QAbstractButton | QGroupBox):
            text = widget.text() if isinstance(widget, QAbstractButton) else widget.title()
        elif isinstance(widget, QLabel) and widget.buddy() is not None:
            text = widget.text()
        if text and (key := mnemonic(text)):
            found.append((key, text))
    for tabs in window.findChildren(QTabWidget):
        if tabs.isVisibleTo(window):
            for index in range(tabs.count()):
                if (key := mnemonic(tabs.tabText(index))) is not None:
                    found.append((key, f"tab {tabs.tabText(index)}"))
    return found


def assert_unique(window: QWidget, name: str) -> int:
    """Every tab of every tab widget in turn: no Alt+letter twice; returns how many states were walked."""
    states = 0
    tab_widgets = [tabs for tabs in window.findChildren(QTabWidget)] or [None]
    for tabs in tab_widgets:
        for index in range(tabs.count() if tabs is not None else 1):
            if tabs is not None:
                tabs.setCurrentIndex(index)
            taken = taken_keys(window)
            twice = {key: [whose for k, whose in taken if k == key] for key, n in Counter(k for k, _ in taken).items()
                     if n > 1}
            assert not twice, f"{name}: {twice}"
            states += 1
    return states


def test_no_window_takes_an_alt_letter_twice(ruled: Any, run: Any, qtbot: Any) -> None:
    from desktop_approver.core.policy import PolicyCall
    from desktop_approver.gui.always_allow import AlwaysAllowDialog
    from desktop_approver.gui.settings_window import RuleEditor

    async def scenario() -> None:
        answer = ask_bash(ruled, "make build")
        await wait_for(lambda: ruled.dialog.ticket is not None, what="the dialog")
        ruled.open_inbox()
        windows: list[tuple[str, QWidget]] = [
            ("approval dialog", ruled.dialog), ("inbox", ruled.inbox), ("history", ruled.open_history()),
            ("remembered approvals", ruled.open_sessions()), ("settings and rules", ruled.open_settings()),
            ("rule editor", RuleEditor("rule 1", 'action = "ask"\n')),
            ("always allow", AlwaysAllowDialog(PolicyCall("Bash", {"command": "make build"}, risk="safe"),
                                               ruled.service.options.policy_path)),
        ]
        ruled.inbox.select(ruled.decider.tickets()[0])
        walked = {name: assert_unique(window, name) for name, window in windows}
        assert walked["settings and rules"] == 3 and walked["history"] == 2
        windows[4][1].show_tab("rules")
        assert {"Alt+N", "Alt+E", "Alt+R", "Alt+X"} <= {key for key, _ in taken_keys(windows[4][1])}  # it looks
        assert {"Alt+O", "Alt+S", "Alt+D"} <= {key for key, _ in taken_keys(ruled.dialog)}
        for ticket in ruled.decider.tickets():
            ruled.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        await answer

    run(scenario())


def test_escape_closes_every_secondary_window(ruled: Any, qtbot: Any) -> None:
    for window in (ruled.open_history(), ruled.open_sessions(), ruled.open_settings(), ruled.inbox):
        window.show()
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)
        focus = window.focusWidget() or window
        qtbot.keyClick(focus, Qt.Key.Key_Escape)
        assert not window.isVisible(), f"{window.objectName() or window} stayed open"


@pytest.mark.parametrize("chosen", ["light", "dark"])
def test_the_key_legend_meets_wcag_aa_in_both_themes(approver: Any, run: Any, chosen: str) -> None:
    theme.apply(chosen)
    try:
        dialog = approver.dialog
        legend = dialog.legend
        painted_as = QPalette.ColorGroup.Active if legend.isEnabled() else QPalette.ColorGroup.Disabled
        text = legend.palette().color(painted_as, legend.foregroundRole())
        background = dialog.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Window)
        ratio = contrast_ratio(text, background)
        assert ratio >= AA_NORMAL_TEXT, f"{chosen}: {ratio:.2f}:1"
        # Still quieter than the app's own words, so it reads as a hint.
        normal = dialog.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText)
        assert ratio < contrast_ratio(normal, background)
    finally:
        theme.apply("auto")


def test_contrast_ratio_is_wcag_2s() -> None:
    from PySide6.QtGui import QColor

    assert round(contrast_ratio(QColor("black"), QColor("white")), 1) == 21.0
    assert round(contrast_ratio(QColor("#777777"), QColor("white")), 2) == 4.48
    assert contrast_ratio(QColor("#123456"), QColor("#123456")) == 1.0


def test_the_tray_menu_and_its_mode_menu_take_each_letter_once(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask_bash(approver, "make build", agent="r&d")  # an agent's "&" must not become a letter
        await wait_for(lambda: approver.tray._waiting_actions, what="a waiting entry")
        for menu in (approver.tray.menu, approver.tray.mode_menu):
            keys = [key for action in menu.actions() if (key := mnemonic(action.text())) is not None]
            assert len(keys) == len(set(keys)) and len(keys) >= 5, keys
        for ticket in approver.decider.tickets():
            approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        await answer

    run(scenario())
