"""The CLI as scripts and hooks use it: real processes, a real socket, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.decisions.tickets import Ticket, Verdict

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=env)


def every(decision: str, note: str | None = None) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [Verdict(decision, "user", note=note) for _ in ticket.calls]


def test_request_allowed_exits_0_and_prints_json(serve: Any) -> None:
    service = serve(every("allow_once"))
    result = cli("request", "--socket", str(service.options.socket_path), "--tool", "deploy",
                 "--args", '{"env": "prod"}', "--session", "s1", "--description", "ship it")
    assert result.returncode == 0, result.stderr
    decision = json.loads(result.stdout)
    assert decision["decision"] == "allow_once" and decision["allowed"] is True and decision["decided_by"] == "user"
    assert service.person.seen[0].calls[0].description == "ship it"


def test_request_denied_exits_1_with_note(serve: Any) -> None:
    service = serve(every("deny", "not on a Friday"))
    result = cli("request", "--socket", str(service.options.socket_path), "--tool", "deploy", "--args", "{}")
    assert result.returncode == 1
    assert json.loads(result.stdout)["note"] == "not on a Friday"


def test_request_reads_args_from_stdin_and_honours_env_socket(serve: Any) -> None:
    service = serve(every("allow_session"))
    env_path = str(service.options.socket_path)
    os.environ["DESKTOP_APPROVER_SOCKET"] = env_path
    try:
        result = cli("request", "--tool", "write_file", "--args", "-", stdin='{"path": "a.txt"}')
    finally:
        del os.environ["DESKTOP_APPROVER_SOCKET"]
    assert result.returncode == 0, result.stderr
    assert service.person.seen[0].calls[0].args == {"path": "a.txt"}


@pytest.mark.parametrize("args", [
    ["--tool", "x", "--args", "not json"],
    ["--tool", "x", "--args", "[1, 2]"],
    ["--tool", "x", "--args", "{}", "--timeout", "-1"],
    ["--tool", "x", "--args", "{}", "--preview", "3"],
])
def test_bad_input_exits_2_with_one_line_reason(args: list[str], tmp_path: Path) -> None:
    result = cli("request", "--socket", str(tmp_path / "none.sock"), *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "bad input" in result.stderr


def test_no_app_exits_2_quickly(tmp_path: Path) -> None:
    started = time.monotonic()
    result = cli("request", "--socket", str(tmp_path / "nothing-here.sock"), "--tool", "x", "--args", "{}")
    assert result.returncode == 2
    assert "not reachable" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    # Bounded, not timed: a hang would hit subprocess's own timeout long before this.
    assert time.monotonic() - started < 25


def test_stale_socket_file_is_not_an_app(tmp_path: Path) -> None:
    import socket as socket_module

    stale = tmp_path / "stale.sock"
    listener = socket_module.socket(socket_module.AF_UNIX)
    listener.bind(str(stale))
    listener.close()  # the file stays, nobody listens: like a crashed app
    result = cli("request", "--socket", str(stale), "--tool", "x", "--args", "{}")
    assert result.returncode == 2


def test_status_running_and_not_running(serve: Any, tmp_path: Path) -> None:
    service = serve(every("deny"))
    result = cli("status", "--socket", str(service.options.socket_path), "--json")
    assert result.returncode == 0
    status = json.loads(result.stdout)
    assert status["running"] is True and status["pending"] == 0 and status["mode"] == "interactive"
    human = cli("status", "--socket", str(service.options.socket_path))
    assert "is running" in human.stdout and str(service.options.socket_path) in human.stdout
    down = cli("status", "--socket", str(tmp_path / "down.sock"))
    assert down.returncode != 0 and "not running" in down.stdout


def test_claude_code_hook_allows_and_denies(serve: Any) -> None:
    answers = iter(["allow_once", "deny"])
    service = serve(lambda ticket: [Verdict(next(answers), "user", note="checked") for _ in ticket.calls])
    event = {"session_id": "cc-1", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "ls"}}
    for expected in ("allow", "deny"):
        result = cli("hook", "claude-code", "--socket", str(service.options.socket_path), stdin=json.dumps(event))
        assert result.returncode == 0, result.stderr
        output = json.loads(result.stdout)["hookSpecificOutput"]
        assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == expected
    assert service.person.seen[0].session == "cc-1" and service.person.seen[0].identity.agent == "claude-code"


def test_claude_code_hook_fails_closed_without_app(tmp_path: Path) -> None:
    event = {"session_id": "cc", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    result = cli("hook", "claude-code", "--socket", str(tmp_path / "x.sock"), stdin=json.dumps(event))
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    ask = cli("hook", "claude-code", "--when-unavailable", "ask", "--socket", str(tmp_path / "x.sock"),
              stdin=json.dumps(event))
    assert json.loads(ask.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_tray_refuses_second_instance(serve: Any) -> None:
    service = serve(every("deny"))
    result = cli("tray", "--socket", str(service.options.socket_path), "--audit-db",
                 str(service.options.socket_path.parent.parent / "other.sqlite3"), timeout=60)
    assert result.returncode == 1
    assert "already running" in result.stderr


@pytest.mark.parametrize("command", [["policy", "check", "--file", "{rules}"],
                                     ["risk", "--tool", "Bash", "--args", '{{"command": "ls"}}']])
def test_app_commands_on_a_client_only_install_name_the_extra(command: list[str], tmp_path: Path) -> None:
    """Without pydantic (a client-only install) the commands that need the app say so, exit 2."""
    rules = tmp_path / "policy.toml"
    rules.write_text('version = 1\n[[rule]]\ntool = "Read"\naction = "allow"\n')
    command = [part.format(rules=rules) for part in command]
    script = ("import sys; sys.modules['pydantic'] = None\n"
              "from desktop_approver.cli import main\n"
              f"sys.exit(main({command!r}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "needs the [app] extra" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-7"])
def test_request_with_a_timeout_that_cannot_be_waited_is_bad_input(tmp_path: Path, value: str) -> None:
    result = cli("request", "--socket", str(tmp_path / "none.sock"), "--tool", "write_file",
                 "--args", '{"path": "a"}', f"--timeout={value}")
    assert result.returncode == 2 and "bad input" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["mcp-gate", "mcp-permission"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-7"])
def test_mcp_servers_refuse_a_timeout_that_cannot_be_waited(tmp_path: Path, command: str, value: str) -> None:
    upstream = ["--", sys.executable, "-c", "pass"] if command == "mcp-gate" else []
    result = cli(command, "--socket", str(tmp_path / "none.sock"), "--on-unavailable", "allow",
                 f"--timeout={value}", *upstream, stdin="")
    assert result.returncode == 2 and "finite number of seconds above 0" in result.stderr
