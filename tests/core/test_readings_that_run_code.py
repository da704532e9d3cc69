"""Calls that read as listings, dry runs or plain programs but run code (issue 30, red team F11-F13).

- a named project target (``tox -e NAME``, ``nox -s NAME``) runs what the project's file says, not
  what its name suggests: a gap, never a guess from the name;
- gawk's ``@include``/``@load`` (and ``@name()`` indirect calls) in an awk program read another
  program or load a library;
- ``tofu plan`` runs the configuration's providers and ``external`` data sources, as
  ``terraform plan`` does; ``ansible-playbook --list-hosts -i SCRIPT`` runs the inventory script.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, bash, broker_for, cline, codex, gemini, goose, openhands

RUNS_CODE = [
    bash("tox -e deploy"),
    codex("nox -s publish"),
    goose("tox -e py311"),
    cline("nox --session tests"),
    bash("awk '@include \"/tmp/x.awk\"' README.md"),
    codex("awk '@load \"/tmp/evil\"; BEGIN{}'"),
    openhands("awk 'BEGIN { f = \"system\"; @f(\"id\") }'"),
    bash("tofu plan"),
    gemini("tofu plan -var-file=staging.tfvars"),
    codex("ansible-playbook --list-hosts -i /tmp/evil.py site.yml"),
    bash("ansible-inventory --list -i /tmp/inventory.sh"),
]


@pytest.mark.parametrize(("tool", "args"), RUNS_CODE)
def test_code_the_words_do_not_show_goes_to_the_person(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    assert not assess(tool, args, cwd=PROJECT).understood
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"
    assert person.seen


@pytest.mark.parametrize("command", ["awk '{ print \"mail: a@b.example\", $1 }' users.txt",
                                     "ansible-playbook --list-hosts -i inventory/hosts.ini site.yml",
                                     "ansible-inventory --list -i inventory.ini", "tox -c tox.ini --notest"])
def test_the_near_everyday_forms_stay_understood(command: str) -> None:
    reading = assess(*bash(command), cwd=PROJECT)
    assert reading.understood, reading


def test_a_named_target_is_a_gap_that_says_where_its_commands_are() -> None:
    assert assess(*bash("tox -e py311"), cwd=PROJECT).gaps == (
        "target `py311` of `tox -e` (what it runs is in the project's file, not read)",)
