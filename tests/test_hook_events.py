"""``hook claude-code``: the PermissionRequest, Notification and Stop events, and ``--install``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.adapters.claude_code_rules import session_updates
from desktop_approver.commands.hook import HOOK_COMMAND, merged_settings
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from tests.test_cli import ROOT, cli, every

SUGGESTION = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
              "behavior": "allow", "destination": "localSettings"}
"""What Claude Code suggests: wider than the call (any arguments after ``npm test``)."""


def exact(command: str) -> list[dict[str, Any]]:
    """The rules of the app's own making: the approved command allowed, and asked about behind any
    prefix (which Claude Code would strip before an allow rule), for this session."""
    return [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}],
             "behavior": "allow", "destination": "session"},
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": f"* {command}"}],
             "behavior": "ask", "destination": "session"}]


EXACT = exact("npm test")


BLOCKED = "The tool call was blocked by a policy rule and was not run. Note: no npm here"
"""The words every way in gives the model for a block (``client/wording.py``)."""


def permission_request(**extra: Any) -> str:
    event = {"session_id": "cc-7", "cwd": "/tmp/proj", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
             "tool_input": {"command": "npm test"}, "permission_suggestions": [SUGGESTION], **extra}
    return json.dumps(event)


def decision_of(stdout: str) -> dict[str, Any]:
    output = json.loads(stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PermissionRequest"
    return output["decision"]


def test_permission_request_allow_once_has_no_rules(serve: Any) -> None:
    service = serve(every("allow_once"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=permission_request())
    assert result.returncode == 0, result.stderr
    assert decision_of(result.stdout) == {"behavior": "allow"}
    ticket = service.person.seen[0]
    assert ticket.session == "cc-7" and ticket.identity.agent == "claude-code" and ticket.identity.cwd == "/tmp/proj"


def test_permission_request_allow_session_adds_the_exact_command_for_this_session_only(serve: Any) -> None:
    service = serve(every("allow_session"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=permission_request())
    assert decision_of(result.stdout) == {"behavior": "allow", "updatedPermissions": EXACT}


def test_permission_request_deny_carries_the_note_and_does_not_interrupt(serve: Any) -> None:
    service = serve(every("deny", "run the unit tests only"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=permission_request())
    decision = decision_of(result.stdout)
    assert decision["behavior"] == "deny" and decision["interrupt"] is False
    assert decision["message"].endswith("run the unit tests only")


def test_permission_request_blocked_interrupts(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("deny", "policy", note="no npm here", blocked=True)])
    decision = decision_of(cli("hook", "claude-code", "--socket", str(service.socket_path),
                               stdin=permission_request()).stdout)
    assert decision == {"behavior": "deny", "message": BLOCKED, "interrupt": True}


def test_permission_request_edited_input(serve: Any) -> None:
    def edit(ticket: Ticket) -> list[Verdict]:
        return [Verdict("allow_once", "user", updated_args={"command": "npm test -- --bail"})]

    service = serve(edit)
    decision = decision_of(cli("hook", "claude-code", "--socket", str(service.socket_path),
                               stdin=permission_request()).stdout)
    assert decision == {"behavior": "allow", "updatedInput": {"command": "npm test -- --bail"}}


def test_permission_request_without_app_denies_or_leaves_the_prompt_to_claude(tmp_path: Path) -> None:
    socket = str(tmp_path / "none.sock")
    denied = decision_of(cli("hook", "claude-code", "--socket", socket, stdin=permission_request()).stdout)
    assert denied["behavior"] == "deny" and "not reachable" in denied["message"]
    ask = cli("hook", "claude-code", "--socket", socket, "--when-unavailable", "ask", stdin=permission_request())
    assert ask.returncode == 0 and ask.stdout == ""


# Every kind of PermissionUpdate Claude Code documents (claude_agent_sdk.types.PermissionUpdate).
ADD_DIRECTORY = {"type": "addDirectories", "directories": ["/tmp/other"], "destination": "localSettings"}
ROOT_DIRECTORY = {"type": "addDirectories", "directories": ["/"], "destination": "session"}
ACCEPT_EDITS = {"type": "setMode", "mode": "acceptEdits", "destination": "localSettings"}
AUTO = {"type": "setMode", "mode": "auto", "destination": "session"}
WHOLE_TOOL = {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"}


@pytest.mark.parametrize(("tool", "approved", "command"), [
    ("Bash", {"command": "npm test"}, "npm test"),
    ("Bash", {"command": "git status", "description": "d", "timeout": 5}, "git status"),
    ("Bash", {"command": "rm *.o"}, None),               # `*` is Claude Code's wildcard: no rule says this exactly
    ("Bash", {"command": "npm test:*"}, None),
    ("Bash", {"command": "  "}, None),
    ("Bash", {"command": ["npm", "test"]}, None),
    ("Bash", {}, None),
    ("bash", {"command": "npm test"}, None),              # not Claude Code's Bash tool
    ("Edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"}, None),  # a path rule: any edit
    ("WebFetch", {"url": "https://example.org/x"}, None),  # a domain rule: every page
    ("mcp__github__create_issue", {"title": "t"}, None),   # an MCP rule: the whole tool
])
def test_the_session_rules_are_the_approved_call_or_none(tool: str, approved: dict[str, Any],
                                                          command: str | None) -> None:
    assert session_updates(tool, approved) == ([] if command is None else exact(command))


def test_permission_request_allow_session_passes_none_of_claude_codes_wider_suggestions(serve: Any) -> None:
    service = serve(every("allow_session"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=permission_request(
        permission_suggestions=[ADD_DIRECTORY, ROOT_DIRECTORY, ACCEPT_EDITS, AUTO, WHOLE_TOOL, SUGGESTION]))
    assert decision_of(result.stdout) == {"behavior": "allow", "updatedPermissions": EXACT}


def test_permission_request_allow_session_rule_is_the_edited_command(serve: Any) -> None:
    def edit(ticket: Ticket) -> list[Verdict]:
        return [Verdict("allow_session", "user", updated_args={"command": "npm test -- --bail"})]

    service = serve(edit)
    decision = decision_of(cli("hook", "claude-code", "--socket", str(service.socket_path),
                               stdin=permission_request()).stdout)
    assert decision == {"behavior": "allow", "updatedInput": {"command": "npm test -- --bail"},
                        "updatedPermissions": exact("npm test -- --bail")}


def test_permission_request_allow_session_of_a_file_edit_adds_no_rule(serve: Any) -> None:
    service = serve(every("allow_session"))
    edit = {"file_path": "/tmp/proj/a.py", "old_string": "a", "new_string": "b"}
    suggestion = {"type": "addRules", "rules": [{"toolName": "Edit", "ruleContent": "//tmp/proj/**"}],
                  "behavior": "allow", "destination": "session"}
    decision = decision_of(cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=permission_request(
        tool_name="Edit", tool_input=edit, permission_suggestions=[suggestion, ACCEPT_EDITS])).stdout)
    assert decision == {"behavior": "allow"}


def test_pre_tool_use_block_ends_the_run_with_the_stop_reason(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("deny", "policy", note="no npm here", blocked=True)])
    event = json.loads(permission_request(hook_event_name="PreToolUse"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=json.dumps(event))
    answer = json.loads(result.stdout)
    assert result.returncode == 0
    assert answer["continue"] is False and answer["stopReason"] == BLOCKED
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_pre_tool_use_deny_lets_the_run_go_on(serve: Any) -> None:
    service = serve(every("deny", "not now"))
    event = json.loads(permission_request(hook_event_name="PreToolUse"))
    result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=json.dumps(event))
    answer = json.loads(result.stdout)
    assert "continue" not in answer and answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_notification_and_stop_tell_the_person_through_notify_send(tmp_path: Path) -> None:
    # A notify-send of our own on PATH records what it was asked to show.
    log = tmp_path / "notify.log"
    fake = tmp_path / "bin" / "notify-send"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {log}\necho >> {log}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env_path = f"{fake.parent}:{os.environ['PATH']}"
    events = [{"hook_event_name": "Notification", "session_id": "s", "cwd": "/home/me/shop",
               "message": "Claude needs your permission to use Bash"},
              {"hook_event_name": "Stop", "session_id": "s", "cwd": "/home/me/shop", "stop_hook_active": False}]
    for event in events:
        os.environ["PATH"] = env_path
        try:
            result = cli("hook", "claude-code", "--socket", str(tmp_path / "none.sock"), stdin=json.dumps(event))
        finally:
            os.environ["PATH"] = env_path.split(":", 1)[1]
        assert result.returncode == 0 and result.stdout == ""
    lines = log.read_text().splitlines()
    assert lines[0].endswith("Claude Code (shop) is waiting for you|Claude needs your permission to use Bash|")
    assert lines[1].endswith("Claude Code (shop) finished||")


def test_an_event_it_does_not_answer_is_left_alone(tmp_path: Path) -> None:
    """Exit 2 would block a prompt or a tool's result: exit 0, nothing on stdout, one line on stderr."""
    for event in ({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": {}},
                  {"hook_event_name": "UserPromptSubmit", "prompt": "hi"}):
        result = cli("hook", "claude-code", "--socket", str(tmp_path / "x.sock"), stdin=json.dumps(event))
        assert result.returncode == 0 and result.stdout == ""
        assert len(result.stderr.splitlines()) == 1 and event["hook_event_name"] in result.stderr


def test_install_merges_keeps_what_is_there_and_prints_the_diff(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    existing = {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    settings.write_text(json.dumps(existing))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    import subprocess
    import sys

    def install() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--install",
                               "--project"], cwd=project, capture_output=True, text=True, env=env, timeout=30)

    first = install()
    assert first.returncode == 0, first.stderr
    assert "+++" in first.stdout and '"PermissionRequest"' in first.stdout
    written = json.loads(settings.read_text())
    assert written["model"] == "opus"
    assert written["hooks"]["Stop"][0] == existing["hooks"]["Stop"][0]
    installed = written["hooks"]["Stop"][1]["hooks"][0]["command"]
    assert installed == HOOK_COMMAND  # the project's settings are shared: no path of this machine's venv
    assert "shared with the project" in first.stderr
    for event, extra in (("PermissionRequest", " --deadline 600"), ("Notification", ""), ("Stop", "")):
        commands = [h["command"] for g in written["hooks"][event] for h in g["hooks"]]
        assert commands.count(installed + extra) == 1
    second = install()
    assert second.returncode == 0 and "nothing changed" in second.stdout
    assert json.loads(settings.read_text()) == written


def test_install_writes_an_absolute_command_that_runs_without_the_venv_on_path(serve: Any, tmp_path: Path) -> None:
    import shlex
    import subprocess
    import sys

    own = tmp_path / "claude-config"
    own.mkdir()
    (own / "settings.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": HOOK_COMMAND}]}]}}))  # an earlier install
    env = dict(os.environ, PYTHONPATH=str(ROOT), CLAUDE_CONFIG_DIR=str(own))
    result = subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--install"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=30)
    assert result.returncode == 0, result.stderr
    written = json.loads((own / "settings.json").read_text())
    commands = {h["command"].removesuffix(" --deadline 600")
                for event in written["hooks"].values() for g in event for h in g["hooks"]}
    assert len(commands) == 1, commands  # the bare command of an earlier install now has the path too
    words = shlex.split(commands.pop())
    assert os.path.isabs(words[0]) and words[-2:] == ["hook", "claude-code"]
    service = serve(every("allow_once"))
    ran = subprocess.run([*words, "--socket", str(service.socket_path)], input=permission_request(),
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/nonexistent"},
                         timeout=30)
    assert decision_of(ran.stdout) == {"behavior": "allow"}, ran.stderr


