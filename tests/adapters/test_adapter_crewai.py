"""CrewAI: a scripted LLM drives a real Crew whose tools run through the before-tool-call hook;
the app's real core answers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
# Otherwise a first run of a crew asks on the terminal, with a 20 s timeout, whether to show its traces.
os.environ.setdefault("CREWAI_TESTING", "true")
crewai = pytest.importorskip("crewai", reason="the [crewai] extra is not installed "
                                              "(pip install 'desktop-approver[crewai]')")

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from desktop_approver.adapters.base import Approver  # noqa: E402
from desktop_approver.adapters.crewai import DesktopApproval  # noqa: E402
from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter


class ScriptedLLM(BaseLLM):
    """Answers in CrewAI's ReAct format: one scripted action per call, then a final answer that
    quotes what the agent was told since its last action."""

    def __init__(self, actions: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(model="scripted")
        self.actions = actions
        self.seen: list[list[dict[str, Any]]] = []

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> str:
        self.seen.append([dict(m) for m in messages] if isinstance(messages, list) else [{"content": messages}])
        step = len(self.seen) - 1
        if step < len(self.actions):
            name, args = self.actions[step]
            return f"Thought: step {step}\nAction: {name}\nAction Input: {json.dumps(args)}"
        return "Thought: finished\nFinal Answer: done"

    def supports_function_calling(self) -> bool:
        return False

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 100_000


def tools(ran: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    @tool("write_file")
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return f"wrote {path}"

    @tool("delete_file")
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    return [write_file, delete_file]


def crew_of(llm: ScriptedLLM, ran: list[tuple[str, dict[str, Any]]]) -> Crew:
    agent = Agent(role="builder", goal="tidy the folder", backstory="careful", llm=llm, tools=tools(ran),
                  allow_delegation=False, max_iter=6, verbose=False)
    task = Task(description="tidy up", expected_output="a summary", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


def per_call(choose: Callable[[Any], Verdict]) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [choose(call) for call in ticket.calls]


def partial(call: Any) -> Verdict:
    if call.tool == "delete_file":
        return Verdict("deny", "user", note="keep c.txt, it is the backup")
    if call.args["path"] == "b.txt":
        return Verdict("allow_once", "user", updated_args={"path": "b2.txt", "content": "edited"})
    return Verdict("allow_once", "user")


def all_text(llm: ScriptedLLM) -> str:
    return "\n".join(str(m.get("content")) for messages in llm.seen for m in messages)


def test_hook_allows_edits_and_denies_with_the_note_reaching_the_model(serve: Any) -> None:
    service = serve(per_call(partial))
    ran: list[tuple[str, dict[str, Any]]] = []
    llm = ScriptedLLM([("write_file", {"path": "a.txt", "content": "A"}),
                       ("write_file", {"path": "b.txt", "content": "B"}), ("delete_file", {"path": "c.txt"})])
    crew = crew_of(llm, ran)
    with DesktopApproval(Approver(socket_path=service.socket_path)):
        result = crew.kickoff()
    assert str(result) == "done"
    assert ran == [("write_file", {"path": "a.txt", "content": "A"}),
                   ("write_file", {"path": "b2.txt", "content": "edited"})]
    text = all_text(llm)
    assert "Tool execution blocked by hook. Tool: delete_file" in text
    assert "desktop-approver: delete_file was not run. The tool call was denied by the person at the desktop" in text
    assert "keep c.txt, it is the backup" in text
    assert {t.identity.agent for t in service.person.seen} == {"builder"}
    assert {t.session for t in service.person.seen} == {str(crew.id)}


def test_allow_session_is_not_asked_again_and_uninstall_removes_the_hook(serve: Any) -> None:
    # CrewAI will not repeat a call with the same input, so the person allows the tool for the session.
    service = serve(per_call(lambda call: Verdict("allow_session", "user", scope="tool")))
    ran: list[tuple[str, dict[str, Any]]] = []
    write = ("write_file", {"path": "a.txt", "content": "A"})
    llm = ScriptedLLM([write, ("write_file", {"path": "b.txt", "content": "B"})])
    with DesktopApproval(Approver(socket_path=service.socket_path)):
        crew_of(llm, ran).kickoff()
    assert len(ran) == 2 and len(service.person.seen) == 1
    ran.clear()
    crew_of(ScriptedLLM([write]), ran).kickoff()  # no hook installed any more: not asked
    assert len(ran) == 1 and len(service.person.seen) == 1


def test_unreachable_app_denies(tmp_path: Path) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    llm = ScriptedLLM([("delete_file", {"path": "c.txt"})])
    with DesktopApproval(Approver(socket_path=tmp_path / "none.sock")):
        crew_of(llm, ran).kickoff()
    assert ran == [] and "not reachable" in all_text(llm)


def test_policy_block_ends_the_run(serve: Any) -> None:
    """The only way CrewAI lets a hook end a run: the next model call is refused, before the model
    hears anything; ``with DesktopApproval()`` turns CrewAI's error into ``Blocked``."""
    from desktop_approver.client.errors import Blocked

    ran: list[tuple[str, dict[str, Any]]] = []
    service = serve(per_call(lambda call: Verdict("deny", "policy", note="never", blocked=True)))
    llm = ScriptedLLM([("delete_file", {"path": "c.txt"}), ("write_file", {"path": "a.txt", "content": "A"})])
    with pytest.raises(Blocked, match="never"), DesktopApproval(Approver(socket_path=service.socket_path)):
        crew_of(llm, ran).kickoff()
    assert ran == [] and len(llm.seen) == 1  # the model was not called again after the block
    assert [call.tool for ticket in service.person.seen for call in ticket.calls] == ["delete_file"]


def test_a_block_ends_that_run_only_and_the_next_kickoff_asks_again(serve: Any) -> None:
    """``install()`` without ``with``: the block must not outlive the run it ended."""
    def block_deletes(call: Any) -> Verdict:
        if call.tool == "delete_file":
            return Verdict("deny", "policy", note="never", blocked=True)
        return Verdict("allow_once", "user")

    ran: list[tuple[str, dict[str, Any]]] = []
    service = serve(per_call(block_deletes))
    llm = ScriptedLLM([("delete_file", {"path": "c.txt"}), ("write_file", {"path": "a.txt", "content": "A"})])
    crew = crew_of(llm, ran)
    approval = DesktopApproval(Approver(socket_path=service.socket_path)).install()
    try:
        with pytest.raises(ValueError, match="blocked by before_llm_call hook"):  # CrewAI's error: see the module
            crew.kickoff()
        assert ran == [] and len(llm.seen) == 1
        assert str(crew.kickoff()) == "done"  # the next run: the model is called, the write is asked and runs
    finally:
        approval.uninstall()
    assert ran == [("write_file", {"path": "a.txt", "content": "A"})]
    assert [call.tool for ticket in service.person.seen for call in ticket.calls] == ["delete_file", "write_file"]
