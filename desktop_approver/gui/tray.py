"""The tray icon: how many requests wait, the waiting list in the queue's order, the mode switch.

Counts are in requests (calls in brackets for batches), as everywhere. The waiting times in the
menu are written when it opens and kept current while it is open. Its icons come from
:mod:`.icons` (the installed package's SVGs, one per state, the count drawn on them);
``set_degraded`` shows that something the person relies on is not working.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from ..core import modes
from ..core.queue import count_text, time_left_text, waited_text
from ..core.tickets import Ticket
from . import icons
from .badges import risk_text
from .decider import GuiDecider
from .review_text import visible

NOTICE_LIFETIME = 3600.0  # seconds an agent's notice stays in the tray
APPROVE_ALL_CHOICES = (("Approve all for 15 minutes", 15 * 60), ("Approve all for 1 hour", 3600))


class Tray(QSystemTrayIcon):
    def __init__(self, decider: GuiDecider, mode: modes.ModeState, *, on_quit: Callable[[], None],
                 on_open_inbox: Callable[[], None] | None = None, popups: Callable[[], bool] | None = None,
                 set_popups: Callable[[bool], None] | None = None,
                 on_open_history: Callable[[], object] | None = None,
                 on_open_sessions: Callable[[], object] | None = None, icon_style: str = "color",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.notices: dict[str, tuple[str, str, float]] = {}   # agent -> (kind, text, when): the agents' notices
        self.icon_style = icon_style
        self.degraded: str | None = None
        self.decider = decider
        self.mode = mode
        self.on_quit = on_quit
        self.on_open_inbox = on_open_inbox
        self.popups = popups
        self.set_popups = set_popups
        self.on_open_history = on_open_history
        self.on_open_sessions = on_open_sessions
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.setContextMenu(self.menu)
        self.on_open_settings: Callable[[], object] | None = None
        self._waiting_actions: list[tuple[QAction, Ticket]] = []
        self._clock = QTimer(self)  # keeps the waiting times current while the menu is open
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self.update_times)
        self.menu.aboutToShow.connect(self._menu_opening)
        self.menu.aboutToHide.connect(self._clock.stop)
        decider.queue_changed.connect(self.refresh)
        mode.listeners.append(self._mode_changed)
        self.activated.connect(self._activated)
        self.refresh()

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
            action.triggered.connect(lambda _checked=False, t=ticket: self.decider.show(t))
            self._waiting_actions.append((action, ticket))
        if len(waiting) > 15:
            self.menu.addAction(f"… and {len(waiting) - 15} more").setEnabled(False)
        self.menu.addSeparator()
        if self.on_open_inbox is not None:
            self.menu.addAction("Open inbox…").triggered.connect(lambda: self.on_open_inbox and self.on_open_inbox())
        if self.on_open_history is not None:
            self.menu.addAction("History…").triggered.connect(lambda: self.on_open_history and self.on_open_history())
        if self.on_open_sessions is not None:
            self.menu.addAction("Remembered approvals…").triggered.connect(
                lambda: self.on_open_sessions and self.on_open_sessions())
        if self.on_open_settings is not None:
            self.menu.addAction("Settings and rules…").triggered.connect(
                lambda: self.on_open_settings and self.on_open_settings())
        if self.popups is not None and self.set_popups is not None:
            toggle = self.menu.addAction("Pop up a dialog for each request")
            toggle.setCheckable(True)
            toggle.setChecked(self.popups())
            toggle.toggled.connect(self.set_popups)
        self._add_mode_menu()
        self.menu.addSeparator()
        self.menu.addAction("Quit desktop-approver").triggered.connect(self.on_quit)

    def _add_mode_menu(self) -> None:
        sub = self.menu.addMenu("Mode")
        group = QActionGroup(sub)
        current = self.mode.mode

        def add(label: str, mode: str, seconds: float | None = None) -> None:
            action = QAction(label, sub, checkable=True)
            action.setChecked(current == mode and (mode != modes.APPROVE_ALL or seconds == APPROVE_ALL_CHOICES[0][1]))
            action.triggered.connect(lambda _c=False: self.mode.set(mode, seconds=seconds, reason="tray menu"))
            group.addAction(action)
            sub.addAction(action)

        add("Interactive (ask me)", modes.INTERACTIVE)
        for label, seconds in APPROVE_ALL_CHOICES:
            add(label + " (not destructive)", modes.APPROVE_ALL, seconds)
        add("Deny everything", modes.DENY_ALL)
        add("Do not disturb (queue silently)", modes.DO_NOT_DISTURB)

    def _mode_changed(self, mode: str, reason: str | None) -> None:
        self.refresh()
        if reason == "approve-all period ended" and self.isVisible():
            self.showMessage("desktop-approver", "The approve-all period ended; asking you again.")

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            ticket = self.decider.current or self.decider.next_ticket()
            if ticket is not None:
                self.decider.show(ticket)
            elif self.on_open_inbox is not None:
                self.on_open_inbox()
