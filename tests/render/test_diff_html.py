"""HTML for diffs: rows, colours, changed words, folds, ranges, lazy highlighting."""

from __future__ import annotations

import html
import re

from pygments.token import Keyword

from desktop_approver.render import diff_html, highlight
from desktop_approver.render.diffs import from_texts, parse_unified

OLD_PY = '''import os


def clean(path):
    """Remove build output."""
    for name in os.listdir(path):
        os.remove(name)
    return True
'''
NEW_PY = '''import os


def clean(path, dry_run=False):
    """Remove build output."""
    for name in os.listdir(path):
        os.remove(name)
    return False'''


def _python_diff():
    return from_texts("tools/clean.py", OLD_PY, NEW_PY)


def _cells(row_html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", row_html, flags=re.S)


def _rows(page: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", page, flags=re.S)


def test_keywords_carry_the_style_colour() -> None:
    page = diff_html.render_diff_html(_python_diff())
    assert f'<span style="{highlight.token_css(Keyword)}">def</span>' in page
    assert "color:#008000" in highlight.token_css(Keyword)


def test_added_and_removed_lines_have_their_backgrounds_and_changed_words() -> None:
    page = diff_html.render_diff_html(_python_diff())
    added = next(row for row in _rows(page) if "dry_run" in row)
    removed = next(row for row in _rows(page) if "True" in row)
    assert f'bgcolor="{highlight.ADD_BG}"' in added
    assert f'bgcolor="{highlight.DEL_BG}"' in removed
    assert f"background-color:{highlight.ADD_WORD}" in added  # ", dry_run=False" is marked
    assert re.search(rf"background-color:{highlight.DEL_WORD}\">True<", removed)


def test_line_numbers_on_both_sides() -> None:
    page = diff_html.render_diff_html(_python_diff())
    context = next(row for row in _rows(page) if "for</span> name" in row)
    assert html.unescape(_cells(context)[0]).split() == ["6", "6"]
    removed = next(row for row in _rows(page) if "True" in row)
    assert html.unescape(_cells(removed)[0]).split() == ["8"]
    added = next(row for row in _rows(page) if "False" in row and "dry_run" not in row)
    assert html.unescape(_cells(added)[0]).split() == ["8"]
    assert _cells(added)[0].index("8") > _cells(removed)[0].index("8")  # the new-side column


def test_notices_for_new_deleted_binary_and_missing_newline() -> None:
    assert "No newline at end of file" in diff_html.render_diff_html(_python_diff())
    added = diff_html.render_diff_html(from_texts("n.py", None, "x = 1\n"))
    assert "New file" in added and "(new file)" in added
    deleted = diff_html.render_diff_html(from_texts("d.py", "x = 1\n", None))
    assert "Deleted file" in deleted
    binary = diff_html.render_diff_html(from_texts("b.bin", "\0\1\2", "\0\1\3"))
    assert "Binary content" in binary and "\x00" not in binary


def test_split_view_puts_old_and_new_on_one_row() -> None:
    page = diff_html.render_diff_html(_python_diff(), mode="split")
    pair = next(row for row in _rows(page) if "dry_run" in row)
    cells = _cells(pair)
    assert len(cells) == 4
    assert cells[0].strip() == "4" and cells[2].strip() == "4"
    assert "dry_run" not in cells[1] and "dry_run" in cells[3]
    assert 'width="50%"' in pair


def test_split_view_fills_the_missing_side() -> None:
    diff = from_texts("a.txt", "a\n", "a\nb\nc\n")
    rows = [row for row in _rows(diff_html.render_diff_html(diff, mode="split")) if "bgcolor" in row]
    filler = [row for row in rows if f'bgcolor="{highlight.EMPTY_BG}"></td>' in row]
    assert len(filler) == 2


def test_folded_hunks_hide_their_lines() -> None:
    diff = _python_diff()
    page = diff_html.render_diff_html(diff, folded={0})
    assert "dry_run" not in page
    assert "lines folded" in page and 'href="hunk:0:0"' in page


def test_line_ranges_render_only_those_rows() -> None:
    diff = _python_diff()
    total = diff_html.row_count(diff)
    parts = [diff_html.render_diff_html(diff, line_range=(start, min(total, start + 3)))
             for start in range(0, total, 3)]
    assert sum(len(_rows(part)) for part in parts) == total
    assert len(_rows(diff_html.render_diff_html(diff, line_range=(0, 3)))) == 3


def test_a_10000_line_diff_is_highlighted_lazily() -> None:
    old_lines = [f"value_{n} = compute({n})\n" for n in range(10_000)]
    new_lines = [line.replace("compute(", "calculate(") if n % 10 == 0 else line
                 for n, line in enumerate(old_lines)]
    diff = from_texts("big.py", "".join(old_lines), "".join(new_lines))
    assert len(diff.hunks) == 1000 and diff_html.row_count(diff) > 8000
    page = diff_html.render_diff_html(diff, line_range=(0, 60))
    assert "value_0" in page and "value_5000" not in page
    assert diff_html.highlighter_for(diff).lines_tokenised < 200
    far = next(line for line in diff.hunks[500].plain_lines if line.kind == "del")
    assert far.intraline == []  # changed words are only computed for what was drawn
    assert next(line for line in diff.hunks[500].lines if line.kind == "del").intraline


def test_multiline_strings_are_coloured_in_file_context() -> None:
    old = 'x = """\nfirst\nsecond\n"""\n'
    new = 'x = """\nfirst\nchanged\n"""\n'
    page = diff_html.render_diff_html(from_texts("s.py", old, new))
    assert re.search(r'<span style="color:#ba2121[^"]*">changed</span>', page)


def test_unified_text_without_full_files_is_still_highlighted() -> None:
    (diff,) = parse_unified("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-import os\n+import sys\n")
    assert f'<span style="{highlight.token_css(Keyword.Namespace)}">import</span>' in diff_html.render_diff_html(diff)


def test_hidden_characters_in_code_are_markers_and_warnings() -> None:
    diff = from_texts("a.py", "ok = 1\n", 'access = "user\u202e \u2066// admin"\n')
    page = diff_html.render_diff_html(diff)
    assert '<span data-marker="1"' in page and "&lt;U+202E&gt;" in page
    (warning,) = diff_html.diff_warnings(diff)
    assert "a.py" in warning and "new line 1" in warning


def test_rows_drawn_in_pieces_make_the_same_table() -> None:
    diff = _python_diff()
    total = diff_html.row_count(diff)
    pieces = "".join(diff_html.render_diff_rows(diff, line_range=(start, min(total, start + 2)))
                     for start in range(0, total, 2))
    assert diff_html.diff_table_html(pieces) == diff_html.render_diff_html(diff)
    assert diff_html.diff_table_html("") == ""


def test_rows_drawn_without_syntax_have_the_same_text_and_diff_colours() -> None:
    diff = from_texts("big.py", "".join(f"x_{n} = {n}\n" for n in range(3000)),
                      "".join(f"x_{n} = {n + 1}\n" for n in range(3000)))
    assert not diff_html.rows_lexed(diff, "unified", set(), 4000, 4010)  # nothing lexed yet
    plain = diff_html.render_diff_html(diff, line_range=(4000, 4010), syntax=False)
    assert diff_html.highlighter_for(diff).lines_tokenised == 0
    coloured = diff_html.render_diff_html(diff, line_range=(4000, 4010))
    assert diff_html.rows_lexed(diff, "unified", set(), 4000, 4010)

    def text(page: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", page))

    assert text(plain) == text(coloured) and plain != coloured
    assert f"background-color:{highlight.ADD_WORD}" in plain and f'bgcolor="{highlight.ADD_BG}"' in plain
