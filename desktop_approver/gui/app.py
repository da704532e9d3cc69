"""The tray app: the Qt-free service, run on Qt's event loop through qasync, plus its windows."""

from __future__ import annotations

import asyncio
import datetime
import importlib.util
import logging
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QMessageLogContext, QObject, QSettings, QTimer, QtMsgType, Signal, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from .. import logs
from ..client import paths
from ..client import settings as app_settings
from ..client.paths import InsecureDirectory
from ..client.vocabulary import Mode
from ..core.decisions import modes
from ..core.decisions.queue import ArrivalNumbers, count_text
from ..core.decisions.tickets import Ticket
from ..core.service import ApproverService, ServiceOptions
from ..core.transport.activation import ActivationError
from ..core.transport.server import AlreadyRunning
from . import theme
from .decider import GuiDecider
from .icons import app_icon
from .notifications import TicketNotifications
from .review_text import summarise_args, visible
from .service_events import ServiceEvents
from .tray import Tray

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from .always_allow import AlwaysAllowDialog
    from .dialog import ApprovalDialog
    from .global_shortcuts import GlobalShortcuts
    from .history_window import HistoryWindow
    from .inbox import InboxWindow
    from .sessions_window import SessionsWindow
    from .settings_window import SettingsWindow

log = logging.getLogger(__name__)


