"""``commands.argv.read`` gives what argparse gives, or hands the command line to argparse.

Every command line in the grid below goes through both: the hook's and ``request``'s real option
tables, read without argparse and parsed by the argparse parser built from the same table.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import pytest

from desktop_approver.cli import REQUEST_OPTIONS
from desktop_approver.commands import hook
from desktop_approver.commands.argv import Option, add_to, read


class Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise Refused(message)


def _argparse(options: tuple[Option, ...], argv: list[str]) -> dict[str, Any] | None:
    parser = _Parser(prog="x", add_help=True)
    add_to(parser, options)
    try:
        return vars(parser.parse_args(argv))
    except (Refused, SystemExit):
        return None


def _same(left: dict[str, Any], right: dict[str, Any]) -> bool:
    def norm(value: Any) -> Any:
        return "nan" if isinstance(value, float) and math.isnan(value) else value
    return {k: norm(v) for k, v in left.items()} == {k: norm(v) for k, v in right.items()}


HOOK_LINES = [
    ["claude-code"], ["claude-code", "--socket", "/s"], ["--socket", "/s", "claude-code"],
    ["claude-code", "--socket=/s"],
    ["claude-code", "--socket="], ["claude-code", "--timeout", "30"], ["claude-code", "--timeout=1.5"],
    ["claude-code", "--timeout", "nan"], ["claude-code", "--timeout", "inf"], ["claude-code", "--timeout", "x"],
    ["claude-code", "--timeout", "-5"], ["claude-code", "--timeout"], ["claude-code", "--when-unavailable", "ask"],
    ["claude-code", "--when-unavailable", "allow"], ["claude-code", "--when-unavailable=deny"],
    ["claude-code", "--install"], ["claude-code", "--install", "--project"], ["claude-code", "--install=yes"],
    ["claude-code", "--sock", "/s"], ["claude-code", "--help"], ["claude-code", "-h"], ["codex"], [],
    ["claude-code", "claude-code"], ["claude-code", "--"], ["claude-code", "--socket", "-"],
    ["claude-code", "--socket", "/a", "--socket", "/b"], ["claude-code", "--socket", "--install"],
    ["claude-code", "--unknown"], ["claude-code", "-x"], ["--timeout", "3", "claude-code", "--install"],
]
REQUEST_LINES = [
    ["--tool", "Bash", "--args", "{}"], ["--tool=Bash", "--args={}"], ["--tool", "Bash"], ["--args", "{}"],
    ["--tool", "Bash", "--args", "-"], ["--tool", "Bash", "--args", "{}", "--timeout", "0"],
    ["--tool", "Bash", "--args", "{}", "--timeout", "-1"], ["--tool", "Bash", "--args", "{}", "--timeout", "1e3"],
    ["--tool", "Bash", "--args", "{}", "--session", "s", "--agent", "a", "--description", "d", "--preview", "{}",
     "--hints", "{}", "--socket", "/s"],
    ["--tool", "Bash", "--args", "{}", "extra"], ["--tool", "--args", "{}"], ["--tool", "", "--args", "{}"],
    ["--tool", "Bash", "--args", "{}", "--description", "--not-an-option"], ["--to", "Bash", "--args", "{}"],
    ["--tool", "Bash", "--args", "{}", "--help"], ["--tool", "a=b", "--args", '{"x": "--y"}'],
    ["--tool", "Bash", "--args", "{}", "--timeout", "1_000"],
]


@pytest.mark.parametrize("argv", HOOK_LINES, ids=" ".join)
def test_the_hook_reads_as_argparse_or_defers(argv: list[str]) -> None:
    _agree(hook.OPTIONS, argv)


@pytest.mark.parametrize("argv", REQUEST_LINES, ids=" ".join)
def test_request_reads_as_argparse_or_defers(argv: list[str]) -> None:
    _agree(REQUEST_OPTIONS, argv)


def _agree(options: tuple[Option, ...], argv: list[str]) -> None:
    quick = read(options, argv)
    full = _argparse(options, argv)
    if quick is not None:  # read said yes: argparse must have said exactly the same
        assert full is not None and _same(quick, full), (quick, full)


def test_the_plain_forms_are_read_without_argparse() -> None:
    """The point of the reader: the forms hooks and scripts use never reach argparse."""
    for argv in (["claude-code"], ["claude-code", "--socket", "/s", "--timeout", "30"],
                 ["claude-code", "--when-unavailable=ask"]):
        assert read(hook.OPTIONS, argv) is not None
    assert read(REQUEST_OPTIONS, ["--tool", "Bash", "--args", "-", "--session", "s"]) is not None


def test_what_argparse_refuses_the_reader_defers() -> None:
    for argv in HOOK_LINES:
        if _argparse(hook.OPTIONS, argv) is None:
            assert read(hook.OPTIONS, argv) is None, argv
    for argv in REQUEST_LINES:
        if _argparse(REQUEST_OPTIONS, argv) is None:
            assert read(REQUEST_OPTIONS, argv) is None, argv
