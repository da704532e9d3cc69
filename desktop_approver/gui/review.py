"""The review of one ticket: who asks, what for, how risky, what exactly would run.

One widget, embedded by the approval dialog and by the inbox, so both show the same thing.
For a batch it lists the calls with a check box each (checked = allow) for partial approval,
most dangerous first (issue 31: in a 50-call batch the destructive calls are at the top, in view,
and the review opens on the worst of them), with a line naming the calls Allow leaves out. The
list's rows are in that order; the calls' positions in the request (what verdicts and edits are
keyed by) are :meth:`ReviewPanel.position_of` a row.

Edits are new calls (issue 31): arguments the person edits are read again by the core's reader
(:func:`~desktop_approver.core.decisions.broker.read_again`) a moment after the typing stops, and
everything the panel shows follows that reading (badge, reasons, preview, the batch's line);
:meth:`ReviewPanel.effective_ticket` is the ticket as it would run, which the buttons and the
title follow. Until an edit is read, :meth:`ReviewPanel.edits_valid` is False: nobody approves a
call whose reading they have not seen.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ..core.calls.reading import read_call
from ..core.decisions.broker import read_again
from ..core.decisions.queue import riskiest_first
from ..core.decisions.tickets import CallInfo, Ticket
from ..render.claims import claimed, neutral
from ..render.headline import FIRST_VIEW_CHARS, further_down, headline, shorten
from ..render.preview_check import preview_mismatch
from . import theme
from .badges import RiskBadge, risk_colours, risk_text
from .batch import initial_ticks
from .consequences_view import ConsequencesView
from .elided import ElidedLabel, plain_tooltip
from .preview_view import PreviewView
from .processes import agent_command, tilde, tilde_paths
from .review_text import agent_hints_text, first_view_text, reading_line, summarise_args, visible

RISK_ROLE = Qt.ItemDataRole.UserRole + 2
NAME_CHARS = 60   # an agent, tool or session name in a line of text is cut to this (the tooltip has it all)
PATH_CHARS = 90
REREAD_AFTER_MS = 300  # edited arguments are read again once the typing pauses this long


class ArgsEditor(QWidget):
    """Edit the arguments before approving; validates as you type."""

    validity_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("argsEditor")
        self.editor.setStyleSheet("font-family: monospace;")
        self.status = QLabel()
        layout.addWidget(self.editor)
        layout.addWidget(self.status)
        self._original: dict[str, Any] = {}
        self.editor.textChanged.connect(self._validate)

    def load(self, args: dict[str, Any]) -> None:
        self._original = args
        self.editor.setPlainText(json.dumps(args, indent=2, ensure_ascii=False))

    def value(self) -> dict[str, Any] | None:
        """The edited arguments, or None when they are unchanged or invalid."""
        try:
            value = json.loads(self.editor.toPlainText())
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) and value != self._original else None

    def is_valid(self) -> bool:
        try:
            return isinstance(json.loads(self.editor.toPlainText()), dict)
        except json.JSONDecodeError:
            return False

    def _validate(self) -> None:
        try:
            value = json.loads(self.editor.toPlainText())
            ok = isinstance(value, dict)
            self.status.setText("✔ valid JSON object" if ok else "✖ the arguments must be a JSON object")
        except json.JSONDecodeError as exc:
            ok = False
            self.status.setText(f"✖ line {exc.lineno}, column {exc.colno}: {exc.msg}")
        self.status.setStyleSheet(f"color: {risk_colours('safe' if ok else 'destructive')[0]};")
        self.validity_changed.emit(ok)


class ReviewPanel(QWidget):
    """Everything a person needs to judge a ticket, and the note to send back."""

    interacted = Signal()
    edit_validity_changed = Signal(bool)
    ticks_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ticket: Ticket | None = None
        self.compact = False
        self._edited: dict[int, dict[str, Any]] = {}
        self._reads: dict[int, CallInfo] = {}  # the edited calls, read again as new calls
        self._reasons_text = ""  # the verdict's lines for the call shown, before the preview is known
        self._editing_row = 0  # the position in the ticket (not the list's row) of the call in the editor
        self._order: list[int] = []  # the list's rows, as positions in the ticket: most dangerous first
        self._reread = QTimer(self)
        self._reread.setSingleShot(True)
        self._reread.setInterval(REREAD_AFTER_MS)
        self._reread.timeout.connect(self._read_edit)
        layout = QVBoxLayout(self)

        # The app's own verdict: always here, at the top, in the app's style; no agent text in it.
        self.verdict = QFrame()
        self.verdict.setObjectName("appVerdict")
        verdict_layout = QHBoxLayout(self.verdict)
        verdict_layout.setContentsMargins(8, 4, 4, 4)
        self.badge = RiskBadge()
        self.reasons = QLabel()
        self.reasons.setObjectName("riskReasons")
        self.reasons.setWordWrap(True)
        self.reasons.setTextFormat(Qt.TextFormat.PlainText)  # paths come from the agent, never markup
        self.reasons.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.preview_warning = QLabel()  # the agent's preview is about another file or command
        self.preview_warning.setObjectName("previewMismatch")
        self.preview_warning.setWordWrap(True)
        self.preview_warning.setTextFormat(Qt.TextFormat.PlainText)
        self.preview_warning.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.preview_warning.hide()
        findings = QVBoxLayout()
        findings.setContentsMargins(0, 0, 0, 0)
        findings.addWidget(self.preview_warning)
        self.danger_below = QLabel()  # a destructive part of the command out of the first view
        self.danger_below.setObjectName("dangerBelow")
        self.danger_below.setWordWrap(True)
        self.danger_below.setTextFormat(Qt.TextFormat.PlainText)
        self.danger_below.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.danger_below.hide()
        findings.addWidget(self.danger_below)
        findings.addWidget(self.reasons)
        # A batch's calls Allow leaves out, named in the app's voice: one line, in the first view.
        self.left_out = ElidedLabel()
        self.left_out.setObjectName("leftOut")
        self.left_out.hide()
        findings.addWidget(self.left_out)
        self.touches = ConsequencesView()  # what the call would touch on this machine (issue 32)
        findings.addWidget(self.touches)
        verdict_layout.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        verdict_layout.addLayout(findings, 1)
        layout.addWidget(self.verdict)

        self.identity = QLabel()
        self.identity.setObjectName("identity")
        self.identity.setTextFormat(Qt.TextFormat.RichText)
        self.identity.setWordWrap(True)
        self.identity.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.identity.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.identity)

        # Everything the agent wrote, in a frame of its own that says so: it can say anything.
        self.agent_frame = QFrame()
        self.agent_frame.setObjectName("agentFrame")
        frame_layout = QVBoxLayout(self.agent_frame)
        frame_layout.setContentsMargins(8, 4, 8, 6)
        frame_layout.setSpacing(4)
        self.agent_title = ElidedLabel()
        self.agent_title.setObjectName("agentFrameTitle")
        frame_layout.addWidget(self.agent_title)
        head = QHBoxLayout()
        self.tool = ElidedLabel()
        self.tool.setObjectName("toolName")
        self.tool_claim = QLabel("tool name as claimed")
        self.tool_claim.setObjectName("toolClaim")
        head.addWidget(self.tool, 1)
        head.addWidget(self.tool_claim)
        frame_layout.addLayout(head)
        self.description = QLabel()
        self.description.setObjectName("description")
        self.description.setWordWrap(True)
        self.description.setTextFormat(Qt.TextFormat.PlainText)
        self.description.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        frame_layout.addWidget(self.description)
        self.agent_hints = QLabel()  # the agent's hints and annotations: its claims, escaped and cut short
        self.agent_hints.setObjectName("agentHints")
        self.agent_hints.setWordWrap(True)
        self.agent_hints.setTextFormat(Qt.TextFormat.PlainText)
        self.agent_hints.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        frame_layout.addWidget(self.agent_hints)

        self.calls = QListWidget()
        self.calls.setObjectName("batchCalls")
        self.calls.setMaximumHeight(150)
        self.calls.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.calls.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.calls.currentRowChanged.connect(self._show_call)
        self.calls.itemChanged.connect(self._ticks_changed)
        frame_layout.addWidget(self.calls)
        layout.addWidget(self.agent_frame, 1)

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.preview = PreviewView()
        self.splitter.addWidget(self.preview)
        self.preview.warnings_changed.connect(lambda _warnings: self._say_reasons() if self.ticket else None)
        self.args_editor = ArgsEditor()
        self.args_editor.hide()
        self.args_editor.validity_changed.connect(self._editor_validity)
        self.args_editor.editor.textChanged.connect(self._edit_typed)
        self.splitter.addWidget(self.args_editor)
        frame_layout.addWidget(self.splitter, 1)

        tools = QHBoxLayout()
        self.edit_button = QPushButton("Edit arguments…")
        self.edit_button.setObjectName("editArgs")
        self.edit_button.setCheckable(True)
        self.edit_button.setAutoDefault(False)
        self.edit_button.toggled.connect(self._toggle_editor)
        # Short enough to be read whole on a 580-pixel dialog; the tooltip says it in full.
        self.whole_tool = QCheckBox("Session: any arguments of this tool")
        self.whole_tool.setObjectName("wholeTool")
        self.whole_tool.setToolTip("Allow for session covers any arguments of this tool, "
                                   "not only these exact arguments")
        self.whole_tool.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        tools.addWidget(self.edit_button)
        tools.addStretch(1)
        tools.addWidget(self.whole_tool)
        layout.addLayout(tools)

        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        layout.addWidget(line)
        note_row = QGridLayout()
        note_label = QLabel("&Note for the agent:")
        self.note = QLineEdit()
        self.note.setObjectName("note")
        self.note.setPlaceholderText("why you deny, or guidance for the agent (optional)")
        note_label.setBuddy(self.note)
        note_row.addWidget(note_label, 0, 0)
        note_row.addWidget(self.note, 0, 1)
        layout.addLayout(note_row)
        self.note.textEdited.connect(lambda _t: self.interacted.emit())
        theme.signals().changed.connect(self._recolour)
        self.clear()  # nothing to judge yet: no badge, no verdict (the inbox opens with nothing selected)

    def _restyle(self) -> None:
        """The two voices' colours: the verdict's edge in the risk's colour, the agent's frame dashed."""
        # No ticket, no verdict: a neutral edge, not a level's colour.
        edge = risk_colours(self.badge.level)[0] if self.ticket is not None else "#8c8c8c"
        self.verdict.setStyleSheet(f"QFrame#appVerdict{{border:none;border-left:4px solid {edge};}}"
                                   f"QLabel#previewMismatch,QLabel#dangerBelow{{color:{risk_colours('destructive')[0]};"
                                   "font-weight:bold;}")
        paper, line, ink = ("#161b22", "#6e7681", "#8d96a0") if theme.is_dark() else ("#f3f1ec", "#8c8577", "#5c564a")
        self.agent_frame.setStyleSheet(
            f"QFrame#agentFrame{{background:{paper};border:1px dashed {line};border-radius:6px;}}"
            f"QLabel#agentFrameTitle,QLabel#toolClaim{{color:{ink};font-style:italic;font-size:8pt;}}"
            "QLabel#toolName{font-family:monospace;font-weight:bold;}"
            "QLabel#description,QLabel#agentHints{font-style:italic;}")

    def _recolour(self, _dark: bool) -> None:
        self._restyle()
        for row in range(self.calls.count()):
            item = self.calls.item(row)
            item.setForeground(QBrush(QColor(risk_colours(item.data(RISK_ROLE) or "moderate")[0])))

    # -- content ----------------------------------------------------------------------------

    def load(self, ticket: Ticket) -> None:
        self._close_editor()
        self.ticket = ticket
        self.badge.show()
        self.agent_frame.show()
        self._edited = {}
        self._reads = {}
        self.note.clear()
        self.whole_tool.setChecked(False)
        self.identity.setText(identity_html(ticket, self.compact))
        self.identity.setToolTip(plain_tooltip(identity_details(ticket)))
        name = claimed(ticket.identity.label)
        self.agent_title.setText(f"From the agent {name} (as claimed): its own words, not checked by desktop-approver")
        self.verdict.setMinimumHeight(0)  # a new request: its own height (held while its calls are browsed)
        self.calls.blockSignals(True)
        self.calls.clear()
        positions = {id(call): position for position, call in enumerate(ticket.calls)}
        self._order = [positions[id(call)] for call in riskiest_first(ticket.calls)]
        ticks = initial_ticks(ticket.calls)
        for position in self._order:
            item = QListWidgetItem()
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if ticks[position] else Qt.CheckState.Unchecked)
            describe_item(item, ticket.calls[position], len(ticket.calls))
            self.calls.addItem(item)
        self.calls.blockSignals(False)
        self.calls.setVisible(len(ticket.calls) > 1)
        self.left_out.setVisible(len(ticket.calls) > 1)
        self._name_left_out()
        self.calls.setCurrentRow(0)
        self._show_call(0)

    def position_of(self, row: int) -> int:
        """The position in the ticket's calls of the list's ``row`` (the list is most dangerous first)."""
        return self._order[row] if 0 <= row < len(self._order) else row

    def row_of(self, position: int) -> int:
        """The list's row showing the ticket's call at ``position``."""
        return self._order.index(position) if position in self._order else position

    def _name_left_out(self) -> None:
        """Say which calls Allow leaves out (unticked: denied), by name, most dangerous first."""
        if self.ticket is None or len(self.ticket.calls) < 2:
            self.left_out.setText("")
            return
        ticked = self.allowed_mask()
        out = [position for position in self._order if not ticked[position]]
        if not out:
            self.left_out.setText("Every call is ticked: Allow allows all of them.")
            return
        calls = [self._reads.get(position, self.ticket.calls[position]) for position in out]
        names = ", ".join(f"{risk_text(call.risk.level if call.risk else 'moderate').split()[0]} "
                          f"{summarise_args(call.args, 40)}" for call in calls[:3])
        more = f" and {len(out) - 3} more" if len(out) > 3 else ""
        self.left_out.setText(f"Unticked, denied when you allow: {names}{more}")

    def set_compact(self, compact: bool) -> None:
        """Fewer lines about who asks (a short screen), so the call is in the first view."""
        if compact != self.compact:
            self.compact = compact
            if self.ticket is not None:
                self.identity.setText(identity_html(self.ticket, compact))
                call = self.current_call()
                if call is not None and call.description:
                    self.description.setText(f"“{first_view_text(call.description, 1 if compact else 3)}”")
                if call is not None:
                    self.touches.show_facts(call.consequences, compact=compact)

    def clear(self) -> None:
        """Show nothing (the request left and nothing else is selected): no stale review stays up."""
        self._close_editor()
        self.ticket = None
        self._edited = {}
        self._reads = {}
        self.note.clear()
        self.identity.clear()
        self.agent_title.setText("")
        self.tool.setText("")
        self.reasons.setText("Nothing selected.")
        self.preview_warning.hide()
        self.danger_below.hide()
        self.badge.hide()
        self.description.hide()
        self.agent_hints.hide()
        self.calls.blockSignals(True)
        self.calls.clear()
        self.calls.blockSignals(False)
        self.calls.hide()
        self._order = []
        self.left_out.setText("")
        self.left_out.hide()
        self.agent_frame.hide()
        self._restyle()

    def _close_editor(self) -> None:
        """Close the editor without taking its text as an edit: it belongs to the request that is
        leaving, and must never become the edit of the one shown next (issue 31)."""
        self._reread.stop()
        self.edit_button.blockSignals(True)
        self.edit_button.setChecked(False)
        self.edit_button.blockSignals(False)
        self.args_editor.setVisible(False)

    def current_call(self) -> CallInfo | None:
        """The selected call as it would run: edited arguments read again, else the agent's."""
        if self.ticket is None:
            return None
        position = self.position_of(max(0, self.calls.currentRow()))
        return self._reads.get(position, self.ticket.calls[position]) if position < len(self.ticket.calls) else None

    def effective_ticket(self) -> Ticket | None:
        """The ticket as it would run: each edited call replaced by its new reading (issue 31).
        What the buttons may offer and the title says follow this, never the agent's first version."""
        if self.ticket is None or not self._reads:
            return self.ticket
        return replace(self.ticket, calls=[self._reads.get(i, call) for i, call in enumerate(self.ticket.calls)])

    def allowed_mask(self) -> list[bool]:
        """Which calls the person leaves checked (all of them for a single call)."""
        if self.ticket is None:
            return []
        mask = [True] * len(self.ticket.calls)
        for row in range(self.calls.count()):
            mask[self.position_of(row)] = self.calls.item(row).checkState() == Qt.CheckState.Checked
        return mask

    def edited_args(self) -> dict[int, dict[str, Any]]:
        self._capture_edit()
        return dict(self._edited)

    def has_edit(self) -> bool:
        """Whether the person is editing this ticket's arguments (the editor open) or has edited them:
        then only this review may approve it, since only it shows what would run (issue 31)."""
        return self.ticket is not None and (self.edit_button.isChecked() or bool(self._edited))

    def edits_valid(self) -> bool:
        """False while the edited arguments are invalid or not read again yet."""
        if self._reread.isActive():
            return False
        return not self.edit_button.isChecked() or self.args_editor.is_valid()

    def _show_call(self, row: int) -> None:
        self._capture_edit()
        if self.ticket is None or not (0 <= row < len(self.ticket.calls)):
            return
        if self.verdict.isVisible():
            # Another call of the same batch: the verdict area never gets shorter, so the list
            # under it (and the pointer on it) stays where it is (issue 31: a still screen).
            self.verdict.setMinimumHeight(max(self.verdict.minimumHeight(), self.verdict.height()))
        position = self.position_of(row)
        self._display(position)
        self._editing_row = position  # the editor now holds this call's arguments
        self.args_editor.load(self._edited.get(position, self.ticket.calls[position].args))

    def _display(self, position: int) -> None:
        """Show the call at ``position`` as it would run (its edit read again), without touching the editor."""
        assert self.ticket is not None
        row = position  # below, "row" is the call's position in the ticket
        original = self.ticket.calls[row]
        call = self._reads.get(row, original)
        effective = self.effective_ticket() or self.ticket
        self.tool.setText(neutral(call.tool))  # in its frame, and without the verdict's marks
        # A batch is as dangerous as its worst call, whichever call is selected.
        self.badge.set_risk(effective.shown_level)
        self._restyle()
        reasons = list(call.risk.reasons) if call.risk else []
        text = "; ".join(reasons) if reasons else "no risk found in the content"
        if row in self._reads:
            text = f"Your edit, read again as a new call: {text}"
        if len(self.ticket.calls) > 1:
            level = call.risk.shown if call.risk else "not understood"
            text = f"This call ({row + 1} of {len(self.ticket.calls)}): {risk_text(level)} · {text}"
        commands = [run.text for run in read_call(call.tool, call.args).commands]
        below = danger_below_text(commands)
        self.danger_below.setText(below or "")
        self.danger_below.setVisible(below is not None)
        for typed, resolved in tilde_paths(call.args, commands)[:4]:
            text += f"\n{visible(typed)} is {visible(resolved)}"
        text += f"\n{reading_line(call)}"
        self._reasons_text = text
        self.touches.show_facts(call.consequences, compact=self.compact)
        self.description.setText(f"“{first_view_text(call.description or '', 1 if self.compact else 3)}”")
        self.description.setToolTip(plain_tooltip(visible(call.description or "", multiline=True)))
        self.description.setVisible(bool(call.description))
        self.agent_hints.setText(f"Hints: {agent_hints_text(call.hints)}" if call.hints else "")
        self.agent_hints.setToolTip(plain_tooltip("\n".join(f"{visible(str(key))}: {visible(str(value))}"
                                                             for key, value in call.hints.items())))
        self.agent_hints.setVisible(bool(call.hints))
        cwd = self.ticket.identity.cwd or self.ticket.identity.peer_cwd
        mismatch = preview_mismatch(call.tool, call.args, call.preview, cwd)
        self.preview_warning.setText(mismatch or "")
        self.preview_warning.setVisible(mismatch is not None)
        # When the agent's picture is of another call, show what the arguments do instead.
        shown = None if mismatch else call.preview
        self.preview.set_content(call.tool, call.args, shown, self.ticket.identity.cwd)
        self._say_reasons()
        destructive = call.risk is not None and call.risk.level == "destructive"
        if destructive:
            self.whole_tool.setChecked(False)
        self.whole_tool.setEnabled(not destructive)
        # Never offered for a destructive call (allowed once); kept hidden for an edit of one.
        self.whole_tool.setVisible(not (original.risk is not None and original.risk.level == "destructive"))
        item = self.calls.item(self.row_of(row))
        if item is not None:
            self.calls.blockSignals(True)
            describe_item(item, call, len(self.ticket.calls))
            self.calls.blockSignals(False)
        self._name_left_out()

    def _say_reasons(self) -> None:
        """The verdict's lines; "fully read" only once the preview is known to its end (a long diff
        is read in steps, and its hidden characters are known only then)."""
        text = self._reasons_text
        if not self.preview.is_known():
            text = text.replace("fully read", "arguments fully read; the diff is still being read (Allow waits)")
        self.reasons.setText(text)

    def _capture_edit(self, closing: bool = False) -> None:
        """Take what the editor holds as the edit of its call, read again (or none, when it is the agent's)."""
        if self.ticket is None or not (closing or self.edit_button.isChecked()):
            return
        row = self._editing_row
        if not 0 <= row < len(self.ticket.calls):
            return
        original = self.ticket.calls[row]
        value = self.args_editor.value()
        if value is not None:
            if self._edited.get(row) != value or row not in self._reads:
                self._edited[row] = value
                self._reads[row] = read_again(original, value, self.ticket.identity)
        elif self.args_editor.is_valid():  # edited back to the agent's arguments
            self._edited.pop(row, None)
            self._reads.pop(row, None)

    def _edit_typed(self) -> None:
        """Typing in the editor: Allow waits until the edit is read again (a moment after the typing stops)."""
        if self.ticket is None or not self.edit_button.isChecked():
            return
        self._reread.start()
        self.edit_validity_changed.emit(False)

    def _read_edit(self) -> None:
        if self.ticket is None:
            return
        self._capture_edit()
        if 0 <= self._editing_row < len(self.ticket.calls):
            self._display(self._editing_row)
        self.edit_validity_changed.emit(self.edits_valid())

    def _toggle_editor(self, on: bool) -> None:
        self.interacted.emit()
        if not on:  # what was typed is the edit, read again now: closing the editor never drops it
            self._reread.stop()
            self._capture_edit(closing=True)
            if self.ticket is not None and 0 <= self._editing_row < len(self.ticket.calls):
                self._display(self._editing_row)
            self.args_editor.setVisible(False)
            self.edit_validity_changed.emit(self.edits_valid())
            return
        self._editing_row = self.position_of(max(0, self.calls.currentRow()))
        if self.ticket is not None and self._editing_row < len(self.ticket.calls):
            self.args_editor.load(self._edited.get(self._editing_row, self.ticket.calls[self._editing_row].args))
        self.args_editor.setVisible(on)
        self._reread.stop()  # loading the editor is no edit
        self.edit_validity_changed.emit(self.edits_valid())

    def _ticks_changed(self, _item: QListWidgetItem) -> None:
        self.interacted.emit()
        self._name_left_out()
        self.ticks_changed.emit()

    def _editor_validity(self, ok: bool) -> None:
        self.edit_validity_changed.emit(ok)


