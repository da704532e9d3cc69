"""Every Python example in README.md and docs/ runs, read out of the Markdown itself.

An example is found by its fence (```python), run as written, and checked by the runner its
section names (:data:`RUNNERS`): against a real app (the Qt-free service on a real socket, found
through ``DESKTOP_APPROVER_SOCKET`` as a user's app would be) with a scripted person, and each
framework's own offline test model standing in for the ``model`` (``llm``, ``client``) the
example leaves to the reader. An example in a section without a runner fails: a new example
cannot be added without being run. Examples that define ``test_*`` functions are tests
themselves (``FakeApprover``): they are run too. JSON examples must parse; the hooks JSON must be
what ``hook claude-code --install`` writes.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client.paths import SOCKET_ENV
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOTE = "keep c.txt, it is the backup"


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    language: str
    heading: str
    code: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.heading})"


def examples(language: str) -> list[Example]:
    found = []
    for page in PAGES:
        heading = ""
        lines = page.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            fence = re.match(r"^```(\w+)\s*$", line)
            if fence:
                end = lines.index("```", index + 1)
                if fence.group(1) == language:
                    found.append(Example(page, index + 1, language, heading, "\n".join(lines[index + 1:end]) + "\n"))
                index = end
            index += 1
    return found


def run_example(example: Example, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the example's code as written, as a script (no top-level ``await``: what is pasted into a
    file must run there); its namespace afterwards."""
    namespace: dict[str, Any] = {"__name__": "docs_example", **(given or {})}
    exec(compile(example.code, str(example), "exec"), namespace)  # noqa: S102 - the project's own documentation
    return namespace


PLACEHOLDERS = ("model", "llm", "client")
"""What a framework example leaves to the reader; each says how to fill it, offline too."""


@pytest.mark.parametrize("example", examples("python"), ids=str)
def test_the_python_example_is_a_script_and_says_how_to_fill_its_placeholders(example: Example) -> None:
    tree = ast.parse(example.code)  # a SyntaxError here: it would not run pasted into a file
    bound = {target.id for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.For, ast.With))
             for target in ast.walk(node) if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)}
    bound |= {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    bound |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    bound |= {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
              if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    for name in sorted((used - bound) & set(PLACEHOLDERS)):
        assert re.search(rf"^# {name}: .*offline", example.code, flags=re.M), \
            f"{example}: `{name}` is left to the reader without a `# {name}: ..., offline ...` line"


def denies_delete_file(ticket: Ticket) -> list[Verdict]:
    return [Verdict("deny", "user", note=NOTE) if call.tool == "delete_file" else Verdict("allow_once", "user")
            for call in ticket.calls]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServiceThread]:
    """A real app on a real socket that the examples' default ``Approver()`` / ``Client()`` find."""
    from tests.support.deciders import ScriptedPerson

    with ServiceThread(tmp_path, ScriptedPerson(denies_delete_file)) as service:
        monkeypatch.setenv(SOCKET_ENV, str(service.socket_path))
        yield service


# -- the offline models, each calling delete_file(path="c.txt") and then reporting what it read --


def pydantic_ai_model() -> Any:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            return ModelResponse(parts=[ToolCallPart("delete_file", {"path": "c.txt"}, tool_call_id="call-1")])
        read = [str(p.content) for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(" | ".join(read))])

    return FunctionModel(respond)


def openai_agents_model() -> Any:
    from agents import set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)  # no trace export to OpenAI from the tests

    def report(call: Any) -> Any:
        read = [str(item["output"]) for item in call.input
                if isinstance(item, dict) and item.get("type") == "function_call_output"]
        return [assistant_message(" | ".join(read))]

    return ScriptedModel([ModelStep(output=[function_call("delete_file", {"path": "c.txt"}, call_id="call-1")]),
                          ModelStep.respond(report)])


