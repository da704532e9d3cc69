"""Settings and rules, from the tray: the policy's rules in a table, the settings file, a rule explainer.

Rules are changed in the policy file itself (:mod:`.rules_file`: comments and layout kept, each
change validated by the app's own reader, an undo for the last change); the policy watcher puts
them in force within a second. Settings chosen here leave as signals (``settings_chosen``,
``popups_toggled``); the app saves and applies them at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..client.settings import THEMES, Settings, SettingsError
from ..core.calls.risk import assess
from ..core.policy import Policy, PolicyCall, PolicyError
from ..core.store.statistics import compute, uses_of
from .keys import close_on_escape
from .review_text import visible
from .rules_file import RuleBlock, RulesFile

COLUMNS = ("#", "On", "Action", "Matches", "Note", "Expires", "Used")
NUMBER, ON, ACTION, MATCHES, NOTE, EXPIRES, USED = range(len(COLUMNS))


NEW_RULE = """# what it matches (tool, command, path, agent, cwd, risk) and does
# (allow, ask, deny, block): `desktop-approver policy docs`
action = "ask"
tool = "Bash"
command = "make *"
"""


class RuleEditor(QDialog):
    """One rule's keys as TOML, validated as you type by the app's own reader.

    Keys, so no mouse is needed: Tab and Shift+Tab move the focus (a rule's TOML never needs a tab
    character), Ctrl+S and Ctrl+Enter save, Escape cancels.
    """

    def __init__(self, title: str, body: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"desktop-approver — {title}")
        self.resize(560, 300)
        layout = QVBoxLayout(self)
        self.editor = QPlainTextEdit(body.rstrip("\n") + "\n")
        self.editor.setObjectName("ruleEditor")
        self.editor.setStyleSheet("font-family: monospace;")
        self.editor.setTabChangesFocus(True)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        save = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        save.setToolTip("Save (Ctrl+S or Ctrl+Enter)")
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        for keys in (QKeySequence.StandardKey.Save, QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")):
            QShortcut(keys, self, self._save_by_key)
        self.editor.textChanged.connect(self._validate)
        self._validate()

    def text(self) -> str:
        return self.editor.toPlainText()

    def _save_by_key(self) -> None:
        if self.buttons.button(QDialogButtonBox.StandardButton.Save).isEnabled():
            self.accept()

    def _validate(self) -> None:
        try:
            Policy.parse("[[rule]]\n" + self.text(), "this rule")
            ok, message = True, "✔ a valid rule (Ctrl+S or Ctrl+Enter saves, Escape cancels)"
        except PolicyError as error:
            ok, message = False, f"✖ {error}"
        self.status.setText(message)
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(ok)


class SettingsWindow(QWidget):
    settings_chosen = Signal(object)  # valid Settings the person changed (the app saves and applies them)
    popups_toggled = Signal(bool)     # "Pop up a dialog for each request"
    theme_picked = Signal(str)        # the person picked a theme here: in force now, over --theme

    def __init__(self, policy_path: Path | None, audit_path: Path | str, settings: Settings, popups: bool,
                 parent: QWidget | None = None, *, theme_from_cli: str | None = None) -> None:
        super().__init__(parent)
        self.theme_from_cli = theme_from_cli
        """``--theme``: in force for this run until the person picks a theme here."""
        self.setObjectName("settingsWindow")
        self.setWindowTitle("desktop-approver — settings and rules")
        close_on_escape(self)
        self.resize(1000, 520)
        self.rules_file = RulesFile(policy_path) if policy_path is not None else None
        self.audit_path = audit_path
        self.settings = settings
        self.popups = popups
        self.blocks: list[RuleBlock] = []
        self._undo: str | None = None
        self._seen_text: str | None = None
        self.rule_editor: RuleEditor | None = None

        self.tabs = QTabWidget()
        self.tabs.addTab(self._rules_page(), "&Rules")
        self.tabs.addTab(self._settings_page(), "&Settings")
        self.tabs.addTab(self._explain_page(), "E&xplain a call")
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        self._watch = QTimer(self)  # the file may be edited by hand meanwhile: follow it
        self._watch.setInterval(1000)
        self._watch.timeout.connect(lambda: self.refresh_rules(only_if_changed=True) if self.isVisible() else None)
        self._watch.start()
        self.refresh_rules()

    def show_tab(self, name: str) -> None:
        self.tabs.setCurrentIndex({"rules": 0, "settings": 1, "explain": 2}[name])

    # -- rules --------------------------------------------------------------------------------

    def _rules_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        where = self.rules_file.path if self.rules_file else None
        self.where = QLabel(f"Rules in <tt>{where}</tt>; stronger actions win (block, deny, ask, allow), "
                            "the order only breaks ties." if where else "No policy file (started without one).")
        self.where.setWordWrap(True)
        layout.addWidget(self.where)
        self.table = QTreeWidget()
        self.table.setObjectName("rulesTable")
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(COLUMNS))
        for column, width in enumerate((36, 40, 70, 380, 250, 150, 50)):
            self.table.setColumnWidth(column, width)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self.table.itemDoubleClicked.connect(lambda *_: self.edit_selected())
        layout.addWidget(self.table, 1)
        self.status = QLabel()
        self.status.setObjectName("rulesStatus")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        buttons = QHBoxLayout()
        self.new_button = QPushButton("&New rule…")
        self.edit_button = QPushButton("&Edit…")
        self.toggle_button = QPushButton("Disa&ble")
        self.delete_button = QPushButton("&Delete")
        self.up_button = QPushButton("Move &up")
        self.down_button = QPushButton("Move do&wn")
        self.undo_button = QPushButton("Und&o")
        for button in (self.new_button, self.edit_button, self.toggle_button, self.delete_button, self.up_button,
                       self.down_button, self.undo_button):
            button.setAutoDefault(False)
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        # clicked(bool) would hand its "checked" to a slot's first argument: each is called without it.
        self.new_button.clicked.connect(lambda: self.new_rule())
        self.edit_button.clicked.connect(lambda: self.edit_selected())
        self.toggle_button.clicked.connect(lambda: self.toggle_selected())
        self.delete_button.clicked.connect(lambda: self.delete_selected())
        self.up_button.clicked.connect(lambda: self.move_selected(-1))
        self.down_button.clicked.connect(lambda: self.move_selected(1))
        self.undo_button.clicked.connect(lambda: self.undo())
        return page

    def refresh_rules(self, only_if_changed: bool = False) -> None:
        if self.rules_file is None:
            self.blocks = []
            self._update_buttons()
            return
        text = self.rules_file.text()
        if only_if_changed and text == self._seen_text:
            return
        self._seen_text = text
        selected = self.selected_number()
        self.blocks = self.rules_file.rules()
        uses = compute(self.audit_path).rule_uses
        self.table.clear()
        for block in self.blocks:
            values = block.values
            summary = _summary(block)
            expires = values.get("expires")
            item = QTreeWidgetItem([str(block.number), "✔" if block.enabled else "—",
                                    visible(str(values.get("action", "?"))), visible(block.summary()),
                                    visible(str(values.get("note", ""))),
                                    expires.isoformat() if isinstance(expires, datetime) else str(expires or ""),
                                    str(uses_of(summary, uses)) if summary else "?"])
            item.setData(0, Qt.ItemDataRole.UserRole, block.number)
            if not block.enabled:
                for column in range(len(COLUMNS)):
                    item.setForeground(column, self.palette().placeholderText())
            self.table.addTopLevelItem(item)
            if block.number == selected:
                item.setSelected(True)
        self._update_buttons()

    def selected_number(self) -> int | None:
        items = self.table.selectedItems()
        return items[0].data(0, Qt.ItemDataRole.UserRole) if items else None

    def select(self, number: int) -> None:
        for index in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(index)
            assert item is not None  # below the count
            item.setSelected(item.data(0, Qt.ItemDataRole.UserRole) == number)

    def _update_buttons(self) -> None:
        number = self.selected_number() if self.rules_file is not None else None
        chosen = number is not None
        self.new_button.setEnabled(self.rules_file is not None)
        for button in (self.edit_button, self.toggle_button, self.delete_button):
            button.setEnabled(chosen)
        self.up_button.setEnabled(number is not None and number > 1)
        self.down_button.setEnabled(number is not None and number < len(self.blocks))
        self.undo_button.setEnabled(self._undo is not None)
        if number is not None:
            self.toggle_button.setText("Ena&ble" if not self.blocks[number - 1].enabled else "Disa&ble")

    def _change(self, what: str, action: Callable[[], Any]) -> bool:
        """Run one change; on a validation error nothing is written and the reason is shown."""
        assert self.rules_file is not None
        before = self.rules_file.text()
        try:
            action()
        except (PolicyError, ValueError, IndexError) as error:
            self.status.setText(f"✖ not changed: {error}")
            return False
        self._undo = before
        self.status.setText(f"✔ {what}; in force within a second.")
        self.refresh_rules()
        return True

    def edit_selected(self, text: str | None = None) -> bool:
        """Put ``text`` into the selected rule; without it, open the editor (saved when the person saves)."""
        number = self.selected_number()
        rules_file = self.rules_file
        if number is None or rules_file is None:
            return False
        if text is None:
            block = self.blocks[number - 1]
            self._open_editor(f"rule {number}", block.body, lambda saved: self.edit_selected_as(number, saved))
            return True
        return self.edit_selected_as(number, text)

    def edit_selected_as(self, number: int, text: str) -> bool:
        rules_file = self.rules_file
        assert rules_file is not None
        changed = self._change(f"rule {number} saved", lambda: rules_file.replace(number, text))
        self.select(number)
        return changed

    def new_rule(self, text: str | None = None) -> bool:
        """Add a rule at the end of the file: ``text``, or what the person writes in the editor."""
        rules_file = self.rules_file
        if rules_file is None:
            return False
        if text is None:
            self._open_editor("new rule", NEW_RULE, lambda saved: self.new_rule(saved))
            return True
        added: list[int] = []
        changed = self._change("new rule added", lambda: added.append(rules_file.append(text)))
        if added:
            self.select(added[0])
            self.table.setFocus()
        return changed

    def _open_editor(self, title: str, body: str, save: Callable[[str], bool]) -> None:
        """The editor as a window of its own (not a nested event loop); ``save`` runs when the person saves."""
        if self.rule_editor is not None:
            self.rule_editor.close()
        editor = self.rule_editor = RuleEditor(title, body, self)
        editor.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        editor.accepted.connect(lambda: save(editor.text()))
        editor.finished.connect(lambda _result: setattr(self, "rule_editor", None) if self.rule_editor is editor
                                else None)
        editor.open()
        editor.editor.setFocus()

    def toggle_selected(self) -> bool:
        number = self.selected_number()
        rules_file = self.rules_file
        if number is None or rules_file is None:
            return False
        enable = not self.blocks[number - 1].enabled
        changed = self._change(f"rule {number} {'enabled' if enable else 'disabled (kept in the file, commented)'}",
                               lambda: rules_file.set_enabled(number, enable))
        self.select(number)
        self._update_buttons()
        return changed

    def delete_selected(self) -> bool:
        number = self.selected_number()
        rules_file = self.rules_file
        if number is None or rules_file is None:
            return False
        return self._change(f"rule {number} deleted (Undo brings it back)", lambda: rules_file.delete(number))

    def move_selected(self, step: int) -> bool:
        number = self.selected_number()
        rules_file = self.rules_file
        if number is None or rules_file is None:
            return False
        moved: list[int] = []
        changed = self._change(f"rule {number} moved", lambda: moved.append(rules_file.move(number, step)))
        if moved:
            self.select(moved[0])
            self._update_buttons()
        return changed

    def undo(self) -> None:
        if self._undo is None or self.rules_file is None:
            return
        previous, self._undo = self._undo, None
        self.rules_file.path.write_text(previous, encoding="utf-8")
        self.status.setText("✔ the last change was undone.")
        self.refresh_rules()

    # -- settings -----------------------------------------------------------------------------

    def _settings_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.timeout = QDoubleSpinBox()
        self.timeout.setObjectName("settingTimeout")
        self.timeout.setRange(1, 86400)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(" s")
        self.default_on_timeout = QLabel("deny (a request nobody answers is always denied, and nothing is remembered)")
        self.popup = QCheckBox("&Pop up a dialog for each request (else only the inbox and the tray)")
        self.notify = QCheckBox("Desktop &notifications, one per agent")
        self.theme = QComboBox()
        self.theme.setObjectName("settingTheme")
        for name in THEMES:
            self.theme.addItem(name, name)
        self.theme_note = QLabel()
        self.theme_note.setObjectName("themeNote")
        self.theme_note.setWordWrap(True)
        theme_row = QHBoxLayout()
        theme_row.addWidget(self.theme)
        theme_row.addWidget(self.theme_note, 1)
        self.quiet = QLineEdit()
        self.quiet.setObjectName("settingQuietHours")
        self.quiet.setPlaceholderText("22:00-07:30 (empty: none)")
        self.relay = QLineEdit()
        self.relay.setObjectName("settingRelay")
        self.relay.setPlaceholderText("nats://host:4222 (empty: this desktop's socket only)")
        self.relay.setToolTip("Also answer requests that agents on other machines send through a NATS server "
                              "(README, \"Agents on other machines\"). Takes effect at the next start; "
                              "--relay on the command line wins.")
        self.relay_creds = QLineEdit()
        self.relay_creds.setObjectName("settingRelayCreds")
        self.relay_creds.setPlaceholderText("a .creds file, or a file with one line user:password")
        self.settings_status = QLabel()
        self.settings_status.setWordWrap(True)
        form.addRow("&Time to answer", self.timeout)
        form.addRow("When nobody answers", self.default_on_timeout)
        form.addRow("Dialog", self.popup)
        form.addRow("Notifications", self.notify)
        theme_label = QLabel("T&heme")
        theme_label.setBuddy(self.theme)
        form.addRow(theme_label, theme_row)
        form.addRow("Do not disturb &daily", self.quiet)
        form.addRow("Rela&y (next start)", self.relay)
        form.addRow("Relay &credentials", self.relay_creds)
        form.addRow(self.settings_status)
        self.show_settings(self.settings)
        self.timeout.editingFinished.connect(self.save_settings)
        self.notify.toggled.connect(lambda _on: self.save_settings())
        self.theme.currentIndexChanged.connect(lambda _i: self.save_settings())
        self.quiet.editingFinished.connect(self.save_settings)
        self.relay.editingFinished.connect(self.save_settings)
        self.relay_creds.editingFinished.connect(self.save_settings)
        self.popup.toggled.connect(self.popups_toggled)
        return page

    def show_settings(self, settings: Settings) -> None:
        for widget in (self.timeout, self.notify, self.theme, self.quiet, self.relay, self.relay_creds):
            widget.blockSignals(True)
        self.timeout.setValue(settings.timeout)
        self.notify.setChecked(settings.notifications)
        shown = self._theme_in_force(settings)
        self.theme.setCurrentIndex(max(0, self.theme.findData(shown)))
        self.theme_note.setText(f"from --theme for this run; saved: {settings.theme}" if shown != settings.theme
                                else "")
        self.quiet.setText(settings.quiet_hours)
        self.relay.setText(settings.relay)
        self.relay_creds.setText(settings.relay_creds)
        self.popup.setChecked(self.popups)
        for widget in (self.timeout, self.notify, self.theme, self.quiet, self.relay, self.relay_creds):
            widget.blockSignals(False)

    def _theme_in_force(self, settings: Settings) -> str:
        """The theme this run uses: ``--theme`` while the person has not picked one here, else the saved one."""
        return self.theme_from_cli or settings.theme

    def show_popups(self, on: bool) -> None:
        """The popups setting changed (here or in the tray menu)."""
        self.popups = on
        if self.popup.isChecked() != on:
            self.popup.blockSignals(True)
            self.popup.setChecked(on)
            self.popup.blockSignals(False)

    def save_settings(self) -> bool:
        picked = str(self.theme.currentData())
        retheme = picked != self._theme_in_force(self.settings)  # the person picked one: saved, and in force
        chosen = Settings(timeout=float(self.timeout.value()), notifications=self.notify.isChecked(),
                          theme=picked if retheme else self.settings.theme, quiet_hours=self.quiet.text().strip(),
                          relay=self.relay.text().strip(), relay_creds=self.relay_creds.text().strip())
        try:
            chosen.validated()
        except SettingsError as error:
            self.settings_status.setText(f"✖ not saved: {error}")
            return False
        if chosen == self.settings and not retheme:
            return True
        if retheme:
            self.theme_from_cli = None
            self.theme_note.setText("")
            self.theme_picked.emit(picked)
        self.settings = chosen
        self.settings_chosen.emit(chosen)
        self.settings_status.setText("✔ saved and in effect.")
        return True

    # -- explain ------------------------------------------------------------------------------

    def _explain_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        form = QFormLayout()
        self.explain_tool = QLineEdit("Bash")
        self.explain_args = QLineEdit('{"command": "npm test && rm -rf build"}')
        self.explain_agent = QLineEdit()
        self.explain_cwd = QLineEdit(str(Path.home()))
        form.addRow("&Tool", self.explain_tool)
        form.addRow("&Arguments (JSON)", self.explain_args)
        form.addRow("A&gent", self.explain_agent)
        form.addRow("&Working directory", self.explain_cwd)
        layout.addLayout(form)
        run = QPushButton("Ex&plain")
        run.setAutoDefault(False)
        run.clicked.connect(self.explain)
        layout.addWidget(run, 0, Qt.AlignmentFlag.AlignLeft)
        self.explanation = QPlainTextEdit()
        self.explanation.setObjectName("explanation")
        self.explanation.setReadOnly(True)
        self.explanation.setStyleSheet("font-family: monospace;")
        layout.addWidget(self.explanation, 1)
        return page

    def explain(self) -> str:
        """What `desktop-approver policy explain` says about the call in the form."""
        try:
            args = json.loads(self.explain_args.text() or "{}")
            if not isinstance(args, dict):
                raise ValueError("the arguments must be a JSON object")
            policy = Policy.load(self.rules_file.path) if self.rules_file and self.rules_file.path.exists() \
                else Policy.empty()
        except (ValueError, PolicyError) as error:
            self.explanation.setPlainText(f"✖ {error}")
            return self.explanation.toPlainText()
        tool = self.explain_tool.text().strip()
        cwd = self.explain_cwd.text().strip() or None
        reading = assess(tool, args, cwd=cwd)
        risk = reading.level
        explanation = policy.explain(PolicyCall(tool=tool, args=args, agent=self.explain_agent.text().strip() or None,
                                                cwd=cwd, risk=risk, understood=reading.understood, gaps=reading.gaps))
        self.explanation.setPlainText(f"risk: {risk}\n{explanation.render()}")
        return self.explanation.toPlainText()


def _summary(block: RuleBlock) -> str | None:
    """The rule's summary as the audit log writes it (to count its uses), None if it does not parse."""
    try:
        rules = Policy.parse("[[rule]]\n" + block.body).rules
    except PolicyError:
        return None
    return rules[0].summary() if rules else None
