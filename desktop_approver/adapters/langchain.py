"""LangChain v1 / LangGraph: approve tool calls on the desktop (``pip install 'desktop-approver[langchain]'``).

Blocking (one line; each tool call waits in the tool node for the person)::

    agent = create_agent(model, tools=[...], middleware=[DesktopApprovalMiddleware()])

:class:`DesktopApprovalMiddleware` is an ``AgentMiddleware`` with ``wrap_tool_call`` and
``awrap_tool_call``. A deny returns a ``ToolMessage`` with ``status="error"`` and the person's
note as its content, so the model reads it and the run goes on; edited arguments replace the
call's ``args`` before the tool runs.

Deferred (LangChain's ``HumanInTheLoopMiddleware`` pauses the graph with an interrupt): one call
answers every pending interrupt, sending all their tool calls to the desktop as **one batch**::

    result = agent.invoke(inputs, config, version="v2")
    while result.interrupts:
        result = agent.invoke(answer_interrupts(result.interrupts, config), config, version="v2")

It answers both of the middleware's modes: ``batched`` (one ``HITLRequest`` per model turn,
answered with ``{"decisions": [...]}``) and ``per_call`` (one ``tool_approval`` interrupt per call,
answered by interrupt id) with ``approve`` / ``edit`` / ``reject`` (the note as its message).

``allow_session`` is kept per LangGraph ``thread_id``; the agent's name is ``create_agent(name=...)``.
A policy ``block`` raises :class:`~desktop_approver.client.errors.Blocked`, which ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, Interrupt

from .base import Answer, Approver, Call, approver_or_default, hints_from

__all__ = ["DesktopApprovalMiddleware", "answer_interrupts", "answer_interrupts_async", "decision_for"]

ToolFilter = Callable[[ToolCallRequest], bool]


class DesktopApprovalMiddleware(AgentMiddleware[Any, Any, Any]):
    """Ask the desktop before each tool call runs (``ask_about`` may pick which calls)."""

    def __init__(self, approver: Approver | None = None, *, ask_about: ToolFilter | None = None) -> None:
        super().__init__()
        self.approver = approver_or_default(approver, "langchain")
        self.ask_about = ask_about

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]) -> ToolMessage | Command[Any]:
        if self.ask_about is not None and not self.ask_about(request):
            return handler(request)
        call, session, agent = _call_of(request)
        answer = self.approver.ask(call.tool, call.args, session=session, agent=_named(self.approver, agent),
                                   hints=call.hints, description=call.description)
        return _settle(request, answer, handler)

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
                              ) -> ToolMessage | Command[Any]:
        if self.ask_about is not None and not self.ask_about(request):
            return await handler(request)
        call, session, agent = _call_of(request)
        answer = await self.approver.ask_async(call.tool, call.args, session=session,
                                               agent=_named(self.approver, agent), hints=call.hints,
                                               description=call.description)
        if not answer.allowed:
            return _refusal(request, answer)
        return await handler(_with_args(request, answer))


def _settle(request: ToolCallRequest, answer: Answer,
            handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]) -> ToolMessage | Command[Any]:
    if not answer.allowed:
        return _refusal(request, answer)
    return handler(_with_args(request, answer))


def _with_args(request: ToolCallRequest, answer: Answer) -> ToolCallRequest:
    if not answer.edited:
        return request
    return request.override(tool_call={**request.tool_call, "args": answer.args})


def _refusal(request: ToolCallRequest, answer: Answer) -> ToolMessage:
    return ToolMessage(content=answer.message, tool_call_id=request.tool_call["id"] or "",
                       name=request.tool_call["name"], status="error")


def _call_of(request: ToolCallRequest) -> tuple[Call, str | None, str | None]:
    tool = request.tool
    hints = None
    description = None
    if tool is not None:
        metadata = getattr(tool, "metadata", None) or {}
        hints = hints_from(metadata.get("annotations") if isinstance(metadata, dict) else None)
        if hints is None and isinstance(metadata, dict):
            hints = hints_from(metadata)
        description = getattr(tool, "description", None) or None
    config = getattr(request.runtime, "config", None) if request.runtime is not None else None
    call = Call(request.tool_call["name"], dict(request.tool_call.get("args") or {}), hints=hints,
                description=description)
    return call, thread_id(config), agent_name(config)


def _named(approver: Approver, agent: str | None) -> str:
    return agent or approver.agent or "langchain"


def thread_id(config: Any) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get("thread_id")
    return str(value) if value else None


def agent_name(config: Any) -> str | None:
    metadata = (config or {}).get("metadata") or {}
    value = metadata.get("lc_agent_name")
    return str(value) if value else None


# -- deferred: HumanInTheLoopMiddleware's interrupts ----------------------------------------------

def _pending(interrupts: Sequence[Interrupt]) -> tuple[list[Call], list[tuple[Interrupt, int | None]]]:
    """Every tool call waiting in the interrupts, and where each answer goes back."""
    calls: list[Call] = []
    places: list[tuple[Interrupt, int | None]] = []
    for item in interrupts:
        value = item.value
        if isinstance(value, dict) and value.get("type") == "tool_approval":
            calls.append(Call(value["name"], dict(value.get("args") or {}), description=value.get("description")))
            places.append((item, None))
        elif isinstance(value, dict) and "action_requests" in value:
            for index, action in enumerate(value["action_requests"]):
                args = dict(action.get("args") or {})
                calls.append(Call(action["name"], args, description=action.get("description")))
                places.append((item, index))
        else:
            raise ValueError(f"not a HumanInTheLoopMiddleware interrupt: {value!r}")
    return calls, places


def decision_for(call: Call, answer: Answer) -> dict[str, Any]:
    """One answer as the middleware's decision: approve, edit or reject (with the note)."""
    if not answer.allowed:
        return {"type": "reject", "message": answer.message}
    if answer.edited:
        return {"type": "edit", "edited_action": {"name": call.tool, "args": answer.args}}
    return {"type": "approve"}


