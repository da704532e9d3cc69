""""Always allow…": turn one approval into a policy rule, visibly and narrowly.

"Don't ask again" in other tools is too broad and invisible. Here the person sees the exact
rule before it is written (the narrowest sensible one first, editable), which of their recent
requests it would have allowed, and an optional expiry. Only "Add rule" writes the policy file,
and it writes exactly the text shown under "Will be added".
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListWidget,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from ..core.policy import (
    PolicyCall,
    PolicyError,
    append_rule,
    render_rule,
    rule_from_dict,
    rule_matches,
    suggest_rule_alternatives,
)

EXPIRY_CHOICES = (("Never", None), ("In 1 hour", timedelta(hours=1)), ("In 1 day", timedelta(days=1)),
                  ("In 7 days", timedelta(days=7)), ("In 30 days", timedelta(days=30)))


def scope_name(rule: dict[str, Any]) -> str:
    """What a suggested rule really allows, in words: a path rule allows any change of the file (the
    policy matches paths and operations, not the edit), so it is never called "exactly this"."""
    command, path = rule.get("command"), rule.get("path")
    if command is not None:
        commands = command if isinstance(command, list) else [command]
        return "Similar commands" if any(_is_glob(text) for text in commands) else "Exactly this command"
    if path is not None:
        paths = path if isinstance(path, list) else [path]
        operation = rule.get("operation")
        operations = " or ".join(operation if isinstance(operation, list) else [operation]) if operation else "use"
        many = len(paths) > 1
        if any(text.endswith("/**") for text in paths):
            return f"Any file in {'these folders' if many else 'this folder'}, any {operations}"
        return f"{'These files' if many else 'This file'}, any {operations} (not only this one)"
    return "The whole tool, any arguments"


def _is_glob(pattern: str) -> bool:
    """Whether a suggested command pattern has a wildcard (the suggestions write a literal one as ``[*]``)."""
    return re.search(r"[*?[]", re.sub(r"\[[*?\[]\]", "", pattern)) is not None


class AlwaysAllowDialog(QDialog):
    """Shows, edits and (on "Add rule") appends one allow rule; ``written`` holds what was written."""

    def __init__(self, call: PolicyCall, policy_path: Path, recent: Sequence[tuple[str, PolicyCall]] = (),
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("alwaysAllowDialog")
        self.setWindowTitle("Always allow — add a policy rule")
        self.resize(640, 520)
        self.call = call
        self.policy_path = policy_path
        self.recent = list(recent)
        self.written: str | None = None
        self._rule: dict[str, Any] | None = None
        self.alternatives = suggest_rule_alternatives(call)

        layout = QVBoxLayout(self)
        intro = QLabel(f"Calls matching this rule will be allowed without asking. It is added to "
                       f"<code>{_escape(str(policy_path))}</code>, where you can edit or remove it.")
        intro.setWordWrap(True)
        layout.addWidget(intro)

        form = QFormLayout()
        self.scope = QComboBox()
        self.scope.setObjectName("ruleScope")
        for rule in self.alternatives:
            self.scope.addItem(f"{scope_name(rule)}: {rule_from_dict(rule).summary()}")
        self.scope.currentIndexChanged.connect(self._scope_chosen)
        form.addRow("&Scope:", self.scope)
        self.expiry = QComboBox()
        self.expiry.setObjectName("ruleExpiry")
        for label, _delta in EXPIRY_CHOICES:
            self.expiry.addItem(label)
        self.expiry.currentIndexChanged.connect(self._refresh)
        form.addRow("&Expires:", self.expiry)
        layout.addLayout(form)

        layout.addWidget(QLabel("Rule (TOML, editable):"))
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("ruleEditor")
        self.editor.setStyleSheet("font-family: monospace;")
        self.editor.setMaximumHeight(120)
        self.editor.textChanged.connect(self._refresh)
        layout.addWidget(self.editor)
        self.status = QLabel()
        self.status.setObjectName("ruleStatus")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        layout.addWidget(QLabel("Will be added:"))
        self.final = QLabel()
        self.final.setObjectName("ruleFinal")
        self.final.setTextFormat(Qt.TextFormat.PlainText)
        self.final.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.final.setStyleSheet("font-family: monospace; background: palette(base); padding: 4px;")
        layout.addWidget(self.final)

        self.matches_label = QLabel()
        self.matches_label.setObjectName("matchesLabel")
        layout.addWidget(self.matches_label)
        self.matches = QListWidget()
        self.matches.setObjectName("ruleMatches")
        layout.addWidget(self.matches, 1)

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.add_button = self.buttons.addButton("&Add rule and allow", QDialogButtonBox.ButtonRole.AcceptRole)
        self.add_button.setObjectName("addRule")
        self.add_button.setAutoDefault(False)
        self.buttons.accepted.connect(self._add)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self._scope_chosen(0)

    # -- what the rule is ---------------------------------------------------------------------

    def rule(self) -> dict[str, Any] | None:
        """The rule as it would be written (with the chosen expiry), or None while invalid."""
        return self._rule

    def _scope_chosen(self, index: int) -> None:
        if 0 <= index < len(self.alternatives):
            rule = dict(self.alternatives[index])
            self.editor.setPlainText(render_rule(rule))

    def _parse(self) -> dict[str, Any]:
        try:
            data = tomllib.loads(self.editor.toPlainText())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"not valid TOML: {exc}") from None
        rules = data.get("rule")
        if set(data) != {"rule"} or not isinstance(rules, list) or len(rules) != 1:
            raise ValueError("write exactly one [[rule]] table")
        rule = dict(rules[0])
        if rule.get("action") != "allow":
            raise ValueError('"Always allow" adds allow rules only (action = "allow")')
        delta = EXPIRY_CHOICES[self.expiry.currentIndex()][1]
        if delta is not None:
            rule["expires"] = (datetime.now(UTC) + delta).replace(microsecond=0)
        rule_from_dict(rule)
        return rule

    def _refresh(self) -> None:
        try:
            rule = self._parse()
        except ValueError as exc:  # PolicyError is one too; its reason is what the person needs
            self._rule = None
            self._show_status(f"✖ {getattr(exc, 'reason', exc)}", ok=False)
            self.final.setText("")
            self.matches.clear()
            self.matches_label.setText("")
            self.add_button.setEnabled(False)
            return
        if not rule_matches(rule, self.call):
            self._rule = None
            self._show_status("✖ this rule would not allow the call you are answering", ok=False)
            self.add_button.setEnabled(False)
        else:
            self._rule = rule
            self._show_status("✔ valid; allows the call you are answering", ok=True)
            self.add_button.setEnabled(True)
        self.final.setText(render_rule(rule).rstrip("\n"))
        self._show_matches(rule)

    def _show_matches(self, rule: dict[str, Any]) -> None:
        self.matches.clear()
        hits = [summary for summary, call in self.recent if _matches(rule, call)]
        self.matches_label.setText(f"Of your last {len(self.recent)} requests, it would have allowed {len(hits)}:")
        for summary in hits[:200]:
            self.matches.addItem(summary)

    def _show_status(self, text: str, ok: bool) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {'#1b7a2e' if ok else '#b3261e'};")

    def _add(self) -> None:
        rule = self.rule()
        if rule is None:
            return
        shown = self.final.text() + "\n"
        try:
            append_rule(self.policy_path, rule)
        except (PolicyError, OSError) as exc:
            self._show_status(f"✖ could not write {self.policy_path}: {exc}", ok=False)
            return
        self.written = shown
        self.accept()


def _matches(rule: dict[str, Any], call: PolicyCall) -> bool:
    try:
        return rule_matches(rule, call)
    except (PolicyError, ValueError, TypeError):
        return False


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
