"""The approval dialog: one calm window that reviews the waiting tickets one at a time.

It must not be answerable by accident: it appears without taking keyboard focus, its allow
buttons stay locked for a moment after each new ticket (visibly), Deny is the default button,
Enter alone never approves, Escape and closing deny. Deny never waits for the lock: refusing is
always safe. Touching the dialog pauses the timeout. Destructive calls are not offered "Allow
for session", start unticked in a batch, and are never allowed by a button that does not name
them (:mod:`.batch`).

It shows its place in the shared queue and the requests after it, moves with Alt+Left /
Alt+Right, and sizes itself to what it shows: a one-line command gets a compact window, never
one larger than the screen's available area, with the buttons and the countdown always in view
(the review scrolls instead). The size and place the person gives it are remembered per kind of
call.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRect, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeyEvent, QKeySequence, QMoveEvent, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..client.vocabulary import DecisionName, Scope
from ..core.decisions.queue import time_left_text
from ..core.decisions.tickets import Ticket, Verdict
from ..core.store.logsafe import printable
from ..render.claims import as_claimed, claimed
from ..render.headline import headline
from . import batch, placement
from .badges import risk_text
from .contrast import MutedLabel
from .elided import ElidedLabel
from .review import ReviewPanel

ARMING_DELAY_MS = 700
ARMING_TEXT = "allow unlocks in a moment (Deny works now)…"
READING_REASON = "reading the diff… Allow waits until all of it is read (Deny works now)"
LEGEND = ("Alt+O allow once · Alt+S for the session · Alt+D, Esc or Enter deny · "
          "Alt+← / Alt+→ previous / next request · n / p next / previous change")
NEXT_SHOWN = 3
COMPACT_BELOW = 600   # on a screen less tall than this the review says less about who asks
STRIP_LINES = 2  # the "Also waiting" line's fixed height, in lines
TITLE_NAME_CHARS = 32  # an agent or tool name in the title or the "Also waiting" line is cut to this
WINDOW_TITLE_NAME_CHARS = 24  # in the window title (a task bar shows some 140 characters at most)
FRAME_WATCH_MS = 50  # how often the frame is looked for after the dialog is shown
FRAME_WATCH_TICKS = 100  # ... and for how many times (a busy window manager may take seconds)
WM_SHIFT = 64  # how far a window manager may move a new window to fit its frame (not a move by the person)

log = logging.getLogger(__name__)


def window_title(ticket: Ticket) -> str:
    """"⚠ Destructive Bash: git push --force… — from “codex” (as claimed)", readable in a task bar.

    The app's verdict first, then the call as its :func:`~desktop_approver.render.headline.headline`
    (the dangerous part of a long command first, not its harmless start), the agent's name last,
    cut short and marked as its claim.
    """
    agent = as_claimed(ticket.identity.label, WINDOW_TITLE_NAME_CHARS)
    level = risk_text(ticket.shown_level)
    # The longer verdict "? Not understood" takes its extra characters from the call, never from
    # the verdict or the agent's mark: the title stays as long as a task bar shows.
    extra = len(level) - len(risk_text("moderate")) if ticket.shown_level == "not understood" else 0
    if len(ticket.calls) == 1:
        call = ticket.calls[0]
        return (f"{level} {claimed(call.tool, WINDOW_TITLE_NAME_CHARS)}: "
                f"{headline(call.tool, call.args, 54 - extra)} — from {agent}")
    worst = batch.riskiest(ticket.calls)
    return (f"{level} {len(ticket.calls)} calls, {claimed(worst.tool, WINDOW_TITLE_NAME_CHARS)}: "
            f"{headline(worst.tool, worst.args, 40 - extra)} — from {agent}")


def call_kind(ticket: Ticket) -> str:
    """What the remembered size and place belong to: the tool and its preview kind, or "batch"."""
    if len(ticket.calls) > 1:
        return "batch"
    call = ticket.calls[0]
    preview = call.preview or {}
    kind = preview.get("kind") if isinstance(preview, dict) else getattr(preview, "kind", None)
    return f"{call.tool}:{kind or 'auto'}"


class ApprovalDialog(QDialog):
    decided = Signal(object, list)  # (ticket, [Verdict, ...])
    navigate = Signal(int)          # -1 previous, +1 next request in the queue
    show_ticket = Signal(str)       # a ticket key picked from the "next" strip
    always_allow_requested = Signal(object)
    """The person asked for a rule allowing calls like this ticket's (the app opens the rule editor first)."""
    # The review's scroll area; the name hides QWidget.scroll(dx, dy), which nothing calls on the dialog.
    scroll: QScrollArea  # type: ignore[assignment]

    def __init__(self, parent: QWidget | None = None, arming_delay_ms: int = ARMING_DELAY_MS,
                 settings: QSettings | None = None, *, offer_always_allow: bool = False) -> None:
        """``offer_always_allow``: show "Always allow…" (there is a policy file to add the rule to)."""
        super().__init__(parent)
        self.setObjectName("approvalDialog")
        self.setWindowTitle("desktop-approver")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, False)
        self.setSizeGripEnabled(True)
        self.arming_delay_ms = arming_delay_ms
        self.settings = settings
        self.ticket: Ticket | None = None
        self.upcoming: list[tuple[int, Ticket]] = []
        self.reserved_corner = placement.NOTIFICATION_AREA  # kept free for desktop notifications
        self._placing = False
        self._placed: placement.Rect | None = None

        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.previous_button = QToolButton()
        self.previous_button.setText("◀")
        self.previous_button.setToolTip("previous request (Alt+Left)")
        self.next_button = QToolButton()
        self.next_button.setText("▶")
        self.next_button.setToolTip("next request (Alt+Right)")
        for button in (self.previous_button, self.next_button):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.setAutoRaise(True)
        self.previous_button.clicked.connect(lambda: self.navigate.emit(-1))
        self.next_button.clicked.connect(lambda: self.navigate.emit(1))
        self.position = QLabel()
        self.position.setObjectName("queuePosition")
        # One line, cut to its width (the whole text in its tooltip): the paused text is longer, and
        # a first touch must not push everything below it down (issue 31: a still screen).
        self.countdown = ElidedLabel()
        self.countdown.setObjectName("countdown")
        self.countdown.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        top.addWidget(self.previous_button)
        top.addWidget(self.position)
        top.addWidget(self.next_button)
        top.addWidget(self.countdown, 1)
        layout.addLayout(top)

        self.next_strip = QLabel()
        self.next_strip.setObjectName("nextRequests")
        self.next_strip.setTextFormat(Qt.TextFormat.RichText)
        # Two lines whatever its content: as many waiting requests as fit, then "and N more"; its room
        # is kept while hidden, so an arrival or the clock never moves what is below it.
        self.next_strip.setWordWrap(True)
        self.strip_lines = STRIP_LINES
        self._set_strip_room(compact=False)
        self.next_strip.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.next_strip.linkActivated.connect(self._strip_link)
        layout.addWidget(self.next_strip)

        self.review = ReviewPanel()
        self.review.interacted.connect(self.pause_countdown)
        self.review.edit_validity_changed.connect(lambda _ok: self._follow_edit())
        self.review.ticks_changed.connect(self._update_buttons)
        # A long diff is read a step at a time: Allow waits until all of it is known (its warnings said).
        self.review.preview.warnings_changed.connect(lambda _warnings: self._update_buttons())
        self.scroll = QScrollArea()
        self.scroll.setObjectName("reviewScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setWidget(self.review)
        layout.addWidget(self.scroll, 1)

        self.arming = QProgressBar()
        self.arming.setObjectName("arming")
        self.arming.setTextVisible(True)
        self.arming.setFormat(ARMING_TEXT)
        self.arming.setMaximumHeight(14)
        self.arming.setRange(0, self.arming_delay_ms)
        layout.addWidget(self.arming)
        self.reading_note = QLabel(READING_REASON)  # why Allow waits, while a long diff is read
        self.reading_note.setObjectName("readingNote")
        self.reading_note.setTextFormat(Qt.TextFormat.PlainText)
        self.reading_note.setWordWrap(True)
        self.reading_note.setStyleSheet("QLabel{font-weight:bold}")
        self.reading_note.hide()
        layout.addWidget(self.reading_note)

        self.legend = MutedLabel(LEGEND)  # quieter than the rest, at WCAG AA contrast in every theme
        self.legend.setObjectName("keyLegend")
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)

        buttons = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.button_row = buttons
        self.always_allow = QPushButton("Al&ways allow…")
        self.always_allow.setObjectName("alwaysAllow")
        self.always_allow.setToolTip("add a policy rule for calls like this one (you see the rule first)")
        self.offer_always_allow = offer_always_allow
        self.allow_once = QPushButton("Allow &once")
        self.allow_once.setObjectName("allowOnce")
        self.allow_session = QPushButton("Allow for &session")
        self.allow_session.setObjectName("allowSession")
        self.deny = QPushButton("&Deny")
        self.deny.setObjectName("deny")
        for push in (self.always_allow, self.allow_once, self.allow_session):
            push.setAutoDefault(False)
            push.setDefault(False)
        self.deny.setAutoDefault(True)
        self.deny.setDefault(True)
        # A hidden "Allow for session" (destructive calls) keeps its room: the buttons never shift.
        kept = self.allow_session.sizePolicy()
        kept.setRetainSizeWhenHidden(True)
        self.allow_session.setSizePolicy(kept)
        buttons.addWidget(self.always_allow)
        buttons.addStretch(1)
        buttons.addWidget(self.allow_once)
        buttons.addWidget(self.allow_session)
        buttons.addWidget(self.deny)
        layout.addLayout(buttons)

        self.allow_once.clicked.connect(lambda: self._answer("allow_once"))
        self.allow_session.clicked.connect(lambda: self._answer("allow_session"))
        self.deny.clicked.connect(lambda: self._answer("deny"))
        self.always_allow.clicked.connect(self._always_allow)
        QShortcut(QKeySequence("Alt+Right"), self).activated.connect(lambda: self.navigate.emit(1))
        QShortcut(QKeySequence("Alt+Left"), self).activated.connect(lambda: self.navigate.emit(-1))

        self.approve_all_left: Callable[[], float | None] = lambda: None
        """Seconds of approve-all left (the app sets it), said on the countdown line while it lasts."""
        self._armed = False
        self._arming_elapsed = 0
        self._arming_timer = QTimer(self)
        self._arming_timer.setInterval(50)
        self._arming_timer.timeout.connect(self._arming_tick)
        self._tick = QTimer(self)
        self._tick.setInterval(250)
        self._tick.timeout.connect(self._update_countdown)
        self._save_geometry_later = QTimer(self)
        self._save_geometry_later.setSingleShot(True)
        self._save_geometry_later.setInterval(400)
        self._save_geometry_later.timeout.connect(self._save_geometry)
        # The window manager's frame is known only some moments after the window is shown (it is
        # framed, then Qt reads _NET_FRAME_EXTENTS): looked for until then, to keep it on screen.
        self._frame_watch = QTimer(self)
        self._frame_watch.setInterval(FRAME_WATCH_MS)
        self._frame_watch.timeout.connect(self._watch_frame)
        self._frame_checks = 0
        self._filtering = False
        self._update_buttons()

    def __repr__(self) -> str:
        ticket = printable(self.ticket.key, 40) if self.ticket is not None else None
        return f"<ApprovalDialog ticket={ticket!r} armed={self._armed} upcoming={len(self.upcoming)}>"

    # -- showing tickets --------------------------------------------------------------------

    def load(self, ticket: Ticket, number: int = 1, total: int = 1,
             upcoming: list[tuple[int, Ticket]] | None = None) -> None:
        previous = self.ticket
        previous_kind = call_kind(previous) if previous is not None else None
        if previous is not None and previous is not ticket:
            previous.countdown.resume()  # read and left for later: its clock runs again
        self.ticket = ticket
        log.debug("dialog shows ticket %s (request #%d, %d waiting)", printable(ticket.key), number, total)
        self.review.load(ticket)
        self.setWindowTitle(window_title(ticket))
        self.set_position(number, total, upcoming or [])
        single_destructive = len(ticket.calls) == 1 and ticket.risk_level == "destructive"
        self.allow_session.setVisible(not single_destructive)
        self._arm()
        self._update_countdown()
        self._tick.start()
        app = QApplication.instance()
        if app is not None and not self._filtering:
            # Sees clicks and keys on every child widget while a ticket is shown (pauses the timer);
            # only then, so a closed dialog costs the application's events nothing.
            app.installEventFilter(self)
            self._filtering = True
        if not self.isVisible():
            self.fit(show=True)
        else:
            # A still dialog: while it stays open its size, place and button row never change
            # (a button that moves under the pointer gets the wrong click); the review scrolls.
            log.debug("dialog keeps its geometry for ticket %s (was %s)", printable(ticket.key), previous_kind)

    def set_position(self, number: int, total: int, upcoming: list[tuple[int, Ticket]] | None = None) -> None:
        """"Request #2 · 3 waiting": the ticket's number by arrival (kept while it waits, so it
        never changes under the reader) and how many wait; ``upcoming`` the others, most urgent
        first, each with its own number."""
        ticket = self.ticket
        calls = f" · batch of {len(ticket.calls)} calls" if ticket and len(ticket.calls) > 1 else ""
        self.position.setText(f"Request #{number} · {total} waiting{calls}")
        self.previous_button.setEnabled(total > 1)
        self.next_button.setEnabled(total > 1)
        if upcoming is not None:
            self.upcoming = upcoming
        self._update_strip()

    def _update_strip(self) -> None:
        """The other waiting requests in queue order (most urgent first), each with its number by
        arrival and a link that brings it up. Rebuilt by the clock only to update the time left:
        the order and the numbers change only when a request arrives or leaves."""
        shown = self.strip_lines > 0  # none on a short screen: the position line says how many wait
        if not self.upcoming:
            # Its room is kept: say so there rather than leave a gap.
            self.next_strip.setText("Nothing else is waiting.")
            self.next_strip.setVisible(shown)
            self.position.setToolTip("")
            return
        metrics = self.next_strip.fontMetrics()
        room = max(1, (self.next_strip.width() if self.next_strip.isVisible() else self.width()) - 24)
        parts: list[str] = []
        lines, used = 1, metrics.horizontalAdvance("Also waiting: ")
        for place, other in self.upcoming[:NEXT_SHOWN]:
            first = other.calls[0]
            what = (f"{claimed(first.tool, TITLE_NAME_CHARS)}: {headline(first.tool, first.args, 36)}"
                    if len(other.calls) == 1 else f"{len(other.calls)} calls")
            # The app's verdict and the call first; the agent's name after, quoted as its claim.
            text = (f"#{place} {risk_text(other.shown_level)} {what}"
                    f" — {claimed(other.identity.label, TITLE_NAME_CHARS)}"
                    f" · {time_left_text(other.countdown.latest())} left")
            width = metrics.horizontalAdvance(text + " | ")
            more_lines, now = (lines, used + width) if used + width <= room else (lines + 1 + width // room,
                                                                               width % room)
            if parts and (more_lines > max(1, self.strip_lines) or (more_lines == max(1, self.strip_lines) and
                                                       now + metrics.horizontalAdvance(" · and 99 more") > room)):
                break  # its lines are full: the rest are counted
            lines, used = more_lines, now
            parts.append(f'<a href="ticket:{other.key}" style="text-decoration:none">{html.escape(text)}</a>')
        more = len(self.upcoming) - len(parts)
        tail = f" · and {more} more" if more > 0 else ""
        self.next_strip.setText("Also waiting: " + " &nbsp;|&nbsp; ".join(parts) + html.escape(tail))
        self.next_strip.setVisible(shown)
        # On a short screen, where no strip is shown, the position line's tooltip names the others.
        self.position.setToolTip("" if shown else "Also waiting:\n" + "\n".join(
            f"#{place} {risk_text(other.shown_level)} — {claimed(other.identity.label, TITLE_NAME_CHARS)}"
            for place, other in self.upcoming[:NEXT_SHOWN]))

    def _strip_link(self, link: str) -> None:
        if link.startswith("ticket:"):
            self.show_ticket.emit(link.removeprefix("ticket:"))

    def clear(self) -> None:
        if self.ticket is not None:
            log.debug("dialog closes on ticket %s", printable(self.ticket.key))
        self.ticket = None
        self.upcoming = []
        self._tick.stop()
        self._arming_timer.stop()
        self.review.preview.clear()  # a long diff still being drawn stops with the window
        self._update_buttons()
        app = QApplication.instance()
        if app is not None and self._filtering:
            app.removeEventFilter(self)
            self._filtering = False
        self.hide()

    @property
    def armed(self) -> bool:
        return self._armed

    # -- size and place -----------------------------------------------------------------------

    def available(self) -> QRect:
        screen = self.screen() or QApplication.primaryScreen()
        return screen.availableGeometry()

    def ideal_size(self) -> QSize:
        """What the content asks for: the chrome around the review plus the review's own wish."""
        panel = self.review.sizeHint()
        layout = self.layout()
        assert layout is not None  # set in __init__
        chrome = layout.sizeHint()
        scroll = self.scroll.sizeHint()
        width = max(chrome.width(), panel.width() + 24)
        height = chrome.height() - scroll.height() + panel.height() + 8
        return QSize(width, height)

    def fit(self, show: bool = False) -> None:
        """Size and place the dialog: as remembered for this kind of call, else to its content.

        Always inside the screen's available area (minus room for the window frame), keeping the
        corner where notifications appear free when there is room for that.
        """
        if self.ticket is None:
            return
        area = self.available()
        limit = placement.Rect(area.x(), area.y(), area.width(), area.height())
        self.review.set_compact(area.height() < COMPACT_BELOW)
        self._set_strip_room(compact=area.height() < COMPACT_BELOW)
        remembered = self._remembered()
        self.ensurePolished()  # a never-shown window's size hints are not final until polished
        layout = self.layout()
        assert layout is not None  # set in __init__
        layout.activate()
        self._placing = True
        try:
            if remembered is not None:
                box = placement.clamp(remembered, limit)
            else:
                self._placed = None  # the content's own wish, with the allow buttons at their narrowest
                self._update_buttons()
                want = self.ideal_size()
                width, height = placement.fit_size(want.width(), want.height(), limit)
                x, y = placement.place_away_from(limit, width, height, self.reserved_corner)
                box = placement.Rect(x, y, width, height)
            self.setMinimumSize(0, 0)
            self._placed = box
            self._update_buttons()  # the allow buttons' slots for this width, kept while the dialog is open
            self._arrange_buttons(box.width)
            self.resize(box.width, box.height)
            self.move(box.x, box.y)
            if show:
                self.show()
                # Word-wrapped labels know their height only once laid out at a width: fit again.
                QTimer.singleShot(0, self, self._refit)
                self._frame_checks = 0
                self._frame_watch.start()
            else:
                self.keep_frame_on_screen()
        finally:
            self._placing = False

    def _watch_frame(self) -> None:
        self._frame_checks += 1
        if self.keep_frame_on_screen() or self._frame_checks >= FRAME_WATCH_TICKS or not self.isVisible():
            self._frame_watch.stop()

    def keep_frame_on_screen(self) -> bool:
        """Move (and if need be shrink) the dialog so its whole frame, title bar included, is inside
        the available area; False while no frame is known yet (the window manager has not framed it).

        Placement reserves room for a frame (``placement.FRAME``) but cannot know where a window
        manager puts it: openbox kept the client at y=0 and put the title bar above the screen,
        where it cannot be grabbed (issue 31 review F2). Once the frame is known it is what is kept
        inside, the client placed with ``setGeometry`` (which, unlike ``move()``, never uses a stale frame).
        """
        handle = self.windowHandle()
        if not self.isVisible() or handle is None:
            return False
        # The window's own margins, asked of the platform now: QWidget.frameGeometry() keeps those
        # of the last move event, and a client the window manager framed where it stood (y=0) never
        # gets one, so it said "no frame" while the title bar was above the screen (scale 2, openbox).
        margins = handle.frameMargins()
        if margins.isNull():
            return False
        client = self.geometry()
        area = self.available()
        extra_width, extra_height = margins.left() + margins.right(), margins.top() + margins.bottom()
        width = min(client.width(), area.width() - extra_width)
        height = min(client.height(), area.height() - extra_height)
        frame_x = min(max(client.x() - margins.left(), area.x()), area.x() + area.width() - width - extra_width)
        frame_y = min(max(client.y() - margins.top(), area.y()), area.y() + area.height() - height - extra_height)
        x, y = frame_x + margins.left(), frame_y + margins.top()
        if (x, y, width, height) == (client.x(), client.y(), client.width(), client.height()):
            return True
        log.debug("dialog's frame kept inside %s: client %s to %s", area.getRect(), client.getRect(),
                  (x, y, width, height))
        placing, self._placing = self._placing, True
        try:
            self.setGeometry(x, y, width, height)  # the client's geometry: the frame goes around it
            self._placed = placement.Rect(x, y, width, height)
        finally:
            self._placing = placing
        return True

    def _set_strip_room(self, compact: bool) -> None:
        """The "Also waiting" strip's fixed room, kept whatever waits: two lines. On a short screen
        (scale 2 on 1280x800) none, so the call stays in the first view: the position line says how
        many wait, ◀ ▶ bring them up, its tooltip names them. A line given only while others waited
        moved the review 48 px under the pointer on an arrival, and wrapped into half a second line
        (issue 31 review F5, F7)."""
        self.strip_lines = 0 if compact else STRIP_LINES
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        policy.setRetainSizeWhenHidden(not compact)
        self.next_strip.setSizePolicy(policy)
        self.next_strip.setFixedHeight(self.next_strip.fontMetrics().lineSpacing() * max(1, self.strip_lines) + 4)
        self.next_strip.setVisible(not compact and self.ticket is not None)

    def _arrange_buttons(self, width: int) -> None:
        """The buttons in one row when they fit ``width``, else one under the other (:func:`arrange_row`)."""
        arrange_row(self.button_row, width)

    def _refit(self) -> None:
        if self.ticket is not None and self.isVisible() and not self._save_geometry_later.isActive():
            self.fit()

    def _remembered(self) -> placement.Rect | None:
        if self.settings is None or self.ticket is None:
            return None
        value = self.settings.value(f"dialog-geometry/{call_kind(self.ticket)}")
        if not value:
            return None
        try:
            x, y, width, height = (int(part) for part in str(value).split(","))
        except ValueError:
            return None
        return placement.Rect(x, y, width, height)

    def _save_geometry(self) -> None:
        """Remember what the person made of the window, not the window manager's echo of our own placing."""
        if self.settings is None or self.ticket is None or not self.isVisible():
            return
        box = self.geometry()
        placed = self._placed
        if (placed is not None and abs(box.width() - placed.width) <= 2 and abs(box.height() - placed.height) <= 2
                and abs(box.x() - placed.x) <= WM_SHIFT and abs(box.y() - placed.y) <= WM_SHIFT):
            return  # the frame and title bar shifted it a little: that is still our placement
        self.settings.setValue(f"dialog-geometry/{call_kind(self.ticket)}",
                               f"{box.x()},{box.y()},{box.width()},{box.height()}")
        self.settings.sync()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_strip()  # as many as fit the new width, on its one line
        if self.isVisible() and not self._placing and event.spontaneous():
            self._save_geometry_later.start()

    def moveEvent(self, event: QMoveEvent) -> None:
        super().moveEvent(event)
        if self.isVisible() and not self._placing and event.spontaneous():
            self._save_geometry_later.start()

    # -- the accidental-approval guards -----------------------------------------------------

    def _arm(self) -> None:
        self._armed = False
        self._arming_elapsed = 0
        self.arming.setValue(0)
        self.arming.show()
        self._update_buttons()
        if self.arming_delay_ms <= 0:
            self._arming_tick()
        else:
            self._arming_timer.start()

    def _arming_tick(self) -> None:
        self._arming_elapsed += self._arming_timer.interval()
        self.arming.setValue(min(self._arming_elapsed, self.arming_delay_ms))
        if self._arming_elapsed >= self.arming_delay_ms:
            self._arming_timer.stop()
            self._armed = True
            self.arming.hide()
            self._update_buttons()

    def choices(self) -> tuple[batch.Choice, batch.Choice]:
        """What "allow once" and "allow for session" would do now, with the ticks as they are."""
        ticket = self.review.effective_ticket() if self.review.ticket is self.ticket else self.ticket
        if ticket is None:
            return batch.Choice("Allow &once", False), batch.Choice("Allow for &session", False)
        ticked = self.review.allowed_mask()
        return batch.allow_once_choice(ticket.calls, ticked), batch.allow_session_choice(ticket.calls, ticked)

    def _follow_edit(self) -> None:
        """An edit read again: the title and the buttons follow the call as it would run."""
        effective = self.review.effective_ticket()
        if effective is not None and self.review.ticket is self.ticket:
            self.setWindowTitle(window_title(effective))
        self._update_buttons()

    def _hint_of(self, label: str) -> int:
        probe = QPushButton(label, self)
        probe.hide()  # explicitly: a child is shown with the dialog, and this one lives until deleteLater
        probe.setFont(self.allow_session.font())
        probe.ensurePolished()
        width = probe.sizeHint().width()
        probe.deleteLater()
        return width

    def _slot_width(self) -> int:
        """The one width of both allow buttons, a single request's or a batch's, while the dialog is open.

        At least "Allow for session"; as wide as a batch's usual label ("Allow 9 for session (not
        the 9 unticked)") when the dialog's width leaves room for that beside Deny. The dialog
        keeps its width while open, so the slots stay put between requests; a longer label is
        cut to its slot, whole in the tooltip.
        """
        base = self._hint_of("Allow for &session")
        if self._placed is None:
            return base
        generous = self._hint_of("Allow 99 for &session (not the 99 unticked)")
        others = self.deny.sizeHint().width() + (self._hint_of("Al&ways allow…") if self.offer_always_allow else 0)
        room = (self._placed.width - others - 6 * self.button_row.spacing() - 60) // 2
        return max(base, min(generous, room))

    def reading(self) -> bool:
        """Whether the call shown is still being read (a long diff not diffed to its end, its
        warnings not said yet): nobody approves what they could not see, so Allow waits."""
        return self.ticket is not None and not self.review.preview.is_known()

    def _update_buttons(self) -> None:
        valid = self.review.edits_valid() and not self.reading()
        once, session = self.choices()
        slot = self._slot_width()
        for button, choice in ((self.allow_once, once), (self.allow_session, session)):
            # The same slots for a single request and a batch: the row never shifts under the pointer.
            button.setFixedWidth(slot)
            shown = fitted_label(choice.label, button, slot, choice.short)
            button.setText(shown)
            button.setEnabled(self._armed and valid and choice.enabled)
            whole = plain_label(choice.label) if shown != choice.label else ""
            waiting = READING_REASON if self.reading() else ""
            button.setToolTip("\n".join(part for part in (whole, waiting, choice.why_not) if part))
        self._show_reading()
        self.deny.setEnabled(self.ticket is not None)  # refusing never waits for the lock
        if self.isVisible():  # new labels (a batch's ticks) must not widen the dialog past its width
            self._arrange_buttons(self.width())
        ticket = self.review.effective_ticket() if self.review.ticket is self.ticket else self.ticket
        offered = (self.offer_always_allow and ticket is not None and len(ticket.calls) == 1
                   and ticket.risk_level != "destructive")
        self.always_allow.setVisible(offered)
        self.always_allow.setEnabled(offered and self._armed and valid and not self.review.edited_args())

    def _show_reading(self) -> None:
        """Say above the buttons why Allow waits while the call is read."""
        self.reading_note.setVisible(self.reading())

    def pause_countdown(self) -> None:
        if self.ticket is not None and self.ticket.countdown.can_pause:
            self.ticket.countdown.pause()
            self._update_countdown()

    def _update_countdown(self) -> None:
        if self.ticket is None:
            return
        countdown = self.ticket.countdown
        if countdown.paused:
            self.countdown.setText(f"Timer paused while you review ({time_left_text(countdown.remaining())} left "
                                   f"when it resumes; denies in {time_left_text(countdown.latest())} at the latest)")
        else:  # the real deadline: after a pause the hard limit may come before the clock runs out
            self.countdown.setText(f"Denies automatically in {time_left_text(countdown.latest())}")
        approving = self.approve_all_left()
        if approving is not None:  # this one still asks you: say how long the mode lasts
            self.countdown.setText(f"{self.countdown.text()} · approve-all: {time_left_text(approving)} left")
        self._update_strip()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        ours = (self.ticket is not None and isinstance(watched, QWidget)
                and (watched is self or self.isAncestorOf(watched)))
        if ours and held_key(event):
            # A key held down answers nothing: its repeats would press Alt+O / Alt+S again on every
            # request that comes up next, each one unseen (the arming lock only delays them). An
            # accepted override keeps the shortcut map from firing; the repeat reaches the focused
            # widget as a plain key, which answers nothing either (see keyPressEvent).
            event.accept()
            return True
        if ours and event.type() in (QEvent.Type.MouseButtonPress, QEvent.Type.KeyPress, QEvent.Type.Wheel):
            self.pause_countdown()
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.isAutoRepeat():
            event.accept()  # a held Escape or Enter answers the request it was pressed on, once
            return
        if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            # Enter never approves: it presses the default button, Deny, which never waits.
            event.accept()
            self._answer("deny")
            return
        if (event.key() in (Qt.Key.Key_N, Qt.Key.Key_P)
                and event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)):
            event.accept()  # typing in the note or the editor never gets here: those take their keys
            self.review.preview.jump_change(1 if event.key() == Qt.Key.Key_N else -1)
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.ticket is not None:
            self._answer("deny", note_fallback="the dialog was closed")
        super().closeEvent(event)

    # -- answering ---------------------------------------------------------------------------

    def _always_allow(self) -> None:
        """Show the rule first (:attr:`always_allow_requested`); :meth:`rule_added` then allows the call."""
        ticket = self.ticket
        if ticket is None or not self.offer_always_allow or not self.always_allow.isEnabled():
            return
        self.pause_countdown()
        self.always_allow_requested.emit(ticket)

    def rule_added(self, ticket: Ticket) -> None:
        """The person wrote a rule covering this call: allow it once (the rule answers the next ones)."""
        if self.ticket is ticket:
            self._answer("allow_once")

    def _answer(self, choice: DecisionName, note_fallback: str | None = None) -> None:
        ticket = self.ticket
        if ticket is None:
            return
        if choice != "deny":
            once, session = self.choices()
            allowed = once if choice == "allow_once" else session
            if not (self._armed and self.review.edits_valid() and allowed.enabled) or self.reading():
                return
        note = self.review.note.text().strip() or (note_fallback if choice == "deny" else None)
        verdicts = verdicts_for(ticket, choice, self.review.allowed_mask(), self.review.edited_args(), note,
                                "tool" if self.review.whole_tool.isChecked() else "exact")
        log.debug("dialog: the person chose %s for ticket %s", choice, printable(ticket.key))
        self.decided.emit(ticket, verdicts)