def describe_item(item: QListWidgetItem, call: CallInfo, calls: int) -> None:
    """A batch's line for ``call``: the app's verdict, then the call (as claimed), then the reasons."""
    level = call.risk.shown if call.risk else "not understood"
    reasons = "; ".join(call.risk.reasons) if call.risk and call.risk.reasons else "no risk found"
    item.setText(f"{risk_text(level)}   {shorten(visible(call.tool), NAME_CHARS)}  —  "
                 f"{headline(call.tool, call.args, 90)}\n      {reasons}")
    item.setForeground(QBrush(QColor(risk_colours(level)[0])))
    item.setData(RISK_ROLE, level)
    warning = ("\ndestructive calls start unticked: tick it only after reading it"
               if level == "destructive" and calls > 1 else "")
    item.setToolTip(plain_tooltip(f"{visible(call.tool)}: {summarise_args(call.args, 400)}\n"
                                  "ticked: allowed when you approve; unticked: denied" + warning))


def danger_below_text(commands: list[str]) -> str | None:
    """"⚠ Further down (line 201): rm -rf ~/" for each command whose destructive part starts below
    its first lines (the reader's findings, wherever they stand).

    A part past the first :data:`~desktop_approver.render.headline.FIRST_VIEW_CHARS` characters is
    named by the preview's caption already; one hidden by line breaks before that is named here.
    """
    lines = []
    for command in commands:
        part = further_down(command)
        if part is not None and part.start <= FIRST_VIEW_CHARS:
            line = command.count("\n", 0, part.start) + 1
            where = f"line {line:,}" if line > 1 else f"character {part.start + 1:,}"
            lines.append(f"⚠ Further down ({where}): {shorten(visible(part.text), 48)}")
    return "\n".join(lines) if lines else None