def _resume(places: list[tuple[Interrupt, int | None]], calls: list[Call], answers: list[Answer]) -> Command[Any]:
    batched: dict[str, list[dict[str, Any]]] = {}
    resume: dict[str, Any] = {}
    for (item, index), call, answer in zip(places, calls, answers, strict=True):
        decision = decision_for(call, answer)
        if index is None:
            resume[item.id] = decision
        else:
            batched.setdefault(item.id, []).append(decision)
    for interrupt_id, decisions in batched.items():
        resume[interrupt_id] = {"decisions": decisions}
    if len(resume) == 1 and batched:
        return Command(resume=next(iter(resume.values())))  # one batched interrupt: answered directly
    return Command(resume=resume)


def answer_interrupts(interrupts: Sequence[Interrupt], config: Any = None, approver: Approver | None = None, *,
                      agent: str | None = None) -> Command[Any]:
    """Ask about every call the interrupts wait on, in one batch; the ``Command`` to resume with."""
    calls, places = _pending(interrupts)
    own = approver is None
    approver = approver_or_default(approver, agent or agent_name(config) or "langchain")
    try:
        answers = approver.ask_batch(calls, session=thread_id(config), agent=agent or agent_name(config))
    finally:
        if own:
            approver.close()
    return _resume(places, calls, answers)


async def answer_interrupts_async(interrupts: Sequence[Interrupt], config: Any = None,
                                  approver: Approver | None = None, *, agent: str | None = None) -> Command[Any]:
    calls, places = _pending(interrupts)
    approver = approver_or_default(approver, agent or agent_name(config) or "langchain")
    answers = await approver.ask_batch_async(calls, session=thread_id(config), agent=agent or agent_name(config))
    return _resume(places, calls, answers)
