"""The preview of one tool call: a diff, a command or a text, and always its arguments.

One widget that the review dialog and the inbox both embed. The HTML comes from the Qt-free
:mod:`desktop_approver.render` modules; this file only arranges it. A diff is drawn by
:class:`.diff_rendering.DiffRendering`: a long one is diffed as it is read, its first screen
painted at once and the rest diffed, lexed and drawn a short step per loop turn, so a
10,000-line diff neither freezes the dialog nor delays its first paint. Until such a diff is
diffed to its end, the change count and the hidden-character warnings about its lines wait
(``warnings_changed`` is emitted again then); ``n``/``p`` finish the diffing at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..render import command_html, diff_html, highlight, text_html
from ..render.autopreview import RECOGNISED, normalise_tool_name, preview_for
from ..render.diffs import STREAM_OVER_LINES, FileDiff, from_preview
from ..render.headline import dangerous_parts, one_line, shorten
from ..render.reveal import MILD_KINDS, reveal
from . import theme
from .code_browser import CodeBrowser
from .diff_rendering import DiffRendering
from .elided import ElidedLabel
from .whole_line import WholeLine

highlight.set_dark(theme.is_dark())  # the renderer was not loaded when the theme was applied (see theme.set_dark)

JSON_MAX_LINES = 200
JSON_MAX_CHARS = 20_000
LONG_STRING = 400        # string values longer than this are cut in the arguments until "Show all"
JSON_FIT_LINES = 12      # the arguments pane asks for at most this many lines (it scrolls past that)
TEXT_FIT_LINES = 16
DIFF_FIT_ROWS = 28
MIN_FIT_WIDTH, MAX_FIT_WIDTH = 520, 1100
FAR_IN_COMMAND = 300     # a destructive part starting past this many characters is named in the caption

_WARN_STYLE = {
    "danger": "QLabel{background:#ffebe9;color:#82071e;border:1px solid #cf222e;border-radius:4px;padding:6px}",
    "caution": "QLabel{background:#fff8c5;color:#6b4b00;border:1px solid #d4a72c;border-radius:4px;padding:6px}",
}
_DARK_WARN_STYLE = {
    "danger": "QLabel{background:#3d1214;color:#ffb1ab;border:1px solid #da3633;border-radius:4px;padding:6px}",
    "caution": "QLabel{background:#3b2e05;color:#f2cc60;border:1px solid #9e6a03;border-radius:4px;padding:6px}",
}


class PreviewView(QWidget):
    """Shows a call's preview (given, or derived from its arguments) above its arguments.

    Signals: ``warnings_changed(list)`` after each :meth:`set_content` with the hidden-character
    warnings (and again when a long diff has been diffed to its end); ``first_paint_done()`` once
    the new content's pane has been painted; ``rendering_done()`` when a diff has been rendered
    completely.
    """

    warnings_changed = Signal(list)
    first_paint_done = Signal()
    rendering_done = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._warnings: list[str] = []
        self._files: list[FileDiff] = []
        self._folded: dict[int, set[int]] = {}
        self._mode: diff_html.Mode = "unified"
        self._awaiting_paint = False
        self._args: Any = None
        self._change_at = -1
        self._warnings_besides_diff: tuple[list[str], bool] = ([], False)
        self._change_cache: dict[Any, list[int]] = {}
        self._known = True  # the diff shown (if any) is diffed to its end and its warnings are said
        self._fold_later: dict[int, int] | None = None  # "Fold all" while diffing: hunks known then, per file
        self.whole_line: WholeLine | None = None  # a long line opened from its row

        self.warning_bar = QLabel()
        self.warning_bar.setObjectName("previewWarnings")
        self.warning_bar.setTextFormat(Qt.TextFormat.PlainText)
        self.warning_bar.setWordWrap(True)
        self.warning_bar.hide()

        self.caption = ElidedLabel()
        self.caption.setObjectName("previewCaption")

        self.pages = QStackedWidget()
        self.diff_page = self._build_diff_page()
        self.command_browser = CodeBrowser()
        self.command_browser.setObjectName("commandView")
        self.text_browser = CodeBrowser()
        self.text_browser.setObjectName("textView")
        for page in (self.diff_page, self.command_browser, self.text_browser):
            self.pages.addWidget(page)

        self.main = QWidget()
        main_layout = QVBoxLayout(self.main)
        main_layout.setContentsMargins(0, 0, 0, 0)
        main_layout.setSpacing(2)
        self.caption.setContentsMargins(4, 2, 4, 0)
        caption_row = QHBoxLayout()
        caption_row.addWidget(self.caption, 1)
        caption_row.addWidget(self.diff_summary)  # beside the file's name: the whole text, never cut
        main_layout.addLayout(caption_row)
        main_layout.addWidget(self.pages, 1)

        self.args_browser = CodeBrowser()
        self.args_browser.setObjectName("argumentsView")
        self.args_browser.anchorClicked.connect(self._args_link)
        args_box = QWidget()
        args_layout = QVBoxLayout(args_box)
        args_layout.setContentsMargins(0, 0, 0, 0)
        self.args_toggle = QToolButton()
        self.args_toggle.setObjectName("argumentsToggle")
        self.args_toggle.setCheckable(True)
        self.args_toggle.setChecked(True)
        self.args_toggle.setAutoRaise(True)
        self.args_toggle.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.args_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.args_toggle.setStyleSheet("QToolButton{font-weight:bold;border:none}")
        self.args_toggle.toggled.connect(self._args_toggled)
        args_layout.addWidget(self.args_toggle)
        args_layout.addWidget(self.args_browser, 1)
        self.args_box = args_box
        self.args_covered = False  # the preview shows every argument: the JSON starts folded
        self._cut_chars = 0
        self._json_lines = 0

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.main)
        self.splitter.addWidget(args_box)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.warning_bar)
        layout.addWidget(self.splitter, 1)

        for browser in (self.diff_browser, self.command_browser, self.text_browser, self.args_browser):
            browser.painted.connect(lambda browser=browser: self._painted(browser))
        self._content: tuple[Any, ...] | None = None
        self._theme_stale = False
        theme.signals().changed.connect(self._theme_changed)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._theme_stale:
            self._theme_changed(theme.is_dark())

    def _theme_changed(self, _dark: bool) -> None:
        """New colours: restyle the panes and render what is shown again, keeping the view's state.

        A hidden view (a closed window) only notes it and catches up when shown again.
        """
        if not self.isVisible():
            self._theme_stale = True
            return
        self._theme_stale = False
        for browser in (self.diff_browser, self.command_browser, self.text_browser, self.args_browser):
            browser.restyle()
        if self._content is not None:
            mode, folded, shown = self._mode, self._folded, self.args_toggle.isChecked()
            self.set_content(*self._content)
            self._folded = folded
            if mode != self._mode or folded:
                self._mode = mode
                self._render_diff()
            self.args_toggle.setChecked(shown)

    def _build_diff_page(self) -> QWidget:
        page = QWidget()
        self.diff_browser = CodeBrowser()
        self.diff_browser.setObjectName("diffView")
        self.diff_browser.anchorClicked.connect(self._diff_link)
        self.rendering = DiffRendering(self.diff_browser)
        self.rendering.navigable.connect(self._diffed_to_end)
        self.rendering.done.connect(self.rendering_done)

        self.unified_button = QToolButton()
        self.unified_button.setText("Unified")
        self.split_button = QToolButton()
        self.split_button.setText("Side by side")
        self.mode_group = QButtonGroup(page)
        self.mode_group.setExclusive(True)
        for button in (self.unified_button, self.split_button):
            button.setCheckable(True)
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
            self.mode_group.addButton(button)
        self.unified_button.setChecked(True)
        self.unified_button.toggled.connect(lambda on: self.set_mode("unified") if on else None)
        self.split_button.toggled.connect(lambda on: self.set_mode("split") if on else None)

        self.fold_button = QToolButton()
        self.fold_button.setText("Fold all")
        self.fold_button.clicked.connect(self.fold_all)
        self.unfold_button = QToolButton()
        self.unfold_button.setText("Unfold all")
        self.unfold_button.clicked.connect(self.unfold_all)
        for button in (self.fold_button, self.unfold_button):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.diff_summary = QLabel()
        self.diff_summary.setObjectName("diffSummary")
        self.diff_summary.setTextFormat(Qt.TextFormat.PlainText)
        self.diff_summary.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Preferred)  # never cut

        self.file_list = QComboBox()
        self.file_list.setObjectName("diffFiles")
        self.file_list.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.file_list.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.file_list.setMinimumContentsLength(18)
        self.file_list.activated.connect(self.jump_file)
        self.previous_change = QToolButton()
        self.previous_change.setText("▲")
        self.previous_change.setToolTip("previous change (p)")
        self.previous_change.clicked.connect(lambda: self.jump_change(-1))
        self.next_change = QToolButton()
        self.next_change.setText("▼")
        self.next_change.setToolTip("next change (n)")
        self.next_change.clicked.connect(lambda: self.jump_change(1))
        self.change_label = QLabel()
        self.change_label.setObjectName("changePlace")
        for button in (self.previous_change, self.next_change):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)

        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 0, 0)
        bar.addWidget(self.file_list)
        bar.addStretch(1)
        for widget in (self.previous_change, self.change_label, self.next_change, self.unified_button,
                       self.split_button, self.fold_button, self.unfold_button):
            bar.addWidget(widget)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.diff_browser, 1)
        return page

    # -- public ---------------------------------------------------------------------------------

    def set_content(self, tool: str, args: Mapping[str, Any] | Any, preview: Mapping[str, Any] | Any | None,
                    cwd: str | None = None) -> None:
        """Show a call. ``preview`` is the wire-format dict (or its pydantic model) or ``None``,
        in which case one is derived from recognisable arguments."""
        self._content = (tool, args, preview, cwd)
        self._awaiting_paint = True
        self._files = []
        self._folded = {}
        self._fold_later = None
        self._known = False
        self._change_cache = {}
        preview_dict = _as_dict(preview)
        derived = False
        if preview_dict is None:
            preview_dict = preview_for(tool, args, cwd=cwd) if isinstance(args, Mapping) else None
            derived = preview_dict is not None
        warnings: list[str] = []
        serious = False
        kind = preview_dict.get("kind") if preview_dict else None
        suffix = " (derived from the arguments)" if derived else ""
        if kind in ("diff", "file_write"):
            assert preview_dict is not None
            try:
                self._files = from_preview(preview_dict, stream_over=STREAM_OVER_LINES)
            except (ValueError, TypeError, AttributeError):
                self._files = []
            self._change_at = -1
            self._show_main(self.diff_page, _diff_caption(self._files) + suffix)
            self._render_diff()
        else:
            self.rendering.clear("")  # a diff shown before is not drawn on in the background
        if kind == "command":
            assert preview_dict is not None
            command = preview_dict.get("command")
            if command is None:
                command = preview_dict.get("argv") or []
            run_in = preview_dict.get("cwd") or cwd
            page, found = command_html.render_command_html(command, run_in)
            self.command_browser.setHtml(page)
            warnings.extend(found)
            text = command if isinstance(command, str) else " ".join(map(str, command))
            serious = serious or bool(reveal(text).kinds - MILD_KINDS) or any(
                w.startswith("working directory") for w in found)
            self._show_main(self.command_browser, "Command" + suffix + _hidden_danger(text))
        elif kind == "text":
            assert preview_dict is not None
            found = self._show_text(str(preview_dict.get("text") or ""), preview_dict.get("format"))
            warnings.extend(found)
            serious = serious or bool(found)
            markdown = " (Markdown, shown as plain text)" if preview_dict.get("format") == "markdown" else ""
            self._show_main(self.text_browser, "Text" + markdown + suffix)
        elif kind not in ("diff", "file_write"):
            self.main.hide()
        self._args = args
        self.args_covered = derived and isinstance(args, Mapping) and covers_every_argument(kind, tool, args)
        self._render_args(limited=True)
        self.args_toggle.setChecked(not self.args_covered)
        self._args_toggled(not self.args_covered)
        # The arguments usually repeat the preview (a command's string): say it once.
        self._warnings_besides_diff = (warnings, serious)
        self._diff_known()

    def clear(self) -> None:
        """Show nothing and stop drawing (the window closed): a long diff nobody sees is not rendered on."""
        self._content = None
        self._files, self._folded, self._fold_later, self._change_cache = [], {}, None, {}
        self._known = True
        self.rendering.clear("")
        self.command_browser.setHtml("")
        self.text_browser.setHtml("")
        self.args_browser.setHtml("")

    def is_known(self) -> bool:
        """Whether what is shown is known to its end: a long diff diffed, its warnings and counts said.
        Until then nobody may approve it (the dialog keeps Allow locked)."""
        return self._known

    def _diffed_to_end(self) -> None:
        """A long diff is diffed to its end (said once per content): fold the hunks found since
        "Fold all", then say the summary and the warnings."""
        if self._fold_later is not None:
            later, self._fold_later = self._fold_later, None
            grown = False
            for index, diff in enumerate(self._files):
                new = set(range(later.get(index, 0), len(diff.hunks)))
                if new:
                    self._folded.setdefault(index, set()).update(new)
                    grown = True
            if grown:
                self._render_diff(keep_scroll=True)
        self._diff_known()

    def _diff_known(self) -> None:
        """The diff's summary, file list and change count, and every warning: once the diff is
        known to its end (at once for most; when a long one is diffed, again with the rest).
        All from the whole diff, never from the rows drawn or unfolded."""
        warnings, serious = list(self._warnings_besides_diff[0]), self._warnings_besides_diff[1]
        self._known = all(diff.complete for diff in self._files)
        if self._files:
            if self._known:
                for diff in self._files:
                    found = diff_html.diff_warnings(diff)
                    warnings.extend(found)
                    serious = serious or bool(found)
            self._summarise_diff()
        # The arguments usually repeat the preview (a command's string): say it once.
        found_in_args = [w for w in text_html.json_warnings(self._args)
                         if w.removeprefix("arguments: ") not in warnings]
        warnings.extend(found_in_args)
        serious = serious or bool(found_in_args)
        self._set_warnings(list(dict.fromkeys(warnings)), serious)

    def _summarise_diff(self) -> None:
        known = self._known
        self.file_list.clear()
        counted = [(diff.added, diff.removed) if known else (0, 0) for diff in self._files]  # (each counts every line)
        for diff, (added, removed) in zip(self._files, counted, strict=True):
            counts = f"+{added} −{removed}" if known else "+… −…"
            self.file_list.addItem(f"{reveal(diff.path or '(unnamed file)').text}  {counts}")
        self.file_list.setVisible(len(self._files) > 1)
        if not known:
            self.diff_summary.setText("diffing…")
            self.diff_summary.setToolTip("a long diff: its first lines are shown while the rest is diffed")
            self.change_label.setText("")
            return
        hunks = sum(len(d.hunks) for d in self._files)
        changes = count_changes(self._files)
        changed = sum(added + removed for added, removed in counted)
        self.diff_summary.setText(
            f"{changes} change{'s' if changes != 1 else ''} ({changed:,} line{'s' if changed != 1 else ''}) · "
            f"{hunks} hunk{'s' if hunks != 1 else ''}" if hunks else "")
        self.diff_summary.setToolTip(f"{changed:,} changed lines in {changes} changes, {hunks} hunks")
        self._update_change_label()

    def warnings(self) -> list[str]:
        return list(self._warnings)

    def mode(self) -> diff_html.Mode:
        return self._mode

    def set_mode(self, mode: diff_html.Mode) -> None:
        """Unified or side-by-side; keeps the hunks folded as they were."""
        if mode == self._mode:
            return
        self._mode = mode
        (self.split_button if mode == "split" else self.unified_button).setChecked(True)
        self._render_diff()

    def toggle_fold(self, file_index: int, hunk: int) -> None:
        folded = self._folded.setdefault(file_index, set())
        folded.symmetric_difference_update({hunk})
        self._render_diff(keep_scroll=True)

    def fold_all(self) -> None:
        """Fold every hunk; while a long diff is diffed, those found later too (when it is known)."""
        self._folded = {i: set(range(len(diff.hunks))) for i, diff in enumerate(self._files)}
        self._fold_later = None if self._known else {i: len(diff.hunks) for i, diff in enumerate(self._files)}
        self._render_diff()

    def unfold_all(self) -> None:
        self._folded = {}
        self._fold_later = None
        self._render_diff()

    def is_rendering(self) -> bool:
        return self.rendering.is_rendering()

    @property
    def rows_rendered(self) -> int:
        return self.rendering.rows_rendered

    def total_rows(self) -> int:
        """The rows of the diff (so far, while a long one is still being diffed)."""
        return self.rendering.total_rows()

    # -- moving through a long change -----------------------------------------------------------

    def change_rows(self) -> list[int]:
        """The row (over all files, as rendered now) where each run of changed lines starts."""
        self.rendering.finish_diffing()
        key = (self._mode, tuple(sorted((i, tuple(sorted(f))) for i, f in self._folded.items())), id(self._files))
        cached = self._change_cache.get(key)
        if cached is not None:
            return cached
        starts: list[int] = []
        offset = 0
        for index, diff in enumerate(self._files):
            rows = self.rendering.rows(index)
            hunk_lines = [hunk.plain_lines for hunk in diff.hunks]
            previous = False
            for number, row in enumerate(rows):  # (10,000 rows of a long diff: kept to plain tests)
                changed = False
                if row.kind == "line" or row.kind == "pair":
                    lines = hunk_lines[row.hunk]
                    changed = ((row.left is not None and lines[row.left].kind != "context")
                               or (row.right is not None and lines[row.right].kind != "context"))
                if changed and not previous:
                    starts.append(offset + number)
                previous = changed
            offset += len(rows)
        self._change_cache = {key: starts}  # one entry: the files or folds of the last render
        return starts

    def file_rows(self) -> list[int]:
        """The row where each file's header is."""
        return self.rendering.file_offsets()

    def jump_change(self, step: int) -> int | None:
        """Scroll to the next (step 1) or previous (-1) change; returns its index, None without changes."""
        if self.pages.currentWidget() is not self.diff_page or self.main.isHidden():
            return None
        rows = self.change_rows()
        if not rows:
            return None
        if self._change_at >= 0:
            self._change_at = (self._change_at + step) % len(rows)
        else:
            self._change_at = 0 if step > 0 else len(rows) - 1
        self.scroll_to_row(rows[self._change_at])
        self._update_change_label()
        return self._change_at

    def jump_file(self, index: int) -> None:
        rows = self.file_rows()
        if 0 <= index < len(rows):
            self.scroll_to_row(rows[index])

    def scroll_to_row(self, row: int) -> None:
        """Bring a row to the top of the diff view (drawing a screen from it first if needed)."""
        found = self.rendering.ensure_rendered(row)
        if found is None:
            return
        table, at = found
        cursor = table.cellAt(at, 0).firstCursorPosition()
        bar = self.diff_browser.verticalScrollBar()
        bar.setValue(bar.value() + self.diff_browser.cursorRect(cursor).top() - 4)

    def _update_change_label(self) -> None:
        count = len(self.change_rows()) if self._files else 0
        place = f"{self._change_at + 1} of {count}" if self._change_at >= 0 else f"{count}"
        self.change_label.setText(f"change {place}" if count else "")
        for button in (self.previous_change, self.next_change):
            button.setEnabled(count > 0)

    # -- diff rendering -------------------------------------------------------------------------

    def _render_diff(self, keep_scroll: bool = False) -> None:
        self._change_at = -1  # rows moved (mode, folds): start from the top again
        if not self._files:
            self.rendering.clear("<p><i>This diff preview could not be read.</i></p>")
        else:
            self.rendering.start(self._files, self._mode, self._folded, keep_scroll)
        has_hunks = any(diff.hunks for diff in self._files)  # a long diff has its first by now, if any
        for button in (self.unified_button, self.split_button, self.fold_button, self.unfold_button):
            button.setEnabled(has_hunks)
        if self._known:
            self._update_change_label()
        else:
            for button in (self.previous_change, self.next_change):
                button.setEnabled(True)  # n and p finish the diffing first

    def _diff_link(self, url: QUrl) -> None:
        parts = url.toString().split(":")
        if len(parts) == 3 and parts[0] == "hunk" and parts[1].isdigit() and parts[2].isdigit():
            self.toggle_fold(int(parts[1]), int(parts[2]))
        elif len(parts) == 4 and parts[0] == "line" and all(part.isdigit() for part in parts[1:]):
            self.show_whole_line(int(parts[1]), int(parts[2]), int(parts[3]))

    def show_whole_line(self, file_index: int, hunk: int, index: int) -> None:
        """A line too long for its row, all of it, wrapped, hidden characters shown as markers."""
        if not (0 <= file_index < len(self._files) and 0 <= hunk < len(self._files[file_index].hunks)):
            return
        lines = self._files[file_index].hunks[hunk].plain_lines
        if not 0 <= index < len(lines):
            return
        line = lines[index]
        number = line.old_no if line.kind == "del" else line.new_no
        side = {"del": "old", "add": "new"}.get(line.kind, "")
        title = f"{reveal(self._files[file_index].path or 'the diff').text}, {side} line {number}".replace(" ,", ",")
        self.whole_line = WholeLine(title, reveal(line.text, multiline=True, spaces=False).text, self)
        self.whole_line.show()

    # -- other pages ----------------------------------------------------------------------------

    def _show_main(self, page: QWidget, caption: str) -> None:
        # Only the page in view counts for the minimum size: a command must not be as tall as a diff.
        for index in range(self.pages.count()):
            other = self.pages.widget(index)
            assert other is not None  # below the count
            policy = QSizePolicy.Policy.Preferred if other is page else QSizePolicy.Policy.Ignored
            other.setSizePolicy(policy, policy)
        self.pages.setCurrentWidget(page)
        self.caption.setText(caption)
        self.diff_summary.setVisible(page is self.diff_page)
        self.main.show()

    def _show_text(self, text: str, text_format: Any) -> tuple[str, ...]:
        """The agent's text as it wrote it: Markdown is shown as plain text, never rendered, so a
        heading such as "# ✔ Safe — approved by policy" cannot pass for the app's own verdict."""
        page, found = text_html.render_text_html(text)
        self.text_browser.setHtml(page)
        return found

    def _render_args(self, *, limited: bool) -> None:
        """The arguments as JSON; long string values are cut (and counted) until "Show all"."""
        value, self._cut_chars = cut_long_strings(self._args, LONG_STRING) if limited else (self._args, 0)
        page = text_html.render_json_html(value, max_lines=JSON_MAX_LINES if limited else None,
                                          max_chars=JSON_MAX_CHARS if limited else None)
        if self._cut_chars and "json:show-all" not in page:
            page += (f'<p style="font-style:italic">… long values cut ({self._cut_chars:,} characters not shown) — '
                     f'<a href="json:show-all">Show all</a></p>')
        self.args_browser.setHtml(page)
        lines = text_html.pretty_json(value).count("\n") + 1 + (1 if self._cut_chars else 0)
        self._json_lines = min(JSON_FIT_LINES, lines)

    def _args_link(self, url: QUrl) -> None:
        if url.toString() == "json:show-all":
            self._render_args(limited=False)

    def _args_toggled(self, shown: bool) -> None:
        self.args_browser.setVisible(shown)
        arrow = "▾" if shown else "▸"
        note = " — every one is shown above" if self.args_covered else ""
        self.args_toggle.setText(f"{arrow} Arguments{note}")
        self.args_box.setMaximumHeight(16777215 if shown else self.args_toggle.sizeHint().height() + 4)
        self.updateGeometry()

    # -- size -----------------------------------------------------------------------------------

    def sizeHint(self) -> QSize:
        """As big as the content, within reason: a one-line command asks for a few lines, not a page."""
        metrics = QFontMetricsF(self.command_browser.font())
        line = metrics.lineSpacing()
        char = metrics.horizontalAdvance("m")
        page = self.pages.currentWidget()
        columns = 60
        if not self.main.isHidden():
            if page is self.diff_page:
                rows = min(DIFF_FIT_ROWS, max(3, self.total_rows()))
                main = rows * (line + 3) + self.unified_button.sizeHint().height() + 8
                # The first hunks are enough to judge the width (and the only ones marked up yet).
                widest = max((len(text) for diff in self._files[:3] for hunk in diff.hunks[:3]
                              for text in _hunk_texts(hunk)), default=60)
                columns = min(120, widest + 14) * (2 if self._mode == "split" else 1)
            else:
                browser = self.command_browser if page is self.command_browser else self.text_browser
                text = browser.toPlainText()
                lines = text.split("\n")
                columns = max(40, min(110, max((len(t) for t in lines), default=40) + 4))
                wrapped = sum(max(1, -(-len(t) // columns)) for t in lines)
                main = min(TEXT_FIT_LINES, wrapped) * line + 16
            main += self.caption.sizeHint().height()
        else:
            main = 0
        args = self.args_toggle.sizeHint().height() + 6
        if self.args_browser.isVisibleTo(self):
            args += int(self._json_lines * line) + 16
        warnings = self.warning_bar.sizeHint().height() if not self.warning_bar.isHidden() else 0
        width = int(max(MIN_FIT_WIDTH, min(MAX_FIT_WIDTH, columns * char + 40)))
        return QSize(width, int(main + args + warnings + 12))

    def _set_warnings(self, warnings: list[str], serious: bool) -> None:
        self._warnings = warnings
        if warnings:
            self.warning_bar.setText("\n".join(f"⚠ {w}" for w in warnings))
            styles = _DARK_WARN_STYLE if theme.is_dark() else _WARN_STYLE
            self.warning_bar.setStyleSheet(styles["danger" if serious else "caution"])
            self.warning_bar.setProperty("severity", "danger" if serious else "caution")
            self.warning_bar.show()
        else:
            self.warning_bar.hide()
        self.warnings_changed.emit(list(warnings))

    def _painted(self, browser: CodeBrowser) -> None:
        """The first paint of the pane that shows the new content (the arguments when nothing else)."""
        shown = self.args_browser if self.main.isHidden() else self.pages.currentWidget()
        if shown is self.diff_page:
            shown = self.diff_browser
        if self._awaiting_paint and browser is shown:
            self._awaiting_paint = False
            self.first_paint_done.emit()


def count_changes(files: list[FileDiff]) -> int:
    """The runs of changed lines over the whole diff (a run per hunk at least): what n/p step
    through when nothing is folded, whatever is folded now."""
    count = 0
    for diff in files:
        for hunk in diff.hunks:
            previous = False
            for line in hunk.plain_lines:
                changed = line.kind != "context"
                if changed and not previous:
                    count += 1
                previous = changed
    return count


def cut_long_strings(value: Any, limit: int) -> tuple[Any, int]:
    """``value`` with every string longer than ``limit`` cut short; and how many characters were cut."""
    cut = 0

    def walk(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, str) and len(item) > limit:
            cut += len(item) - limit
            return item[:limit] + f"… [{len(item) - limit:,} more characters]"
        if isinstance(item, Mapping):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        return item

    return walk(value), cut


def covers_every_argument(kind: Any, tool: str, args: Mapping[str, Any]) -> bool:
    """Whether a preview derived from ``args`` already shows each of them (then the JSON can fold)."""
    name = normalise_tool_name(tool)
    for recognised in RECOGNISED.values():
        if name in recognised["tools"]:
            shown = {arg for key, names in recognised.items() if key != "tools" for arg in names}
            return bool(args) and set(args) <= shown and kind is not None
    return False


def _hunk_texts(hunk: Any) -> list[str]:
    return [getattr(line, "text", "") for line in getattr(hunk, "plain_lines", [])]  # (no changed words: they cost)


def _as_dict(preview: Any) -> dict[str, Any] | None:
    if preview is None:
        return None
    if isinstance(preview, Mapping):
        return dict(preview)
    dump = getattr(preview, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump()  # a pydantic model's model_dump()
        return dumped
    return None


def _hidden_danger(command: str) -> str:
    """A word in the caption when a destructive part of a long command starts below its first lines."""
    far = [part for part in dangerous_parts(command) if part.level == "destructive" and part.start > FAR_IN_COMMAND]
    if not far:
        return ""
    return f" · ⚠ further down, marked in red: {shorten(one_line(far[0].text), 40)}"


def _diff_caption(files: list[FileDiff]) -> str:
    if not files:
        return "Diff"
    if len(files) == 1:
        diff = files[0]
        verb = {"added": "New file", "deleted": "Deleted file", "binary": "Binary change to"}.get(
            diff.status, "Change to")
        return f"{verb} {reveal(diff.path or '(unnamed file)').text}"
    return f"Changes to {len(files)} files"
