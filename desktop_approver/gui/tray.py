"""The tray icon: how many requests wait, the waiting list in the queue's order, the mode switch.

Counts are in requests (calls in brackets for batches), as everywhere. The waiting times in the
menu are written when it opens and kept current while it is open. Its icons come from
:mod:`.icons` (the installed package's SVGs, one per state, the count drawn on them);
``set_degraded`` shows that something the person relies on is not working. What the person picks
in the menu leaves as a signal; the app connects them (the tray opens no window itself).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from ..core.decisions import modes
from ..core.decisions.queue import count_text, time_left_text, waited_text
from ..core.decisions.tickets import Ticket
from . import icons
from .badges import risk_text
from .decider import GuiDecider
from .review_text import visible

NOTICE_LIFETIME = 3600.0  # seconds an agent's notice stays in the tray
APPROVE_ALL_CHOICES = (("Approve all for 15 minutes", 15 * 60), ("Approve all for 1 hour", 3600))


class Tray(QSystemTrayIcon):
    """Reads the queue (``decider``) and the mode; the app connects its signals and slots."""

    ticket_chosen = Signal(object)       # a waiting request picked in the menu, or the icon clicked
    inbox_requested = Signal()
    history_requested = Signal()
    sessions_requested = Signal()
    settings_requested = Signal()
    popups_toggled = Signal(bool)        # "Pop up a dialog for each request"
    mode_chosen = Signal(str, object)    # (mode, seconds or None)
    quit_requested = Signal()

    def __init__(self, decider: GuiDecider, mode: modes.ModeState, *, popups: bool = True,
                 icon_style: str = "color", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.notices: dict[str, tuple[str, str, float]] = {}   # agent -> (kind, text, when): the agents' notices
        self.icon_style = icon_style
        self.degraded: str | None = None
        self.decider = decider
        self.mode = mode
        self.popups = popups
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.setContextMenu(self.menu)
        self._waiting_actions: list[tuple[QAction, Ticket]] = []
        self._popups_action: QAction | None = None
        self._clock = QTimer(self)  # keeps the waiting times current while the menu is open
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self.update_times)
        self.menu.aboutToShow.connect(self._menu_opening)
        self.menu.aboutToHide.connect(self._clock.stop)
        self.activated.connect(self._activated)
        self.refresh()

    def __repr__(self) -> str:
        state = getattr(self, "state", None)
        return (f"<Tray state={state.value if state is not None else None!r} waiting={len(self._waiting_actions)} "
                f"notices={len(self.notices)} degraded={self.degraded is not None}>")

    def pending(self) -> list[Ticket]:
        return self.decider.tickets()

    def refresh(self) -> None:
        waiting = self.pending()
        count = len(waiting)  # requests, as everywhere (calls in brackets in the texts)
        destructive = any(t.risk_level == "destructive" for t in waiting)
        mode = self.mode.mode
        self.state = icons.tray_state(mode, count, self.degraded is not None)
        self.setIcon(icons.tray_icon(self.state, count, destructive=destructive, style=self.icon_style))
        mode_note = "" if mode == modes.INTERACTIVE else f" — mode: {mode.replace('_', ' ')}"
        trouble = f"\n{self.degraded}" if self.degraded else ""
        told = "".join(f"\n{line}" for line in self.notice_lines()[:3])
        self.setToolTip(f"desktop-approver — {count_text(waiting)} waiting{mode_note}{trouble}{told}")
        self._rebuild_menu(waiting)

    def set_degraded(self, reason: str | None) -> None:
        """Show (a reason) or clear (None) that the app runs without something it should have."""
        self.degraded = reason
        self.refresh()

    @staticmethod
    def waiting_text(ticket: Ticket) -> str:
        waited = waited_text(time.time() - ticket.created)
        left = time_left_text(ticket.countdown.latest())
        return f"{risk_text(ticket.risk_level)}  {visible(ticket.summary())}  (waiting {waited}, {left} left)"

    def update_times(self) -> None:
        for action, ticket in self._waiting_actions:
            action.setText(self.waiting_text(ticket))

    def _menu_opening(self) -> None:
        self.update_times()
        self._clock.start()

    def show_notice(self, agent: str, kind: str, text: str) -> None:
        """An agent's own word ("codex is waiting for you", "... finished"): the newest one per
        agent, at the top of the menu and in the tooltip, until it is replaced or cleared."""
        self.notices[agent] = (kind, text, time.time())
        self.refresh()

    def clear_notice(self, agent: str) -> None:
        if self.notices.pop(agent, None) is not None:
            self.refresh()

    def notice_lines(self) -> list[str]:
        lines = []
        now = time.time()
        for agent in [a for a, (_k, _t, when) in self.notices.items() if now - when > NOTICE_LIFETIME]:
            del self.notices[agent]  # an hour-old "waiting" says nothing any more
        for _agent, (kind, text, when) in sorted(self.notices.items(), key=lambda item: -item[1][2]):
            mark = "●" if kind == "waiting" else "✔" if kind == "finished" else "•"
            age = now - when
            lines.append(f"{mark} {visible(text)} ({'just now' if age < 60 else waited_text(age) + ' ago'})")
        return lines

    def _rebuild_menu(self, waiting: list[Ticket]) -> None:
        self.menu.clear()
        self._waiting_actions = []
        for line in self.notice_lines()[:5]:
            self.menu.addAction(line).setEnabled(False)
        header = self.menu.addAction(f"{count_text(waiting)} waiting, most urgent first" if waiting
                                     else "Nothing waiting")
        header.setEnabled(False)
        for ticket in waiting[:15]:
            action = self.menu.addAction(self.waiting_text(ticket))
            action.triggered.connect(lambda _checked=False, t=ticket: self.ticket_chosen.emit(t))
            self._waiting_actions.append((action, ticket))
        if len(waiting) > 15:
            self.menu.addAction(f"… and {len(waiting) - 15} more").setEnabled(False)
        self.menu.addSeparator()
        self.menu.addAction("Open inbox…").triggered.connect(self.inbox_requested)
        self.menu.addAction("History…").triggered.connect(self.history_requested)
        self.menu.addAction("Remembered approvals…").triggered.connect(self.sessions_requested)
        self.menu.addAction("Settings and rules…").triggered.connect(self.settings_requested)
        toggle = self.menu.addAction("Pop up a dialog for each request")
        toggle.setCheckable(True)
        toggle.setChecked(self.popups)
        toggle.toggled.connect(self.popups_toggled)
        self._popups_action = toggle
        self._add_mode_menu()
        self.menu.addSeparator()
        self.menu.addAction("Quit desktop-approver").triggered.connect(self.quit_requested)

    def show_popups(self, on: bool) -> None:
        """The person's popups setting, however it was changed (this menu or the settings window)."""
        self.popups = on
        if self._popups_action is not None and self._popups_action.isChecked() != on:
            self._popups_action.blockSignals(True)
            self._popups_action.setChecked(on)
            self._popups_action.blockSignals(False)

    def _add_mode_menu(self) -> None:
        sub = self.menu.addMenu("Mode")
        group = QActionGroup(sub)
        current = self.mode.mode

        def add(label: str, mode: str, seconds: float | None = None) -> None:
            action = QAction(label, sub, checkable=True)
            action.setChecked(current == mode and (mode != modes.APPROVE_ALL or seconds == APPROVE_ALL_CHOICES[0][1]))
            action.triggered.connect(lambda _c=False: self.mode_chosen.emit(mode, seconds))
            group.addAction(action)
            sub.addAction(action)

        add("Interactive (ask me)", modes.INTERACTIVE)
        for label, seconds in APPROVE_ALL_CHOICES:
            add(label + " (not destructive)", modes.APPROVE_ALL, seconds)
        add("Deny everything", modes.DENY_ALL)
        add("Do not disturb (queue silently)", modes.DO_NOT_DISTURB)

    def show_mode(self, mode: str, reason: str | None) -> None:
        """The mode changed (the menu, the CLI, an approve-all period that ended)."""
        self.refresh()
        if reason == "approve-all period ended" and self.isVisible():
            self.showMessage("desktop-approver", "The approve-all period ended; asking you again.")

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            ticket = self.decider.current or self.decider.next_ticket()
            if ticket is not None:
                self.ticket_chosen.emit(ticket)
            else:
                self.inbox_requested.emit()
