"""A pattern is judged by the files it may match, and secret names in any case (issue 30, red team F10).

``cat *.pem`` reads whatever key files the folder holds, ``Grep`` with ``glob: "**/.env"`` prints
every ``.env`` of the tree, ``Read KEY.PEM`` is a key on a case-insensitive file system: each is a
read of a secret, never understood and never answered without the person. A pattern is tried
with its wildcards matching nothing (a kept shell with ``dotglob`` lets ``*.env`` match ``.env``)
and a plain name; a pattern that cannot match a secret's name (``src/*.py``) stays understood, and
the facts of issue 32 still scan what it does match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, bash, broker_for, codex, goose, openhands

SECRETS = [
    bash("cat *.pem"),
    codex("cat certs/*.key"),
    openhands("head -n 50 config/*.env"),
    bash("rm certs/*.key"),
    goose("cat secrets/*.P12"),
    bash("less ./*.[kK][eE][yY]"),
    ("Grep", {"pattern": ".", "path": PROJECT, "glob": "**/.env", "output_mode": "content"}),
    ("grep_search", {"query": "KEY", "include_pattern": "*.pem", "explanation": "find keys"}),
    ("read_many_files", {"paths": ["."], "include": ["**/.env", "**/*.pem"]}),
    ("search_file_content", {"pattern": "BEGIN", "path": PROJECT, "include": "**/id_rsa*"}),
    ("Read", {"file_path": f"{PROJECT}/KEY.PEM"}),
    ("Read", {"file_path": f"{PROJECT}/deploy/ID_RSA"}),
    bash("cat .ENV"),
]


@pytest.mark.parametrize(("tool", "args"), SECRETS)
def test_a_pattern_or_a_name_that_may_be_a_secret_goes_to_the_person(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.level == "destructive", reading
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"
    assert person.seen


@pytest.mark.parametrize(("tool", "args"), [
    bash("wc -l src/*.py"), codex("cat docs/*.md"), bash("ls dist/*"),
    ("Grep", {"pattern": "TODO", "path": PROJECT, "glob": "**/*.py", "output_mode": "content"}),
    ("read_many_files", {"paths": ["."], "include": ["src/**/*.ts"]}),
    ("Read", {"file_path": f"{PROJECT}/README.MD"}),
])
def test_a_pattern_that_cannot_match_a_secret_stays_understood(tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.level == "safe", reading


def test_the_gap_says_the_pattern_may_match_a_secret() -> None:
    assert assess(*bash("cat *.pem"), cwd=PROJECT).gaps == (
        "path `*.pem` (operand of `cat`: it may match a secret's name)",)