def held_key(event: QEvent) -> bool:
    """A shortcut's key repeated by the keyboard because it is held (not pressed again)."""
    return (event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent)
            and event.isAutoRepeat())


def plain_label(label: str) -> str:
    """A button label as read: mnemonic ampersands dropped, ``&&`` one ampersand."""
    return label.replace("&&", "\0").replace("&", "").replace("\0", "&")


def fitted_label(label: str, button: QPushButton, width: int, short: str = "") -> str:
    """``label``, else its ``short`` form (counts instead of names), else ``label`` cut at a word
    with an ellipsis, so ``button`` is at most ``width`` pixels wide.

    The mnemonic stays when the cut comes after it; a label naming a destructive call (⚠) keeps
    the ⚠ in view, so a cut button still shows that it allows one (the tooltip has the whole label).
    """
    metrics = button.fontMetrics()
    padding = button.sizeHint().width() - metrics.horizontalAdvance(plain_label(button.text()))
    room = width - padding
    for whole in (label, short):
        if whole and metrics.horizontalAdvance(plain_label(whole)) <= room:
            return whole
    mark = " ⚠…" if "⚠" in label else "…"
    ends = [end for end in range(len(label) - 1, 0, -1) if label[end] == " "] + list(range(len(label) - 1, 0, -1))
    for end in ends:
        head = label[:end].rstrip(" ,(")
        if head.endswith("&") and not head.endswith("&&"):
            continue
        candidate = head + (mark if "⚠" not in head else "…")
        if metrics.horizontalAdvance(plain_label(candidate)) <= room:
            return candidate
    return "…"


