"""The tray icon: how many requests wait, the waiting list in the queue's order, the mode switch.

Counts are in requests (calls in brackets for batches), as everywhere. The waiting list follows
the queue's one urgency order (:mod:`desktop_approver.core.decisions.queue`: destructive first),
and each entry names what the call does (its command or path, elided in the middle so both ends
show), not only the tool. The waiting times in the menu, and approve-all's time left, are written
when it opens and kept current while it is open. Its icons come from :mod:`.icons` (the installed
package's SVGs, one per state, the count drawn on them); ``set_degraded`` shows that something the
person relies on is not working, ``set_missed`` what happened while they were not asked. What the
person picks in the menu leaves as a signal; the app connects them (the tray opens no window itself).

The menu's fixed part (windows, the popups switch, the mode submenu, quit) is built once; only its
top part (notices, the waiting list) is replaced as the queue changes, each replaced action
deleted: rebuilding everything left a submenu behind per request (issue 20, item 12).
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QSystemTrayIcon, QWidget

from ..core.calls.reading import read_call, summary_of
from ..core.decisions import modes
from ..core.decisions.queue import count_text, riskiest_first, time_left_text, waited_text
from ..core.decisions.tickets import CallInfo, Ticket
from ..render.claims import claimed
from . import icons
from .decider import GuiDecider
from .review_text import visible

NOTICE_LIFETIME = 3600.0  # seconds an agent's notice stays in the tray
APPROVE_ALL_CHOICES = (("Approve all for &15 minutes", 15 * 60), ("Approve all for 1 &hour", 3600))
MENU_ENTRIES = 15         # waiting requests listed in the menu; the rest are counted
AGENT_CHARS = 24          # an agent's name in a menu entry, elided beyond this
NOTICE_CHARS = 80         # an agent's notice in the menu (the tooltip has more)
WHAT_CHARS = 64           # a command or path in a menu entry, elided in the middle beyond this
MODE_TIP_SECONDS = 10_000  # how often the tooltip's approve-all time left is rewritten (ms)


def elide_middle(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with "…" in the middle, so its start and its end both show
    (the end of ``git push origin main --force`` matters as much as its start)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 3 // 5
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def menu_safe(text: str) -> str:
    """Text for a menu entry: an agent's ``&`` is a character, not a keyboard shortcut."""
    return text.replace("&", "&&")


def call_text(call: CallInfo) -> str:
    """What one call does, in a line: its command, else its tool and the path, URL or query it touches."""
    what = visible(summary_of(call.args, call.tool))
    return what if read_call(call.tool, call.args).commands else f"{claimed(call.tool, AGENT_CHARS)} {what}"


def ticket_text(ticket: Ticket) -> str:
    """"“ops”: git push --force origin main", "“codex”: batch of 3, rm -rf build": the agent (its
    claim, quoted) and the riskiest call's command or path, elided in the middle."""
    agent = claimed(ticket.identity.label, AGENT_CHARS)
    if len(ticket.calls) == 1:
        what = elide_middle(call_text(ticket.calls[0]), WHAT_CHARS)
    else:
        worst = riskiest_first(ticket.calls)[0]
        what = f"batch of {len(ticket.calls)}, " + elide_middle(call_text(worst), WHAT_CHARS - 12)
    return f"{agent}: {what}"


