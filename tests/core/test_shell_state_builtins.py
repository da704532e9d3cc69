"""Every way the shell sets a variable is read as an assignment (issue 30, red team F8).

``PATH=/tmp/evil`` and ``PROMPT_COMMAND=...`` are judged where they are written as prefixes; the
shell sets variables in other ways too: builtins (``printf -v``, ``read``, ``mapfile``,
``readarray``, ``declare``, ``typeset``, ``local``, ``readonly``, ``wait -p``), loops
(``for``/``select``), expansions (``${NAME:=word}``) and arithmetic (``(( NAME = 1 ))``). Each name
set is judged like a ``NAME=value`` prefix: one that chooses what runs next (in a persistent shell,
at the next prompt) is destructive, and a name the catalog does not know as harmless is a gap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, bash, broker_for, cline, codex, gemini, goose, openhands

SETS_PATH = [
    bash("printf -v PATH '%s' /tmp/evil; ls"),
    codex("read -r PATH <<< /tmp/evil; ls"),
    openhands("read PROMPT_COMMAND <<< 'rm -rf /home/me/Documents'"),
    cline("printf -v PROMPT_COMMAND 'rm -rf /home/me/Documents'"),
    goose("read -a PATH <<< /tmp/evil; ls"),
    gemini("mapfile -t PROMPT_COMMAND < cmd.txt"),
    bash("readarray PATH < paths.txt; ls"),
    bash("declare PATH=/tmp/evil; ls"),
    bash("typeset -x PATH=/tmp/evil; ls"),
    codex("f() { local IFS=/; ls; }; f"),
    bash("readonly PROMPT_COMMAND='rm -rf ~'"),
    bash("wait -p PATH; ls"),
    openhands("for PROMPT_COMMAND in 'rm -rf ~'; do :; done"),
    bash("select PATH in /tmp/evil; do ls; break; done"),
    cline("echo ${PROMPT_COMMAND:='rm -rf ~'}"),
    bash(": ${PATH=/tmp/evil}; ls"),
    bash("(( PS4 = 1 )); ls"),
]


@pytest.mark.parametrize(("tool", "args"), SETS_PATH)
def test_a_builtin_that_sets_a_variable_that_runs_programs_goes_to_the_person(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    reading = assess(tool, args, cwd=PROJECT)
    assert not reading.understood and reading.level == "destructive", reading
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"
    assert person.seen


@pytest.mark.parametrize("command", ["read -r line < notes.txt", "printf -v out '%s' hi", "mapfile -t lines < a.txt",
                                     "for f in a b; do echo hi; done", "declare x=1", "read -r a[0] <<< x"])
def test_a_variable_the_catalog_does_not_know_is_a_gap_like_a_prefix(command: str) -> None:
    """As ``x=1`` is: the catalog knows which names are harmless (LANG, NO_COLOR, REPLY...)."""
    reading = assess(*bash(command), cwd=PROJECT)
    assert not reading.understood and reading.level != "destructive", reading
    assert any(gap.startswith("variable `") for gap in reading.gaps), reading.gaps


@pytest.mark.parametrize("command", ["read -r <<< x", "printf -v LANG C; ls", "mapfile < notes.txt",
                                     "declare -x NO_COLOR=1; ls", "printf '%s\\n' hi"])
def test_a_harmless_variable_set_by_a_builtin_is_understood(command: str) -> None:
    reading = assess(*bash(command), cwd=PROJECT)
    assert reading.understood, reading


def test_a_nameref_or_a_callback_is_not_listed() -> None:
    """``declare -n x=PATH`` makes a later ``x=`` set PATH; ``mapfile -C`` runs code."""
    assert not assess(*bash("declare -n ref=HOME"), cwd=PROJECT).understood
    assert not assess(*bash("mapfile -C 'rm -rf ~' -c 1 < a.txt"), cwd=PROJECT).understood