def arrange_row(row: QBoxLayout, width: int) -> None:
    """Lay the widgets of ``row`` out side by side when they fit ``width`` pixels, else one under the other.

    A batch's buttons name what they leave out and can be long; at scale 2 on a 1280x800 screen
    a window has 640 pixels: Deny must never be cut to "De" nor pushed off screen. A hidden
    button that keeps its room (``retainSizeWhenHidden``) still counts.
    """
    widgets = [item.widget() for item in (row.itemAt(i) for i in range(row.count())) if item is not None]
    shown = [widget for widget in widgets
             if widget is not None and (not widget.isHidden() or widget.sizePolicy().retainSizeWhenHidden())]
    margins = row.contentsMargins()
    need = (sum(widget.sizeHint().width() for widget in shown) + row.spacing() * len(shown)
            + margins.left() + margins.right() + 40)  # and the window's own margins
    direction = QBoxLayout.Direction.LeftToRight if need <= width else QBoxLayout.Direction.TopToBottom
    if row.direction() != direction:
        row.setDirection(direction)


def verdicts_for(ticket: Ticket, choice: DecisionName, allowed: list[bool], edited: dict[int, dict[str, Any]],
                 note: str | None, scope: Scope) -> list[Verdict]:
    """The person's one click as one verdict per call (unchecked batch calls are denied).

    The note goes to the calls it concerns: to every call when they all get the same answer, and
    to the denied ones only when the person allows some calls of a batch and denies others (the
    note field asks "why you deny"); an allowed call never carries a note written about a denial.
    """
    keeps = [choice != "deny" and (allowed[position] if position < len(allowed) else True)
             for position in range(len(ticket.calls))]
    mixed = any(keeps) and not all(keeps)
    verdicts = []
    for position, keep in enumerate(keeps):
        if keep:
            verdicts.append(Verdict(choice, "user", note=None if mixed else note, updated_args=edited.get(position),
                                    scope=scope))
        else:
            verdicts.append(Verdict("deny", "user", note=note))
    return verdicts
