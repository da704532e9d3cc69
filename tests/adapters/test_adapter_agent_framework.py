"""Microsoft Agent Framework: a fake chat client (with the framework's function-invocation layer)
calls real tools; the app's real core answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agent_framework", reason="the [agent-framework] extra is not installed "
                                              "(pip install 'desktop-approver[agent-framework]')")

from agent_framework import (  # noqa: E402
    Agent,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agent_framework._middleware import MiddlewareFailure  # noqa: E402

from desktop_approver.adapters.agent_framework import (  # noqa: E402
    DesktopApprovalMiddleware,
    answer_approval_requests,
)
from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Each model turn calls the scripted tools; then it answers with every tool result and user
    note it has read, so the test sees what the model saw."""

    def __init__(self, turns: list[list[tuple[str, dict[str, Any], str]]]) -> None:
        super().__init__()
        self.turns = turns
        self.turn = 0

    async def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kwargs: Any) -> Any:
        if self.turn < len(self.turns):
            calls = self.turns[self.turn]
            self.turn += 1
            contents = [Content.from_function_call(call_id, name, arguments=args) for name, args, call_id in calls]
            return ChatResponse(messages=[Message(role="assistant", contents=contents)], response_id=f"r{self.turn}")
        seen = []
        for message in messages:
            for content in message.contents:
                if content.type == "function_result":
                    seen.append(f"{content.call_id}={content.result}")
                elif content.type == "text" and message.role == "user":
                    seen.append(content.text)
        return ChatResponse(messages=[Message(role="assistant", contents=[" | ".join(seen)])], response_id="final")


THREE = [("write_file", {"path": "a.txt", "content": "A"}, "c-a"),
         ("write_file", {"path": "b.txt", "content": "B"}, "c-b"),
         ("delete_file", {"path": "c.txt"}, "c-c")]


def tools(ran: list[tuple[str, dict[str, Any]]], approval_mode: str = "never_require") -> list[Any]:
    @tool(approval_mode=approval_mode)
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    @tool(approval_mode=approval_mode)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    return [write_file, delete_file]


def per_call(choose: Callable[[Any], Verdict]) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [choose(call) for call in ticket.calls]


def partial(call: Any) -> Verdict:
    if call.tool == "delete_file":
        return Verdict("deny", "user", note="keep c.txt, it is the backup")
    if call.args["path"] == "b.txt":
        return Verdict("allow_once", "user", updated_args={"path": "b2.txt", "content": "edited"})
    return Verdict("allow_once", "user")


def test_middleware_allows_edits_and_denies_with_the_note(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = Agent(client=ScriptedChatClient([THREE]), name="builder", tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(Approver(socket_path=service.socket_path), agent="builder")])

    async def main() -> Any:
        session = agent.create_session()
        return session, await agent.run("tidy up", session=session)

    session, response = asyncio.run(main())
    assert sorted(ran, key=repr) == [("write_file", {"path": "a.txt", "content": "A"}),
                                     ("write_file", {"path": "b2.txt", "content": "edited"})]
    assert "c-a=wrote a.txt" in response.text and "c-b=wrote b2.txt" in response.text
    assert ("c-c=The tool call was denied by the person at the desktop and was not run. "
            "Note: keep c.txt, it is the backup") in response.text
    assert {t.session for t in service.person.seen} == {session.session_id}
    assert {t.identity.agent for t in service.person.seen} == {"builder"}


def test_middleware_allow_session_fail_closed_and_block(serve: Any, tmp_path: Path) -> None:
    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    ran: list[tuple[str, dict[str, Any]]] = []
    write = ("write_file", {"path": "a.txt", "content": "A"})
    agent = Agent(client=ScriptedChatClient([[(*write, "c1")], [(*write, "c2")]]), tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(Approver(socket_path=service.socket_path))])
    asyncio.run(agent.run("twice", session=agent.create_session()))
    assert len(ran) == 2 and len(service.person.seen) == 1

    ran.clear()
    agent = Agent(client=ScriptedChatClient([THREE[2:]]), tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(Approver(socket_path=tmp_path / "none.sock"))])
    response = asyncio.run(agent.run("delete"))
    assert ran == [] and "not reachable" in response.text



def test_middleware_block_ends_the_run(serve: Any) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    blocking = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    agent = Agent(client=ScriptedChatClient([THREE[2:]]), tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(Approver(socket_path=blocking.socket_path))])
    with pytest.raises(MiddlewareFailure, match="never"):
        asyncio.run(agent.run("delete"))
    assert ran == []


def test_approval_requests_batch_of_three_gets_a_partial_answer_in_one_request(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = Agent(client=ScriptedChatClient([THREE]), name="builder", tools=tools(ran, "always_require"))

    async def main() -> tuple[Any, Any]:
        session = agent.create_session()
        first = await agent.run("tidy up", session=session)
        assert len(first.user_input_requests) == 3 and ran == []
        answer = await answer_approval_requests(first, Approver(socket_path=service.socket_path, agent="builder"),
                                                session=session)
        return first, await agent.run(answer, session=session)

    first, second = asyncio.run(main())
    assert len(service.person.seen) == 1 and len(service.person.seen[0].calls) == 3
    # the framework runs only approved calls with the arguments it asked about: a.txt
    assert ran == [("write_file", {"path": "a.txt", "content": "A"})]
    assert "c-a=wrote a.txt" in second.text
    assert "keep c.txt, it is the backup" in second.text  # the note reached the model
    assert 'call it again with exactly these: {"path": "b2.txt", "content": "edited"}' in second.text