class DesktopApprover(QObject):
    """Wires the service's decider to the dialog, the inbox, the tray and the notifications; owns their lifetimes.

    Every link between them is a signal connected in :meth:`__init__` (the dialog's and the
    inbox's where they are built). What an idle app does not show is imported and built when
    first needed, to keep its memory small: the dialog with the first request it shows, the inbox
    when opened, the secondary windows (history, remembered approvals, settings and rules, the
    rule editor) when the person first opens them.
    """

    popups_changed = Signal(bool)
    """Whether a request pops up the dialog (the tray menu and the settings window show it)."""

    def __init__(self, options: ServiceOptions, *, arming_delay_ms: int | None = None,
                 notifier: Any = None, tray_icons: str = "color", timeout_from_cli: bool = False,
                 theme_from_cli: str | None = None, global_shortcuts: bool = False) -> None:
        super().__init__()
        # The person's GUI choices, beside the policy file (read from the environment each time,
        # unlike QSettings' own per-process cache of the config location).
        self.settings = QSettings(str(paths.default_settings_path()), QSettings.Format.IniFormat)
        self._popups = bool(self.settings.value("popups", True, type=bool))
        self.timeout_from_cli = timeout_from_cli
        self.theme_from_cli = theme_from_cli
        self.missed: list[Ticket] = []
        """Requests that timed out while do-not-disturb held them: told to the person when they return."""
        self.quit_question: QMessageBox | None = None
        self.shortcuts: GlobalShortcuts | None = None
        """Desktop-wide keys through the XDG portal, where the desktop offers it (``start`` finds out)."""
        self._want_shortcuts = global_shortcuts
        self._shortcuts_starting: asyncio.Task[bool] | None = None
        self._quiet_by_us = False  # do-not-disturb switched on by the quiet hours, not by the person
        self._was_quiet = False    # do-not-disturb was on at the last mode change
        self.troubles: dict[str, str] = {}
        """What the app runs without (notifications, the audit log), shown by the tray as degraded."""
        self.quit_requested: asyncio.Event | None = None
        self.rule_dialog: AlwaysAllowDialog | None = None
        self.history_window: HistoryWindow | None = None
        self.sessions_window: SessionsWindow | None = None
        self.settings_window: SettingsWindow | None = None
        self._arming_delay_ms = arming_delay_ms
        self._dialog: ApprovalDialog | None = None
        self._inbox: InboxWindow | None = None

        self.decider = GuiDecider(self)
        self.arrival_numbers = ArrivalNumbers()  # "Request 2" stays 2 while it waits
        self.service = ApproverService(options, self.decider)
        self.events = ServiceEvents(self.service, self)
        self.tray = Tray(self.decider, self.service.mode, popups=self._popups, icon_style=tray_icons)
        self.notifications = (TicketNotifications(self.decider, self.service.mode, notifier, self)
                              if notifier is not None else None)
        if self.notifications is not None:  # the counts are on screen there: a new count pops nothing up
            self.notifications.counts_in_view = self._counts_in_view
            self.notifications.edit_pending = self._edit_pending
        self._quiet_clock = QTimer(self)  # quiet hours: checked twice a minute
        self._quiet_clock.setInterval(30_000)

        self.decider.present.connect(self._present)
        self.decider.queue_changed.connect(self._queue_changed)
        self.decider.queue_changed.connect(self.tray.refresh)
        self.tray.ticket_chosen.connect(self.review_chosen)
        self.tray.inbox_requested.connect(self.open_inbox)
        self.tray.history_requested.connect(self.open_history)
        self.tray.sessions_requested.connect(self.open_sessions)
        self.tray.settings_requested.connect(self.open_settings)
        self.tray.popups_toggled.connect(self.set_popups)
        self.tray.mode_chosen.connect(self.choose_mode)
        self.tray.quit_requested.connect(self.ask_to_quit)
        self.tray.missed_seen.connect(self._show_missed)
        self.decider.ticket_removed.connect(self._ticket_left)
        self.popups_changed.connect(self.tray.show_popups)
        self.events.mode_changed.connect(self.tray.show_mode)
        self.events.mode_changed.connect(self._mode_changed)
        self.events.trouble.connect(self.set_trouble)
        self.events.socket_health.connect(self._socket_health)
        self.events.agent_notice.connect(self.tray.show_notice)
        self.events.show_requested.connect(self.show_for_key)
        if self.notifications is not None:
            self.decider.queue_changed.connect(self.notifications.refresh)
            self.events.mode_changed.connect(self.notifications.show_mode)
            self.events.agent_notice.connect(self.notifications.announce)
            self.notifications.review_requested.connect(self.open_review)
            self.notifications.inbox_requested.connect(self.open_inbox)
            self.notifications.health_changed.connect(self._notifications_health)
        self._quiet_clock.timeout.connect(self.check_quiet_hours)

        self._mode_changed(self.service.mode.mode, None)
        for what, problem in self.service.problems.items():  # known before the GUI listened (none yet, today)
            self.set_trouble(what, problem)
        self.tray.refresh()
        try:
            self.preferences = app_settings.load()
        except app_settings.SettingsError as error:
            log.warning("%s; using the default settings", error)
            self.preferences = app_settings.Settings()
        if self.theme_from_cli is None and theme.choice() != self.preferences.theme:
            self.theme_from_cli = theme.choice()  # applied before us (run_app's --theme): the one in force
        self.apply_settings(self.preferences, save=False)
        self._quiet_clock.start()

    @property
    def dialog(self) -> ApprovalDialog:
        """The approval dialog, built (and connected) the first time a request is shown."""
        if self._dialog is None:
            from .dialog import ARMING_DELAY_MS, ApprovalDialog

            delay = ARMING_DELAY_MS if self._arming_delay_ms is None else self._arming_delay_ms
            self._dialog = ApprovalDialog(arming_delay_ms=delay, settings=self.settings,
                                          offer_always_allow=self.service.options.policy_path is not None)
            self._dialog.decided.connect(self.decider.answer)
            self._dialog.navigate.connect(self._navigate)
            self._dialog.show_ticket.connect(self._show_key)
            self._dialog.always_allow_requested.connect(self.always_allow)
            mode = self.service.mode
            self._dialog.approve_all_left = lambda: mode.left
        return self._dialog

    @property
    def inbox(self) -> InboxWindow:
        """The inbox, built the first time it is opened (it reads the queue as it is then)."""
        if self._inbox is None:
            from .inbox import InboxWindow

            self._inbox = InboxWindow(self.decider)
        return self._inbox

    def _counts_in_view(self) -> bool:
        """Whether the inbox or the dialog is on screen (never builds either: they load when first needed)."""
        return any(window is not None and window.isVisible() for window in (self._inbox, self._dialog))

    def _reviews_of(self, ticket: Ticket) -> list[ApprovalDialog | InboxWindow]:
        """The windows (dialog, inbox) whose review shows ``ticket`` now; never builds either."""
        return [window for window in (self._dialog, self._inbox)
                if window is not None and window.review.ticket is ticket]

    def _edit_pending(self, ticket: Ticket) -> bool:
        """Whether the person is editing (or has edited) ``ticket``'s arguments in a review."""
        return any(window.review.has_edit() for window in self._reviews_of(ticket))

    def _shown_ticket(self) -> Ticket | None:
        """The ticket in the dialog, if a dialog was ever built."""
        return self._dialog.ticket if self._dialog is not None else None

    def __repr__(self) -> str:
        return (f"<DesktopApprover mode={self.service.mode.mode!r} popups={self._popups} "
                f"troubles={sorted(self.troubles)} {self.decider!r}>")

    async def start(self) -> None:
        self.quit_requested = asyncio.Event()
        await self.service.start()
        self.tray.show()
        if self._want_shortcuts:
            from .global_shortcuts import GlobalShortcuts

            self.shortcuts = GlobalShortcuts(self.show_for_key)
            # In the background: a slow portal must not hold up the socket or the tray.
            self._shortcuts_starting = asyncio.ensure_future(self.shortcuts.start())
        if self.notifications is not None:
            await self.notifications.start()  # what is missing arrives as health_changed, now and later

    async def close(self) -> None:
        if self.notifications is not None:
            await self.notifications.close()
        if self.shortcuts is not None:
            if self._shortcuts_starting is not None and not self._shortcuts_starting.done():
                self._shortcuts_starting.cancel()
                await asyncio.gather(self._shortcuts_starting, return_exceptions=True)
            await self.shortcuts.close()
        self.tray.stop()
        if self.quit_question is not None:  # quitting by a signal while the question is open
            self.quit_question.hide()
            self.quit_question.deleteLater()
            self.quit_question = None
        if self._dialog is not None:
            self._dialog.clear()
        self._quiet_clock.stop()
        self.decider.stop()
        for window in (self.history_window, self.sessions_window, self.rule_dialog, self.settings_window):
            if window is not None:  # hide, not close: closing the last window would quit Qt's loop
                window.hide()
                window.deleteLater()
        self.history_window = self.sessions_window = self.rule_dialog = self.settings_window = None
        await self.service.close()

    def apply_settings(self, chosen: app_settings.Settings, save: bool = True) -> None:
        """Use the person's settings now (and keep them in the settings file)."""
        if save:
            app_settings.save(chosen)
        self.preferences = chosen
        if not self.timeout_from_cli:
            self.service.broker.default_timeout = chosen.timeout
        if self.notifications is not None:
            self.notifications.set_enabled(chosen.notifications)
        if save and self.theme_from_cli is None and chosen.theme != theme.choice():
            theme.apply(chosen.theme)
        self.check_quiet_hours()

    def pick_theme(self, name: str) -> None:
        """The person picked a theme in the settings window: in force now, over ``--theme``."""
        self.theme_from_cli = None
        if name != theme.choice():
            theme.apply(name)

    def check_quiet_hours(self, now: datetime.time | None = None) -> None:
        """Do not disturb during the quiet hours; back to asking after them (unless the person chose a mode)."""
        quiet = self.preferences.quiet_now(now or datetime.datetime.now().time())
        mode = self.service.mode
        if quiet and mode.mode == modes.INTERACTIVE:
            mode.set(modes.DO_NOT_DISTURB, reason="quiet hours")
            self._quiet_by_us = True
        elif not quiet and self._quiet_by_us:
            self._quiet_by_us = False
            if mode.mode == modes.DO_NOT_DISTURB:
                mode.set(modes.INTERACTIVE, reason="quiet hours ended")

    def open_settings(self) -> SettingsWindow:
        if self.settings_window is None:
            from .settings_window import SettingsWindow

            self.settings_window = SettingsWindow(self.service.options.policy_path, self.service.audit.path,
                                                  self.preferences, self._popups, theme_from_cli=self.theme_from_cli)
            self.settings_window.settings_chosen.connect(self.apply_settings)
            self.settings_window.popups_toggled.connect(self.set_popups)
            self.settings_window.theme_picked.connect(self.pick_theme)
            self.popups_changed.connect(self.settings_window.show_popups)
        self.settings_window.show_settings(self.preferences)
        self.settings_window.refresh_rules()
        self.settings_window.show()
        self.settings_window.raise_()
        return self.settings_window

    def open_inbox(self, ticket: Ticket | None = None) -> None:
        self.inbox.show()
        self.inbox.raise_()
        if ticket is not None:
            self.inbox.select(ticket)

    def open_history(self) -> HistoryWindow:
        if self.history_window is None:
            from .history_window import HistoryWindow

            self.history_window = HistoryWindow(self.service.audit)
        self.history_window.show()
        self.history_window.raise_()
        return self.history_window

    def open_sessions(self) -> SessionsWindow:
        if self.sessions_window is None:
            from .sessions_window import SessionsWindow

            self.sessions_window = SessionsWindow(self.service.memory)
        self.sessions_window.show()
        self.sessions_window.raise_()
        return self.sessions_window

    def always_allow(self, ticket: Ticket) -> None:
        """Open the rule editor for this call; adding the rule allows the call (see ApprovalDialog.rule_added)."""
        from ..core.calls.risk import assess
        from ..core.policy import PolicyCall
        from .always_allow import AlwaysAllowDialog

        policy_path = self.service.options.policy_path
        if policy_path is None or len(ticket.calls) != 1:
            return
        call = ticket.calls[0]
        who = ticket.identity
        current = PolicyCall(call.tool, call.args, agent=who.agent, cwd=who.cwd,
                             risk=call.risk.level if call.risk else None,
                             understood=call.risk is not None and call.risk.understood,
                             gaps=call.risk.gaps if call.risk else ())
        recent = []
        for e in self.service.audit.history(limit=200):
            if e.decision is not None:  # read again: the log does not say whether it was understood
                reading = assess(e.tool, e.args, cwd=e.cwd)
                recent.append((f"{e.agent or '?'}: {e.tool} {summarise_args(e.args)}",
                               PolicyCall(e.tool, e.args, agent=e.agent, cwd=e.cwd, risk=e.risk_level,
                                          understood=reading.understood, gaps=reading.gaps)))
        dialog = AlwaysAllowDialog(current, policy_path, recent, parent=self.dialog)
        dialog.accepted.connect(lambda: self._rule_added(ticket, dialog))
        self.rule_dialog = dialog
        dialog.open()

    def _rule_added(self, ticket: Ticket, dialog: Any) -> None:
        self.service.audit.record_event("rule_added", str(dialog.policy_path), dialog.written)
        watcher = self.service.policy_watcher
        if watcher is not None:
            watcher.check()  # in force for the very next request, not after the next poll
        self.dialog.rule_added(ticket)

    def open_review(self, ticket: Ticket) -> None:
        """The person asked for this ticket (notification body, Review button): show it, raised.

        A review that already shows it is only raised, never loaded again: loading would drop an
        edit the person is making there.
        """
        holding = [window for window in self._reviews_of(ticket) if window.isVisible()]
        if holding:
            window = holding[0]
        else:
            self.decider.show(ticket)
            window = self.dialog if self.decider.show_dialogs else self.inbox
        window.show()
        window.raise_()
        window.activateWindow()

    def review_chosen(self, ticket: Ticket) -> None:
        """A request picked in the tray's menu: that one, or the inbox when it has gone meanwhile
        (never another request in its place)."""
        if ticket in self.decider.tickets():
            self.decider.show(ticket)
        else:
            self.open_inbox()

    def show_for_key(self, what: str) -> None:
        """``desktop-approver show`` (a key the person bound): the most urgent waiting request (or the
        inbox when nothing waits), the inbox or the history, raised and given the focus."""
        window: QWidget
        if what == "history":
            window = self.open_history()
        elif what == "request" and (ticket := self.decider.current or self.decider.next_ticket()) is not None:
            self.open_review(ticket)
            return
        else:
            self.open_inbox()
            window = self.inbox
        window.raise_()
        window.activateWindow()

    def _notifications_health(self, problem: str | None) -> None:
        self.service.set_problem("notifications", problem)  # the tray shows it, and `status` reports it

    def _socket_health(self, problem: str | None) -> None:
        self.service.set_problem("socket", problem)

    def set_trouble(self, what: str, problem: str | None) -> None:
        """Record (or clear, with None) a problem; the tray shows degraded while any remains."""
        if self.troubles.get(what) == problem:
            return
        if problem is None:
            self.troubles.pop(what, None)
            log.info("no longer degraded (%s)", what)
        else:
            self.troubles[what] = problem
            log.info("degraded (%s): %s", what, problem)
        self.tray.set_degraded("\n".join(self.troubles.values()) or None)

    def popups_enabled(self) -> bool:
        return self._popups

    def set_popups(self, on: bool) -> None:
        """Whether a request pops up the dialog, or only lands in the inbox (and the tray)."""
        self._popups = on
        self.settings.setValue("popups", on)
        self.settings.sync()
        self._mode_changed(self.service.mode.mode, None)
        self.popups_changed.emit(on)

    def choose_mode(self, mode: Mode, seconds: float | None) -> None:
        """The person picked a mode in the tray menu."""
        self.service.mode.set(mode, seconds=seconds, reason="tray menu")

    def request_quit(self) -> None:
        if self.quit_requested is not None:
            self.quit_requested.set()

    def ask_to_quit(self) -> None:
        """Quit from the tray: at once when nothing waits, else after the person confirms (and knows
        what happens to the waiting requests: each agent is refused, never allowed)."""
        waiting = self.decider.tickets()
        if not waiting:
            self.request_quit()
            return
        if self.quit_question is not None:
            self.quit_question.raise_()
            return
        from PySide6.QtWidgets import QMessageBox  # a Qt class an idle app need not hold (issue 23)

        box = self.quit_question = QMessageBox(QMessageBox.Icon.Question, "desktop-approver — quit?",
                                               f"{count_text(waiting)} waiting. Quit anyway?")
        box.setObjectName("quitQuestion")
        box.setInformativeText("Quitting refuses every waiting request: each agent is told the app is shutting "
                               "down, which its client treats as a denial (nothing is allowed). The refusals "
                               "are in the history.")
        quit_button = box.addButton("&Quit and refuse them", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("&Keep running", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(cast(Any, box.buttons()[-1]))
        box.setEscapeButton(box.buttons()[-1])

        def answered(button: Any) -> None:
            self.quit_question = None
            box.deleteLater()
            if button is quit_button:
                self.request_quit()

        box.buttonClicked.connect(answered)
        box.open()

    # -- glue -------------------------------------------------------------------------------

    def _present(self, ticket: Ticket | None) -> None:
        if ticket is not None and not self.decider.show_dialogs:
            self.open_inbox(ticket)  # asked for explicitly (tray, notification) while popups are off
            return
        if ticket is None:
            if self._dialog is not None:
                self._dialog.clear()
            return
        self.dialog.load(ticket, *self._place(ticket))

    def _place(self, ticket: Ticket) -> tuple[int, int, list[tuple[int, Ticket]]]:
        """The ticket's number, how many wait, and the others with their numbers.

        Numbers are by arrival and kept while a ticket waits (:class:`ArrivalNumbers`): a request
        the person reads stays "Request 1" when a more urgent one arrives; the others are listed
        in the queue's order (most urgent first), like every other view.
        """
        waiting = self.decider.tickets()
        self.arrival_numbers.update(waiting)
        others = [(self.arrival_numbers.number(other), other) for other in waiting if other is not ticket]
        return self.arrival_numbers.number(ticket), max(1, len(waiting)), others

    def _queue_changed(self) -> None:
        shown = self._shown_ticket()
        if shown is not None:
            self.dialog.set_position(*self._place(shown))

    def _navigate(self, step: int) -> None:
        shown = self._shown_ticket()
        if shown is not None:
            other = self.decider.neighbour(shown, step)
            if other is not None and other is not shown:
                self.decider.show(other)

    def _show_key(self, key: str) -> None:
        for ticket in self.decider.tickets():
            if ticket.key == key:
                self.decider.show(ticket)

    def _ticket_left(self, ticket: Ticket) -> None:
        """A request that timed out while do-not-disturb held it is not forgotten: the person is told."""
        if ticket.countdown.expired.done() and self.service.mode.mode == modes.DO_NOT_DISTURB:
            self.missed.append(ticket)
            self.tray.set_missed(self.missed_text())

    def _show_missed(self) -> None:
        """The tray's "timed out during do-not-disturb" entry: the history, showing what timed out."""
        self.open_history().show_timed_out()
        self.missed.clear()

    def missed_text(self) -> str:
        return f"{count_text(self.missed)} timed out (denied) during do-not-disturb"

    def _tell_what_was_missed(self) -> None:
        """Back from do-not-disturb: say what timed out meanwhile (it stays in the tray until looked at)."""
        if not self.missed:
            return
        names = ", ".join(dict.fromkeys(visible(t.identity.label) for t in self.missed))
        verb = "was" if len(self.missed) == 1 else "were"
        self.tray.showMessage("desktop-approver", f"While do-not-disturb was on, {count_text(self.missed)} from "
                              f"{names} timed out and {verb} denied. The tray menu leads to them in the history.",
                              QSystemTrayIcon.MessageIcon.Warning)

    def _mode_changed(self, mode: str, _reason: str | None) -> None:
        """Dialogs pop up unless the person chose inbox-only or do-not-disturb (then one in view goes)."""
        if mode != modes.DO_NOT_DISTURB and self._was_quiet:
            self._tell_what_was_missed()
        self._was_quiet = mode == modes.DO_NOT_DISTURB
        self.decider.show_dialogs = self._popups and mode != modes.DO_NOT_DISTURB
        if not self.decider.show_dialogs and self._shown_ticket() is not None:
            self.dialog.clear()
            self.decider.current = None
        self.decider.resume_dialogs()


TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM",
                                                                "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGIO")
                            if hasattr(signal, name))
