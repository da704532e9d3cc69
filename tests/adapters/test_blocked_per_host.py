"""One form of a block, as a builder meets it: for each host, a policy ``block`` (here from
:class:`desktop_approver.testing.FakeApprover`, as in an agent's own tests) reaches the builder's
code as ``except Blocked``, with the rule and the reason, wherever the host lets an exception
through (the Claude Agent SDK through ``DesktopPermissions.raise_blocks``); where it cannot (CrewAI
after a bare ``install()``), the adapter keeps the ``Blocked`` as ``.blocked``. docs/adapters.md has the
table these tests keep true ("A block, host by host").
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import testing
from desktop_approver.adapters.base import Approver
from desktop_approver.client.errors import Blocked

pytestmark = pytest.mark.adapter
RULE, REASON = "no-deletes", "deleting is for people"
MODEL_READS = f"The tool call was blocked by a policy rule ({RULE}) and was not run. Note: {REASON}"
DELETE = [("delete_file", {"path": "c.txt"})]


@pytest.fixture(autouse=True)
def no_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_APPROVER_SOCKET", str(tmp_path / "nobody-listens.sock"))


def policy() -> Approver:
    return Approver(transport=testing.FakeApprover(lambda call: testing.block(REASON, rule=RULE)))


def the_block(exc: BaseException) -> None:
    """What every builder gets: the rule and the reason, on the exception itself."""
    assert isinstance(exc, Blocked)
    assert exc.decision.rule == RULE and exc.decision.note == REASON  # type: ignore[attr-defined]
    assert str(exc) == f"blocked by policy ({RULE}): {REASON}"


def test_pydantic_ai() -> None:
    pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")
    from pydantic_ai import Agent

    from desktop_approver.adapters.pydantic_ai import DesktopApproval
    from tests.adapters.test_adapter_pydantic_ai import Files, scripted

    files = Files()
    agent = Agent(scripted([DELETE]), tools=[files.delete_file], capabilities=[DesktopApproval(policy())])
    try:
        agent.run_sync("tidy up")
    except Blocked as exc:
        the_block(exc)
    else:
        pytest.fail("the block did not reach the builder")
    assert files.ran == []


def test_openai_agents() -> None:
    pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")
    from agents import Agent, Runner
    from agents.exceptions import ToolInputGuardrailTripwireTriggered
    from agents.testing import ModelStep, ScriptedModel

    from desktop_approver.adapters.openai_agents import require_desktop_approval, resolve_interruptions_sync
    from tests.adapters.test_adapter_openai_agents import calls_step, report, tools

    ran: list[tuple[str, dict[str, Any]]] = []
    step = calls_step(("delete_file", {"path": "c.txt"}, "c0"))
    agent = require_desktop_approval(Agent(name="builder", model=ScriptedModel([step, ModelStep.respond(report)]),
                                           tools=tools(ran)), policy())
    with pytest.raises(Blocked) as raised:
        Runner.run_sync(agent, "tidy up")
    the_block(raised.value)
    # Code written for the SDK's own tripwire catches the same exception, the reason in output_info.
    assert isinstance(raised.value, ToolInputGuardrailTripwireTriggered)
    assert raised.value.output.output_info["reason"] == str(raised.value)

    deferred = Agent(name="builder", model=ScriptedModel([step, ModelStep.respond(report)]),
                     tools=tools(ran, needs_approval=True))
    with pytest.raises(Blocked) as raised:
        resolve_interruptions_sync(Runner.run_sync(deferred, "tidy up"), policy())
    the_block(raised.value)
    assert ran == []


def test_langchain() -> None:
    pytest.importorskip("langchain", reason="the [langchain] extra is not installed")
    from langchain.agents import create_agent

    from desktop_approver.adapters.langchain import DesktopApprovalMiddleware
    from tests.adapters.test_adapter_langchain import model, tools

    ran: list[tuple[str, dict[str, Any]]] = []
    agent = create_agent(model([("delete_file", {"path": "c.txt"}, "c0")]), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(policy())])
    with pytest.raises(Blocked) as raised:
        agent.invoke({"messages": [{"role": "user", "content": "tidy up"}]})
    the_block(raised.value)
    assert ran == []


def test_agent_framework() -> None:
    pytest.importorskip("agent_framework", reason="the [agent-framework] extra is not installed")
    from agent_framework import Agent, MiddlewareFailure

    from desktop_approver.adapters.agent_framework import DesktopApprovalMiddleware
    from tests.adapters.test_adapter_agent_framework import ScriptedChatClient, tools

    ran: list[tuple[str, dict[str, Any]]] = []
    agent = Agent(client=ScriptedChatClient([[("delete_file", {"path": "c.txt"}, "c0")]]), name="builder",
                  tools=tools(ran), middleware=[DesktopApprovalMiddleware(policy())])
    with pytest.raises(Blocked) as raised:
        asyncio.run(agent.run("tidy up"))
    the_block(raised.value)
    assert isinstance(raised.value, MiddlewareFailure)  # the framework's own fail-closed abort
    assert ran == []


def test_crewai() -> None:
    pytest.importorskip("crewai", reason="the [crewai] extra is not installed")
    from desktop_approver.adapters.crewai import DesktopApproval
    from tests.adapters.test_adapter_crewai import ScriptedLLM, crew_of

    ran: list[tuple[str, dict[str, Any]]] = []
    with pytest.raises(Blocked) as raised, DesktopApproval(policy()):
        crew_of(ScriptedLLM(DELETE), ran).kickoff()
    the_block(raised.value)

    # After a bare install() CrewAI's own error leaves kickoff(); the block waits on the adapter.
    approval = DesktopApproval(policy()).install()
    try:
        with pytest.raises(ValueError, match="blocked by before_llm_call hook"):
            crew_of(ScriptedLLM(DELETE), ran).kickoff()
    finally:
        approval.uninstall()
    assert approval.blocked is not None
    the_block(approval.blocked)
    assert ran == []


def test_claude_agent_sdk() -> None:
    pytest.importorskip("claude_agent_sdk", reason="the [claude-agent-sdk] extra is not installed")
    from claude_agent_sdk import ClaudeAgentOptions, query

    from desktop_approver.adapters.claude_agent_sdk import DesktopPermissions
    from tests.adapters.test_adapter_claude_agent_sdk import ScriptedCli, one_prompt

    # The SDK answers the CLI with whatever a callback does; raise_blocks turns the run's end into the block.
    permissions = DesktopPermissions(policy())
    cli = ScriptedCli(DELETE, suggestions=[])
    options = ClaudeAgentOptions(can_use_tool=permissions.can_use_tool)

    async def main() -> None:
        async with asyncio.timeout(60):
            async for _message in permissions.raise_blocks(query(prompt=one_prompt(), options=options, transport=cli)):
                pass

    try:
        asyncio.run(main())
    except Blocked as exc:
        the_block(exc)
    else:
        pytest.fail("the block did not reach the builder")
    assert cli.replies == [{"behavior": "deny", "message": MODEL_READS, "interrupt": True}]
    assert cli.ran == []
