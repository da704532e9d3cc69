"""HTML for JSON and plain text: pretty, highlighted, clipped with a count, hidden characters revealed."""

from __future__ import annotations

import html

from desktop_approver.render import text_html

# -- JSON and text -------------------------------------------------------------------------------

def test_json_is_pretty_and_highlighted() -> None:
    page = text_html.render_json_html({"path": "a.py", "count": 3})
    assert '"path"' in html.unescape(page)
    assert "<span style=" in page
    assert "Show all" not in page


def test_long_json_says_how_much_is_hidden() -> None:
    value = {f"key_{n}": n for n in range(500)}
    page = text_html.render_json_html(value, max_lines=200, max_chars=20_000)
    assert "302 more lines hidden" in page and 'href="json:show-all"' in page
    assert "key_198" in page and "key_199" not in page  # line 1 is the opening brace
    assert "key_499" in text_html.render_json_html(value)


def test_one_enormous_json_line_is_shown_in_part() -> None:
    page = text_html.render_json_html({"content": "x" * 100_000}, max_lines=200, max_chars=20_000)
    assert "xxxxxxxx" in page
    assert "more characters" in page and "Show all" in page


def test_hidden_characters_in_json_are_revealed() -> None:
    page = text_html.render_json_html({"command": "echo \u202e", "pad": "a" + " " * 30 + "b"})
    assert "&lt;U+202E&gt;" in page and "⟨30 spaces⟩" in page
    assert any("right-to-left" in w for w in text_html.json_warnings({"command": "echo \u202e"}))
    assert text_html.json_warnings({"indented": {"deeply": {"nested": ["x"]}}}) == ()


def test_plain_text_reveals_hidden_characters() -> None:
    page, warnings = text_html.render_text_html("Deploy to prod\u200b now")
    assert "&lt;U+200B&gt;" in page and warnings