def identity_html(ticket: Ticket, compact: bool = False) -> str:
    """Who asks: the kernel's facts (marked ✔) and the agent's claims (marked as claimed), names cut short.

    ``compact`` (a short screen): two lines, who and where; the session and the command line are
    in the tooltip, so the call itself is in the first view.
    """
    who = ticket.identity

    def escape(text: str, limit: int = NAME_CHARS) -> str:
        return html.escape(shorten(visible(text), limit))

    pid = "?"
    if who.peer_pid is not None:
        pid = f"{who.peer_pid} ✔" if who.pid_verified or who.pid is None else f"{who.peer_pid} (claims {who.pid})"
    def claim(text: str) -> str:
        """An agent's word in the agent's style, quoted, its tick marks shown as escapes."""
        return f"<i>“{escape(untick(text))}”</i>"

    claims = []
    if who.relay_user is not None:  # from another machine: the NATS server vouches for its user, no more
        lines = [f"NATS user <b>{escape(untick(who.relay_user))}</b> ✔ <i>(verified by the NATS server; "
                 "the agent is on another machine)</i>"]
        claims.append(f"name {claim((who.agent or '').removeprefix(f'{who.relay_user}/') or 'agent')}")
        if who.host:
            claims.append(f"host {claim(who.host)}")
    else:
        name = f"<b>{escape(untick(who.label))}</b>" + (" <i>(name as claimed)</i>" if who.agent else "")
        lines = [" · ".join([name, f"pid {escape(pid)}"])]
        if who.host:
            claims.append(f"host {claim(who.host)}")
    if who.git_branch:
        claims.append(f"branch {claim(who.git_branch)}")
    home = os.path.expanduser("~")

    def place(path: str) -> str:
        short = tilde(path, home)
        if short == path:
            return f"<tt>{escape(path, PATH_CHARS)}</tt>"
        return f"<tt>{escape(short, PATH_CHARS)}</tt> (<tt>{escape(path, PATH_CHARS)}</tt>)"

    if who.cwd_agrees is False and who.peer_cwd:  # the agent says one place, the kernel another
        lines.append(f'<span style="color:#b00020">⚠ really in {place(who.peer_cwd)}, '
                     f'claims {place(who.cwd or "")}</span>')
    elif who.peer_cwd:
        lines.append(f"in {place(who.peer_cwd)} ✔")
    elif who.cwd:
        lines.append(f"in {place(who.cwd)} <i>(as claimed)</i>")
    if compact:  # the host and branch claims are in the tooltip
        return "<br>".join(lines)
    # The agent's claims on a line of their own, in the agent's ink: nothing it wrote stands next to a ✔.
    ink = "#8d96a0" if theme.is_dark() else "#5c564a"  # the agent frame's ink
    lines.append(f'<span style="color:{ink}">the agent claims: session {claim(ticket.session)}'
                 + "".join(f", {part}" for part in claims) + "</span>")
    command = agent_command(who.peer_pid)
    if command is not None:
        text, via = command
        lines.append(f"{'agent' if via else 'command'} <tt>{escape(text, PATH_CHARS)}</tt>"
                     + (f" (through <tt>{escape(via)}</tt>)" if via else ""))
    elif who.peer_exe:
        lines.append(f"process <tt>{escape(who.peer_exe, PATH_CHARS)}</tt>")
    return "<br>".join(lines)


def untick(text: str) -> str:
    """``text`` as an agent's word (:func:`~desktop_approver.render.claims.neutral`): the verdict's
    marks shown as escapes and its quotation marks straight, so an agent's name or branch can pass
    neither for the app's ✔ nor close its own quotation and go on in the app's voice."""
    return neutral(text)


def identity_details(ticket: Ticket) -> str:
    """The identity's texts uncut, for the tooltip (markers for hidden characters, never markup)."""
    who = ticket.identity
    rows = [("NATS user (verified by the NATS server)", who.relay_user), ("agent (as claimed)", who.label),
            ("session", ticket.session), ("host (as claimed)" if who.relay_user else "host", who.host),
            ("branch", who.git_branch), ("directory (claimed)", who.cwd), ("directory", who.peer_cwd),
            ("program", who.peer_exe)]
    return "\n".join(f"{label}: {visible(value)}" for label, value in rows if value)


