"""OpenAI Agents SDK: its ScriptedModel calls real function tools; the app's real core answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the [openai-agents] extra is not installed "
                                     "(pip install 'desktop-approver[openai-agents]')")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.exceptions import ToolInputGuardrailTripwireTriggered  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.openai_agents import (  # noqa: E402
    require_desktop_approval,
    resolve_interruptions_sync,
)
from desktop_approver.client.errors import Blocked  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter
set_tracing_disabled(True)  # no trace export to OpenAI from the tests


def report(call: Any) -> Any:
    """The model's last turn: every tool output it was given, joined."""
    outputs = [f"{item['call_id']}={item['output']}" for item in call.input
               if isinstance(item, dict) and item.get("type") == "function_call_output"]
    return [assistant_message(" | ".join(outputs))]


def calls_step(*calls: tuple[str, dict[str, Any], str]) -> ModelStep:
    return ModelStep(output=[function_call(name, args, call_id=call_id) for name, args, call_id in calls])


THREE = calls_step(("write_file", {"path": "a.txt", "content": "A"}, "c-a"),
                   ("write_file", {"path": "b.txt", "content": "B"}, "c-b"),
                   ("delete_file", {"path": "c.txt"}, "c-c"))


def tools(ran: list[tuple[str, dict[str, Any]]], needs_approval: bool = False) -> list[Any]:
    @function_tool(needs_approval=needs_approval)
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    @function_tool(needs_approval=needs_approval)
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


def test_guardrail_allows_edits_and_denies_with_the_note(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = require_desktop_approval(
        Agent(name="builder", model=ScriptedModel([THREE, ModelStep.respond(report)]), tools=tools(ran)),
        Approver(socket_path=service.socket_path))
    result = Runner.run_sync(agent, "tidy up")
    assert sorted(ran, key=repr) == [("write_file", {"path": "a.txt", "content": "A"}),
                           ("write_file", {"path": "b2.txt", "content": "edited"})]
    assert "c-a=wrote a.txt" in result.final_output and "c-b=wrote b2.txt" in result.final_output
    assert ("c-c=The tool call was denied by the person at the desktop and was not run. "
            "Note: keep c.txt, it is the backup") in result.final_output
    assert {ticket.identity.agent for ticket in service.person.seen} == {"builder"}
    assert {ticket.calls[0].description for ticket in service.person.seen} == {"Write a file.", "Delete a file."}


def test_guardrail_allow_session_is_not_asked_again_in_the_group(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    ran: list[tuple[str, dict[str, Any]]] = []
    write = ("write_file", {"path": "a.txt", "content": "A"})
    model = ScriptedModel([calls_step((*write, "c1")), calls_step((*write, "c2")), ModelStep.respond(report)])
    agent = require_desktop_approval(Agent(name="builder", model=model, tools=tools(ran)),
                                     Approver(socket_path=service.socket_path))
    Runner.run_sync(agent, "twice", run_config=RunConfig(group_id="thread-9"))
    assert len(ran) == 2 and len(service.person.seen) == 1
    assert service.person.seen[0].session == "thread-9"


def test_guardrail_fails_closed_without_the_app(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    model = ScriptedModel([calls_step(("delete_file", {"path": "c.txt"}, "c1")), ModelStep.respond(report)])
    agent = require_desktop_approval(Agent(name="builder", model=model, tools=tools(ran)),
                                     Approver(socket_path=tmp_path / "none.sock"))
    result = Runner.run_sync(agent, "delete")
    assert ran == [] and "not reachable" in result.final_output


@pytest.mark.parametrize("through_handoff", [False, True], ids=["the-agent", "handoff()"])
def test_a_handoffs_tools_are_guarded_too(serve: Any, through_handoff: bool) -> None:
    """A specialist reached by a handoff (as the Agent, or through handoff()) asks before its tools
    run: guarding only the first agent let the specialist's delete run unasked (the review)."""
    from agents import handoff

    service = serve(per_call(lambda call: Verdict("deny", "user", note="not now")))
    ran: list[tuple[str, dict[str, Any]]] = []
    specialist = Agent(name="specialist", model=ScriptedModel([
        calls_step(("delete_file", {"path": "c.txt"}, "c1")), ModelStep.respond(report)]), tools=tools(ran))
    triage = Agent(name="triage", handoffs=[handoff(specialist) if through_handoff else specialist],
                   model=ScriptedModel([calls_step(("transfer_to_specialist", {}, "h1"))]))
    require_desktop_approval(triage, Approver(socket_path=service.socket_path))
    result = Runner.run_sync(triage, "delete c.txt")
    assert ran == [] and [t.calls[0].tool for t in service.person.seen] == ["delete_file"]
    assert "not now" in result.final_output


def test_guardrail_block_ends_the_run(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    ran: list[tuple[str, dict[str, Any]]] = []
    model = ScriptedModel([calls_step(("delete_file", {"path": "c.txt"}, "c1")), ModelStep.respond(report)])
    agent = require_desktop_approval(Agent(name="builder", model=model, tools=tools(ran)),
                                     Approver(socket_path=service.socket_path))
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as raised:
        Runner.run_sync(agent, "delete")
    assert "never" in raised.value.output.output_info["reason"]
    assert ran == []


def test_interruptions_batch_of_three_gets_a_partial_answer_in_one_request(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    agent = Agent(name="builder", model=ScriptedModel([THREE, ModelStep.respond(report)]),
                  tools=tools(ran, needs_approval=True))
    first = Runner.run_sync(agent, "tidy up")
    assert len(first.interruptions) == 3 and ran == [] and service.person.seen == []
    state = resolve_interruptions_sync(first, Approver(socket_path=service.socket_path))
    assert len(service.person.seen) == 1 and len(service.person.seen[0].calls) == 3
    assert service.person.seen[0].identity.agent == "builder"
    assert service.person.seen[0].calls[2].description == "Delete a file."
    second = Runner.run_sync(agent, state)
    assert sorted(ran, key=repr) == [("write_file", {"path": "a.txt", "content": "A"}),
                           ("write_file", {"path": "b2.txt", "content": "edited"})]
    assert "keep c.txt, it is the backup" in second.final_output
    assert not second.interruptions


def test_interruptions_blocked_raises(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    ran: list[tuple[str, dict[str, Any]]] = []
    model = ScriptedModel([calls_step(("delete_file", {"path": "c.txt"}, "c1")), ModelStep.respond(report)])
    first = Runner.run_sync(Agent(name="builder", model=model, tools=tools(ran, needs_approval=True)), "delete")
    with pytest.raises(Blocked, match="never"):
        resolve_interruptions_sync(first, Approver(socket_path=service.socket_path))
    assert ran == []
