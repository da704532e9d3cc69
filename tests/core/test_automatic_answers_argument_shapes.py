"""Arguments that say more than the reader read are the person's: through the real broker.

A call may give its command (or its file, its text, its directory) under two names, carry values
nested in an argument no reader reads, or spell an argument's name with characters nobody can see.
Which of them the agent's tool runs is up to its code, so none of these is answered by approve-all,
a session approval of the whole tool, or an allow rule with a trailing ``*`` that matches it; nor by
a rule naming a tool the catalog does not know, whose only gap would otherwise be the tool.

The calls are ``ARGUMENT_SHAPE_CASES`` in tests/core/automatic_answer_cases.py; the three ways an
answer comes without the person are tried on them, with every other family, in
tests/core/test_automatic_answers.py. Here: the reader does not understand them, and the rule
naming an unknown tool exactly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from tests.core.automatic_answer_cases import ARGUMENT_SHAPE_CASES
from tests.support.automatic_answers import PROJECT, ask, asked_with_reason, broker_for


@pytest.mark.parametrize(("tool", "args", "rule"), ARGUMENT_SHAPE_CASES)
def test_the_reader_does_not_understand_the_call(tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert not reading.understood and reading.gaps, reading


@pytest.mark.parametrize("args", [{"script": "ls", "argv": ["ls", "-la"]},
                                  {"script": "git status", "argv": ["rm", "notes.txt"]}],
                         ids=["both harmless", "the second deletes"])
def test_a_rule_naming_an_unknown_tool_exactly_does_not_answer_two_commands(tmp_path: Path,
                                                                           args: dict[str, Any]) -> None:
    """The person declared the tool, not which of two command lines it runs."""
    broker, person = broker_for(tmp_path, {"tool": "mcp__shell__run"})
    because = asked_with_reason(person, broker, ask(broker, "mcp__shell__run", args),
                                "not answered by rule 1 (line 2) of policy.toml")
    assert "two commands given (`argv` and `script`)" in because


def test_a_rule_naming_an_unknown_tool_exactly_still_answers_its_one_command(tmp_path: Path) -> None:
    """The other side: one command, read as moderate at most, is the person's declaration to answer."""
    broker, person = broker_for(tmp_path, {"tool": "mcp__shell__run"})
    assert ask(broker, "mcp__shell__run", {"script": "ls -la"}).decided_by == "policy"
    assert person.seen == []


@pytest.mark.parametrize("args", [{"script": "ls", "cwd": {"path": "/"}}, {"argv": {"0": "rm", "1": "-rf", "2": "~"}}],
                         ids=["a working directory nobody reads", "an argv nobody reads"])
def test_a_rule_naming_an_unknown_tool_exactly_does_not_answer_what_no_reader_reads(tmp_path: Path,
                                                                                    args: dict[str, Any]) -> None:
    """The person declared the tool; a command or directory the reader cannot read is still theirs to see."""
    broker, person = broker_for(tmp_path, {"tool": "mcp__shell__run"})
    because = asked_with_reason(person, broker, ask(broker, "mcp__shell__run", args),
                                "not answered by rule 1 (line 2) of policy.toml")
    # not read (the argument is named), or read as destructive from what it holds: the person's either way
    assert "argument `" in because and "of `run`" in because or because.startswith("read as destructive")