def test_install_project_never_writes_this_machine_s_path_into_the_shared_settings(tmp_path: Path) -> None:
    import subprocess
    import sys

    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    mine = f"{sys.executable} -m desktop_approver hook claude-code --when-unavailable ask"
    (project / ".claude" / "settings.json").write_text(json.dumps(  # a path an earlier version put there
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": mine}]}]}}))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--install",
                             "--project"], cwd=project, capture_output=True, text=True, env=env, timeout=30)
    assert result.returncode == 0, result.stderr
    text = (project / ".claude" / "settings.json").read_text()
    assert sys.executable not in text and str(Path(sys.executable).parent) not in text
    written = json.loads(text)
    assert written["hooks"]["Stop"][0]["hooks"][0]["command"] == HOOK_COMMAND + " --when-unavailable ask"


def test_install_repoints_an_earlier_hook_keeping_its_options_and_leaves_others_alone() -> None:
    earlier = {"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "desktop-approver hook claude-code --when-unavailable ask"},
        {"type": "command", "command": "my-linter hook claude-code"}]}]}}
    merged = merged_settings(earlier, "/opt/venv/bin/desktop-approver hook claude-code")
    commands = [h["command"] for h in merged["hooks"]["PreToolUse"][0]["hooks"]]
    assert commands == ["/opt/venv/bin/desktop-approver hook claude-code --when-unavailable ask",
                        "my-linter hook claude-code"]
    assert merged["hooks"]["Stop"][0]["hooks"][0]["command"] == "/opt/venv/bin/desktop-approver hook claude-code"