def langchain_model() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage

    class ReportingModel(FakeMessagesListChatModel):
        """Calls delete_file, then answers with the tool results it read."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> ReportingModel:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            from langchain_core.outputs import ChatGeneration, ChatResult

            read = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            if read:
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content=" | ".join(read)))])
            call = {"name": "delete_file", "args": {"path": "c.txt"}, "id": "call-1", "type": "tool_call"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])

    return ReportingModel(responses=[])


def agent_framework_client() -> Any:
    from tests.adapters.test_adapter_agent_framework import ScriptedChatClient

    return ScriptedChatClient([[("delete_file", {"path": "c.txt"}, "call-1")]])


def crewai_llm() -> Any:
    from tests.adapters.test_adapter_crewai import ScriptedLLM

    return ScriptedLLM([("delete_file", {"path": "c.txt"})])


# -- the runners: what each section's example must do --------------------------------------------


def the_person_was_asked_and_the_model_read_the_note(app: ServiceThread, printed: str, agent: str) -> None:
    asked = [call for ticket in app.person.seen for call in ticket.calls]
    assert [(call.tool, call.args) for call in asked] == [("delete_file", {"path": "c.txt"})]
    assert {ticket.identity.agent for ticket in app.person.seen} == {agent}
    assert NOTE in printed


def framework(package: str, given: Callable[[], dict[str, Any]], agent: str,
              read: Callable[[dict[str, Any], str], str] = lambda given, printed: printed) -> Callable[..., None]:
    """Run the example with ``given`` standing in for the reader's model; ``read``: what the model read."""
    def run(example: Example, app: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
        pytest.importorskip(package, reason=f"the {package} extra is not installed")
        names = given()
        run_example(example, names)
        # Deferred examples answer outside the run, where the agent's name is not known.
        expected = "langchain" if "answer_interrupts(" in example.code else agent
        the_person_was_asked_and_the_model_read_the_note(app, read(names, capsys.readouterr().out), expected)

    return run


def the_client(example: Example, app: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = run_example(example)
    assert namespace["decision"].allowed and len(namespace["decisions"]) == 2 and namespace["listed"].allowed
    assert [call.tool for ticket in app.person.seen for call in ticket.calls] == ["write_file", "Bash", "Bash", "Bash"]


def claude_agent_sdk(example: Example, app: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("claude_agent_sdk", reason="the claude-agent-sdk extra is not installed")
    from tests.adapters.test_adapter_claude_agent_sdk import ScriptedCli, run

    options = run_example(example)["options"]
    cli = ScriptedCli([("delete_file", {"path": "c.txt"})], suggestions=[])  # Claude Code, scripted
    run(cli, options)
    assert cli.ran == [] and cli.replies[0]["behavior"] == "deny" and NOTE in cli.replies[0]["message"]
    assert {ticket.identity.agent for ticket in app.person.seen} == {"claude-agent-sdk"}


def run_its_tests(example: Example, app: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
    """An example that is a test (FakeApprover): each of its ``test_*`` functions runs and passes."""
    namespace = run_example(example)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert tests, "an example under a testing heading defines no test_ function"
    for test in tests:
        test()
    assert app.person.seen == [], "a FakeApprover test reached the real app"


RUNNERS: dict[str, Callable[..., None]] = {
    "Asking from an agent": the_client,
    "Testing your agent": run_its_tests,
    "Testing an agent without the app": run_its_tests,
    "PydanticAI": framework("pydantic_ai", lambda: {"model": pydantic_ai_model()}, "cleaner"),
    "Agent frameworks": framework("pydantic_ai", lambda: {"model": pydantic_ai_model()}, "cleaner"),  # README's one
    "OpenAI Agents SDK": framework("agents", lambda: {"model": openai_agents_model()}, "cleaner"),
    "LangChain / LangGraph": framework("langchain", lambda: {"model": langchain_model()}, "cleaner"),
    "Claude Agent SDK": claude_agent_sdk,
    "Microsoft Agent Framework": framework("agent_framework", lambda: {"client": agent_framework_client()},
                                           "agent-framework"),
    # CrewAI's final answer is the model's own words: what the model was told is in its messages.
    "CrewAI": framework("crewai", lambda: {"llm": crewai_llm()}, "cleaner",
                        read=lambda given, printed: json.dumps(given["llm"].seen)),
}


FRAMEWORK_SECTIONS = {"PydanticAI", "Agent frameworks", "OpenAI Agents SDK", "LangChain / LangGraph",
                      "Claude Agent SDK", "Microsoft Agent Framework", "CrewAI", "Testing an agent without the app"}


@pytest.mark.parametrize("example", [
    pytest.param(example, marks=[pytest.mark.adapter] if example.heading in FRAMEWORK_SECTIONS else [])
    for example in examples("python")], ids=str)
def test_the_python_example_runs(example: Example, app: ServiceThread, capsys: pytest.CaptureFixture[str]) -> None:
    runner = RUNNERS.get(example.heading)
    assert runner is not None, f"{example}: no runner for this section: add one to RUNNERS"
    runner(example, app, capsys)


def test_the_examples_are_found() -> None:
    """The extraction itself: each framework's example, the LangChain deferred one with version="v2"."""
    found = examples("python")
    assert {example.heading for example in found} >= set(RUNNERS)
    deferred = [e for e in found if "answer_interrupts(result.interrupts" in e.code]
    assert deferred and all('version="v2"' in e.code for e in deferred)


@pytest.mark.parametrize("example", examples("json"), ids=str)
def test_the_json_example_parses(example: Example) -> None:
    json.loads(example.code)


def test_the_hooks_json_is_what_install_writes() -> None:
    from desktop_approver.commands.hook import merged_settings

    shown = next(json.loads(e.code) for e in examples("json") if '"PermissionRequest"' in e.code)
    command = shown["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.startswith("/") and command.endswith(" hook claude-code")
    assert merged_settings({}, command) == shown


def _desktop_approver_commands(code: str) -> Iterator[list[str]]:
    """Each ``desktop-approver ...`` command in a shell example, as its argument list."""
    import shlex

    for line in code.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        command: list[str] | None = None
        for word in [*words, "&&"]:
            if word in ("&&", "||", "|", ";", "<", ">"):
                if command is not None:
                    yield command
                command = None
            elif command is not None:
                command.append(word)
            elif word.rsplit("/", 1)[-1] == "desktop-approver" and not word.endswith(".spec"):
                command = []


@pytest.mark.parametrize("example", [e for e in examples("bash") if list(_desktop_approver_commands(e.code))],
                         ids=str)
def test_the_shell_example_s_commands_parse(example: Example) -> None:
    """Shell examples install, build or need a desktop, so they are not run; their own commands must
    be what the CLI accepts (a renamed option fails here)."""
    from desktop_approver.cli import build_parser

    for argv in _desktop_approver_commands(example.code):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            raise AssertionError(f"{example}: desktop-approver {' '.join(argv)} does not parse") from exc
