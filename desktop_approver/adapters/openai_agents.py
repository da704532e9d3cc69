"""OpenAI Agents SDK: approve tool calls on the desktop (``pip install 'desktop-approver[openai-agents]'``).

Blocking (one line; every function tool of the agent waits for the person)::

    agent = require_desktop_approval(Agent(name="builder", tools=[...]))

It adds :func:`desktop_guardrail` to each function tool's ``tool_input_guardrails``. A deny is
``ToolGuardrailFunctionOutput.reject_content(message)``: the model reads the person's note as
the tool's output and the run goes on. Edited arguments replace the call's arguments before
the tool runs.

Deferred (tools with ``needs_approval=True``, or MCP servers with ``require_approval``): the run
stops with ``result.interruptions``; one call sends them all to the desktop as **one batch** and
returns the state to resume::

    result = await Runner.run(agent, prompt)
    while result.interruptions:
        state = await resolve_interruptions(result)
        result = await Runner.run(agent, state)

Allowed calls are ``state.approve``d (with the person's edited arguments), denied ones
``state.reject``ed with the note as ``rejection_message``. ``allow_session`` is kept per the run's
``group_id`` (the SDK's thread id for traces) when set, else per :class:`Approver`. A policy
``block`` ends the run: the guardrail raises :class:`GuardrailBlocked`, which is both
:class:`~desktop_approver.client.errors.Blocked` and the SDK's ``ToolInputGuardrailTripwireTriggered``,
and :func:`resolve_interruptions` raises ``Blocked``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import Agent, FunctionTool, RunResult, RunResultStreaming, RunState
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.items import ToolApprovalItem
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)

from ..client.errors import Blocked
from .base import Answer, Approver, Call, approver_or_default, hints_from

__all__ = ["GuardrailBlocked", "desktop_guardrail", "require_desktop_approval", "resolve_interruptions",
           "resolve_interruptions_sync"]


class GuardrailBlocked(Blocked, ToolInputGuardrailTripwireTriggered):
    """A policy block, as the guardrail's tripwire: ``except Blocked`` catches it with the rule and
    the reason (``decision``), and so does code written for the SDK's own
    ``except ToolInputGuardrailTripwireTriggered`` (``output.output_info["reason"]``)."""

    def __init__(self, decision: object, guardrail: ToolInputGuardrail[Any]) -> None:
        reason = str(Blocked(decision))
        output = ToolGuardrailFunctionOutput.raise_exception(
            output_info={"blocked": True, "reason": reason, "rule": getattr(decision, "rule", None)})
        ToolInputGuardrailTripwireTriggered.__init__(self, guardrail, output)
        self.args = (reason,)
        self.decision = decision


def desktop_guardrail(approver: Approver | None = None) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that asks the desktop before the tool runs."""
    approver = approver_or_default(approver, "openai-agents")

    async def ask_the_desktop(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        try:
            args = json.loads(context.tool_arguments or "{}")
        except json.JSONDecodeError:
            args = {"arguments": context.tool_arguments}
        if not isinstance(args, dict):
            args = {"arguments": args}
        tool = _function_tool(data.agent, context.tool_name)
        try:
            answer = await approver.ask_async(context.tool_name, args, agent=data.agent.name,
                                              session=_group_id(context.run_config),
                                              description=tool.description if tool is not None else None,
                                              hints=hints_from(getattr(tool, "mcp_annotations", None)))
        except Blocked as exc:
            # The SDK lets a guardrail's exception reach the caller of Runner.run unchanged: one that is
            # both Blocked and the SDK's own tripwire ends the run the SDK's way and carries the reason.
            raise GuardrailBlocked(exc.decision, guardrail) from None
        if not answer.allowed:
            return ToolGuardrailFunctionOutput.reject_content(answer.message, output_info=_info(answer))
        if answer.edited:
            edited = json.dumps(answer.args, ensure_ascii=False)
            if context.tool_call is None:
                # Nowhere to put the edit: running the original arguments would ignore the person.
                return ToolGuardrailFunctionOutput.reject_content(
                    "The person edited the arguments; call the tool again with exactly these: " + edited,
                    output_info=_info(answer))
            # The SDK invokes the tool with this call's arguments, read after the input guardrails.
            context.tool_call.arguments = edited
            context.tool_arguments = edited
        return ToolGuardrailFunctionOutput.allow(output_info=_info(answer))

    guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(guardrail_function=ask_the_desktop, name="desktop-approver")
    return guardrail


def require_desktop_approval(agent: Agent[Any], approver: Approver | None = None) -> Agent[Any]:
    """Add the desktop guardrail to every function tool of ``agent`` (in place); returns the agent."""
    guardrail = desktop_guardrail(approver)
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), guardrail]
    return agent


