"""Claude Agent SDK through its ``transport=`` seam: a scripted stand-in for the Claude Code CLI asks
permission for tool calls over the SDK's control protocol; the app's real core answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk", reason="the [claude-agent-sdk] extra is not installed "
                                               "(pip install 'desktop-approver[claude-agent-sdk]')")

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, ResultMessage, query  # noqa: E402
from claude_agent_sdk._internal.transport import Transport  # noqa: E402

from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.claude_agent_sdk import DesktopPermissions  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter

SUGGESTION = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
              "behavior": "allow", "destination": "localSettings"}
"""What Claude Code suggests: wider than the call."""


def exact(command: str) -> list[dict[str, Any]]:
    """The rules of the app's own making for an approved command, for this session: it allowed, and
    asked about behind any prefix (which Claude Code strips before it matches an allow rule)."""
    return [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": command}], "behavior": "allow",
             "destination": "session"},
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": f"* {command}"}], "behavior": "ask",
             "destination": "session"}]


class ScriptedCli(Transport):
    """Plays Claude Code: answers initialize, then asks about each scripted tool call and 'runs' the
    allowed ones (with the input the answer carries), then reports a result."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], *, via_hook: bool = False,
                 suggestions: list[dict[str, Any]] | None = None) -> None:
        self.calls = calls
        self.suggestions = [SUGGESTION] if suggestions is None else suggestions
        self.via_hook = via_hook
        self.out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.replies: list[dict[str, Any]] = []
        self.hook_ids: list[str] = []
        self.task: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        pass

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            message = json.loads(line)
            if message["type"] == "control_request" and message["request"]["subtype"] == "initialize":
                hooks = (message["request"].get("hooks") or {}).get("PreToolUse") or []
                self.hook_ids = [i for matcher in hooks for i in matcher["hookCallbackIds"]]
                await self.out.put({"type": "control_response", "response": {
                    "subtype": "success", "request_id": message["request_id"], "response": {}}})
            elif message["type"] == "control_response":
                response = message["response"]
                self.answers[response["request_id"]].set_result(response.get("response") or {})
            elif message["type"] == "user" and self.task is None:
                self.task = asyncio.ensure_future(self.play())

    async def ask(self, request_id: str, request: dict[str, Any]) -> dict[str, Any]:
        self.answers[request_id] = asyncio.get_running_loop().create_future()
        await self.out.put({"type": "control_request", "request_id": request_id, "request": request})
        return await asyncio.wait_for(self.answers[request_id], 30)

    async def play(self) -> None:
        for index, (tool, tool_input) in enumerate(self.calls):
            if self.via_hook:
                reply = await self.ask(f"h{index}", {
                    "subtype": "hook_callback", "callback_id": self.hook_ids[0], "tool_use_id": f"tu{index}",
                    "input": {"hook_event_name": "PreToolUse", "session_id": "cc-session", "cwd": "/tmp",
                              "transcript_path": "/tmp/t.jsonl", "tool_name": tool, "tool_input": tool_input,
                              "tool_use_id": f"tu{index}"}})
                self.replies.append(reply)
                output = reply.get("hookSpecificOutput") or {}
                if output.get("permissionDecision") == "allow":
                    self.ran.append((tool, output.get("updatedInput") or tool_input))
                if reply.get("continue") is False:
                    break
            else:
                reply = await self.ask(f"p{index}", {
                    "subtype": "can_use_tool", "tool_name": tool, "input": tool_input, "tool_use_id": f"tu{index}",
                    "permission_suggestions": self.suggestions, "blocked_path": None})
                self.replies.append(reply)
                if reply["behavior"] == "allow":
                    self.ran.append((tool, reply["updatedInput"]))
                elif reply.get("interrupt"):
                    break
        await self.out.put({"type": "result", "subtype": "success", "duration_ms": 1, "duration_api_ms": 1,
                            "is_error": False, "num_turns": len(self.calls), "session_id": "cc-session",
                            "result": "done"})
        await self.out.put(None)  # the CLI exits after its result

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (message := await self.out.get()) is not None:
            yield message


async def one_prompt() -> AsyncIterator[dict[str, Any]]:
    yield {"type": "user", "message": {"role": "user", "content": "go"}, "parent_tool_use_id": None,
           "session_id": "cc-session"}


