"""The real Claude Code CLI (bundled with the Claude Agent SDK) against a scripted API on loopback
(:mod:`tests.support.anthropic_api`) and the app's real core: after "Allow for session" Claude Code
does not ask again about the same command, through the SDK's permission callback and through the
``hook claude-code`` PermissionRequest hook alike; after "Allow once" it asks again. And a policy
block leaves :meth:`DesktopPermissions.raise_blocks` as ``Blocked``, by either way in."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

claude_agent_sdk = pytest.importorskip("claude_agent_sdk", reason="the [claude-agent-sdk] extra is not installed")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    query,
)
from claude_agent_sdk.types import ToolPermissionContext  # noqa: E402

from desktop_approver import testing  # noqa: E402
from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.claude_agent_sdk import DesktopPermissions  # noqa: E402
from desktop_approver.client.errors import Blocked  # noqa: E402
from desktop_approver.core.decisions.tickets import Verdict  # noqa: E402
from tests.support.anthropic_api import ScriptedApi  # noqa: E402
from tests.test_cli import every  # noqa: E402

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [pytest.mark.adapter,
              pytest.mark.skipif(not CLI.exists(), reason="this claude-agent-sdk wheel bundles no Claude Code CLI")]

MKDIR = ("Bash", {"command": "mkdir made", "description": "make a directory"})
"""A command Claude Code asks about (it writes), played twice by the scripted model (the second
time it fails, the directory being there: the run goes on). What Claude Code suggests to remember
is wider (``mkdir made *``, the whole directory, ``acceptEdits``)."""


def claude_env(api: ScriptedApi, home: Path) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-not-a-key", "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}


async def one_prompt() -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": "make the file twice"},
           "parent_tool_use_id": None, "session_id": "cc"}


def run_claude(options: ClaudeAgentOptions) -> list[Any]:
    async def main() -> list[Any]:
        async with asyncio.timeout(120):  # generous: a busy machine; the run itself takes about a second
            return [message async for message in query(prompt=one_prompt(), options=options)]

    return asyncio.run(main())


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    return work


@pytest.mark.parametrize(("decision", "questions"), [("allow_session", 1), ("allow_once", 2)])
def test_sdk_permission_callback_is_not_asked_again_after_allow_for_session(
        serve: Any, tmp_path: Path, decision: str, questions: int) -> None:
    service = serve(every(decision))
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    asked: list[dict[str, Any]] = []

    async def can_use_tool(tool: str, tool_input: dict[str, Any],
                           context: ToolPermissionContext) -> PermissionResultAllow | PermissionResultDeny:
        asked.append(tool_input)
        suggested = [rule.get("ruleContent") for update in context.suggestions
                     for rule in update.to_dict().get("rules") or []]
        assert MKDIR[1]["command"] not in suggested  # so only the app's own rule can stop the second question
        return await permissions.can_use_tool(tool, tool_input, context)

    work = workspace(tmp_path)
    with ScriptedApi([MKDIR, MKDIR]) as api:
        messages = run_claude(ClaudeAgentOptions(can_use_tool=can_use_tool, cwd=work, setting_sources=[],
                                                 env=claude_env(api, tmp_path / "home"), cli_path=CLI))
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, messages[-1]
    assert (work / "made").is_dir()
    assert asked == [MKDIR[1]] * questions  # Claude Code asked once, or (allow once) each time
    assert len(service.person.seen) == questions


@pytest.mark.parametrize(("decision", "questions"), [("allow_session", 1), ("allow_once", 2)])
def test_permission_request_hook_is_not_run_again_after_allow_for_session(
        serve: Any, tmp_path: Path, decision: str, questions: int) -> None:
    service = serve(every(decision))
    runs = tmp_path / "hook-runs"
    hook = [sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--socket", str(service.socket_path)]
    command = f"echo run >> {shlex.quote(str(runs))}; exec {shlex.join(hook)}"
    settings = {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [
        {"type": "command", "command": command, "timeout": 120}]}]}}
    work = workspace(tmp_path)
    with ScriptedApi([MKDIR, MKDIR]) as api:
        messages = run_claude(ClaudeAgentOptions(settings=json.dumps(settings), cwd=work, setting_sources=[],
                                                 env=claude_env(api, tmp_path / "home"), cli_path=CLI))
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, messages[-1]
    assert (work / "made").is_dir()
    assert runs.read_text().splitlines() == ["run"] * questions
    assert len(service.person.seen) == questions


TOUCH = ("Bash", {"command": "touch blocked-file", "description": "make a file"})
RULE, REASON = "no-files", "files are for people"


def blocking_permissions() -> DesktopPermissions:
    return DesktopPermissions(Approver(transport=testing.FakeApprover(lambda call: testing.block(REASON, rule=RULE))))


def block_options(permissions: DesktopPermissions, way_in: str, api: ScriptedApi, tmp_path: Path,
                  work: Path) -> ClaudeAgentOptions:
    answer = ({"can_use_tool": permissions.can_use_tool} if way_in == "can_use_tool"
              else {"hooks": {"PreToolUse": [HookMatcher(hooks=[permissions.pre_tool_use])]}})
    return ClaudeAgentOptions(cwd=work, setting_sources=[], env=claude_env(api, tmp_path / "home"), cli_path=CLI,
                              **answer)  # type: ignore[arg-type]


@pytest.mark.parametrize("way_in", ["can_use_tool", "pre_tool_use"])
def test_a_block_leaves_raise_blocks_as_blocked(tmp_path: Path, way_in: str) -> None:
    permissions = blocking_permissions()
    work = workspace(tmp_path)
    seen: list[Any] = []

    async def main() -> None:
        async with asyncio.timeout(120):
            async for message in permissions.raise_blocks(query(prompt=one_prompt(), options=options)):
                seen.append(message)

    with ScriptedApi([TOUCH, TOUCH]) as api:
        options = block_options(permissions, way_in, api, tmp_path, work)
        with pytest.raises(Blocked) as caught:
            asyncio.run(main())
    assert caught.value.decision.rule == RULE and caught.value.decision.note == REASON  # type: ignore[attr-defined]
    assert caught.value is permissions.blocked
    assert not any(isinstance(message, ResultMessage) for message in seen)  # no empty "success" first
    assert list(work.iterdir()) == []  # the call did not run
    assert sum(1 for body in api.requests if body.get("tools")) == 1  # the run ended at the block


def test_without_raise_blocks_the_sdk_gives_what_the_docs_say(tmp_path: Path) -> None:
    """docs/adapters.md ("A block, host by host") says what the real CLI ends a blocked run with when
    the messages are read straight from ``query()``: this pins it, so a Claude Code release that
    changes it is noticed."""
    work = workspace(tmp_path)
    with ScriptedApi([TOUCH]) as api:
        permissions = blocking_permissions()
        with pytest.raises(ResultError) as caught:
            run_claude(block_options(permissions, "can_use_tool", api, tmp_path, work))
        assert RULE not in str(caught.value) and REASON not in str(caught.value)  # why raise_blocks exists
        assert permissions.blocked is not None

        permissions = blocking_permissions()
        messages = run_claude(block_options(permissions, "pre_tool_use", api, tmp_path, work))
        assert isinstance(messages[-1], ResultMessage)
        assert (messages[-1].subtype, messages[-1].is_error, messages[-1].result) == ("success", False, "")
        assert permissions.blocked is not None
    assert list(work.iterdir()) == []


APPROVED = "touch made"
SAME_EFFECT = [APPROVED, f"{APPROVED} 2>&1", f"{APPROVED} 1>&2", f"{APPROVED} # a note", f"{APPROVED};",
               f"{APPROVED} | cat"]
"""What Claude Code strips behind a command before it matches any rule: nothing the command does
changes (where its own output goes; a comment; the end of the line). And a pipe into a command
Claude Code itself deems read-only (``cat``), which it runs unasked beside any allowed one. These
run without a question."""
PREFIXED = [f"NODE_ENV=production {APPROVED}", f"CI=1 {APPROVED}", f"LANG=C {APPROVED}", f"GOOS=windows {APPROVED}",
            f"time {APPROVED}", f"timeout 5 {APPROVED}", f"nice -n 19 {APPROVED}", f"nohup {APPROVED}",
            f"env {APPROVED}"]
"""What Claude Code strips in front of a command before it matches an allow rule (environment
assignments, wrappers): each may change what the command does, so the app's ask rule sends it back."""
ELSE = [f"{APPROVED} > out.txt", f"{APPROVED} | tee out.txt", "touch other", f"{APPROVED} && touch other"]


