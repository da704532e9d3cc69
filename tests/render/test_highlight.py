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
