"""The palette, lexers and lines of code, and that the renderers never import Qt."""

from __future__ import annotations

import subprocess
import sys

from pygments.lexers import TextLexer

from desktop_approver.render import highlight


def test_unknown_files_fall_back_to_plain_text() -> None:
    assert isinstance(highlight.lexer_for("README.unknownext"), TextLexer)
    assert isinstance(highlight.lexer_for(None), TextLexer)


def test_render_modules_do_not_import_qt() -> None:
    modules = ", ".join(f"desktop_approver.render.{name}" for name in (
        "highlight", "diff_html", "command_html", "text_html", "autopreview"))
    code = f"import sys, {modules}; sys.exit('PySide6' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_long_file_lexed_leaves_nothing_for_the_collector_to_walk() -> None:
    """Its tokens are kept untracked by Python's collector: a full pass of it (every few seconds
    while a long diff is drawn) would otherwise walk them all, with the app's loop stopped."""
    import gc

    from pygments.lexers import PythonLexer
    from pygments.token import Comment, Keyword

    text = "".join(f"def function_{n}(value, other=None):\n    return value * {n}  # n\n" for n in range(2000))
    lines = highlight.LazyLines(text, PythonLexer())
    first, last = lines.line(0), lines.line(3999)
    gc.collect()
    # What it keeps per line, asked of the collector itself (not a count of every object in the
    # process, which other threads of the test session change while this runs).
    kept = lines._done
    assert len(kept) == 4000 and not any(gc.is_tracked(line) for line in kept)  # (40,000 tokens)
    assert first[0] == (0, 3, Keyword)  # the tokens as they were lexed
    assert last[-1][2] in Comment and "    return value * 1999  # n"[last[-1][0]:last[-1][1]] == "# n"