def test_allow_for_session_covers_the_approved_command_and_no_different_effect(tmp_path: Path) -> None:
    """The width of the rules "Allow for session" gives Claude Code (:mod:`...claude_code_rules`),
    pinned against the real CLI: after ``touch made`` is approved for the session, Claude Code runs
    it again (and the forms in :data:`SAME_EFFECT`) without a question, and asks about every form
    that could do something else; the app answers those (here: deny, so nothing else runs)."""
    def person(call: testing.ApprovalRequest) -> testing.Answer:
        return testing.allow_session() if call.args.get("command") == APPROVED else testing.deny("not approved")

    permissions = DesktopPermissions(Approver(transport=testing.FakeApprover(person)))
    asked: list[str] = []

    async def can_use_tool(tool: str, tool_input: dict[str, Any],
                           context: ToolPermissionContext) -> PermissionResultAllow | PermissionResultDeny:
        asked.append(tool_input["command"])
        return await permissions.can_use_tool(tool, tool_input, context)

    work = workspace(tmp_path)
    calls = [("Bash", {"command": command}) for command in [APPROVED, *SAME_EFFECT, *PREFIXED, *ELSE]]
    with ScriptedApi(calls) as api:
        messages = run_claude(ClaudeAgentOptions(can_use_tool=can_use_tool, cwd=work, setting_sources=[],
                                                 env=claude_env(api, tmp_path / "home"), cli_path=CLI))
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, messages[-1]
    assert asked == [APPROVED, *PREFIXED, *ELSE]  # asked once about the approved command, then only the others
    assert sorted(path.name for path in work.iterdir()) == ["made"]  # no out.txt, no other


