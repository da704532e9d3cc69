"""``desktop-approver sessions`` / ``revoke`` against a real app core on a real socket."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import Client
from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.core.store.audit import AuditLog
from tests.test_cli import cli


def remember_tool_for(tool: str) -> Any:
    """The person allows for the session; for ``tool`` the whole tool, else the exact call."""
    return lambda ticket: [Verdict("allow_session", "user", scope="tool" if call.tool == tool else "exact")
                           for call in ticket.calls]


AGENT = "coder"


def remember(socket_path: Path, session: str, tool: str, args: dict[str, Any], agent: str = AGENT) -> None:
    with Client(socket_path, agent=agent, session=session) as client:
        assert client.request(tool, args).decision == "allow_session"


def sessions_json(socket_path: Path, agent: str = AGENT) -> list[dict[str, Any]]:
    result = cli("sessions", "--json", "--agent", agent, "--socket", str(socket_path))
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_sessions_lists_what_allow_session_remembers(serve: Any) -> None:
    service = serve(remember_tool_for("Read"))
    path = service.options.socket_path
    remember(path, "s1", "Bash", {"command": "npm test"})
    remember(path, "s1", "Read", {"path": "a.txt"})
    remember(path, "s2", "Bash", {"command": "ls"})
    entries = sessions_json(path)
    assert [(e["session"], e["tool"], e["scope"]) for e in entries] == [
        ("s1", "Bash", "exact"), ("s1", "Read", "tool"), ("s2", "Bash", "exact")]
    assert entries[0]["args"] == '{"command":"npm test"}' and entries[0]["agent"] == AGENT
    table = cli("sessions", "--agent", AGENT, "--socket", str(path))
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["SESSION", "AGENT", "TOOL"] and len(lines) == 4
    assert "npm test" in lines[1] and "any arguments" in lines[2]


def test_revoke_by_session_tool_and_all(serve: Any) -> None:
    service = serve(remember_tool_for("none"))
    path = service.options.socket_path
    for session, tool in (("s1", "Bash"), ("s1", "Edit"), ("s2", "Bash"), ("s3", "Edit")):
        remember(path, session, tool, {"n": 1})
    one = cli("revoke", "--agent", AGENT, "--session", "s1", "--socket", str(path))
    assert one.returncode == 0 and one.stdout.strip() == "Forgot 2 remembered approvals."
    assert {(e["session"], e["tool"]) for e in sessions_json(path)} == {("s2", "Bash"), ("s3", "Edit")}
    by_tool = cli("revoke", "--agent", AGENT, "--tool", "Edit", "--json", "--socket", str(path))
    assert json.loads(by_tool.stdout) == {"count": 1}
    assert cli("revoke", "--agent", AGENT, "--all", "--socket", str(path)).stdout.strip() == \
        "Forgot 1 remembered approval."
    assert sessions_json(path) == []
    assert cli("sessions", "--agent", AGENT, "--socket", str(path)).stdout.strip() == "No remembered approvals."
    # A revoked approval is really gone: the next identical call goes to the person again.
    asked = len(service.person.seen)
    remember(path, "s2", "Bash", {"n": 1})
    assert len(service.person.seen) == asked + 1
    audit = AuditLog(service.options.audit_path, read_only=True)
    try:
        assert len(audit.events(kind="revoke")) == 3
    finally:
        audit.close()


def test_hidden_characters_in_a_session_are_shown_not_played(serve: Any) -> None:
    service = serve(remember_tool_for("none"))
    # (Arguments with a bidi override are destructive, and destructive calls are never remembered.)
    remember(service.options.socket_path, "evil\x1b[2J\rsession\u202e", "Bash", {"command": "ls"})
    table = cli("sessions", "--agent", AGENT, "--socket", str(service.options.socket_path))
    assert table.returncode == 0
    assert "\x1b" not in table.stdout and "\r" not in table.stdout and "\u202e" not in table.stdout
    assert "evil\\x1b[2J\\rsession" in table.stdout


@pytest.mark.parametrize("args", [["sessions"], ["sessions", "--json"], ["revoke", "--all"]])
def test_not_running_exits_2_with_one_line(args: list[str], tmp_path: Path) -> None:
    result = cli(*args, "--agent", AGENT, "--socket", str(tmp_path / "nobody.sock"))
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "not running" in result.stderr


@pytest.mark.parametrize("args", [[], ["--all", "--session", "s1"], ["--all", "--tool", "Bash"]])
def test_revoke_needs_a_clear_target(args: list[str], tmp_path: Path) -> None:
    result = cli("revoke", *args, "--socket", str(tmp_path / "nobody.sock"))
    assert result.returncode == 2 and "bad input" in result.stderr


def test_another_agent_neither_sees_nor_revokes_nor_ends_them(serve: Any) -> None:
    service = serve(remember_tool_for("Bash"))
    path = service.options.socket_path
    remember(path, "shared-name", "Bash", {"command": "ls"})          # coder: Bash, any arguments
    assert sessions_json(path, agent="intruder") == []
    assert json.loads(cli("revoke", "--agent", "intruder", "--all", "--json", "--socket", str(path)).stdout) == \
        {"count": 0}
    with Client(path, agent="intruder", session="shared-name") as intruder:
        assert intruder.end_session() == 0 and intruder.sessions() == [] and intruder.revoke() == 0
        asked = len(service.person.seen)
        assert intruder.request("Bash", {"command": "cat ~/.ssh/id_rsa"}).decided_by == "user"
        assert len(service.person.seen) == asked + 1
    assert [e["session"] for e in sessions_json(path)] == ["shared-name"]        # still the coder's


def test_sessions_needs_to_know_whose(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    service = serve(remember_tool_for("none"))
    path = service.options.socket_path
    remember(path, "s1", "Bash", {"n": 1})
    result = cli("sessions", "--socket", str(path))
    assert result.returncode == 2 and "--agent" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    monkeypatch.setenv("DESKTOP_APPROVER_AGENT", AGENT)
    assert cli("sessions", "--json", "--socket", str(path)).stdout.count('"session"') == 1


def test_revoking_claude_codes_approvals_says_claude_code_keeps_its_own_rule(serve: Any) -> None:
    """A Bash command approved for the session from Claude Code is also a session rule of Claude
    Code's own, which no revoke reaches: the person is told where they revoke."""
    service = serve(remember_tool_for("none"))
    path = service.options.socket_path
    remember(path, "cc-1", "Bash", {"command": "npm test"}, agent="claude-code")
    remember(path, "s1", "Bash", {"command": "npm test"})
    told = cli("revoke", "--agent", "claude-code", "--all", "--socket", str(path))
    assert told.returncode == 0 and told.stdout.strip() == "Forgot 1 remembered approval."
    assert "Claude Code also keeps its own copy" in told.stderr and "Restart Claude Code" in told.stderr
    quiet = cli("revoke", "--agent", AGENT, "--all", "--socket", str(path))  # not Claude Code's: nothing to say
    assert quiet.returncode == 0 and quiet.stderr == ""
