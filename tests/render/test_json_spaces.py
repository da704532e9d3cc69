"""Space runs in the arguments view: code indentation inside a string is not an alarm, a run
that could push a command's tail out of sight is."""

from __future__ import annotations

from desktop_approver.render.text_html import render_json_html


def test_indentation_after_an_escaped_newline_is_not_marked() -> None:
    html = render_json_html({"content": "def f():\n        return 1\n"})
    assert "spaces" not in html


def test_a_long_run_inside_a_command_is_marked() -> None:
    html = render_json_html({"command": "ls" + " " * 12 + "; rm -rf ~"})
    assert "12 spaces" in html


def test_a_very_long_run_is_marked_even_after_a_newline() -> None:
    html = render_json_html({"content": "x\n" + " " * 60 + "hidden"})
    assert "60 spaces" in html