@pytest.mark.parametrize("event", ["PermissionRequest", "PreToolUse"])
def test_a_block_through_the_hook_ends_the_run_before_the_model_reads_it(serve: Any, tmp_path: Path,
                                                                        event: str) -> None:
    """docs/adapters.md's row for the hook: the run ends at the block (``interrupt`` /
    ``continue: false``), the call does not run, and the model is not asked again."""
    service = serve(lambda ticket: [Verdict("deny", "policy", note=REASON, blocked=True, rule=RULE)
                                    for _ in ticket.calls])
    hook = [sys.executable, "-m", "desktop_approver", "hook", "claude-code", "--socket", str(service.socket_path)]
    settings = {"hooks": {event: [{"matcher": "*", "hooks": [
        {"type": "command", "command": shlex.join(hook), "timeout": 120}]}]}}
    work = workspace(tmp_path)
    with ScriptedApi([TOUCH, TOUCH]) as api:
        options = ClaudeAgentOptions(settings=json.dumps(settings), cwd=work, setting_sources=[],
                                     env=claude_env(api, tmp_path / "home"), cli_path=CLI)
        if event == "PermissionRequest":  # interrupt: the CLI's error result
            with pytest.raises(ResultError):
                run_claude(options)
        else:  # continue: false: an empty success
            assert run_claude(options)[-1].result == ""
    assert list(work.iterdir()) == [] and len(service.person.seen) == 1  # the app was asked once: the run ended
    assert sum(1 for body in api.requests if body.get("tools")) == 1