"""Each ends the app the same clean way (:meth:`DesktopApprover.close`): waiting requests are answered
``shutting_down`` and recorded, the socket is removed. SIGHUP is the terminal or the session going away;
SIGQUIT would otherwise dump core and leave the socket and 20 undecided requests behind (issue 20);
SIGUSR1, SIGUSR2, SIGALRM and SIGIO end a process by default, and did so without a word (the fault
injection of issue 34: agents got EOF, their rows stayed pending, the socket was left)."""

EXIT_INSECURE_DIRECTORY = 2
"""The socket's directory is not ours or is a link: someone else may be waiting to impersonate us."""


def run_app(args: Any, demo: bool = False) -> int:
    """Start the tray app (and, with ``demo``, a sample agent); returns the exit code."""
    logs.setup(getattr(args, "log_level", None))  # escaping: client text never reaches the terminal raw
    # instance() is typed as QCoreApplication; nothing in this process creates any but a QApplication.
    app = cast(QApplication, QApplication.instance() or QApplication(sys.argv[:1]))
    app.setApplicationName("desktop-approver")
    app.setDesktopFileName("desktop-approver")  # Wayland and task bars match our .desktop entry
    app.setWindowIcon(app_icon())
    app.setQuitOnLastWindowClosed(False)
    try:
        saved = app_settings.load()
    except app_settings.SettingsError as error:
        print(f"desktop-approver: {error}; using the default settings", file=sys.stderr)
        saved = app_settings.Settings()
    theme.apply(getattr(args, "theme", None) or saved.theme)
    if not getattr(args, "relay", None) and saved.relay:  # the settings' relay; --relay on the command line wins
        args.relay, args.relay_creds = saved.relay, saved.relay_creds or None
    from .event_loop import AppEventLoop

    loop = AppEventLoop(app)
    asyncio.set_event_loop(loop)
    from ..wiring import service_options  # the core and the relay, wired above both

    options = service_options(args)
    approver = DesktopApprover(options, notifier=None if getattr(args, "no_notifications", False) else _notifier(),
                               tray_icons=getattr(args, "tray_icons", None) or "color",
                               timeout_from_cli=getattr(args, "timeout", None) is not None,
                               theme_from_cli=getattr(args, "theme", None),
                               global_shortcuts=sys.platform.startswith("linux")
                               and importlib.util.find_spec("jeepney") is not None)
    try:
        loop.run_until_complete(approver.start())
    except (AlreadyRunning, ActivationError) as exc:
        print(f"desktop-approver: {exc}", file=sys.stderr)
        approver.service.audit.close()
        return 1
    except InsecureDirectory as exc:
        print(f"desktop-approver: refusing to start: {exc}", file=sys.stderr)
        approver.service.audit.close()
        return EXIT_INSECURE_DIRECTORY

    def quit_on_signal(*_: object) -> None:
        # Queued, not request_quit() itself: Python runs a handler between any two bytecodes, and one
        # run inside asyncio.Event.wait(), between its check and the waiter it adds, set the event
        # unseen: the app then never quit (about one SIGTERM in ten right after it started listening).
        if not loop.is_closed():
            loop.call_soon(approver.request_quit)

    for signum in TERMINATING_SIGNALS:
        signal.signal(signum, quit_on_signal)
    _end_cleanly_when_the_display_goes(approver.service)
    wake = QTimer()  # lets Python run its signal handlers while Qt sleeps
    wake.start(300)
    wake.timeout.connect(lambda: None)
    server = approver.service.server
    how = " (passed by the service manager)" if server.activated else ""
    print(f"desktop-approver is listening on {server.socket_path}{how}", file=sys.stderr, flush=True)
    demo_agent = _start_demo(server.socket_path) if demo else None
    try:
        assert approver.quit_requested is not None
        loop.run_until_complete(approver.quit_requested.wait())
    finally:
        if demo_agent is not None and demo_agent.poll() is None:
            demo_agent.terminate()
        loop.run_until_complete(approver.close())
    return 0


