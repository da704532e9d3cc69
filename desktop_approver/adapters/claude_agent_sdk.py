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
denies with ``interrupt=True``, which stops the run. The hook answers ``permissionDecision``
allow / deny the same way, with the hook's ``session_id`` as the session, and a block also answers
``continue: false``.

The SDK lets no exception of a callback reach the caller of ``query()``: after a block the real
CLI ends the run with an error result (``can_use_tool``: ``query()`` raises the SDK's
``ResultError``, which names no rule and no reason) or an empty ``success`` (``pre_tool_use``). So
the block is kept as :attr:`DesktopPermissions.blocked`, and :meth:`DesktopPermissions.raise_blocks`
wraps the run's messages to raise it as what it is::

    async for message in permissions.raise_blocks(query(prompt=..., options=options)):
        ...  # a policy block leaves this loop as desktop_approver.Blocked (rule and reason)

The SDK's permission flow is one call at a time (it has no batch of pending approvals), so this
adapter has the blocking style only.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, TypeVar

from claude_agent_sdk import (
    ClaudeSDKError,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionUpdate

from ..client.errors import Blocked
from ..client.wording import block_message
from .base import Answer, Approver, approver_or_default
from .claude_code_rules import session_updates

__all__ = ["DesktopPermissions"]

Message = TypeVar("Message")


class DesktopPermissions:
    """The permission callback and the PreToolUse hook, sharing one :class:`Approver`."""

    def __init__(self, approver: Approver | None = None) -> None:
        self.approver = approver_or_default(approver, "claude-agent-sdk")
        self.blocked: Blocked | None = None
        """The last policy block, with its rule and reason. The SDK lets no exception of a permission
        callback or hook reach the code that runs ``query()`` (it answers the CLI instead), so the
        block ends Claude's run and waits here; :meth:`raise_blocks` raises it."""

    def __repr__(self) -> str:
        return f"DesktopPermissions({self.approver!r})"

    async def raise_blocks(self, messages: AsyncIterable[Message]) -> AsyncIterator[Message]:
        """Pass on one run's messages (``query(...)`` or ``ClaudeSDKClient.receive_response()``) and,
        when a policy blocked one of its calls, end with the :class:`Blocked`: in place of the run's
        result, which after a block is the SDK's ``ResultError`` (``can_use_tool``) or an empty
        ``success`` (``pre_tool_use``), neither naming the rule or the reason. The stream is read to
        its end (the CLI finishes cleanly); only that result is held back. One run at a time per
        :class:`DesktopPermissions`: the block is the object's, not the run's."""
        self.blocked = None
        try:
            async for message in messages:
                if self.blocked is not None and isinstance(message, ResultMessage):
                    continue  # the blocked run's result: the Blocked is raised in its place
                yield message
        except ClaudeSDKError as exc:
            if self.blocked is None:
                raise
            raise self.blocked from exc
        if self.blocked is not None:
            raise self.blocked

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
    """The rules of our own making that keep "Allow for session" in Claude Code, as wide as the
    approved call (:mod:`.claude_code_rules`, the same as the hook passes on); None when none is."""
    return [PermissionUpdate.from_dict(update) for update in session_updates(tool, approved)] or None
