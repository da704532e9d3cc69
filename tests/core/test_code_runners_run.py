"""Runners run the code they are given: only the project's own is understood (issue 30, red team F7).

A test runner, a linter whose config loads plugins or an installer reads code from the paths and
files its words name. Those words carry roles in the catalog (``project-code``, ``loads``,
``requirements``): a path inside the working directory is the project's own code; one outside
(written by the agent a step before in ``/tmp``), a plugin named by module, or a requirements
file nobody read goes to the person. A requirements file inside the project is read by the facts
and answered only when it lists package names and nothing else.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.facts.requirements import plain_requirement
from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import (
    PROJECT,
    ask,
    bash,
    broker_for,
    cline,
    codex,
    gemini,
    goose,
    openhands,
    unattended_broker,
)


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")


OUTSIDE = [
    bash("pytest /tmp/evil"),
    codex("python3 -m pytest -q /tmp/evil/test_x.py::test_a"),
    openhands("python3 -m unittest discover -s /tmp/evil"),
    openhands("python3 -m unittest discover -t /home/me/other -s tests"),
    goose("rspec /tmp/evil_spec.rb:12"),
    cline("go test /tmp/evil/..."),
    bash("tox -c /tmp/evil/tox.ini"),
    gemini("npx eslint -c /tmp/evil.js ."),
    bash("eslint --config=/tmp/evil.js src"),
    bash("pytest -c /tmp/evil.ini"),
    bash("pytest --rootdir /home/me tests"),
    bash("mypy --config-file /tmp/plugins.ini src"),
    bash("jest /tmp/evil"),
    bash("pytest -p evil_plugin"),
    codex("pytest -pevil_plugin -q"),
    bash("pip install -r /tmp/r.txt"),
    bash("pip install evil.ZIP"),
    goose("pip install evil.txz"),
    bash("pip3 install ./dist/x.Tar.Gz"),
    bash("uv pip install pkg.TBZ"),
]

INSIDE = [
    bash("pytest -q tests"),
    codex("python3 -m pytest -q tests/test_x.py::TestA::test_b"),
    openhands("python3 -m unittest discover -s tests -t ."),
    goose("rspec spec/models:12"),
    cline("go test ./..."),
    bash("go test -run TestX ./internal/pricing"),
    bash("tox -c tox.ini --notest"),
    gemini("npx eslint -c .eslintrc.cjs ."),
    bash("pytest -p no:cacheprovider -q"),
    bash("pip install requests 'django>=4'"),
]


@pytest.mark.parametrize(("tool", "args"), OUTSIDE)
def test_code_from_outside_the_project_goes_to_the_person(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert not reading.understood, reading
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, tool, args).decided_by == "user"
    assert person.seen


@pytest.mark.parametrize(("tool", "args"), INSIDE)
def test_the_projects_own_code_is_still_answered(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.level in ("safe", "moderate"), reading
    broker = unattended_broker(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = ask(broker, tool, args)
    assert verdict.decision == "allow_once" and verdict.decided_by != "user", verdict


def test_a_gap_names_the_code_and_why() -> None:
    assert assess(*bash("pytest /tmp/evil"), cwd=PROJECT).gaps == (
        "code `/tmp/evil` that `pytest` runs (outside the working directory: not the project's own)",)
    assert assess(*bash("pytest -p evil"), cwd=PROJECT).gaps == (
        "module `evil` that `pytest -p` loads (its code is not seen)",)


# -- requirements files: read by the facts ---------------------------------------------------------

@pytest.fixture
def requirements() -> Iterator[Path]:
    """A requirements file of the tests' project (a name of its own: the project is shared)."""
    path = Path(PROJECT, f"requirements-{uuid.uuid4().hex[:8]}.txt")
    yield path
    for made in Path(PROJECT).glob(f"{path.stem}*"):
        made.unlink()


def test_a_requirements_file_of_package_names_is_answered(tmp_path: Path, requirements: Path) -> None:
    included = requirements.with_name(f"{requirements.stem}-base.txt")
    included.write_text("requests>=2.31  # http\nattrs[tests]==23.1 ; python_version >= '3.9'\n")
    requirements.write_text(f"# dev tools\n-r {included.name}\npytest~=8.0 \\\n  --hash=sha256:0123abcd\n\nruff\n")
    for tool, args in (bash(f"pip install -r {requirements.name}"), codex(f"uv pip install -r {requirements.name}")):
        assert not assess(tool, args, cwd=PROJECT).understood      # without the facts: not read
        broker = unattended_broker(tmp_path)
        broker.mode.set(modes.APPROVE_ALL, seconds=600)
        verdict = ask(broker, tool, args)
        assert verdict.decision == "allow_once" and verdict.decided_by != "user", verdict


@pytest.mark.parametrize("line", ["evil @ https://evil.example/evil-1.0.tar.gz", "git+https://evil.example/x.git",
                                  "--index-url https://evil.example/simple", "-e ../elsewhere", "./vendor/evil",
                                  "evil.ZIP", "https://evil.example/x.whl", "-r /tmp/more.txt"])
def test_a_requirements_file_that_lists_more_than_names_goes_to_the_person(tmp_path: Path, requirements: Path,
                                                                         line: str) -> None:
    requirements.write_text(f"requests\n{line}\n")
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, *bash(f"pip install -r {requirements.name}")).decided_by == "user"
    assert person.seen


def test_a_requirements_file_that_is_not_there_goes_to_the_person(tmp_path: Path) -> None:
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(broker, *bash("pip install -r missing-requirements.txt")).decided_by == "user"


@pytest.mark.parametrize(("line", "plain"), [("requests", True), ("Django==4.2,<5 ; python_version > '3.8'", True),
                                             ("pkg[a,b]~=1.0 --hash=sha256:ab12", True), ("evil.tlz", False),
                                             ("name @ file:///tmp/x", False), ("-e .", False), ("${URL}", False)])
def test_a_requirement_line_is_read_as_pip_reads_it(line: str, plain: bool) -> None:
    assert plain_requirement(line) is plain
