"""A line too long for its row (issue 23): its start, an unmissable note, a link to all of it.

Qt lays one long line out in quadratic time (300,000 characters froze the dialog for 27 s), so
a row draws only :data:`LINE_SHOWN_CHARS` characters of it; what is not drawn is still scanned
for hidden characters, and the note says how much is left and what is in it.
"""

from __future__ import annotations

import pytest

from desktop_approver.render.diff_html import LINE_SHOWN_CHARS, diff_warnings, render_diff_html
from desktop_approver.render.diffs import INTRALINE_MAX_CHARS, from_preview, word_spans


def _html(old: str, new: str, mode: str = "unified") -> tuple[str, tuple[str, ...]]:
    (diff,) = from_preview({"kind": "diff", "path": "x.txt", "old": old, "new": new})
    return render_diff_html(diff, mode=mode), diff_warnings(diff)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["unified", "split"])
def test_a_long_line_draws_its_start_and_says_how_much_more(mode: str) -> None:
    page, _ = _html("a\n" + "x" * 300_000 + "\n", "a\n" + "x" * 299_999 + "y\n", mode)
    assert page.count("x") < 2 * LINE_SHOWN_CHARS + 100  # both versions' starts, not 600,000 characters
    assert f"… {300_000 - LINE_SHOWN_CHARS:,} more characters on this line" in page
    assert f"… {299_999 + 1 - LINE_SHOWN_CHARS:,} more characters on this line" in page
    assert page.count('href="line:0:0:') == 2  # each version links to its whole line


def test_a_hidden_character_past_the_cut_is_named_and_warned_about() -> None:
    tail = "x" * 10_000 + "\u202e evil"
    page, warnings = _html("a\n", "a\nstart " + tail + "\n")
    assert "hidden characters among those not shown (see the warnings)" in page
    assert any("U+202E" in warning and "new line 2" in warning for warning in warnings)


def test_a_file_of_carriage_returns_says_so() -> None:
    text = "\r".join(f"value_{n} = {n}" for n in range(5000)) + "\n"
    page, warnings = _html(text, text.replace("value_4000 = 4000", "value_4000 = 4"))
    assert "4,999 carriage returns (\\r) in it: a terminal or an old Mac editor shows them as line breaks" in page
    assert any("\\r" in warning for warning in warnings)


def test_a_short_line_has_no_note() -> None:
    page, _ = _html("a\n", "b" * LINE_SHOWN_CHARS + "\n")
    assert "more characters on this line" not in page


def test_changed_words_of_huge_lines_are_not_compared() -> None:
    old = " ".join(f"w{n}" for n in range(INTRALINE_MAX_CHARS))
    assert word_spans(old, old + " more") == ([], [])
    assert word_spans("a b c", "a x c") != ([], [])


def test_a_row_of_a_huge_change_block_marks_the_words_of_its_own_pair_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bounded amount of work a row: not the whole block's word diffs on the first row drawn."""
    from desktop_approver.render import diffs

    old = "".join(f"a{n} = f({n})\n" for n in range(5000))
    new = "".join(f"b{n} = g({n})\n" for n in range(5000))
    (diff,) = from_preview({"kind": "diff", "path": "x.py", "old": old, "new": new})
    (hunk,) = diff.hunks
    calls: list[str] = []
    real = diffs.word_spans
    monkeypatch.setattr(diffs, "word_spans", lambda a, b: (calls.append(a), real(a, b))[1])
    first_added = next(k for k, line in enumerate(hunk.plain_lines) if line.kind == "add")
    for k in (0, 1, first_added + 1, 4999):
        hunk.line(k)
    assert calls == ["a0 = f(0)", "a1 = f(1)", "a4999 = f(4999)"]  # a pair each, once
    assert hunk.line(first_added).intraline == real("a0 = f(0)", "b0 = g(0)")[1]
