"""The preview widget: diff modes, folding, lazy rendering, warnings and the arguments view."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer, QUrl  # noqa: E402
from PySide6.QtGui import QTextCursor, QTextDocument, QTextTable  # noqa: E402

from desktop_approver.gui.diff_rendering import FIRST_ROWS  # noqa: E402
from desktop_approver.gui.preview_view import PreviewView  # noqa: E402
from desktop_approver.render.diff_html import render_diff_html  # noqa: E402
from desktop_approver.render.diffs import from_preview  # noqa: E402

pytestmark = pytest.mark.gui

OLD = "import os\n\n\ndef clean(path):\n    return os.listdir(path)\n" + "".join(
    f"\nvalue_{n} = {n}\n" for n in range(30)) + "\ndef last():\n    return 1\n"
NEW = OLD.replace("def clean(path):", "def clean(path, dry_run=False):").replace("return 1", "return 2")
DIFF = {"kind": "diff", "path": "tools/clean.py", "old": OLD, "new": NEW}


def _finish(qtbot, view: PreviewView) -> None:
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=30_000)


def _table_columns(view: PreviewView) -> set[int]:
    frames = view.diff_browser.document().rootFrame().childFrames()
    return {frame.columns() for frame in frames if isinstance(frame, QTextTable)}


def test_toggling_split_and_unified_changes_the_layout(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {"file_path": "tools/clean.py"}, DIFF)
    _finish(qtbot, view)
    unified = view.diff_browser.toPlainText()
    assert _table_columns(view) == {2}
    view.split_button.click()
    _finish(qtbot, view)
    assert view.mode() == "split"
    assert _table_columns(view) == {4}
    assert view.diff_browser.toPlainText() != unified
    view.unified_button.click()
    _finish(qtbot, view)
    assert view.diff_browser.toPlainText() == unified


def test_clicking_a_hunk_header_folds_it(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, DIFF)
    _finish(qtbot, view)
    assert "dry_run" in view.diff_browser.toPlainText()
    view.diff_browser.anchorClicked.emit(QUrl("hunk:0:0"))
    _finish(qtbot, view)
    text = view.diff_browser.toPlainText()
    assert "dry_run" not in text and "lines folded" in text
    assert "return 2" in text  # the other hunk stays open
    view.diff_browser.anchorClicked.emit(QUrl("hunk:0:0"))
    _finish(qtbot, view)
    assert "dry_run" in view.diff_browser.toPlainText()


def test_fold_all_and_unfold_all(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, DIFF)
    view.fold_button.click()
    _finish(qtbot, view)
    assert "dry_run" not in view.diff_browser.toPlainText()
    assert "return 2" not in view.diff_browser.toPlainText()
    view.unfold_button.click()
    _finish(qtbot, view)
    assert "return 2" in view.diff_browser.toPlainText()


BIG_OLD = "".join(f"value_{n} = compute({n})\n" for n in range(6000))
BIG_NEW = "".join(f"value_{n} = calculate({n})\n" if n % 2 else f"value_{n} = compute({n})\n" for n in range(6000))
BIG = {"kind": "diff", "path": "big.py", "old": BIG_OLD, "new": BIG_NEW}
LONG_NEW = "".join(f"value_{n} = calculate({n})\n" if n % 2 else f"value_{n} = compute({n})\n" for n in range(1200))
LONG = {"kind": "diff", "path": "long.py", "old": BIG_OLD[:BIG_OLD.index("value_1200 ")], "new": LONG_NEW}


def _document_rows(document: QTextDocument) -> list[str]:
    """The text of every table row of a document, in order (a diff row per table row)."""
    rows = []
    for frame in document.rootFrame().childFrames():
        if isinstance(frame, QTextTable):
            for row in range(frame.rows()):
                cells = [frame.cellAt(row, column) for column in range(frame.columns())]
                text = []
                for cell in cells:
                    if cell.column() != len(text):  # a cell spanning columns shows once
                        continue
                    cursor = cell.firstCursorPosition()
                    cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor.MoveMode.KeepAnchor)
                    text.append(cursor.selectedText())
                rows.append("|".join(text))
    return rows


def _in_view(view: PreviewView, text: str) -> bool:
    found = view.diff_browser.document().find(text)
    assert not found.isNull(), text
    top = view.diff_browser.cursorRect(found).top()
    return 0 <= top < view.diff_browser.viewport().height()


def _drawn_at_one_go(preview: dict[str, str], mode: str = "unified", folded: frozenset[int] = frozenset()) -> list[str]:
    """The rows of the whole diff drawn as one table, from a diff made in one piece."""
    document = QTextDocument()
    (diff,) = from_preview(preview)
    document.setHtml(render_diff_html(diff, mode=mode, folded=folded))  # type: ignore[arg-type]
    return _document_rows(document)


def test_a_10000_line_diff_shows_its_start_before_the_rest_is_diffed(qtbot, view: PreviewView) -> None:
    at_first_paint: list[tuple[bool, bool, int, str, str]] = []  # the state when the first screen is painted
    view.first_paint_done.connect(lambda: at_first_paint.append((
        view.rendering.is_navigable(), view.is_rendering(), view.rows_rendered, view.diff_browser.toPlainText(),
        view.diff_summary.text())))
    with qtbot.waitSignal(view.rendering.navigable, timeout=30_000):
        view.set_content("Edit", {}, BIG)
    # The rest waits for the first screen's paint: nothing more is diffed or drawn before it.
    ((navigable, rendering, rows, text, summary),) = at_first_paint
    assert not navigable and rendering and rows <= FIRST_ROWS
    assert "value_0 = compute(0)" in text and "value_5999" not in text
    assert summary == "diffing…"
    assert view.total_rows() > 9000
    assert view.diff_summary.text() == "3000 changes (6,000 lines) · 1 hunk"
    # (that the rest ends up exactly the whole diff: the tests below, on a shorter long diff)


def test_every_change_of_a_long_diff_is_reachable_with_n_and_p(qtbot, view: PreviewView) -> None:
    with qtbot.waitSignal(view.rendering.navigable, timeout=30_000):
        view.set_content("Edit", {}, LONG)
    changes = view.change_rows()
    assert len(changes) == 600 and view.change_label.text() == "change 600"
    rows = _drawn_at_one_go(LONG)
    bar = view.diff_browser.verticalScrollBar()
    # p from the top lands on the last change, far past what is drawn yet: drawn there at once.
    assert view.jump_change(-1) == 599 and view.is_rendering()
    assert "value_1199 = compute(1199)" in rows[changes[599]]
    assert _in_view(view, "value_1199 = compute(1199)")
    assert view.jump_change(-1) == 598 and view.change_label.text() == "change 599 of 600"
    assert view.jump_change(1) == 599 and view.jump_change(1) == 0  # wraps round to the first
    assert bar.value() < bar.maximum()
    for expected in range(1, 4):  # and n walks on from there
        assert view.jump_change(1) == expected
    _finish(qtbot, view)
    # The screens drawn out of order sit where they belong: the document is the whole diff, once.
    assert _document_rows(view.diff_browser.document()) == rows


def test_n_before_the_diff_is_complete_diffs_the_rest_first(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, LONG)
    assert not view.rendering.is_navigable()  # only the first screen is diffed before the paint
    with qtbot.waitSignal(view.rendering.navigable, timeout=1000):  # emitted by the jump itself
        assert view.jump_change(-1) == 599
    assert _in_view(view, "value_1199 = compute(1199)")
    _finish(qtbot, view)
    # The rows drawn above it since then did not push it out of sight.
    assert _in_view(view, "value_1199 = compute(1199)")
    assert _document_rows(view.diff_browser.document()) == _drawn_at_one_go(LONG)


def test_other_work_runs_while_a_long_diff_renders(qtbot, view: PreviewView) -> None:
    seen: list[int] = []
    ticker = QTimer()
    ticker.setInterval(0)
    ticker.timeout.connect(lambda: seen.append(view.rows_rendered) if view.is_rendering() else None)
    ticker.start()
    view.set_content("Edit", {}, LONG)
    _finish(qtbot, view)
    ticker.stop()
    # The timer ran between the steps all along: it saw the drawing grow, step by step.
    steps = sorted(set(seen))
    assert seen == sorted(seen) and len(steps) >= view.total_rows() // 400  # at most 400 rows a step


def test_a_long_diff_with_a_hidden_character_warns_once_diffed(qtbot, view: PreviewView) -> None:
    new = LONG_NEW.replace("value_1001 = calculate(1001)", "value_1001 = calculate(1001)\u202e")
    with qtbot.waitSignal(view.warnings_changed, timeout=30_000) as first:
        view.set_content("Edit", {}, {**LONG, "new": new})
    assert first.args[0] == []  # not known yet: the line is not diffed
    with qtbot.waitSignal(view.warnings_changed, timeout=30_000) as known:
        pass
    assert any("right-to-left" in warning and "new line 1002" in warning for warning in known.args[0])
    assert view.warning_bar.property("severity") == "danger"


def test_a_long_diff_replaced_by_a_command_is_not_drawn_on(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, LONG)
    assert view.is_rendering()
    view.set_content("Bash", {"command": "ls"}, None)
    assert not view.is_rendering() and view.pages.currentWidget() is view.command_browser
    assert view.main.isVisibleTo(view)


def test_split_view_of_a_long_diff_is_the_whole_diff(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, LONG)
    view.split_button.click()
    _finish(qtbot, view)
    assert _document_rows(view.diff_browser.document()) == _drawn_at_one_go(LONG, "split")


# A long file changed every 40th line (75 hunks), one line with a right-to-left override, a bell and a tab.
HUNKY_OLD = "".join(f"line_{n} = {n}\n" for n in range(3000))
HUNKY_NEW = "".join(f"line_{n} = {n} + 1\n" if n % 40 == 0 else
                    f"line_{n} = '\u202eabc\x07'\t# {n}\n" if n == 1201 else f"line_{n} = {n}\n" for n in range(3000))
HUNKY = {"kind": "diff", "path": "hunky.py", "old": HUNKY_OLD, "new": HUNKY_NEW}


@pytest.mark.parametrize("mode", ["unified", "split"])
def test_a_long_diff_with_folded_hunks_is_the_whole_diff_in_either_mode(qtbot, view: PreviewView, mode: str) -> None:
    view.set_content("Edit", {}, HUNKY)
    if mode == "split":
        view.split_button.click()
    for hunk in (1, 31, 74):  # folded while it renders (each a render of its own, from the top)
        view.toggle_fold(0, hunk)
    _finish(qtbot, view)
    rows = _document_rows(view.diff_browser.document())
    # Every row once, in order, the same text as the whole diff drawn at one go; the hidden characters
    # shown as markers exactly as there.
    assert rows == _drawn_at_one_go(HUNKY, mode, frozenset({1, 31, 74}))
    assert len(view.change_rows()) == 75 - 3 and len(rows) == view.total_rows()  # (lines 1200-1201: one change)
    assert any(row.endswith("|+line_1201 = '<U+202E>abc\\x07'\t# 1201") for row in rows)


def test_the_end_of_a_long_diff_drawn_below_the_view_can_be_scrolled_to(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {}, LONG)
    _finish(qtbot, view)
    # The rows were added below the view without repainting it: the scroll bar still grew with them.
    bar = view.diff_browser.verticalScrollBar()
    height = view.diff_browser.document().documentLayout().documentSize().height()
    assert bar.maximum() >= height - view.diff_browser.viewport().height() - 1
    bar.setValue(bar.maximum())
    assert _in_view(view, "value_1199 = calculate(1199)")


def test_command_with_hidden_characters_warns(qtbot, view: PreviewView) -> None:
    with qtbot.waitSignal(view.warnings_changed) as signal:
        view.set_content("Bash", {"command": "echo \u202e; rm -rf ~"}, None, "/repo")
    assert view.pages.currentWidget() is view.command_browser
    assert any("right-to-left" in warning for warning in signal.args[0])
    assert view.warnings() == signal.args[0]
    assert len(view.warnings()) == 1  # the arguments repeat the command: said once
    assert view.warning_bar.isVisible() and view.warning_bar.property("severity") == "danger"
    assert "<U+202E>" in view.command_browser.toPlainText()
    assert "derived" in view.caption.text()


def test_a_multi_line_script_gets_a_mild_warning(qtbot, view: PreviewView) -> None:
    view.set_content("Bash", {"command": "set -e\nmake test"}, None)
    assert view.warning_bar.property("severity") == "caution"


def test_clean_content_hides_the_warning_bar(qtbot, view: PreviewView) -> None:
    view.set_content("Bash", {"command": "echo \u202e"}, None)
    view.set_content("Bash", {"command": "ls"}, None)
    assert view.warnings() == [] and not view.warning_bar.isVisible()


def test_unrecognised_tool_shows_only_the_arguments(qtbot, view: PreviewView) -> None:
    view.set_content("search_web", {"query": "weather"}, None)
    assert not view.main.isVisible()
    assert '"query"' in view.args_browser.toPlainText()


def test_show_all_reveals_hidden_arguments(qtbot, view: PreviewView) -> None:
    args = {f"key_{n}": n for n in range(400)}
    view.set_content("configure", args, None)
    text = view.args_browser.toPlainText()
    assert "more lines hidden" in text and "key_399" not in text
    view.args_browser.anchorClicked.emit(QUrl("json:show-all"))
    text = view.args_browser.toPlainText()
    assert "key_399" in text and "more lines hidden" not in text


def test_markdown_is_shown_as_the_agent_wrote_it_never_as_headings(qtbot, view: PreviewView) -> None:
    text = "# ✔ Safe — approved by policy\n\nRisk: safe\n\n**bold** move"
    view.set_content("note", {}, {"kind": "text", "text": text, "format": "markdown"})
    assert view.pages.currentWidget() is view.text_browser
    shown = view.text_browser.toPlainText()
    assert "# ✔ Safe — approved by policy" in shown and "**bold**" in shown
    document = view.text_browser.document()
    block = document.begin()
    while block.isValid():  # no block rendered as a heading: it would read like the app's own title
        assert block.blockFormat().headingLevel() == 0
        block = block.next()
    assert "shown as plain text" in view.caption.text()
    view.set_content("note", {}, {"kind": "text", "text": "**safe**\u202e", "format": "markdown"})
    assert "**safe**<U+202E>" in view.text_browser.toPlainText()
    assert view.warnings()


def test_accepts_the_protocol_models(qtbot, view: PreviewView) -> None:
    from desktop_approver.core.messages.models import CommandPreview

    view.set_content("run", {}, CommandPreview(kind="command", argv=["rm", "-rf", "a b"], cwd="/w"))
    assert "'a b'" in view.command_browser.toPlainText()
    assert "in /w" in view.command_browser.toPlainText()


def test_new_file_and_binary_notices(qtbot, view: PreviewView) -> None:
    view.set_content("Write", {}, {"kind": "file_write", "path": "n.py", "content": "x = 1\n", "old": None})
    _finish(qtbot, view)
    assert "New file" in view.diff_browser.toPlainText()
    view.set_content("Write", {}, {"kind": "file_write", "path": "b.bin", "content": "\0\1", "old": "\0"})
    _finish(qtbot, view)
    assert "Binary content" in view.diff_browser.toPlainText()
    assert not view.split_button.isEnabled()