class Tray(QSystemTrayIcon):
    """Reads the queue (``decider``) and the mode; the app connects its signals and slots."""

    ticket_chosen = Signal(object)       # a waiting request picked in the menu, or the icon clicked
    inbox_requested = Signal()
    history_requested = Signal()
    sessions_requested = Signal()
    settings_requested = Signal()
    popups_toggled = Signal(bool)        # "Pop up a dialog for each request"
    mode_chosen = Signal(str, object)    # (mode, seconds or None)
    missed_seen = Signal()               # the person opened what happened while they were not asked
    quit_requested = Signal()

    def __init__(self, decider: GuiDecider, mode: modes.ModeState, *, popups: bool = True,
                 icon_style: str = "color", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.notices: dict[str, tuple[str, str, float]] = {}   # agent -> (kind, text, when): the agents' notices
        self.icon_style = icon_style
        self.degraded: str | None = None
        self.missed: str | None = None
        """What happened while the person was not asked (do-not-disturb), until they look."""
        self.decider = decider
        self.mode = mode
        self.popups = popups
        self.menu = QMenu()
        self.menu.setObjectName("trayMenu")
        self.setContextMenu(self.menu)
        self._waiting_actions: list[tuple[QAction, Ticket]] = []
        self._top_actions: list[QAction] = []    # the part replaced as the queue changes
        self._texts: dict[str, str] = {}         # ticket key -> its entry's text (reading a call is not free)
        self._mode_action: QAction | None = None
        self._build_fixed_part()
        self._clock = QTimer(self)  # keeps the waiting times current while the menu is open
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self.update_times)
        self._mode_clock = QTimer(self)  # approve-all's time left in the tooltip, while it lasts
        self._mode_clock.setInterval(MODE_TIP_SECONDS)
        self._mode_clock.timeout.connect(self._approve_all_tick)
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
        self._update_tooltip(waiting)
        self._rebuild_menu(waiting)
        self._show_mode_choice(mode)
        if mode == modes.APPROVE_ALL:
            self._mode_clock.start()
        else:
            self._mode_clock.stop()

    def _update_tooltip(self, waiting: list[Ticket]) -> None:
        mode = self.mode.mode
        if mode == modes.APPROVE_ALL:
            mode_note = f" — {self.approve_all_text()}"
        else:
            mode_note = "" if mode == modes.INTERACTIVE else f" — mode: {mode.replace('_', ' ')}"
        trouble = f"\n{self.degraded}" if self.degraded else ""
        missed = f"\n{self.missed}" if self.missed else ""
        told = "".join(f"\n{line}" for line in self.notice_lines()[:3])
        self.setToolTip(f"desktop-approver — {count_text(waiting)} waiting{mode_note}{trouble}{missed}{told}")

    def approve_all_left(self) -> float | None:
        """Seconds of approve-all left, or None when the mode is another."""
        return self.mode.left

    def approve_all_text(self) -> str:
        left = self.approve_all_left()
        return "" if left is None else f"approving all but destructive calls, {time_left_text(left)} left"

    def stop(self) -> None:
        """The app is closing: its clocks stop (a tick after the service closed would write to a closed log)."""
        self._clock.stop()
        self._mode_clock.stop()
        self.hide()

    def _approve_all_tick(self) -> None:
        if self.mode.mode != modes.APPROVE_ALL:  # reading the mode ends a period that is over (and says so)
            return
        self._update_tooltip(self.pending())
        self.update_times()

    def set_degraded(self, reason: str | None) -> None:
        """Show (a reason) or clear (None) that the app runs without something it should have."""
        self.degraded = reason
        self.refresh()

    def set_missed(self, text: str | None) -> None:
        """Show (until the person opens the history from it) or clear what happened while they were not asked."""
        self.missed = text
        self.refresh()

    def waiting_text(self, ticket: Ticket) -> str:
        text = self._texts.get(ticket.key)
        if text is None:
            text = self._texts[ticket.key] = menu_safe(ticket_text(ticket))
        waited = waited_text(time.time() - ticket.created)
        left = time_left_text(ticket.countdown.latest())
        from .badges import risk_text  # with the first waiting request: badges bring QLabel (idle memory)

        return f"{risk_text(ticket.shown_level)}  {text}  (waiting {waited}, {left} left)"

    def update_times(self) -> None:
        for action, ticket in self._waiting_actions:
            action.setText(self.waiting_text(ticket))
        if self._mode_action is not None and self.approve_all_left() is not None:
            self._mode_action.setText(self.approve_all_text().capitalize())

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
        for agent, (kind, text, when) in sorted(self.notices.items(), key=lambda item: -item[1][2]):
            # The agent's word, quoted after its name (render/claims.py); the marks are not the verdict's.
            mark = "●" if kind == "waiting" else "■" if kind == "finished" else "•"
            age = now - when
            lines.append(f"{mark} {claimed(agent, AGENT_CHARS)}: {claimed(text, NOTICE_CHARS)} "
                         f"({'just now' if age < 60 else waited_text(age) + ' ago'})")
        return lines

    # -- the menu -----------------------------------------------------------------------------

    def _build_fixed_part(self) -> None:
        """What the menu always has, built once: the list goes above ``self._fixed_start``."""
        self._fixed_start = self.menu.addSeparator()
        self.menu.addAction("Open &inbox…").triggered.connect(self.inbox_requested)
        self.menu.addAction("&History…").triggered.connect(self.history_requested)
        self.menu.addAction("&Remembered approvals…").triggered.connect(self.sessions_requested)
        self.menu.addAction("&Settings and rules…").triggered.connect(self.settings_requested)
        toggle = self.menu.addAction("&Pop up a dialog for each request")
        toggle.setCheckable(True)
        toggle.setChecked(self.popups)
        toggle.toggled.connect(self.popups_toggled)
        self._popups_action = toggle
        self.mode_menu = self._build_mode_menu()
        self.menu.addSeparator()
        self.menu.addAction("&Quit desktop-approver").triggered.connect(self.quit_requested)

    def _top_action(self, text: str, enabled: bool = False) -> QAction:
        action = QAction(text, self.menu)
        action.setEnabled(enabled)
        self.menu.insertAction(self._fixed_start, action)
        self._top_actions.append(action)
        return action

    def _rebuild_menu(self, waiting: list[Ticket]) -> None:
        for action in self._top_actions:
            self.menu.removeAction(action)
            action.deleteLater()  # not at once: this may run inside one of them being triggered
        self._top_actions = []
        self._waiting_actions = []
        self._mode_action = None
        keys = {ticket.key for ticket in waiting}
        self._texts = {key: text for key, text in self._texts.items() if key in keys}
        if self.approve_all_left() is not None:
            self._mode_action = self._top_action(self.approve_all_text().capitalize())
        if self.missed:
            seen = self._top_action(menu_safe(self.missed) + " — show the history…", enabled=True)
            seen.triggered.connect(self._missed_opened)
        for line in self.notice_lines()[:5]:
            self._top_action(menu_safe(line))
        self._top_action(f"{count_text(waiting)} waiting, most urgent first" if waiting else "Nothing waiting")
        for ticket in waiting[:MENU_ENTRIES]:
            action = self._top_action(self.waiting_text(ticket), enabled=True)
            action.setToolTip(menu_safe(f"{claimed(ticket.identity.label, 200)} (as claimed): "
                                        + "; ".join(call_text(call) for call in ticket.calls[:5])))
            action.triggered.connect(lambda _checked=False, t=ticket: self.ticket_chosen.emit(t))
            self._waiting_actions.append((action, ticket))
        if len(waiting) > MENU_ENTRIES:
            self._top_action(f"… and {len(waiting) - MENU_ENTRIES} more")

    def _missed_opened(self) -> None:
        self.set_missed(None)
        self.missed_seen.emit()
        self.history_requested.emit()

    def show_popups(self, on: bool) -> None:
        """The person's popups setting, however it was changed (this menu or the settings window)."""
        self.popups = on
        if self._popups_action.isChecked() != on:
            self._popups_action.blockSignals(True)
            self._popups_action.setChecked(on)
            self._popups_action.blockSignals(False)

    def _build_mode_menu(self) -> QMenu:
        sub = self.menu.addMenu("&Mode")
        group = QActionGroup(sub)
        self._mode_actions: list[tuple[QAction, str, float | None]] = []

        def add(label: str, mode: str, seconds: float | None = None) -> None:
            action = QAction(label, sub, checkable=True)
            action.triggered.connect(lambda _c=False: self.mode_chosen.emit(mode, seconds))
            group.addAction(action)
            sub.addAction(action)
            self._mode_actions.append((action, mode, seconds))

        add("&Interactive (ask me)", modes.INTERACTIVE)
        for label, seconds in APPROVE_ALL_CHOICES:
            add(label + " (not destructive)", modes.APPROVE_ALL, seconds)
        add("&Deny everything", modes.DENY_ALL)
        add("Do &not disturb (queue silently)", modes.DO_NOT_DISTURB)
        return sub

    def _show_mode_choice(self, current: str) -> None:
        for action, mode, seconds in self._mode_actions:
            action.setChecked(current == mode and (mode != modes.APPROVE_ALL or seconds == APPROVE_ALL_CHOICES[0][1]))

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
