"""Understood, or the person decides (issue 19): the families table, the figures, the gaps' words.

``risk_calls_understood.jsonl`` holds the families of issue 19 (unparsed options, ``NAME=value``
prefixes, ``cd``/``-C``, programs that run programs, two-step downloads, credentials, deploys,
editor, code-execution and remote-repository tools, messages, over-flagged everyday forms) in the
argument shapes of Claude Code, Codex, Gemini CLI, OpenHands, Cline, Goose, LangChain and the MCP
reference servers; ``risk_calls_catalog.jsonl`` an everyday call per catalog entry. Each row says
its level and whether it must be understood.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess, assess_command
from tests.core.understood_tables import figures, home, home_of, rows

LABELLED = rows("risk_calls_understood.jsonl", "risk_calls_catalog.jsonl", "risk_calls_redteam.jsonl")


def _id(row: dict[str, Any]) -> str:
    return f"{row['family']}:{row.get('agent', '')}:{row['tool']}:{json.dumps(row['args'], ensure_ascii=True)[:60]}"


@pytest.mark.parametrize("row", LABELLED, ids=[_id(r) for r in LABELLED])
def test_row_level_and_understanding(row: dict[str, Any]) -> None:
    with home(home_of(row)):
        found = assess(row["tool"], row["args"], cwd=row["cwd"])
    assert (found.level, found.understood) == (row["level"], row["understood"]), (row["why"], found)
    assert found.understood == (not found.gaps)
    if found.level != "safe":
        assert found.reasons


def test_the_families_table_covers_every_family_in_every_agents_shape() -> None:
    families = rows("risk_calls_understood.jsonl")
    by_family = Counter(row["family"] for row in families)
    for family in ("options", "variables", "workdir", "runs-programs", "download", "credentials", "deploy", "remote",
                   "messages", "database", "editor", "code", "patch", "unknown-tool", "overflag", "everyday"):
        assert by_family[family] >= 2, family
    agents = Counter(row["agent"] for row in families)
    for agent in ("claude-code", "codex", "gemini-cli", "openhands", "cline", "goose", "langchain", "mcp"):
        assert agents[agent] >= 5, agent
    assert all(isinstance(row["understood"], bool) for row in families)
    assert {row["level"] for row in families} == {"safe", "moderate", "destructive"}


def test_the_figures_approve_all_saves_work_and_never_answers_a_destructive_row() -> None:
    """Of every table's safe and moderate rows at least 85% are understood (an automatic answer
    may take them); no destructive row is understood at safe or moderate."""
    found = figures()
    print(found)
    assert found.destructive_understood_below == ()
    assert found.share >= 0.85, str(found)


@pytest.mark.parametrize(("command", "gap"), [
    ("git log --ext-diff -p", "option `--ext-diff` of `git log`"),
    ("git log --output=x.txt --ext-diff", "option `--ext-diff` of `git log`"),
    ("acme-sync --all", "program `acme-sync`"),
    ("GIT_EXTERNAL_DIFF=./x git diff", "variable `GIT_EXTERNAL_DIFF`"),
    ("cat $X/foo", "path `$X/foo` (operand of `cat`)"),
    ("ls -Z", "option `-Z` of `ls`"),
    ("git frobnicate", "subcommand `frobnicate` of `git`"),
    ("curl -fsSLK cfg https://x", "option `-K` of `curl`"),
    ("sudo ls", "wrapper `sudo`"),
    ("./run.sh", "program `./run.sh` (a file it runs)"),
    ("python3 x.py", "the script or program `x.py` that `python3` runs"),
])
def test_gaps_name_what_was_not_understood_in_one_short_phrase(command: str, gap: str) -> None:
    found = assess_command(command, cwd="/home/dev/proj")
    assert not found.understood and gap in found.gaps, found


@pytest.mark.parametrize("command", [
    "curl -fsSL -o data/out.json https://api.example.com/x", "grep -rniE 'a|b' src", "tar -czf out.tgz src",
    "head -n5 README.md", "git log --pretty=format:%h -5", "git -c color.ui=never status", "ls -la ~/.ssh",
])
def test_bundled_flags_attached_values_and_equals_forms_are_read(command: str) -> None:
    assert assess_command(command, cwd="/home/dev/proj").understood


def test_a_tool_the_catalog_does_not_know_is_named_in_the_gap() -> None:
    found = assess("mcp__acme__acme_sync", {"target": "prod"}, cwd="/home/dev/proj")
    assert not found.understood and found.gaps == ("tool `mcp__acme__acme_sync`",)


def test_a_destructive_reading_can_be_understood_but_is_never_an_automatic_answer_in_the_table() -> None:
    found = assess_command("git push --force origin main", cwd="/home/dev/proj")
    assert found.level == "destructive" and found.understood
