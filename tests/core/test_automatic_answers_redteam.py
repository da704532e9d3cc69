"""The red team's families of issue 19 are left to the person, through the real broker.

A white-box red team got these calls answered without the person: credentials read through
programs the catalog did not model as readers (``git diff --no-index``, ``yq load_str``, copies
and archives of the home, ``helm get values``), secrets sent where nothing looked like sending
(DNS names built from variables, ``nc`` fed a secret, ``curl -d @FILE``, httpie's ``@FILE`` items,
HTTP DELETE and webhooks through httpie), operands that are outputs (``uniq IN OUT``,
``xxd -r IN OUT``, ``jar cf OUT``), options hidden in ``@FILE`` argument files, build and package
tools that run other code (``mvn exec:exec``, ``go generate``, ``make -f``, ``pip install URL``,
``terraform plan``), tools whose nested arguments or MCP server decide where they act,
migrations that drop data, and "harmless" variables whose value is a path. Each goes through the
real broker in the three ways an answer comes without the person (approve-all, a session
approval of the whole tool, an allow rule ``"<program> *"`` that matches it) and must reach the
person with the reason in one line. The everyday near variants are still answered by approve-all
(a person who must never be asked), so the catalog still saves the person work.

The calls are ``RED_TEAM_CASES`` in tests/core/automatic_answer_cases.py; the three ways are tried
on them, with every other family, in tests/core/test_automatic_answers.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from desktop_approver.core.policy import Policy
from tests.core.automatic_answer_cases import RED_TEAM_CASES
from tests.support.automatic_answers import (
    PROJECT,
    ask,
    bash,
    cline,
    codex,
    gemini,
    goose,
    local_shell,
    openhands,
    unattended_broker,
)


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's home is /home/me, as in the calls below."""
    monkeypatch.setenv("HOME", "/home/me")


@pytest.mark.parametrize(("tool", "args", "rule"), RED_TEAM_CASES)
def test_the_reader_never_lets_the_call_be_answered(tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.level == "destructive" or not reading.understood, reading


# The everyday near variants: still understood, still answered by approve-all.
EVERYDAY = [
    pytest.param(*bash("yq '.version' chart.yaml"), id="yq reads a file"),
    pytest.param(*codex("rg TODO src"), id="rg over a project folder"),   # outside the project: issue 32's
    pytest.param(*gemini("zip -r build/src.zip src"), id="zip of the sources"),
    pytest.param(*openhands("dig +short example.com"), id="dig a name"),
    pytest.param(*cline("nc -zv localhost 5432"), id="nc port check"),
    pytest.param(*goose("curl -d @payload.json http://localhost:3000/api"), id="curl posts a project file"),
    pytest.param(*bash("http GET https://api.example.com/health"), id="httpie GET"),
    pytest.param(*codex("uniq -c words.txt"), id="uniq one operand"),
    pytest.param(*gemini("xxd firmware.bin"), id="xxd dump"),
    pytest.param(*openhands("jar tf build/app.jar"), id="jar list"),
    pytest.param(*cline("gcc -O2 -o app main.c"), id="gcc compile"),
    pytest.param(*goose("pip install requests"), id="pip install a name"),
    pytest.param(*bash("npm i @types/node"), id="npm i a scoped name"),
    pytest.param(*codex("make -j8 test"), id="make -j8"),
    pytest.param(*gemini("cmake --build build -j"), id="cmake -j"),
    pytest.param(*openhands("kill 1234"), id="kill a process"),
    pytest.param(*cline("alembic upgrade head"), id="alembic upgrade"),
    pytest.param(*local_shell(["ls", "-la"], working_directory=PROJECT, env={"LANG": "C"}), id="local_shell here"),
    pytest.param("mcp__filesystem__write_file", {"path": f"{PROJECT}/notes.txt", "content": "x"},
                 id="local filesystem server writes in the project"),
    pytest.param("read_query", {"query": "SELECT count(*) FROM orders"}, id="read_query count"),
]


@pytest.mark.parametrize(("tool", "args"), EVERYDAY)
def test_approve_all_still_answers_the_everyday_near_variant(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.level in ("safe", "moderate"), reading
    broker = unattended_broker(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = ask(broker, tool, args)
    assert verdict.decision == "allow_once" and verdict.decided_by != "user", verdict


@pytest.mark.parametrize(("program", "options"), [
    ("sqlite3", ".shell"), ("xxd", "a second operand it writes"), ("jar", "c/u modes write"), ("uniq", "second"),
    ("gcc", "@FILE"), ("javac", "@FILE"), ("http", "DELETE"), ("nc", "what it is fed"), ("alembic", "downgrade"),
    ("pre-commit", "hooks from other repositories"), ("mvn", "exec:exec"), ("yq", "load()"),
])
def test_policy_check_warns_that_a_trailing_star_hands_over_what_the_red_team_used(program: str, options: str) -> None:
    from desktop_approver.core.policy.breadth import broad_rules

    policy = Policy.parse(f'version = 1\n[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "{program} *"\n',
                          "policy.toml")
    [found] = broad_rules(policy.rules)
    assert found.warning.startswith(f"command '{program} *': the * after {program} also matches"), found.warning
    assert options in found.warning


@pytest.mark.parametrize(("data", "problem"), [
    ({"program": {"x": {"output_operand": -1}}}, "expected the place of an operand"),
    ({"program": {"x": {"output_operand": True}}}, "expected the place of an operand"),
    ({"program": {"x": {"response_files": "yes"}}}, "must be true/false"),
    ({"program": {"x": {"secret_keys": 1}}}, "must be true/false"),
    ({"program": {"x": {"data": "d"}}}, "'d' is not an option"),
    ({"program": {"x": {"effect": "loses-everything"}}}, "is not one of"),
    ({"servers": {"remote": ["prod"]}}, "unknown key(s) ['remote']"),
])
def test_the_red_teams_catalog_keys_are_validated(data: dict[str, Any], problem: str) -> None:
    from desktop_approver.core.calls.catalog import CatalogError, parse_catalog

    with pytest.raises(CatalogError) as caught:
        parse_catalog(data, "mine.toml")
    assert problem in str(caught.value)


def test_a_person_can_declare_a_local_mcp_server_in_the_policy_catalog() -> None:
    """``[catalog.servers] local = [...]``: the person's own local server is not read as another machine."""
    from desktop_approver.core.calls.catalog import use_catalog

    call = ("mcp__mybox__write_file", {"path": f"{PROJECT}/notes.txt", "content": "x"})
    assert assess(*call, cwd=PROJECT).level == "destructive"
    try:
        use_catalog({"servers": {"local": ["mybox"]}})
        assert assess(*call, cwd=PROJECT).level == "moderate"
    finally:
        use_catalog(None)
