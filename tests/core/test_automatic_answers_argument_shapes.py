"""Arguments that say more than the reader read are the person's: through the real broker.

A call may give its command (or its file, its text, its directory) under two names, carry values
nested in an argument no reader reads, or spell an argument's name with characters nobody can see.
Which of them the agent's tool runs is up to its code, so none of these is answered by approve-all,
a session approval of the whole tool, or an allow rule with a trailing ``*`` that matches it; nor by
a rule naming a tool the catalog does not know, whose only gap would otherwise be the tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from desktop_approver.core.policy import Policy, PolicyCall
from tests.core.test_automatic_answers import PROJECT, WHO, ask, asked_with_reason, broker_for

# (what, tool, args, the allow rule with a trailing * that matches the call)
SHAPES: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("two commands, the second destructive", "Bash", {"command": "npm test", "cmd": "rm -rf ~/"},
     {"tool": "Bash", "command": "*"}),
    ("two commands, both moderate", "Bash", {"command": "npm test", "cmd": "npm run build"},
     {"tool": "Bash", "command": "npm *"}),
    ("a command and a list of commands", "execute_command", {"command": "ls", "commands": ["rm -rf ~/"]},
     {"tool": "execute_command", "command": "*"}),
    ("a command and an action (Codex)", "shell",
     {"command": ["bash", "-lc", "ls"], "action": {"type": "exec", "command": ["rm", "-rf", "/home/me"]}},
     {"tool": "shell", "command": "*"}),
    ("two working directories", "run_command", {"command": "ls", "cwd": PROJECT, "Cwd": "/home/me"},
     {"tool": "run_command", "command": "ls*"}),
    ("two contents for one file", "write_file", {"path": f"{PROJECT}/notes.txt", "content": "a", "contents": "b"},
     {"tool": "write_*"}),
    ("two paths for a one-path tool", "read_file", {"path": f"{PROJECT}/README.md", "file_path": f"{PROJECT}/a.md"},
     {"tool": "read_*"}),
    ("a hook nested in an argument nobody reads", "run_terminal_cmd",
     {"command": "ls", "options": {"post_hook": "rm -rf ~/"}}, {"tool": "run_terminal_cmd", "command": "ls*"}),
    ("ordinary data nested in an argument nobody reads", "run_terminal_cmd",
     {"command": "ls", "options": {"color": "auto"}}, {"tool": "run_terminal_cmd", "command": "ls*"}),
    ("a command nested in an option", "Bash", {"command": "ls", "timeout": {"then": "rm -rf ~/"}},
     {"tool": "Bash", "command": "ls*"}),
    ("a command argument that is not a command line", "Bash", {"command": "git status", "cmd": ["rm", 5]},
     {"tool": "Bash", "command": "git status*"}),
    ("a zero-width space in the command's name", "Bash", {"comm\u200band": "rm -rf ~/"},
     {"tool": "Bash", "command": "rm *"}),
    ("a zero-width space in a second command's name", "Bash", {"command": "git status", "comm\u200band": "rm -rf ~/"},
     {"tool": "Bash", "command": "*"}),
    ("a zero-width space in a harmless command's name", "Bash", {"comm\u200band": "git status"},
     {"tool": "Bash", "command": "git status*"}),
    ("a bidi mark in a path's name", "write_file", {"pa\u202eth": f"{PROJECT}/a.txt", "content": "x"},
     {"tool": "write_*"}),
    ("a look-alike letter in the command's name", "Bash", {"c\u043emmand": "rm -rf ~/"}, {"tool": "Ba*"}),
]

CASES = [pytest.param(tool, args, rule, id=what) for what, tool, args, rule in SHAPES]


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_the_reader_does_not_understand_the_call(tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert not reading.understood and reading.gaps, reading


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_approve_all_leaves_the_call_to_the_person(tmp_path: Path, tool: str, args: dict[str, Any],
                                                  rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    asked_with_reason(person, broker, ask(broker, tool, args), "approve-all mode")


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_a_session_approval_of_the_whole_tool_leaves_the_call_to_the_person(
        tmp_path: Path, tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path)
    broker.memory.remember("s", tool, {}, scope="tool", agent=WHO.agent)
    asked_with_reason(person, broker, ask(broker, tool, args), "the session approval of the whole tool")


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_an_allow_rule_with_a_trailing_star_leaves_the_call_to_the_person(
        tmp_path: Path, tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path, rule)
    policy = broker.policy
    assert isinstance(policy, Policy)
    reading = assess(tool, args, cwd=PROJECT)
    explanation = policy.explain(PolicyCall(tool, args, agent=WHO.agent, cwd=PROJECT, risk=reading.level,
                                            understood=reading.understood, gaps=reading.gaps))
    assert [rule.id for rule, _ in explanation.withheld] == ["rule 1 (line 2)"], explanation.render()
    asked_with_reason(person, broker, ask(broker, tool, args), "not answered by rule 1 (line 2) of policy.toml")


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
