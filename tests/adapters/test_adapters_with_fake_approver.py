"""Every adapter through ``Approver(transport=FakeApprover(...))``: a real framework run, its offline
model, and no app at all (no socket, no service): what an agent's own test suite does.

Each test allows one call with edited arguments and denies another with a note, so it sees the
fake's answers reach the framework both ways; ``fake.requests`` shows what was asked. A socket the
adapter might still open by mistake is pointed at a path where nothing listens, so such a test
would deny and fail, not pass by luck.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import testing
from desktop_approver.adapters.base import Approver

pytestmark = pytest.mark.adapter
NOTE = "keep c.txt, it is the backup"


@pytest.fixture(autouse=True)
def no_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_APPROVER_SOCKET", str(tmp_path / "nobody-listens.sock"))


def person(call: testing.ApprovalRequest) -> testing.Answer:
    if call.tool == "delete_file":
        return testing.deny(NOTE)
    return testing.allow_once(updated_args={**call.args, "path": "b2.txt"})


def asked(fake: testing.FakeApprover) -> list[tuple[str, str]]:
    return sorted((request.tool, request.args["path"]) for request in fake.requests)


WRITE_AND_DELETE = [("write_file", {"path": "b.txt", "content": "B"}), ("delete_file", {"path": "c.txt"})]


def test_approver_takes_a_transport_and_not_a_socket_path_too() -> None:
    fake = testing.FakeApprover(person)
    assert Approver(transport=fake).ask("delete_file", {"path": "c.txt"}).note == NOTE
    assert asyncio.run(Approver(transport=fake).ask_async("write_file", {"path": "b.txt"})).args == {"path": "b2.txt"}
    with pytest.raises(TypeError):
        Approver(transport=fake, socket_path="/tmp/x.sock")


def test_pydantic_ai() -> None:
    pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")
    from pydantic_ai import Agent
    from pydantic_ai.tools import DeferredToolRequests

    from desktop_approver.adapters.pydantic_ai import DesktopApproval, resolve_deferred_sync
    from tests.adapters.test_adapter_pydantic_ai import Files, scripted

    fake = testing.FakeApprover(person)
    files = Files()
    agent = Agent(scripted([WRITE_AND_DELETE]), tools=[files.write_file, files.delete_file],
                  capabilities=[DesktopApproval(Approver(transport=fake))])
    result = agent.run_sync("tidy up")
    assert files.ran == [("write_file", {"path": "b2.txt", "content": "B"})] and NOTE in result.output
    assert asked(fake) == [("delete_file", "c.txt"), ("write_file", "b.txt")]
    # Unnamed: the framework's name, not "agent" (the variable PydanticAI would name it after).
    assert {request.agent for request in fake.requests} == {"pydantic-ai"}

    files.ran.clear()
    deferred = Agent(scripted([WRITE_AND_DELETE]), name="builder", output_type=[str, DeferredToolRequests])
    deferred.tool_plain(requires_approval=True)(files.write_file)
    deferred.tool_plain(requires_approval=True)(files.delete_file)
    first = deferred.run_sync("tidy up")
    assert isinstance(first.output, DeferredToolRequests)
    results = resolve_deferred_sync(first.output, Approver(transport=fake))
    second = deferred.run_sync(message_history=first.all_messages(), deferred_tool_results=results)
    assert files.ran == [("write_file", {"path": "b2.txt", "content": "B"})] and NOTE in second.output


def test_pydantic_ai_shows_the_agent_s_own_name() -> None:
    pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")
    from pydantic_ai import Agent

    from desktop_approver.adapters.pydantic_ai import DesktopApproval
    from tests.adapters.test_adapter_pydantic_ai import Files, scripted

    fake = testing.FakeApprover(person)
    files = Files()
    agent = Agent(scripted([WRITE_AND_DELETE[1:]]), name="cleaner", tools=[files.delete_file],
                  capabilities=[DesktopApproval(Approver(transport=fake, agent="fallback"))])
    agent.run_sync("delete c.txt")
    assert [request.agent for request in fake.requests] == ["cleaner"]
    unnamed = Agent(scripted([WRITE_AND_DELETE[1:]]), tools=[files.delete_file],
                    capabilities=[DesktopApproval(Approver(transport=fake, agent="fallback"))])
    unnamed.run_sync("delete c.txt")
    assert [request.agent for request in fake.requests] == ["cleaner", "fallback"]


def test_openai_agents() -> None:
    pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")
    from agents import Agent, Runner
    from agents.testing import ModelStep, ScriptedModel

    from desktop_approver.adapters.openai_agents import require_desktop_approval, resolve_interruptions_sync
    from tests.adapters.test_adapter_openai_agents import calls_step, report, tools

    fake = testing.FakeApprover(person)
    ran: list[tuple[str, dict[str, Any]]] = []
    step = calls_step(*[(name, args, f"c{index}") for index, (name, args) in enumerate(WRITE_AND_DELETE)])
    agent = require_desktop_approval(Agent(name="builder", model=ScriptedModel([step, ModelStep.respond(report)]),
                                           tools=tools(ran)), Approver(transport=fake))
    result = Runner.run_sync(agent, "tidy up")
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})] and NOTE in result.final_output
    assert asked(fake) == [("delete_file", "c.txt"), ("write_file", "b.txt")]

    ran.clear()
    deferred = Agent(name="builder", model=ScriptedModel([step, ModelStep.respond(report)]),
                     tools=tools(ran, needs_approval=True))
    first = Runner.run_sync(deferred, "tidy up")
    second = Runner.run_sync(deferred, resolve_interruptions_sync(first, Approver(transport=fake)))
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})] and NOTE in second.final_output


def test_langchain() -> None:
    pytest.importorskip("langchain", reason="the [langchain] extra is not installed")
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    from desktop_approver.adapters.langchain import DesktopApprovalMiddleware, answer_interrupts
    from tests.adapters.test_adapter_langchain import model, tool_messages, tools

    fake = testing.FakeApprover(person)
    ran: list[tuple[str, dict[str, Any]]] = []
    turn = [(name, args, f"c{index}") for index, (name, args) in enumerate(WRITE_AND_DELETE)]
    agent = create_agent(model(turn), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(Approver(transport=fake))])
    result = agent.invoke({"messages": [{"role": "user", "content": "tidy up"}]})
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})]
    assert NOTE in tool_messages(result)["c1"].content

    ran.clear()
    config: Any = {"configurable": {"thread_id": "t-fake"}}
    deferred = create_agent(model(turn), tools=tools(ran), checkpointer=InMemorySaver(),
                            middleware=[HumanInTheLoopMiddleware(interrupt_on={"write_file": True,
                                                                               "delete_file": True})])
    paused = deferred.invoke({"messages": [{"role": "user", "content": "tidy up"}]}, config, version="v2")
    resumed = deferred.invoke(answer_interrupts(paused.interrupts, config, Approver(transport=fake)), config,
                              version="v2")
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})]
    assert NOTE in tool_messages(resumed)["c1"].content


def test_claude_agent_sdk() -> None:
    pytest.importorskip("claude_agent_sdk", reason="the [claude-agent-sdk] extra is not installed")
    from claude_agent_sdk import ClaudeAgentOptions

    from desktop_approver.adapters.claude_agent_sdk import DesktopPermissions
    from tests.adapters.test_adapter_claude_agent_sdk import ScriptedCli, run

    fake = testing.FakeApprover(person)
    cli = ScriptedCli(WRITE_AND_DELETE, suggestions=[])
    run(cli, ClaudeAgentOptions(can_use_tool=DesktopPermissions(Approver(transport=fake)).can_use_tool))
    assert cli.ran == [("write_file", {"path": "b2.txt", "content": "B"})]
    assert cli.replies[1]["behavior"] == "deny" and NOTE in cli.replies[1]["message"]

    blocking = testing.FakeApprover(lambda call: testing.block("never"))
    cli = ScriptedCli(WRITE_AND_DELETE, suggestions=[])
    run(cli, ClaudeAgentOptions(can_use_tool=DesktopPermissions(Approver(transport=blocking)).can_use_tool))
    assert cli.ran == [] and cli.replies[0]["interrupt"] is True


def test_agent_framework() -> None:
    pytest.importorskip("agent_framework", reason="the [agent-framework] extra is not installed")
    from agent_framework import Agent

    from desktop_approver.adapters.agent_framework import DesktopApprovalMiddleware, answer_approval_requests
    from tests.adapters.test_adapter_agent_framework import ScriptedChatClient, tools

    fake = testing.FakeApprover(person)
    ran: list[tuple[str, dict[str, Any]]] = []
    turn = [(name, args, f"c{index}") for index, (name, args) in enumerate(WRITE_AND_DELETE)]
    agent = Agent(client=ScriptedChatClient([turn]), name="builder", tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(Approver(transport=fake))])
    response = asyncio.run(agent.run("tidy up"))
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})] and NOTE in response.text

    ran.clear()
    deferred = Agent(client=ScriptedChatClient([turn]), name="builder", tools=tools(ran, "always_require"))

    async def main() -> Any:
        session = deferred.create_session()
        first = await deferred.run("tidy up", session=session)
        answer = await answer_approval_requests(first, Approver(transport=fake), session=session)
        return await deferred.run(answer, session=session)

    assert NOTE in asyncio.run(main()).text and ran == []  # the edited call is refused with its arguments


def test_crewai() -> None:
    pytest.importorskip("crewai", reason="the [crewai] extra is not installed")
    from desktop_approver.adapters.crewai import DesktopApproval
    from tests.adapters.test_adapter_crewai import ScriptedLLM, crew_of

    fake = testing.FakeApprover(person)
    ran: list[tuple[str, dict[str, Any]]] = []
    llm = ScriptedLLM(WRITE_AND_DELETE)
    with DesktopApproval(Approver(transport=fake)):
        crew_of(llm, ran).kickoff()
    assert ran == [("write_file", {"path": "b2.txt", "content": "B"})]
    assert NOTE in json.dumps(llm.seen)
    assert asked(fake) == [("delete_file", "c.txt"), ("write_file", "b.txt")]


@pytest.mark.parametrize(("module", "build"), [
    ("pydantic_ai", lambda adapter, wrong: adapter.DesktopApproval(wrong)),
    ("pydantic_ai", lambda adapter, wrong: adapter.resolve_deferred_sync(object(), wrong)),
    ("openai_agents", lambda adapter, wrong: adapter.desktop_guardrail(wrong)),
    ("langchain", lambda adapter, wrong: adapter.DesktopApprovalMiddleware(wrong)),
    ("agent_framework", lambda adapter, wrong: adapter.DesktopApprovalMiddleware(wrong)),
    ("claude_agent_sdk", lambda adapter, wrong: adapter.DesktopPermissions(wrong)),
    ("crewai", lambda adapter, wrong: adapter.DesktopApproval(wrong)),
])
def test_a_fake_approver_where_an_approver_belongs_fails_at_construction_saying_what_to_pass(
        module: str, build: Any) -> None:
    import importlib

    try:
        adapter = importlib.import_module(f"desktop_approver.adapters.{module}")
    except ImportError:
        pytest.skip(f"the [{module.replace('_', '-')}] extra is not installed")
    fake = testing.FakeApprover(person)
    with pytest.raises(TypeError, match=r"a FakeApprover is a transport: pass Approver\(transport=your_fakeapprover\)"):
        build(adapter, fake)
    with pytest.raises(TypeError, match=r"not str: build one with .*Approver\(\.\.\.\)"):
        build(adapter, "approver")
    assert fake.requests == []
