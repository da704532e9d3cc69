"""LangChain v1 / LangGraph: a fake chat model calls real tools in ``create_agent``; the app's core answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="the [langchain] extra is not installed "
                                        "(pip install 'desktop-approver[langchain]')")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import HumanInTheLoopMiddleware  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.langchain import DesktopApprovalMiddleware, answer_interrupts  # noqa: E402
from desktop_approver.client.errors import Blocked  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter


class ScriptedChatModel(FakeMessagesListChatModel):
    """LangChain's fake list model, accepting the tools ``create_agent`` binds."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


def model(*turns: list[tuple[str, dict[str, Any], str]]) -> ScriptedChatModel:
    responses = [AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"}
                                                   for n, a, i in turn]) for turn in turns]
    return ScriptedChatModel(responses=[*responses, AIMessage(content="done")])


THREE = [("write_file", {"path": "a.txt", "content": "A"}, "c-a"),
         ("write_file", {"path": "b.txt", "content": "B"}, "c-b"),
         ("delete_file", {"path": "c.txt"}, "c-c")]


def tools(ran: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    @tool
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    @tool
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


def tool_messages(result: Any) -> dict[str, ToolMessage]:
    messages = result.value["messages"] if hasattr(result, "value") else result["messages"]
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def test_middleware_allows_edits_and_denies_with_the_note(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = create_agent(model(THREE), tools=tools(ran), name="builder",
                         middleware=[DesktopApprovalMiddleware(Approver(socket_path=service.socket_path))])
    result = agent.invoke({"messages": [{"role": "user", "content": "tidy up"}]},
                          {"configurable": {"thread_id": "t-1"}})
    assert sorted(ran, key=repr) == [("write_file", {"path": "a.txt", "content": "A"}),
                                     ("write_file", {"path": "b2.txt", "content": "edited"})]
    replies = tool_messages(result)
    assert replies["c-a"].content == "wrote a.txt" and replies["c-b"].content == "wrote b2.txt"
    assert replies["c-c"].status == "error"
    assert replies["c-c"].content == ("The tool call was denied by the person at the desktop and was not run. "
                                      "Note: keep c.txt, it is the backup")
    assert result["messages"][-1].content == "done"  # the run went on to the model's answer
    assert {t.identity.agent for t in service.person.seen} == {"builder"}
    assert {t.session for t in service.person.seen} == {"t-1"}
    # The three calls run as parallel tool calls, so they reach the person in any order.
    descriptions = {call.tool: call.description for ticket in service.person.seen for call in ticket.calls}
    assert descriptions == {"write_file": "Write a file.", "delete_file": "Delete a file."}


def test_middleware_async_and_allow_session_not_asked_again(serve: Any) -> None:
    import asyncio

    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    ran: list[tuple[str, dict[str, Any]]] = []
    write = ("write_file", {"path": "a.txt", "content": "A"})
    agent = create_agent(model([(*write, "c1")], [(*write, "c2")]), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(Approver(socket_path=service.socket_path))])
    asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "twice"}]},
                              {"configurable": {"thread_id": "t-2"}}))
    assert len(ran) == 2 and len(service.person.seen) == 1


def test_middleware_fails_closed_and_blocks_end_the_run(serve: Any, tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = create_agent(model(THREE[2:]), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(Approver(socket_path=tmp_path / "none.sock"))])
    result = agent.invoke({"messages": [{"role": "user", "content": "delete"}]})
    assert ran == [] and "not reachable" in tool_messages(result)["c-c"].content

    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    agent = create_agent(model(THREE[2:]), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(Approver(socket_path=service.socket_path))])
    with pytest.raises(Blocked):
        agent.invoke({"messages": [{"role": "user", "content": "delete"}]})
    assert ran == []


@pytest.mark.parametrize("mode", ["batched", "per_call"])
def test_hitl_interrupts_batch_of_three_gets_a_partial_answer_in_one_request(serve: Any, mode: str) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    hitl = HumanInTheLoopMiddleware(interrupt_on={"write_file": True, "delete_file": True}, interrupt_mode=mode)
    agent = create_agent(model(THREE), tools=tools(ran), middleware=[hitl], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"hitl-{mode}"}}
    first = agent.invoke({"messages": [{"role": "user", "content": "tidy up"}]}, config, version="v2")
    assert first.interrupts and ran == []
    command = answer_interrupts(first.interrupts, config, Approver(socket_path=service.socket_path, agent="builder"))
    assert len(service.person.seen) == 1 and len(service.person.seen[0].calls) == 3
    assert service.person.seen[0].session == f"hitl-{mode}"
    second = agent.invoke(command, config, version="v2")
    assert not second.interrupts
    assert sorted(ran, key=repr) == [("write_file", {"path": "a.txt", "content": "A"}),
                                     ("write_file", {"path": "b2.txt", "content": "edited"})]
    assert "keep c.txt, it is the backup" in tool_messages(second)["c-c"].content