async def resolve_interruptions(result: RunResult | RunResultStreaming, approver: Approver | None = None, *,
                                session: str | None = None) -> RunState[Any]:
    """Ask about every pending approval in one batch; the state to resume the run with."""
    approver = approver_or_default(approver, _agent_name(result))
    items = list(result.interruptions)
    answers = await approver.ask_batch_async(_calls(items), session=session or _result_group_id(result),
                                             agent=_agent_name(result))
    return _apply(result.to_state(), items, answers)


def resolve_interruptions_sync(result: RunResult, approver: Approver | None = None, *,
                               session: str | None = None) -> RunState[Any]:
    """:func:`resolve_interruptions` next to ``Runner.run_sync``."""
    own = approver is None
    approver = approver_or_default(approver, _agent_name(result))
    try:
        items = list(result.interruptions)
        answers = approver.ask_batch(_calls(items), session=session or _result_group_id(result),
                                     agent=_agent_name(result))
    finally:
        if own:
            approver.close()
    return _apply(result.to_state(), items, answers)


def _function_tool(agent: Any, name: str) -> FunctionTool | None:
    return next((t for t in getattr(agent, "tools", []) if isinstance(t, FunctionTool) and t.name == name), None)


def _calls(items: Sequence[ToolApprovalItem]) -> list[Call]:
    calls = []
    for item in items:
        try:
            args = json.loads(item.arguments or "{}")
        except json.JSONDecodeError:
            args = {"arguments": item.arguments}
        name = item.tool_name or item.name or "tool"
        tool = _function_tool(getattr(item, "agent", None), name)
        calls.append(Call(name, args if isinstance(args, dict) else {"arguments": args},
                          hints=hints_from(getattr(tool, "mcp_annotations", None)),
                          description=tool.description if tool is not None else None))
    return calls


def _apply(state: RunState[Any], items: Sequence[ToolApprovalItem], answers: Sequence[Answer]) -> RunState[Any]:
    for item, answer in zip(items, answers, strict=True):
        if answer.allowed:
            if answer.edited and not _install_edit(item, answer.args):
                exactly = json.dumps(answer.args, ensure_ascii=False)
                state.reject(item, rejection_message="The person edited the arguments; call the tool again "
                                                     "with exactly these: " + exactly)
                continue
            state.approve(item)
        else:
            state.reject(item, rejection_message=answer.message)
    return state


EDITS_GUARDRAIL = "desktop-approver-edits"


def _install_edit(item: ToolApprovalItem, args: dict[str, Any]) -> bool:
    """Make the approved call run with the person's arguments; False when that cannot be done.

    The SDK has no "approve with other arguments", and it refuses a call whose arguments changed
    after approval (it fingerprints them). The arguments are read again after the tool's input
    guardrails run, so a guardrail of ours on the tool swaps them in for this call id only.
    """
    call_id = getattr(item, "call_id", None) or item._extract_call_id()
    tool = _function_tool(getattr(item, "agent", None), item.tool_name or item.name or "")
    if tool is None or not call_id:
        return False
    guardrail = next((g for g in tool.tool_input_guardrails or [] if g.name == EDITS_GUARDRAIL), None)
    if guardrail is None:
        guardrail = _edits_guardrail()
        tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), guardrail]
    guardrail.guardrail_function.edits[call_id] = args  # type: ignore[attr-defined]
    return True


def _edits_guardrail() -> ToolInputGuardrail[Any]:
    edits: dict[str, dict[str, Any]] = {}  # call id -> the person's arguments

    def apply_edit(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        args = edits.pop(data.context.tool_call_id, None)
        if args is not None:
            text = json.dumps(args, ensure_ascii=False)
            if data.context.tool_call is None:
                return ToolGuardrailFunctionOutput.reject_content(
                    "The person edited the arguments; call the tool again with exactly these: " + text)
            data.context.tool_call.arguments = text
            data.context.tool_arguments = text
        return ToolGuardrailFunctionOutput.allow()

    apply_edit.edits = edits  # type: ignore[attr-defined]
    return ToolInputGuardrail(guardrail_function=apply_edit, name=EDITS_GUARDRAIL)


def _agent_name(result: RunResult | RunResultStreaming) -> str:
    agent = getattr(result, "last_agent", None)
    return getattr(agent, "name", None) or "openai-agents"


def _group_id(run_config: Any) -> str | None:
    group = getattr(run_config, "group_id", None)
    return group if isinstance(group, str) and group else None


def _result_group_id(result: RunResult | RunResultStreaming) -> str | None:
    return _group_id(getattr(getattr(result, "context_wrapper", None), "run_config", None))


def _info(answer: Answer) -> dict[str, Any]:
    decision = answer.decision
    return {"decision": decision.decision if decision else None,
            "decided_by": decision.decided_by if decision else "unavailable", "note": answer.note}
