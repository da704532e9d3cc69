"""The paths a program touches come from its parse, not a scan of its words (issue 30, one-parse rule).

``git clone -b main URL DIR`` clones into DIR: a scan that took every word not starting with ``-``
read ``main`` as the address and the address as the directory, so a clone into
``~/.config/autostart`` read as a write in the project. ``git clone --depth 1`` takes its value as
the next word (the catalog said it had to be glued). ``sort``'s output file is read from the parse
in every spelling (``-uo FILE``, ``--output=FILE``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, bash, broker_for, codex, gemini


@pytest.mark.parametrize(("tool", "args"), [
    bash("git clone -b main https://github.com/x/y /home/me/.config/autostart"),
    codex("git clone --depth 1 https://github.com/x/y /home/me/.oh-my-zsh"),
    gemini("git clone --origin up --jobs 4 https://github.com/x/y /home/me/.local/share/systemd/user"),
    bash("sort -uo /home/me/.bashrc names.txt"),
    bash("sort --output=/home/me/.profile names.txt"),
])
def test_a_write_outside_named_in_any_spelling_goes_to_the_person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 tool: str, args: dict[str, str]) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    assert assess(tool, args, cwd=PROJECT).level == "destructive"
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"


@pytest.mark.parametrize("command", ["git clone --depth 1 https://github.com/x/y vendor/y",
                                     "git clone -b main https://github.com/x/y", "sort -o sorted.txt names.txt"])
def test_the_same_inside_the_project_is_a_write_in_the_project(command: str) -> None:
    """Moderate, never destructive. A clone into a named folder is not proof (a tree of files nobody
    has seen may hold some that run later: issue 30's inert rule), so only ``sort`` must be understood."""
    reading = assess(*bash(command), cwd=PROJECT)
    assert reading.level == "moderate", reading
    if command.startswith("sort"):
        assert reading.understood, reading
