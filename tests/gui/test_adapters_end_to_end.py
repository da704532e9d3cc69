"""One end-to-end run per adapter through the real app (offscreen): the framework runs in a thread
with its scripted model, the test answers in the real dialog, the model reads the person's note."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_approver.adapters.base import Approver
from tests.gui.conftest import wait_for

NOTE = "keep c.txt, it is the backup"


def in_thread(work: Callable[[], Any]) -> asyncio.Future[Any]:
    """Run a framework's blocking entry point off the Qt loop. Some (openai-agents' ``run_sync``)
    leave an event loop set in the worker thread; it is closed when the work ends."""
    def run() -> Any:
        try:
            return work()
        finally:
            _close_the_threads_loop()

    return asyncio.get_running_loop().run_in_executor(None, run)


def _close_the_threads_loop() -> None:
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()  # never creates one off the main thread
    except RuntimeError:
        return
    if not loop.is_running():
        loop.close()
    asyncio.set_event_loop(None)


async def answer(dialog: Any, *, calls: int, deny_rows: tuple[int, ...] = (), deny_all: bool = False) -> None:
    """Wait for the dialog with ``calls`` calls, untick ``deny_rows`` (or deny all) with the note."""
    await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None and dialog.deny.isEnabled()
                   and len(dialog.ticket.calls) == calls, timeout=30, what=f"the dialog with {calls} call(s)")
    for row in deny_rows:
        dialog.review.calls.item(dialog.review.row_of(row)).setCheckState(Qt.CheckState.Unchecked)
    dialog.review.note.setText(NOTE)
    (dialog.deny if deny_all else dialog.allow_once).click()


def approver_for(app: Any) -> Approver:
    return Approver(socket_path=app.service.options.socket_path)


def test_pydantic_ai_batch_partly_approved_in_the_dialog(approver: Any, run: Any) -> None:
    pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")
    from desktop_approver.adapters.pydantic_ai import DesktopApproval
    from tests.adapters.test_adapter_pydantic_ai import THREE, Files, agent_with, scripted

    files = Files()

    async def scenario() -> Any:
        result = in_thread(lambda: agent_with(files, scripted([THREE]), DesktopApproval(approver_for(approver)))
                           .run_sync("tidy up"))
        await answer(approver.dialog, calls=3, deny_rows=(2,))
        return await result

    result = run(scenario(), timeout=60)
    assert [tool for tool, _ in files.ran] == ["write_file", "write_file"]
    assert f"Note: {NOTE}" in result.output


def test_openai_agents_interruptions_answered_in_the_dialog(approver: Any, run: Any) -> None:
    pytest.importorskip("agents", reason="the [openai-agents] extra is not installed")
    from agents import Agent, Runner
    from agents.testing import ModelStep, ScriptedModel

    from desktop_approver.adapters.openai_agents import resolve_interruptions_sync
    from tests.adapters.test_adapter_openai_agents import THREE, report, tools

    ran: list[Any] = []
    agent = Agent(name="builder", model=ScriptedModel([THREE, ModelStep.respond(report)]),
                  tools=tools(ran, needs_approval=True))

    def work() -> Any:
        first = Runner.run_sync(agent, "tidy up")
        return Runner.run_sync(agent, resolve_interruptions_sync(first, approver_for(approver)))

    async def scenario() -> Any:
        result = in_thread(work)
        await answer(approver.dialog, calls=3, deny_rows=(2,))
        return await result

    result = run(scenario(), timeout=60)
    assert sorted(tool for tool, _ in ran) == ["write_file", "write_file"]
    assert NOTE in result.final_output


def test_langchain_middleware_deny_in_the_dialog(approver: Any, run: Any) -> None:
    pytest.importorskip("langchain", reason="the [langchain] extra is not installed")
    from langchain.agents import create_agent

    from desktop_approver.adapters.langchain import DesktopApprovalMiddleware
    from tests.adapters.test_adapter_langchain import THREE, model, tool_messages, tools

    ran: list[Any] = []
    agent = create_agent(model(THREE[2:]), tools=tools(ran),
                         middleware=[DesktopApprovalMiddleware(approver_for(approver))])

    async def scenario() -> Any:
        result = in_thread(lambda: agent.invoke({"messages": [{"role": "user", "content": "delete"}]}))
        await answer(approver.dialog, calls=1, deny_all=True)
        return await result

    result = run(scenario(), timeout=60)
    assert ran == [] and NOTE in tool_messages(result)["c-c"].content


def test_claude_agent_sdk_permission_in_the_dialog(approver: Any, run: Any) -> None:
    pytest.importorskip("claude_agent_sdk", reason="the [claude-agent-sdk] extra is not installed")
    from claude_agent_sdk import ClaudeAgentOptions

    from desktop_approver.adapters.claude_agent_sdk import DesktopPermissions
    from tests.adapters.test_adapter_claude_agent_sdk import ScriptedCli
    from tests.adapters.test_adapter_claude_agent_sdk import run as run_query

    cli = ScriptedCli([("Bash", {"command": "rm -rf build"})])
    options = ClaudeAgentOptions(can_use_tool=DesktopPermissions(approver_for(approver)).can_use_tool)

    async def scenario() -> None:
        result = in_thread(lambda: run_query(cli, options))
        await answer(approver.dialog, calls=1, deny_all=True)
        await result

    run(scenario(), timeout=60)
    assert cli.ran == [] and cli.replies[0]["behavior"] == "deny" and NOTE in cli.replies[0]["message"]


def test_agent_framework_middleware_in_the_dialog(approver: Any, run: Any) -> None:
    pytest.importorskip("agent_framework", reason="the [agent-framework] extra is not installed")
    from agent_framework import Agent

    from desktop_approver.adapters.agent_framework import DesktopApprovalMiddleware
    from tests.adapters.test_adapter_agent_framework import THREE, ScriptedChatClient, tools

    ran: list[Any] = []
    agent = Agent(client=ScriptedChatClient([THREE[2:]]), tools=tools(ran),
                  middleware=[DesktopApprovalMiddleware(approver_for(approver))])

    async def scenario() -> Any:
        result = in_thread(lambda: asyncio.run(agent.run("delete")))
        await answer(approver.dialog, calls=1, deny_all=True)
        return await result

    response = run(scenario(), timeout=60)
    assert ran == [] and NOTE in response.text


def test_crewai_hook_in_the_dialog(approver: Any, run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")  # no export attempts from the test
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    pytest.importorskip("crewai", reason="the [crewai] extra is not installed")
    from desktop_approver.adapters.crewai import DesktopApproval
    from tests.adapters.test_adapter_crewai import ScriptedLLM, all_text, crew_of

    ran: list[Any] = []
    llm = ScriptedLLM([("delete_file", {"path": "c.txt"})])
    crew = crew_of(llm, ran)

    def work() -> Any:
        with DesktopApproval(approver_for(approver)):
            return crew.kickoff()

    async def scenario() -> None:
        result = in_thread(work)
        await answer(approver.dialog, calls=1, deny_all=True)
        await result

    run(scenario(), timeout=60)
    assert ran == [] and NOTE in all_text(llm)


def test_mcp_gate_in_the_dialog(approver: Any, run: Any, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from mcp import ClientSession

    from tests.adapters.test_adapter_mcp import gate, run_client, text_of

    async def write(session: ClientSession) -> Any:
        return await session.call_tool("write_file", {"path": "c.txt", "text": "x"})

    command = gate(approver.service.options.socket_path, tmp_path)

    async def scenario() -> Any:
        result = in_thread(lambda: run_client(command, write))
        await answer(approver.dialog, calls=1, deny_all=True)
        return await result

    result = run(scenario(), timeout=90)
    assert result.is_error and NOTE in text_of(result) and not (tmp_path / "c.txt").exists()
