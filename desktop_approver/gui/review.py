"""The review of one ticket: who asks, what for, how risky, what exactly would run.

One widget, embedded by the approval dialog and by the inbox, so both show the same thing.
For a batch it lists the calls with a check box each (checked = allow) for partial approval.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any

from PySide6.QtCore import Qt, Signal
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
from ..core.decisions.tickets import CallInfo, Ticket
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
        self.args_editor = ArgsEditor()
        self.args_editor.hide()
        self.args_editor.validity_changed.connect(self._editor_validity)
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
        self._restyle()

    def _restyle(self) -> None:
        """The two voices' colours: the verdict's edge in the risk's colour, the agent's frame dashed."""
        edge = risk_colours(self.badge.level)[0]
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
        self.ticket = ticket
        self.badge.show()
        self.agent_frame.show()
        self._edited = {}
        self.note.clear()
        self.edit_button.setChecked(False)
        self.whole_tool.setChecked(False)
        self.identity.setText(identity_html(ticket, self.compact))
        self.identity.setToolTip(plain_tooltip(identity_details(ticket)))
        name = visible(ticket.identity.label)
        self.agent_title.setText(f"From the agent {name} (as claimed): its own words, not checked by desktop-approver")
        self.calls.blockSignals(True)
        self.calls.clear()
        for call, ticked in zip(ticket.calls, initial_ticks(ticket.calls), strict=True):
            level = call.risk.shown if call.risk else "not understood"
            reasons = "; ".join(call.risk.reasons) if call.risk and call.risk.reasons else "no risk found"
            item = QListWidgetItem(f"{risk_text(level)}   {shorten(visible(call.tool), NAME_CHARS)}  —  "
                                   f"{headline(call.tool, call.args, 90)}\n      {reasons}")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            item.setForeground(QBrush(QColor(risk_colours(level)[0])))
            item.setData(RISK_ROLE, level)
            warning = ("\ndestructive calls start unticked: tick it only after reading it"
                       if level == "destructive" and len(ticket.calls) > 1 else "")
            item.setToolTip(plain_tooltip(f"{visible(call.tool)}: {summarise_args(call.args, 400)}\n"
                                          "ticked: allowed when you approve; unticked: denied" + warning))
            self.calls.addItem(item)
        self.calls.blockSignals(False)
        self.calls.setVisible(len(ticket.calls) > 1)
        self.calls.setCurrentRow(0)
        self._show_call(0)

    def set_compact(self, compact: bool) -> None:
        """Fewer lines about who asks (a short screen), so the call is in the first view."""
        if compact != self.compact:
            self.compact = compact
            if self.ticket is not None:
                self.identity.setText(identity_html(self.ticket, compact))
                call = self.current_call()
                if call is not None and call.description:
                    self.description.setText(f"“{first_view_text(call.description, 1 if compact else 3)}”")

    def clear(self) -> None:
        """Show nothing (the request left and nothing else is selected): no stale review stays up."""
        self.ticket = None
        self._edited = {}
        self.note.clear()
        self.edit_button.setChecked(False)
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
        self.agent_frame.hide()

    def current_call(self) -> CallInfo | None:
        if self.ticket is None:
            return None
        row = max(0, self.calls.currentRow())
        return self.ticket.calls[row] if row < len(self.ticket.calls) else None

    def allowed_mask(self) -> list[bool]:
        """Which calls the person leaves checked (all of them for a single call)."""
        if self.ticket is None:
            return []
        return [self.calls.item(i).checkState() == Qt.CheckState.Checked for i in range(self.calls.count())]

    def edited_args(self) -> dict[int, dict[str, Any]]:
        self._capture_edit()
        return dict(self._edited)

    def edits_valid(self) -> bool:
        return not self.args_editor.isVisible() or self.args_editor.is_valid()

    def _show_call(self, row: int) -> None:
        self._capture_edit()
        if self.ticket is None or not (0 <= row < len(self.ticket.calls)):
            return
        call = self.ticket.calls[row]
        self.tool.setText(visible(call.tool))
        # A batch is as dangerous as its worst call, whichever call is selected.
        self.badge.set_risk(self.ticket.shown_level)
        self._restyle()
        reasons = list(call.risk.reasons) if call.risk else []
        text = "; ".join(reasons) if reasons else "no risk found in the content"
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
        self.reasons.setText(text)
        self.touches.show_facts(call.consequences)
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
        self.preview.set_content(call.tool, self._edited.get(row, call.args), shown, self.ticket.identity.cwd)
        destructive = call.risk is not None and call.risk.level == "destructive"
        self.whole_tool.setEnabled(not destructive)
        self.whole_tool.setVisible(not destructive)  # never offered: destructive calls are allowed once
        self.args_editor.load(self._edited.get(row, call.args))

    def _capture_edit(self) -> None:
        if self.ticket is None or not self.args_editor.isVisible():
            return
        row = getattr(self, "_editing_row", None)
        if row is None:
            return
        value = self.args_editor.value()
        if value is not None:
            self._edited[row] = value

    def _toggle_editor(self, on: bool) -> None:
        self.interacted.emit()
        self._editing_row = max(0, self.calls.currentRow())
        call = self.current_call()
        if call is not None:
            self.args_editor.load(self._edited.get(self._editing_row, call.args))
        self.args_editor.setVisible(on)
        self.edit_validity_changed.emit(self.edits_valid())

    def _ticks_changed(self, _item: QListWidgetItem) -> None:
        self.interacted.emit()
        self.ticks_changed.emit()

    def _editor_validity(self, ok: bool) -> None:
        self.edit_validity_changed.emit(ok)


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


TICKS = {ord(mark): f"<U+{ord(mark):04X}>" for mark in "✔✓✅☑🗸🗹"}


def untick(text: str) -> str:
    """``text`` with check marks shown as escapes: an agent's name or branch cannot pass for the app's ✔."""
    return text.translate(TICKS)


def identity_details(ticket: Ticket) -> str:
    """The identity's texts uncut, for the tooltip (markers for hidden characters, never markup)."""
    who = ticket.identity
    rows = [("NATS user (verified by the NATS server)", who.relay_user), ("agent (as claimed)", who.label),
            ("session", ticket.session), ("host (as claimed)" if who.relay_user else "host", who.host),
            ("branch", who.git_branch), ("directory (claimed)", who.cwd), ("directory", who.peer_cwd),
            ("program", who.peer_exe)]
    return "\n".join(f"{label}: {visible(value)}" for label, value in rows if value)


