"""Microsoft Agent Framework: approve tool calls on the desktop
(``pip install 'desktop-approver[agent-framework]'``).

Blocking (one line; each function call waits for the person)::

    agent = Agent(client=client, name="builder", tools=[...], middleware=[DesktopApprovalMiddleware()])

:class:`DesktopApprovalMiddleware` is function middleware. A deny short-circuits the call with the
person's note as its result (the model reads it and the loop goes on); edited arguments replace
``context.arguments`` before the function runs; a policy ``block`` raises :class:`MiddlewareBlocked`,
both :class:`~desktop_approver.client.errors.Blocked` and the framework's ``MiddlewareFailure``,
which ends the run.

Deferred (tools with ``approval_mode="always_require"``): the run returns with
``response.user_input_requests``; one call asks about all of them as **one batch** and gives the
message to send back::

    response = await agent.run(prompt, session=session)
    while response.user_input_requests:
        response = await agent.run(await answer_approval_requests(response, session=session), session=session)

The framework's approval response is a yes or a no: it runs only the arguments it asked about
(it refuses changed arguments) and tells the model a fixed "rejected by user". So an approved call
with edited arguments is answered no, and the message carries, as text from the user, each denied
call's note and each edit ("call it again with ..."), so the model learns what the person said.

``allow_session`` is kept per ``AgentSession.session_id`` (else per :class:`Approver`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import Content, FunctionInvocationContext, FunctionMiddleware, Message
from agent_framework._middleware import MiddlewareFailure

from ..client.errors import Blocked
from .base import Answer, Approver, Call, approver_or_default, hints_from

__all__ = ["DesktopApprovalMiddleware", "MiddlewareBlocked", "answer_approval_requests"]


class MiddlewareBlocked(Blocked, MiddlewareFailure):
    """A policy block, as the framework's fail-closed abort: ``except Blocked`` catches it with the
    rule and the reason (``decision``), and so does code written for ``except MiddlewareFailure``
    (the framework never turns a ``MiddlewareFailure`` into a tool result)."""

    def __init__(self, decision: object) -> None:
        reason = str(Blocked(decision))
        MiddlewareFailure.__init__(self, reason)
        self.args = (reason,)
        self.decision = decision


class DesktopApprovalMiddleware(FunctionMiddleware):
    """Function middleware that asks the desktop before each function runs."""

    def __init__(self, approver: Approver | None = None, *, agent: str | None = None) -> None:
        self.approver = approver_or_default(approver, agent or "agent-framework")
        self.agent = agent

    def __repr__(self) -> str:
        return f"DesktopApprovalMiddleware({self.approver!r})"

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        function = context.function
        args = _plain(context.arguments)
        try:
            answer = await self.approver.ask_async(
                function.name, args, session=_session_id(context.session),
                agent=self.agent or self.approver.agent or "agent-framework",
                hints=hints_from(getattr(function, "additional_properties", None)),
                description=getattr(function, "description", None) or None)
        except Blocked as exc:
            raise MiddlewareBlocked(exc.decision) from None
        if not answer.allowed:
            context.result = answer.message
            return  # not calling call_next: the function does not run
        if answer.edited:
            context.arguments = answer.args
        await call_next()


async def answer_approval_requests(response: Any, approver: Approver | None = None, *, session: Any = None,
                                   agent: str | None = None) -> Message:
    """Ask about every pending approval request in one batch; the user message that answers them."""
    requests = [r for r in response.user_input_requests if r.type == "function_approval_request"]
    approver = approver_or_default(approver, agent or "agent-framework")
    calls = [_call_of(request) for request in requests]
    answers = await approver.ask_batch_async(calls, session=_session_id(session),
                                             agent=agent or approver.agent or "agent-framework")
    return approval_message(requests, calls, answers)


def approval_message(requests: list[Content], calls: list[Call], answers: list[Answer]) -> Message:
    contents: list[Any] = []
    notes: list[str] = []
    for request, call, answer in zip(requests, calls, answers, strict=True):
        approved = answer.allowed and not answer.edited
        contents.append(request.to_function_approval_response(approved=approved))
        label = f"{call.tool}({json.dumps(dict(call.args), ensure_ascii=False)})"
        if not answer.allowed:
            notes.append(f"{label}: {answer.message}")
        elif answer.edited:
            notes.append(f"{label}: the person at the desktop approved it with other arguments; "
                         f"call it again with exactly these: {json.dumps(answer.args, ensure_ascii=False)}")
    if notes:
        contents.append(Content.from_text("From desktop-approver:\n" + "\n".join(notes)))
    return Message(role="user", contents=contents)


def _call_of(request: Content) -> Call:
    function_call = request.function_call
    arguments = function_call.arguments if function_call is not None else None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            arguments = {"arguments": arguments}
    name = function_call.name if function_call is not None and function_call.name else "function"
    return Call(name, arguments if isinstance(arguments, dict) else {"arguments": arguments})


def _plain(arguments: Any) -> dict[str, Any]:
    if hasattr(arguments, "model_dump"):
        return dict(arguments.model_dump())
    return dict(arguments or {})


def _session_id(session: Any) -> str | None:
    value = getattr(session, "session_id", None)
    return str(value) if value else None
