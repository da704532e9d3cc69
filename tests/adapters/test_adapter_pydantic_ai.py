"""PydanticAI: a scripted FunctionModel calls real tools; the app's real core answers over its socket."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed "
                                          "(pip install 'desktop-approver[pydantic-ai]')")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.tools import DeferredToolRequests  # noqa: E402

from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.pydantic_ai import DesktopApproval, resolve_deferred_sync  # noqa: E402
from desktop_approver.client.errors import Blocked  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter

Turn = list[tuple[str, dict[str, Any]]]


def scripted(turns: list[Turn]) -> FunctionModel:
    """Each model turn calls the turn's tools; after the last it reports every tool result it read."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(m, ModelResponse) for m in messages)
        if done < len(turns):
            return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call-{done}-{i}")
                                        for i, (tool, args) in enumerate(turns[done])])
        results = [f"{part.tool_name}={part.content}" for message in messages for part in message.parts
                   if isinstance(part, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(" | ".join(results))])

    return FunctionModel(respond)


class Files:
    """Tools that record what really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def ran_in_any_order(self) -> list[tuple[str, dict[str, str]]]:
        """What ran, sorted: pydantic-ai runs one turn's tool calls concurrently, so their order is not a promise."""
        return sorted(self.ran, key=repr)

    def write_file(self, path: str, content: str) -> str:
        """Write a file."""
        self.ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    def delete_file(self, path: str) -> str:
        """Delete a file."""
        self.ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"


def per_call(choose: Callable[[Any], Verdict]) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [choose(call) for call in ticket.calls]


def partial(call: Any) -> Verdict:
    """The person's answer to the batch of three: allow, edit, deny."""
    if call.tool == "delete_file":
        return Verdict("deny", "user", note="keep c.txt, it is the backup")
    if call.args["path"] == "b.txt":
        return Verdict("allow_once", "user", updated_args={"path": "b2.txt", "content": "edited"})
    return Verdict("allow_once", "user")


THREE: Turn = [("write_file", {"path": "a.txt", "content": "A"}), ("write_file", {"path": "b.txt", "content": "B"}),
               ("delete_file", {"path": "c.txt"})]


def agent_with(files: Files, model: FunctionModel, approval: DesktopApproval | None = None,
               **kwargs: Any) -> Agent[None, Any]:
    return Agent(model, name="builder", tools=[files.write_file, files.delete_file],
                 capabilities=[approval] if approval else [], **kwargs)


def test_blocking_batch_of_three_gets_a_partial_answer_in_one_request(serve: Any) -> None:
    service = serve(per_call(partial))
    files = Files()
    approval = DesktopApproval(Approver(socket_path=service.socket_path))
    result = agent_with(files, scripted([THREE]), approval).run_sync("tidy up")
    assert len(service.person.seen) == 1, "the three calls of one model turn are one request"
    ticket = service.person.seen[0]
    assert [call.tool for call in ticket.calls] == ["write_file", "write_file", "delete_file"]
    assert ticket.identity.agent == "builder"
    assert ticket.calls[0].description == "Write a file."
    # allow runs the tool; the edit runs it with the edited arguments; the deny runs nothing
    assert files.ran_in_any_order() == [("write_file", {"path": "a.txt", "content": "A"}),
                                        ("write_file", {"path": "b2.txt", "content": "edited"})]
    # the model read the person's note as the denied tool's result, and the run went on to its answer
    assert "write_file=wrote a.txt" in result.output and "write_file=wrote b2.txt" in result.output
    assert ("delete_file=The tool call was denied by the person at the desktop and was not run. "
            "Note: keep c.txt, it is the backup") in result.output


def test_allow_session_is_not_asked_again_in_the_conversation(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("allow_session", "user")))
    files = Files()
    write = ("write_file", {"path": "a.txt", "content": "A"})
    approval = DesktopApproval(Approver(socket_path=service.socket_path))
    agent = agent_with(files, scripted([[write], [write]]), approval)
    agent.run_sync("twice", conversation_id="conv-1")
    assert len(files.ran) == 2 and len(service.person.seen) == 1
    assert service.person.seen[0].session == "conv-1"


def test_requires_approval_picks_the_calls_to_ask_about(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("deny", "user", note="no")))
    files = Files()
    approval = DesktopApproval(Approver(socket_path=service.socket_path),
                               requires_approval=lambda ctx, tool, args: tool.name == "delete_file")
    agent_with(files, scripted([THREE]), approval).run_sync("tidy up")
    assert [call.tool for ticket in service.person.seen for call in ticket.calls] == ["delete_file"]
    assert [tool for tool, _ in files.ran] == ["write_file", "write_file"]


def test_unreachable_app_denies_and_the_run_goes_on(tmp_path: Path) -> None:
    files = Files()
    approval = DesktopApproval(Approver(socket_path=tmp_path / "none.sock"))
    result = agent_with(files, scripted([THREE[:1]]), approval).run_sync("write")
    assert files.ran == [] and "not reachable" in result.output


def test_on_unavailable_allow_runs_the_tool(tmp_path: Path) -> None:
    files = Files()
    approval = DesktopApproval(Approver(socket_path=tmp_path / "none.sock", on_unavailable="allow"))
    agent_with(files, scripted([THREE[:1]]), approval).run_sync("write")
    assert files.ran == [("write_file", {"path": "a.txt", "content": "A"})]


def test_policy_block_ends_the_run(serve: Any) -> None:
    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never delete", blocked=True)))
    files = Files()
    approval = DesktopApproval(Approver(socket_path=service.socket_path))
    with pytest.raises(Blocked, match="never delete"):
        agent_with(files, scripted([THREE[2:]]), approval).run_sync("delete")
    assert files.ran == []


def test_deferred_run_stops_then_one_call_resolves_all_three(serve: Any) -> None:
    service = serve(per_call(partial))
    files = Files()
    agent = Agent(scripted([THREE]), name="builder", output_type=[str, DeferredToolRequests])
    agent.tool_plain(requires_approval=True)(files.write_file)
    agent.tool_plain(requires_approval=True)(files.delete_file)
    first = agent.run_sync("tidy up")
    assert isinstance(first.output, DeferredToolRequests) and len(first.output.approvals) == 3
    assert files.ran == [] and service.person.seen == []

    results = resolve_deferred_sync(first.output, Approver(socket_path=service.socket_path, agent="builder"))
    assert len(service.person.seen) == 1 and len(service.person.seen[0].calls) == 3
    second = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results)
    assert files.ran_in_any_order() == [("write_file", {"path": "a.txt", "content": "A"}),
                                        ("write_file", {"path": "b2.txt", "content": "edited"})]
    assert "keep c.txt, it is the backup" in second.output
