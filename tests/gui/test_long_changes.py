"""Long changes: n / p move between changes, a file list for multi-file patches, the count of changes."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt

from desktop_approver import Client, previews
from desktop_approver.gui.preview_view import PreviewView
from tests.gui.conftest import wait_for

OLD = "".join(f"line {i}\n" for i in range(500))
NEW = "".join(f"line {i} edited\n" if i % 25 == 3 else f"line {i}\n" for i in range(500))


def rendered(view: PreviewView, qtbot: Any) -> None:
    qtbot.waitUntil(lambda: not view.is_rendering(), timeout=20000)


def test_changes_are_counted_and_n_p_move_between_them(qtbot: Any) -> None:
    view = PreviewView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.show()
    view.set_content("write_file", {"path": "a.txt"}, previews.diff("a.txt", OLD, NEW))
    rendered(view, qtbot)
    assert len(view.change_rows()) == 20
    assert view.diff_summary.text() == "20 changes (40 lines) · 20 hunks"
    assert view.change_label.text() == "change 20"
    bar = view.diff_browser.verticalScrollBar()
    positions = []
    for expected in range(3):
        assert view.jump_change(1) == expected
        positions.append(bar.value())
    assert positions == sorted(positions) and positions[0] < positions[1] < positions[2]
    assert view.change_label.text() == "change 3 of 20"
    assert view.jump_change(-1) == 1 and bar.value() == positions[1]
    assert view.jump_change(-1) == 0 and view.jump_change(-1) == 19  # wraps round
    view.set_mode("split")
    rendered(view, qtbot)
    assert len(view.change_rows()) == 20 and view.change_label.text() == "change 20"
    assert view.jump_change(1) == 0


def test_rows_of_the_document_match_the_rendered_rows(qtbot: Any) -> None:
    from PySide6.QtGui import QTextTable

    view = PreviewView()
    qtbot.addWidget(view)
    view.set_content("write_file", {"path": "a.txt"}, previews.diff("a.txt", OLD, NEW))
    rendered(view, qtbot)
    tables = [f for f in view.diff_browser.document().rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert sum(table.rows() for table in tables) == view.total_rows()


def test_a_multi_file_patch_has_a_file_list_that_jumps(qtbot: Any) -> None:
    patch = "".join(f"--- a/f{n}.py\n+++ b/f{n}.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" for n in range(6))
    view = PreviewView()
    qtbot.addWidget(view)
    view.resize(800, 200)
    view.show()
    view.set_content("apply_patch", {"patch": patch}, {"kind": "diff", "unified": patch})
    rendered(view, qtbot)
    assert not view.file_list.isHidden() and view.file_list.count() == 6
    assert view.file_list.itemText(4) == "f4.py  +1 −1"
    view.jump_file(5)
    assert view.diff_browser.verticalScrollBar().value() > 0
    single = PreviewView()
    qtbot.addWidget(single)
    single.set_content("write_file", {"path": "a"}, previews.diff("a", "x\n", "y\n"))
    assert single.file_list.isHidden()


def test_n_in_the_dialog_jumps_and_in_the_note_it_types(approver: Any, run: Any, qtbot: Any) -> None:
    dialog = approver.dialog

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="t")
        answer = asyncio.get_running_loop().run_in_executor(None, lambda: client.request(
            "write_file", {"path": "a.txt", "content": NEW}, preview=previews.diff("a.txt", OLD, NEW)))
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        preview = dialog.review.preview
        qtbot.keyClick(dialog, Qt.Key.Key_N)
        qtbot.keyClick(dialog, Qt.Key.Key_N)
        assert preview.change_label.text() == "change 2 of 20"
        qtbot.keyClick(dialog, Qt.Key.Key_P)
        assert preview.change_label.text() == "change 1 of 20"
        dialog.review.note.setFocus()
        qtbot.keyClicks(dialog.review.note, "no pe")
        assert dialog.review.note.text() == "no pe" and preview.change_label.text() == "change 1 of 20"
        dialog.deny.click()
        await answer

    run(scenario())