def test_install_refuses_a_settings_file_it_cannot_read(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError):
        merged_settings({"hooks": []})
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--install",
                             "--project"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=30)
    assert result.returncode == 2 and "cannot update" in result.stderr
    assert settings.read_text() == "{not json"


def test_install_without_project_writes_the_user_settings(private_home: Path) -> None:
    result = cli("hook", "claude-code", "--install")
    assert result.returncode == 0, result.stderr
    written = json.loads((private_home / ".claude" / "settings.json").read_text())
    assert set(written["hooks"]) == {"PermissionRequest", "Notification", "Stop"}
    assert "--project only goes with --install" in cli("hook", "claude-code", "--project", stdin="{}").stderr


def test_notification_and_stop_reach_the_running_app_and_its_tray_word(serve: Any) -> None:
    """With the app running, the notice goes to the app (tray and its own notification), audited."""
    service = serve(every("allow_once"))
    told: list[tuple[str | None, str, str]] = []
    service.service.broker.notice_listeners.append(lambda who, kind, text: told.append((who.agent, kind, text)))
    events = [{"hook_event_name": "Notification", "session_id": "s", "cwd": "/home/me/shop",
               "message": "Claude needs your permission to use Bash"},
              {"hook_event_name": "Stop", "session_id": "s", "cwd": "/home/me/shop"}]
    for event in events:
        result = cli("hook", "claude-code", "--socket", str(service.socket_path), stdin=json.dumps(event))
        assert result.returncode == 0 and result.stdout == "", result.stderr
    assert told == [("Claude Code (shop)", "waiting",
                     "Claude Code (shop) is waiting for you: Claude needs your permission to use Bash"),
                    ("Claude Code (shop)", "finished", "Claude Code (shop) finished")]
    notices = service.service.audit.events(kind="notice")      # newest first
    assert [e["code"] for e in reversed(notices)] == ["waiting", "finished"]


