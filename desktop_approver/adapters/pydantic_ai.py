"""PydanticAI: approve tool calls on the desktop (``pip install 'desktop-approver[pydantic-ai]'``).

Blocking, in the run (one line)::

    agent = Agent(model, tools=[...], capabilities=[DesktopApproval()])

:class:`DesktopApproval` wraps the agent's toolset in a ``WrapperToolset`` that raises
``ApprovalRequired`` for every call (or those ``requires_approval`` picks), like PydanticAI's own
``ApprovalRequiredToolset`` but carrying the tool's hints and description, and answers the resulting deferred calls in
the run through the ``handle_deferred_tool_calls`` hook: all calls the model made in one turn go
to the desktop as **one batch**, so the person can allow some and deny others in one dialog.

Deferred, across runs (for an app that shows its own "waiting for approval" state)::

    result = agent.run_sync(prompt, output_type=[str, DeferredToolRequests])
    if isinstance(result.output, DeferredToolRequests):
        results = resolve_deferred_sync(result.output)
        result = agent.run_sync(message_history=result.all_messages(), deferred_tool_results=results)

A deny becomes ``ToolDenied(message)``: the model reads the person's note as the tool's result and
the run goes on. Edited arguments become ``ToolApproved(override_args=...)``. ``allow_session``
is kept per ``conversation_id`` (else per run id). MCP tools' annotations go along as hints.
A policy ``block`` raises :class:`~desktop_approver.client.errors.Blocked`, which ends the run.

The person sees the agent's own ``Agent(name=...)``, else the Approver's ``agent``, else
"pydantic-ai". PydanticAI names an unnamed agent after the variable that holds it when it first
runs ("agent", nearly always), so the name is read when the capability is bound to the agent
(``for_agent``, at construction), before that guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from .base import Answer, Approver, Call, approver_or_default, hints_from

__all__ = ["DesktopApproval", "resolve_deferred", "resolve_deferred_sync", "results_from"]

RequiresApproval = Callable[[RunContext[Any], ToolDefinition, dict[str, Any]], bool]
METADATA_KEY = "desktop_approver"  # in ApprovalRequired's metadata: the tool's hints and description


def _every_call(ctx: RunContext[Any], tool: ToolDefinition, args: dict[str, Any]) -> bool:
    return True


@dataclass
class DesktopApproval(AbstractCapability[Any]):
    """Ask the desktop before the agent's tools run; one batch per model turn."""

    approver: Approver = field(default_factory=lambda: Approver(agent="pydantic-ai"))
    requires_approval: RequiresApproval = _every_call
    """Which calls to ask about (default: every call); the others run without asking."""
    agent_name: str | None = None
    """The agent's own name (``Agent(name=...)``), read when the capability is bound to the agent."""

    def __post_init__(self) -> None:
        self.approver = approver_or_default(self.approver, "pydantic-ai")  # a wrong type fails here, not mid-run

    def for_agent(self, agent: AbstractAgent[Any, Any]) -> DesktopApproval:
        # At construction the name is the one given; by the first run PydanticAI may have put the
        # name of the variable holding the agent there instead.
        if self.agent_name is None and agent.name:
            return replace(self, agent_name=agent.name)
        return self

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live connection: not for agent specs

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        return AskingToolset(toolset, requires_approval=self.requires_approval)

    async def handle_deferred_tool_calls(self, ctx: RunContext[Any], *,
                                         requests: DeferredToolRequests) -> DeferredToolResults | None:
        if not requests.approvals:
            return None  # external calls and questions are someone else's
        return await resolve_deferred(requests, self.approver, session=session_of(ctx),
                                      agent=self.agent_name or self.approver.agent or "pydantic-ai")


@dataclass
class AskingToolset(WrapperToolset[Any]):
    """Defers each call that needs approval, with the tool's hints and description as metadata."""

    requires_approval: RequiresApproval = _every_call

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        if not ctx.tool_call_approved and self.requires_approval(ctx, tool.tool_def, tool_args):
            definition = tool.tool_def
            hints = hints_from((definition.metadata or {}).get("annotations"))
            raise ApprovalRequired(metadata={METADATA_KEY: {"hints": hints, "description": definition.description}})
        return await super().call_tool(name, tool_args, ctx, tool)


async def resolve_deferred(requests: DeferredToolRequests, approver: Approver | None = None, *,
                           session: str | None = None, agent: str | None = None) -> DeferredToolResults:
    """Ask about every pending approval in one batch; the results to continue the run with."""
    approver = approver_or_default(approver, agent or "pydantic-ai")
    calls = [_call(part, requests.metadata.get(part.tool_call_id)) for part in requests.approvals]
    answers = await approver.ask_batch_async(calls, session=session, agent=agent)
    return results_from(requests, answers)


def resolve_deferred_sync(requests: DeferredToolRequests, approver: Approver | None = None, *,
                          session: str | None = None, agent: str | None = None) -> DeferredToolResults:
    """:func:`resolve_deferred` for code without an event loop (next to ``agent.run_sync``)."""
    own = approver is None
    approver = approver_or_default(approver, agent or "pydantic-ai")
    try:
        calls = [_call(part, requests.metadata.get(part.tool_call_id)) for part in requests.approvals]
        answers = approver.ask_batch(calls, session=session, agent=agent)
    finally:
        if own:
            approver.close()
    return results_from(requests, answers)


def results_from(requests: DeferredToolRequests, answers: list[Answer]) -> DeferredToolResults:
    """PydanticAI's results for the approvals, one answer per call in the same order."""
    approvals: dict[str, ToolApproved | ToolDenied] = {}
    answered_by: dict[str, str] = {}
    for part, answer in zip(requests.approvals, answers, strict=True):
        if answer.allowed:
            approvals[part.tool_call_id] = ToolApproved(override_args=answer.args if answer.edited else None)
        else:
            approvals[part.tool_call_id] = ToolDenied(answer.message)
        answered_by[part.tool_call_id] = f"desktop-approver:{answer.decision.decided_by}" if answer.decision \
            else "desktop-approver:unavailable"
    return DeferredToolResults(approvals=approvals, answered_by=answered_by)  # type: ignore[arg-type]


def session_of(ctx: RunContext[Any]) -> str | None:
    """The conversation (kept across runs that share a history), else this run."""
    return ctx.conversation_id or ctx.run_id


def _call(part: ToolCallPart, metadata: Any) -> Call:
    """A pending call for the desktop; hints from our own metadata, or MCP annotations in the call's."""
    ours = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    if isinstance(ours, dict):
        return Call(part.tool_name, part.args_as_dict(), hints=ours.get("hints"), description=ours.get("description"))
    hints = hints_from(metadata.get("annotations")) if isinstance(metadata, dict) else None
    return Call(part.tool_name, part.args_as_dict(), hints=hints)
