"""Claude Agent SDK: answer its permission questions on the desktop
(``pip install 'desktop-approver[claude-agent-sdk]'``).

One line, the permission callback (Claude Code asks only when its own rules would ask)::

    options = ClaudeAgentOptions(can_use_tool=DesktopPermissions().can_use_tool)

or a ``PreToolUse`` hook (asked before every tool call)::

    options = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[DesktopPermissions().pre_tool_use])]})

``can_use_tool`` answers ``PermissionResultAllow(updated_input=...)`` (the person's edit) and, for
"Allow for session", a rule of our own making exactly as wide as the approved call, kept to the
session (``updated_permissions`` with ``destination="session"``; :mod:`.claude_code_rules`), so
Claude Code stops asking about that call; its own suggestions are wider and never passed on. A deny is
``PermissionResultDeny(message=note)``: Claude reads the note and goes on; a policy ``block``
denies with ``interrupt=True``, which stops the run, and is kept as :attr:`DesktopPermissions.blocked`
(the SDK lets no exception of a callback reach the caller of ``query()``). The hook answers ``permissionDecision``
allow / deny the same way, with the hook's ``session_id`` as the session.

The SDK's permission flow is one call at a time (it has no batch of pending approvals), so this
adapter has the blocking style only.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
from claude_agent_sdk.types import PermissionUpdate

from ..client.errors import Blocked
from ..client.wording import block_message
from .base import Answer, Approver, approver_or_default
from .claude_code_rules import session_update

__all__ = ["DesktopPermissions"]


class DesktopPermissions:
    """The permission callback and the PreToolUse hook, sharing one :class:`Approver`."""

    def __init__(self, approver: Approver | None = None) -> None:
        self.approver = approver_or_default(approver, "claude-agent-sdk")
        self.blocked: Blocked | None = None
        """The last policy block, with its rule and reason. The SDK lets no exception of a permission
        callback or hook reach the code that runs ``query()`` (it answers the CLI instead), so the
        block ends Claude's run and waits here: ``if permissions.blocked: raise permissions.blocked``."""

    def __repr__(self) -> str:
        return f"DesktopPermissions({self.approver!r})"

    async def can_use_tool(self, tool_name: str, tool_input: dict[str, Any],
                           context: ToolPermissionContext) -> PermissionResultAllow | PermissionResultDeny:
        description = context.description or context.decision_reason or context.title
        try:
            answer = await self.approver.ask_async(tool_name, tool_input, description=description,
                                                   agent=self._agent(context.agent_id))
        except Blocked as exc:
            self.blocked = exc
            return PermissionResultDeny(message=block_message(exc), interrupt=True)
        if not answer.allowed:
            return PermissionResultDeny(message=answer.message)
        updates = session_rules(tool_name, answer.args) if answer.for_session else None
        return PermissionResultAllow(updated_input=answer.args if answer.edited else None,
                                     updated_permissions=updates)

    async def pre_tool_use(self, input_data: dict[str, Any], tool_use_id: str | None,
                           context: Any) -> dict[str, Any]:
        if input_data.get("hook_event_name") != "PreToolUse":
            return {}
        tool_input = input_data.get("tool_input") or {}
        try:
            answer = await self.approver.ask_async(input_data["tool_name"], tool_input,
                                                   session=input_data.get("session_id") or None,
                                                   agent=self._agent(input_data.get("agent_id")))
        except Blocked as exc:
            self.blocked = exc
            reason = block_message(exc)
            return {"continue_": False, "stopReason": reason,
                    "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                           "permissionDecisionReason": reason}}
        return {"hookSpecificOutput": _hook_output(answer)}

    def _agent(self, agent_id: str | None) -> str:
        name = self.approver.agent or "claude-agent-sdk"
        return f"{name} ({agent_id})" if agent_id else name  # a subagent's calls name it


def _hook_output(answer: Answer) -> dict[str, Any]:
    output: dict[str, Any] = {"hookEventName": "PreToolUse",
                              "permissionDecision": "allow" if answer.allowed else "deny",
                              "permissionDecisionReason": answer.message}
    if answer.allowed and answer.edited:
        output["updatedInput"] = answer.args
    return output


def session_rules(tool: str, approved: dict[str, Any]) -> list[PermissionUpdate] | None:
    """The rule of our own making that keeps "Allow for session" in Claude Code, exactly as wide as the
    approved call (:mod:`.claude_code_rules`, the same as the hook passes on); None when none is."""
    update = session_update(tool, approved)
    return [PermissionUpdate.from_dict(update)] if update is not None else None