def run(cli: ScriptedCli, options: ClaudeAgentOptions) -> list[Any]:
    async def main() -> list[Any]:
        async with asyncio.timeout(60):
            return [message async for message in query(prompt=one_prompt(), options=options, transport=cli)]

    return asyncio.run(main())


def per_call(choose: Callable[[Any], Verdict]) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [choose(call) for call in ticket.calls]


def answers(call: Any) -> Verdict:
    command = call.args.get("command")
    if command == "rm -rf build":
        return Verdict("deny", "user", note="keep the build, run make clean")
    if command == "npm test":
        return Verdict("allow_session", "user")
    return Verdict("allow_once", "user", updated_args={"command": "ls -la"})


CALLS = [("Bash", {"command": "ls"}), ("Bash", {"command": "rm -rf build"}), ("Bash", {"command": "npm test"})]


def test_can_use_tool_allow_edit_deny_and_session_rules(serve: Any) -> None:
    service = serve(per_call(answers))
    cli = ScriptedCli(CALLS)
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    messages = run(cli, ClaudeAgentOptions(can_use_tool=permissions.can_use_tool))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "done"
    assert cli.ran == [("Bash", {"command": "ls -la"}), ("Bash", {"command": "npm test"})]
    denied = cli.replies[1]
    assert denied == {"behavior": "deny",
                      "message": "The tool call was denied by the person at the desktop and was not run. "
                                 "Note: keep the build, run make clean"}
    assert cli.replies[2]["updatedPermissions"] == exact("npm test")
    assert "updatedPermissions" not in cli.replies[0]
    assert {t.identity.agent for t in service.person.seen} == {"claude-agent-sdk"}


def test_allow_session_passes_none_of_the_suggestions_only_the_exact_command(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    directory = {"type": "addDirectories", "directories": ["/"], "destination": "localSettings"}
    widening = [{"type": "setMode", "mode": mode, "destination": "session"}
                for mode in ("acceptEdits", "auto", "bypassPermissions")]
    whole = {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"}
    cli = ScriptedCli([*CALLS[:1], ("Bash", {"command": "rm *.o"}), ("Write", {"file_path": "/tmp/a", "content": ""})],
                      suggestions=[directory, *widening, whole, SUGGESTION])
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    run(cli, ClaudeAgentOptions(can_use_tool=permissions.can_use_tool))
    assert cli.replies[0]["updatedPermissions"] == exact("ls")
    assert "updatedPermissions" not in cli.replies[1]  # `*` would be a wildcard: no exact rule says it
    assert "updatedPermissions" not in cli.replies[2]  # a path rule covers every write of the file


def test_can_use_tool_block_interrupts_and_unreachable_denies(serve: Any, tmp_path: Path) -> None:
    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    cli = ScriptedCli(CALLS)
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    run(cli, ClaudeAgentOptions(can_use_tool=permissions.can_use_tool))
    assert cli.ran == [] and len(cli.replies) == 1
    assert cli.replies[0]["interrupt"] is True and "never" in cli.replies[0]["message"]

    cli = ScriptedCli(CALLS[:1])
    permissions = DesktopPermissions(Approver(socket_path=tmp_path / "x.sock"))
    run(cli, ClaudeAgentOptions(can_use_tool=permissions.can_use_tool))
    assert cli.ran == [] and "not reachable" in cli.replies[0]["message"]


def test_pre_tool_use_hook_uses_the_session_and_allow_session_is_not_asked_again(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    cli = ScriptedCli([("Bash", {"command": "npm test"})] * 2, via_hook=True)
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    run(cli, ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[permissions.pre_tool_use])]}))
    assert cli.ran == [("Bash", {"command": "npm test"})] * 2
    assert len(service.person.seen) == 1 and service.person.seen[0].session == "cc-session"
    reason = cli.replies[1]["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("approved (allow_session, session")


def test_pre_tool_use_hook_deny_and_edit(serve: Any) -> None:
    service = serve(per_call(answers))
    cli = ScriptedCli(CALLS[:2], via_hook=True)
    permissions = DesktopPermissions(Approver(socket_path=service.socket_path))
    run(cli, ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[permissions.pre_tool_use])]}))
    assert cli.ran == [("Bash", {"command": "ls -la"})]
    denied = cli.replies[1]["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny" and denied["permissionDecisionReason"].endswith("make clean")
