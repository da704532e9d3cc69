"""The approval dialog: one calm window that reviews the waiting tickets one at a time.

It must not be answerable by accident: it appears without taking keyboard focus, its decision
buttons stay locked for a moment after each new ticket (visibly), Deny is the default button,
Enter alone never approves, Escape and closing deny. Touching the dialog pauses the timeout.
Destructive calls are not offered "Allow for session": each one needs its own look.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeyEvent
from PySide6.QtWidgets import QApplication, QDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from ..core.tickets import Ticket, Verdict
from .review import ReviewPanel

ARMING_DELAY_MS = 700


class ApprovalDialog(QDialog):
    decided = Signal(object, list)  # (ticket, [Verdict, ...])

    def __init__(self, parent: QWidget | None = None, arming_delay_ms: int = ARMING_DELAY_MS) -> None:
        super().__init__(parent)
        self.setObjectName("approvalDialog")
        self.setWindowTitle("desktop-approver — approval needed")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, False)
        self.resize(860, 680)
        self.arming_delay_ms = arming_delay_ms
        self.ticket: Ticket | None = None

        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.position = QLabel()
        self.position.setObjectName("queuePosition")
        self.countdown = QLabel()
        self.countdown.setObjectName("countdown")
        top.addWidget(self.position)
        top.addStretch(1)
        top.addWidget(self.countdown)
        layout.addLayout(top)

        self.review = ReviewPanel()
        self.review.interacted.connect(self.pause_countdown)
        self.review.edit_validity_changed.connect(lambda _ok: self._update_buttons())
        layout.addWidget(self.review, 1)

        self.arming = QProgressBar()
        self.arming.setObjectName("arming")
        self.arming.setTextVisible(True)
        self.arming.setFormat("buttons unlock in a moment…")
        self.arming.setMaximumHeight(14)
        self.arming.setRange(0, self.arming_delay_ms)
        layout.addWidget(self.arming)

        buttons = QHBoxLayout()
        self.always_allow = QPushButton("Al&ways allow…")
        self.always_allow.setObjectName("alwaysAllow")
        self.always_allow.setToolTip("add a policy rule for calls like this one (you see the rule first)")
        self.on_always_allow: Callable[[Ticket], None] | None = None
        self.allow_once = QPushButton("Allow &once")
        self.allow_once.setObjectName("allowOnce")
        self.allow_session = QPushButton("Allow for &session")
        self.allow_session.setObjectName("allowSession")
        self.deny = QPushButton("&Deny")
        self.deny.setObjectName("deny")
        for button in (self.always_allow, self.allow_once, self.allow_session):
            button.setAutoDefault(False)
            button.setDefault(False)
        self.deny.setAutoDefault(True)
        self.deny.setDefault(True)
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

        self._armed = False
        self._arming_elapsed = 0
        self._arming_timer = QTimer(self)
        self._arming_timer.setInterval(50)
        self._arming_timer.timeout.connect(self._arming_tick)
        self._tick = QTimer(self)
        self._tick.setInterval(250)
        self._tick.timeout.connect(self._update_countdown)
        app = QApplication.instance()
        if app is not None:  # sees clicks and keys on every child widget of the dialog
            app.installEventFilter(self)

    # -- showing tickets --------------------------------------------------------------------

    def load(self, ticket: Ticket, index: int = 1, total: int = 1) -> None:
        self.ticket = ticket
        self.review.load(ticket)
        self.set_position(index, total)
        destructive = ticket.risk_level == "destructive"
        self.allow_session.setVisible(not destructive)
        self.allow_session.setToolTip("" if not destructive else "not offered for destructive calls")
        self._arm()
        self._update_countdown()
        self._tick.start()
        if not self.isVisible():
            self.show()

    def set_position(self, index: int, total: int) -> None:
        batch = f" · batch of {len(self.ticket.calls)} calls" if self.ticket and len(self.ticket.calls) > 1 else ""
        self.position.setText(f"Request {index} of {total}{batch}")

    def clear(self) -> None:
        self.ticket = None
        self._tick.stop()
        self._arming_timer.stop()
        self.hide()

    @property
    def armed(self) -> bool:
        return self._armed

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

    def _update_buttons(self) -> None:
        valid = self.review.edits_valid()
        self.allow_once.setEnabled(self._armed and valid)
        self.allow_session.setEnabled(self._armed and valid)
        self.deny.setEnabled(self._armed)
        ticket = self.ticket
        offered = (self.on_always_allow is not None and ticket is not None and len(ticket.calls) == 1
                   and ticket.risk_level != "destructive")
        self.always_allow.setVisible(offered)
        self.always_allow.setEnabled(offered and self._armed and valid and not self.review.edited_args())

    def pause_countdown(self) -> None:
        if self.ticket is not None and not self.ticket.countdown.paused:
            self.ticket.countdown.pause()
            self._update_countdown()

    def _update_countdown(self) -> None:
        if self.ticket is None:
            return
        countdown = self.ticket.countdown
        left = int(countdown.remaining() + 0.999)
        if countdown.paused:
            latest = int(countdown.latest() + 0.999)
            self.countdown.setText(f"Timer paused while you review ({left // 60}:{left % 60:02d} left when it "
                                   f"resumes; denies in {latest // 60}:{latest % 60:02d} at the latest)")
        else:
            self.countdown.setText(f"Denies automatically in {left // 60}:{left % 60:02d}")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (event.type() in (QEvent.Type.MouseButtonPress, QEvent.Type.KeyPress, QEvent.Type.Wheel)
                and self.ticket is not None and isinstance(watched, QWidget)
                and (watched is self or self.isAncestorOf(watched))):
            self.pause_countdown()
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            event.accept()
            if self._armed:
                self._answer("deny")
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            # Enter never approves: it presses the default button (Deny) once that is armed.
            event.accept()
            if self._armed:
                self._answer("deny")
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.ticket is not None:
            self._answer("deny", note_fallback="the dialog was closed")
        super().closeEvent(event)

    # -- answering ---------------------------------------------------------------------------

    def _always_allow(self) -> None:
        """Show the rule first (``on_always_allow`` opens it); :meth:`rule_added` then allows the call."""
        ticket = self.ticket
        if ticket is None or self.on_always_allow is None or not self.always_allow.isEnabled():
            return
        self.pause_countdown()
        self.on_always_allow(ticket)

    def rule_added(self, ticket: Ticket) -> None:
        """The person wrote a rule covering this call: allow it once (the rule answers the next ones)."""
        if self.ticket is ticket:
            self._answer("allow_once")

    def _answer(self, choice: str, note_fallback: str | None = None) -> None:
        ticket = self.ticket
        if ticket is None:
            return
        if choice != "deny" and not (self._armed and self.review.edits_valid()):
            return
        if choice == "allow_session" and ticket.risk_level == "destructive":
            return
        note = self.review.note.text().strip() or (note_fallback if choice == "deny" else None)
        verdicts = verdicts_for(ticket, choice, self.review.allowed_mask(), self.review.edited_args(), note,
                                "tool" if self.review.whole_tool.isChecked() else "exact")
        self.decided.emit(ticket, verdicts)


def verdicts_for(ticket: Ticket, choice: str, allowed: list[bool], edited: dict[int, dict], note: str | None,
                 scope: str) -> list[Verdict]:
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