# -- Claude Code's hook timeout, and input that is not a call -----------------------------------------------


def test_the_hook_denies_before_claude_codes_hook_timeout(tmp_path: Path) -> None:
    # The app (default timeout 300 s) could answer as late as 450 s; Claude Code kills the hook at its
    # timeout and then runs a PreToolUse call. Nobody answers here: the hook must deny by itself.
    from tests.support.deciders import WaitingPerson
    from tests.support.service import ServiceThread

    with ServiceThread(tmp_path, WaitingPerson()) as service:
        event = json.loads(permission_request(hook_event_name="PreToolUse"))
        result = cli("hook", "claude-code", "--socket", str(service.socket_path), "--deadline", "2",
                     stdin=json.dumps(event))
        output = json.loads(result.stdout)["hookSpecificOutput"]
        assert result.returncode == 0, result.stderr
        assert output["permissionDecision"] == "deny" and "2 s timeout" in output["permissionDecisionReason"]
        denied = decision_of(cli("hook", "claude-code", "--socket", str(service.socket_path), "--deadline=1.5",
                                 stdin=permission_request()).stdout)
        assert denied["behavior"] == "deny" and "1.5 s timeout" in denied["message"]
        wait_for(lambda: service.person.cancelled == 2)  # both questions were withdrawn from the desktop


def wait_for(condition: Any) -> None:
    import time

    deadline = time.monotonic() + 30  # only there so a broken hook fails the test instead of hanging it
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_install_writes_the_hook_timeout_as_its_deadline() -> None:
    merged = merged_settings({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "desktop-approver hook claude-code --deadline 30", "timeout": 900}]}]}},
        "/opt/venv/bin/desktop-approver hook claude-code")
    assert merged["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == \
        "/opt/venv/bin/desktop-approver hook claude-code --deadline 900"
    assert merged["hooks"]["PermissionRequest"][0]["hooks"][0] == {
        "type": "command", "command": "/opt/venv/bin/desktop-approver hook claude-code --deadline 600", "timeout": 600}
    assert merged["hooks"]["Stop"][0]["hooks"][0]["command"] == "/opt/venv/bin/desktop-approver hook claude-code"


@pytest.mark.parametrize("option", ["--timeout", "--deadline"])
@pytest.mark.parametrize("value", ["nan", "inf", "0", "-7"])
def test_a_timeout_that_cannot_be_waited_is_bad_input(tmp_path: Path, option: str, value: str) -> None:
    event = json.loads(permission_request(hook_event_name="PreToolUse"))
    result = cli("hook", "claude-code", "--socket", str(tmp_path / "none.sock"), f"{option}={value}",
                 stdin=json.dumps(event))
    assert result.returncode == 2 and "Traceback" not in result.stderr  # exit 2: Claude Code blocks the call
    assert "bad hook input" in result.stderr and option in result.stderr


@pytest.mark.parametrize("change", [{"tool_name": ""}, {"tool_name": None}, {"tool_input": None},
                                    {"tool_input": []}, {"tool_input": "rm -rf /"}, {"tool_input": 3}])
@pytest.mark.parametrize("kind", ["PreToolUse", "PermissionRequest"])
def test_an_event_that_is_not_a_call_is_bad_input(tmp_path: Path, change: dict[str, Any], kind: str) -> None:
    event = {**json.loads(permission_request(hook_event_name=kind)), **change}
    result = cli("hook", "claude-code", "--socket", str(tmp_path / "none.sock"), stdin=json.dumps(event))
    assert result.returncode == 2 and "bad hook input" in result.stderr and "Traceback" not in result.stderr
