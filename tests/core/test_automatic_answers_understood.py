"""An understood call at safe or moderate IS answered without the person, through the real reader.

The other side of tests/core/test_automatic_answers.py: approve-all, a session approval of the
whole tool and an allow rule still save the person work, for everyday calls the catalog reads in
full, in the agents' argument shapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from desktop_approver.core.policy import Policy
from tests.support.automatic_answers import PROJECT, WHO, ask
from tests.support.automatic_answers import unattended_broker as broker_for

EVERYDAY = [
    pytest.param("Bash", {"command": "git status", "description": "status"}, {"command": "git status *"},
                 id="claude code: git status"),
    pytest.param("shell", {"command": ["bash", "-lc", "ls -la"], "workdir": PROJECT}, {"command": "ls *"},
                 id="codex: ls -la"),
    pytest.param("run_shell_command", {"command": "git log --oneline -5"}, {"command": "git log *"},
                 id="gemini: git log"),
    pytest.param("execute_command", {"command": "npm test", "requires_approval": "false"}, {"command": "npm test*"},
                 id="cline: npm test"),
    pytest.param("read_file", {"path": f"{PROJECT}/README.md"}, {"path": "./**"}, id="mcp filesystem: read_file"),
]


@pytest.mark.parametrize(("tool", "args", "rule"), EVERYDAY)
def test_the_reader_understands_the_everyday_call(tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    reading = assess(tool, args, cwd=PROJECT)
    assert reading.understood and reading.gaps == () and reading.level in ("safe", "moderate"), reading


@pytest.mark.parametrize(("tool", "args", "rule"), EVERYDAY)
def test_approve_all_answers_an_understood_everyday_call(tmp_path: Path, tool: str, args: dict[str, Any],
                                                         rule: dict[str, Any]) -> None:
    broker = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    assert (ask(broker, tool, args).decision, ask(broker, tool, args).decided_by) == ("allow_once", "mode")


@pytest.mark.parametrize(("tool", "args", "rule"), EVERYDAY)
def test_a_whole_tool_session_approval_answers_an_understood_everyday_call(
        tmp_path: Path, tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    broker = broker_for(tmp_path)
    broker.memory.remember("s", tool, {}, scope="tool", agent=WHO.agent)
    assert ask(broker, tool, args).decided_by == "session"


@pytest.mark.parametrize(("tool", "args", "rule"), EVERYDAY)
def test_an_allow_rule_answers_an_understood_everyday_call(tmp_path: Path, tool: str, args: dict[str, Any],
                                                           rule: dict[str, Any]) -> None:
    conditions = "".join(f'{key} = "{value}"\n' for key, value in {"tool": tool, **rule}.items())
    broker = broker_for(tmp_path, Policy.parse(f'version = 1\n[[rule]]\naction = "allow"\n{conditions}', "p.toml"))
    assert ask(broker, tool, args).decided_by == "policy"