DISPLAY_GONE = ("The X11 connection broke", "The Wayland connection broke")
"""What Qt says, just before it exits the process, when the display server has gone away (xcb, Wayland)."""


def _end_cleanly_when_the_display_goes(service: ApproverService) -> None:
    """Qt ends the process (``exit(1)``) as soon as its display connection breaks, from inside its
    event processing: the asyncio loop never runs again. Its last words come through the message
    handler, so the app ends there the way a SIGTERM ends it, without the loop: each waiting agent
    hears ``shutting_down``, their calls are recorded as not allowed, the socket file is removed
    (:meth:`ApproverService.close_at_once`), and the process exits 0, with no traceback."""
    def handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if any(words in message for words in DISPLAY_GONE):
            log.error("the display went away (%s): closing", message)
            try:
                service.close_at_once("the display went away")
            finally:
                logging.shutdown()
                os._exit(0)
        print(message, file=sys.stderr)  # Qt's own handler's output

    qInstallMessageHandler(handler)


def _notifier() -> Any:
    """The platform's notification client, or None where there is none (notifications are optional)."""
    if not sys.platform.startswith("linux") or importlib.util.find_spec("jeepney") is None:
        return None  # (jeepney itself is imported once the notifier connects)
    from ..notify.freedesktop import DesktopNotifier

    return DesktopNotifier()


def _start_demo(socket_path: os.PathLike[str]) -> subprocess.Popen[bytes]:
    env = dict(os.environ, DESKTOP_APPROVER_SOCKET=os.fspath(socket_path))
    return subprocess.Popen([sys.executable, "-m", "desktop_approver.demo"], env=env)
