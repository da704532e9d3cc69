"""Issue 30: each program read once by its grammar, every judgement from that one reading.

The destructive families of issue 30 (``ISSUE_30_CASES`` in tests/core/automatic_answer_cases.py)
go through the real broker in the three ways an answer comes without the person, in
tests/core/test_automatic_answers.py; the parse itself is tests/core/test_grammar.py. Here: the
near variants approve-all still answers, a working directory that is no project, and the share of
ordinary calls in the agents' shapes an automatic answer may take.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import Identity
from desktop_approver.core.messages.models import ToolCall
from tests.support.automatic_answers import (
    PROJECT,
    ask,
    asked_with_reason,
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


# -- the near variants are still answered ------------------------------------------------------------

EVERYDAY = [
    pytest.param(*bash("rsync -a --exclude .git src/ build/"), id="rsync into the project"),
    pytest.param(*codex("rsync -an --delete src/ build/"), id="rsync dry run with -n bundled"),
    pytest.param(*gemini("sed -n 's/a/b/p' README.md"), id="sed prints"),
    pytest.param(*openhands("sed -i 's/0.1/0.2/' src/version.txt"), id="sed -i in the project"),
    pytest.param(*cline("curl -s https://api.example.com/health"), id="curl GET"),
    pytest.param(*goose("curl -sX GET https://api.example.com/items"), id="curl -X GET bundled"),
    pytest.param(*bash("curl -d a=b http://localhost:3000/api"), id="curl posts to this machine"),
    pytest.param(*codex("git push --dry-run origin main"), id="git push --dry-run"),
    pytest.param(*gemini("make -n test"), id="make -n"),
    pytest.param(*openhands("python3 -m pytest -q"), id="python -m pytest"),
    pytest.param(*cline(".venv/bin/pytest -q"), id="the project's pytest by its path"),
    pytest.param(*goose("tar -tzf dist/app.tar.gz"), id="tar lists"),
    pytest.param(*bash("echo done > notes.txt"), id="a note in the project"),
]


@pytest.mark.parametrize(("tool", "args"), EVERYDAY)
def test_approve_all_still_answers_the_near_variant(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.level in ("safe", "moderate"), reading
    broker = unattended_broker(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = ask(broker, tool, args)
    assert verdict.decision == "allow_once" and verdict.decided_by != "user", verdict


# -- the project is a project ----------------------------------------------------------------------

@pytest.mark.parametrize("where", ["/home/me", "/", "/etc", "/usr/local"])
def test_a_working_directory_that_is_no_project_has_nothing_inside(tmp_path: Path, where: str) -> None:
    """An agent started in the home, the root or a system directory: its writes are not "in the project"."""
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    who = Identity(agent="agent", cwd=where, peer_pid=7, peer_cwd=where)
    call = ToolCall(tool="Bash", args={"command": "echo x > notes.txt"})
    [verdict] = asyncio.run(broker.submit(who, "s", "r", "request", [call]))
    asked_with_reason(person, broker, verdict, "approve-all mode")
    assert assess("Bash", {"command": "echo x > notes.txt"}, cwd=where).level == "destructive"
    assert assess("Bash", {"command": "echo x > notes.txt"}, cwd=f"{PROJECT}").level == "moderate"


def test_a_request_to_this_machine_is_not_an_effect_outside_it() -> None:
    assert assess(*bash("curl -X POST http://127.0.0.1:8000/api/jobs"), cwd=PROJECT).level == "moderate"
    assert assess(*bash("curl -X POST https://api.example.com/jobs"), cwd=PROJECT).level == "destructive"
    assert assess(*bash("curl -X POST http://localhost.evil.example/x"), cwd=PROJECT).level == "destructive"


# -- what people run ---------------------------------------------------------------------------------

ORDINARY = Path(__file__).with_name("risk_calls_ordinary.jsonl")


def ordinary_share() -> tuple[int, int]:
    """Of the ordinary calls of issue 30 (everyday runners and toolchains, in the tool shapes of
    Goose, OpenHands, Zed, Codex, Cline, Claude Code, Gemini CLI and LangChain's ShellTool, and the
    read-only tools of GitHub, Linear, Sentry, Kubernetes and Slack's MCP servers): how many an
    automatic answer may take (understood, not destructive), of how many."""
    import json
    import os

    rows = [json.loads(line) for line in ORDINARY.read_text(encoding="utf-8").splitlines() if line.strip()]
    old = os.environ.get("HOME")
    os.environ["HOME"] = "/home/sam"
    try:
        found = [assess(row["tool"], row["args"], cwd=row["cwd"]) for row in rows]
    finally:
        if old is not None:
            os.environ["HOME"] = old
    return sum(1 for verdict in found if verdict.understood and verdict.level != "destructive"), len(rows)


def test_most_ordinary_calls_in_the_agents_shapes_are_understood() -> None:
    answered, total = ordinary_share()
    assert total >= 200
    assert answered / total >= 0.80, (answered, total)
