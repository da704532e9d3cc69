"""The MCP gate and the permission-prompt tool, driven by the official SDK's client over stdio,
in front of a real upstream MCP server (``mcp_upstream.py``), with the app's real core answering."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed (pip install 'desktop-approver[mcp]')")

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from desktop_approver.core.decisions.tickets import Ticket, Verdict  # noqa: E402

pytestmark = pytest.mark.adapter
ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = Path(__file__).with_name("mcp_upstream.py")


def every(decision: str, note: str | None = None) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [Verdict(decision, "user", note=note) for _ in ticket.calls]


def run_client(command: list[str], body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Start ``command`` as an MCP server over stdio, run ``body`` against it with the SDK's client."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    async def main() -> Any:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with anyio.fail_after(60):
                return await body(session)

    return anyio.run(main)


def gate(socket: Path, folder: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "desktop_approver", "mcp-gate", "--socket", str(socket), *options, "--",
            sys.executable, str(UPSTREAM), str(folder)]


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_the_gate_lists_the_upstream_tools_unchanged(serve: Any, tmp_path: Path) -> None:
    service = serve(every("allow_once"))

    async def names_and_annotations(session: ClientSession) -> list[Any]:
        return [(t.name, t.description, t.input_schema, t.annotations) for t in (await session.list_tools()).tools]

    direct = run_client([sys.executable, str(UPSTREAM), str(tmp_path)], names_and_annotations)
    gated = run_client(gate(service.socket_path, tmp_path), names_and_annotations)
    assert gated == direct and {name for name, *_ in gated} == {"read_file", "write_file"}
    assert service.person.seen == []  # listing asks nothing


def test_resources_and_prompts_are_handed_on_without_asking(serve: Any, tmp_path: Path) -> None:
    service = serve(every("deny"))

    async def read_both(session: ClientSession) -> tuple[str, str]:
        resources = (await session.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["notes://readme"]
        content = (await session.read_resource("notes://readme")).contents[0]
        prompt = await session.get_prompt("summarise", {"name": "a.txt"})
        return content.text, prompt.messages[0].content.text  # type: ignore[union-attr]

    assert run_client(gate(service.socket_path, tmp_path), read_both) == ("one file per note",
                                                                         "Summarise the note a.txt.")
    assert service.person.seen == []


def test_allowed_call_is_forwarded_with_hints_and_the_server_name_as_agent(serve: Any, tmp_path: Path) -> None:
    service = serve(every("allow_once"))

    async def write(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("write_file", {"path": "a.txt", "text": "hello"})

    result = run_client(gate(service.socket_path, tmp_path), write)
    assert not result.is_error and "wrote 5 characters" in text_of(result)
    assert (tmp_path / "a.txt").read_text() == "hello"
    ticket = service.person.seen[0]
    assert ticket.identity.agent == "mcp:notes"
    call = ticket.calls[0]
    assert call.tool == "write_file" and call.args == {"path": "a.txt", "text": "hello"}
    assert call.hints == {"read_only": False, "destructive": True}
    assert call.description == "Write (replace) a note."


def test_denied_call_is_an_error_result_with_the_note_and_the_session_goes_on(serve: Any, tmp_path: Path) -> None:
    answers = iter([every("deny", "not that file"), every("allow_once")])
    service = serve(lambda ticket: next(answers)(ticket))

    async def two_calls(session: ClientSession) -> tuple[types.CallToolResult, types.CallToolResult]:
        denied = await session.call_tool("write_file", {"path": "secret.txt", "text": "x"})
        allowed = await session.call_tool("read_file", {"path": "missing"})
        return denied, allowed

    denied, allowed = run_client(gate(service.socket_path, tmp_path), two_calls)
    assert denied.is_error is True
    assert text_of(denied) == ("The tool call was denied by the person at the desktop and was not run. "
                               "Note: not that file")
    assert not (tmp_path / "secret.txt").exists()
    assert not allowed.is_error and text_of(allowed) == "(no such note)"


def test_edited_arguments_are_what_the_upstream_receives(serve: Any, tmp_path: Path) -> None:
    service = serve(lambda ticket: [Verdict("allow_once", "user", updated_args={"path": "b.txt", "text": "edited"})])

    async def write(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("write_file", {"path": "a.txt", "text": "original"})

    result = run_client(gate(service.socket_path, tmp_path), write)
    assert not result.is_error
    assert (tmp_path / "b.txt").read_text() == "edited" and not (tmp_path / "a.txt").exists()
    assert service.person.seen[0].calls[0].args == {"path": "a.txt", "text": "original"}


def test_allow_session_is_not_asked_again(serve: Any, tmp_path: Path) -> None:
    service = serve(every("allow_session"))

    async def twice(session: ClientSession) -> list[bool]:
        results = [await session.call_tool("read_file", {"path": "a.txt"}) for _ in range(2)]
        return [bool(result.is_error) for result in results]

    assert run_client(gate(service.socket_path, tmp_path), twice) == [False, False]
    assert len(service.person.seen) == 1


def test_allow_read_only_forwards_what_the_risk_classifier_calls_safe(serve: Any, tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("kept")
    service = serve(every("deny", "no writes"))

    async def read_then_write(session: ClientSession) -> tuple[str, bool | None]:
        read = await session.call_tool("read_file", {"path": "n.txt"})
        write = await session.call_tool("write_file", {"path": "n.txt", "text": "gone"})
        return text_of(read), write.is_error

    assert run_client(gate(service.socket_path, tmp_path, "--allow-read-only"), read_then_write) == ("kept", True)
    assert [ticket.calls[0].tool for ticket in service.person.seen] == ["write_file"]
    assert (tmp_path / "n.txt").read_text() == "kept"


def test_unreachable_app_denies_every_call(tmp_path: Path) -> None:
    async def write(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("write_file", {"path": "a.txt", "text": "x"})

    result = run_client(gate(tmp_path / "none.sock", tmp_path), write)
    assert result.is_error and "not reachable" in text_of(result)
    assert not (tmp_path / "a.txt").exists()


def test_policy_block_is_a_refusal_too(serve: Any, tmp_path: Path) -> None:
    service = serve(lambda ticket: [Verdict("deny", "policy", note="notes are read-only", blocked=True)])

    async def write(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("write_file", {"path": "a.txt", "text": "x"})

    result = run_client(gate(service.socket_path, tmp_path), write)
    assert result.is_error
    assert "blocked by a policy rule" in text_of(result) and "notes are read-only" in text_of(result)


def permission_tool(socket: Path) -> list[str]:
    return [sys.executable, "-m", "desktop_approver", "mcp-permission", "--socket", str(socket)]


def ask_permission(socket: Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    async def ask(session: ClientSession) -> dict[str, Any]:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == ["approve"]
        result = await session.call_tool("approve", {"tool_name": tool, "input": tool_input, "tool_use_id": "t1"})
        return json.loads(text_of(result))

    return run_client(permission_tool(socket), ask)


def test_permission_tool_allows_with_the_edited_input(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("allow_once", "user", updated_args={"command": "ls -l"})])
    answer = ask_permission(service.socket_path, "Bash", {"command": "ls"})
    assert answer == {"behavior": "allow", "updatedInput": {"command": "ls -l"}}
    assert service.person.seen[0].identity.agent == "claude-code"
    assert service.person.seen[0].calls[0].args == {"command": "ls"}


def test_permission_tool_denies_with_the_message(serve: Any) -> None:
    service = serve(every("deny", "use rg instead"))
    answer = ask_permission(service.socket_path, "Bash", {"command": "grep -r x /"})
    assert answer["behavior"] == "deny" and answer["message"].endswith("Note: use rg instead")


def test_permission_tool_block_interrupts_claude(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("deny", "policy", note="never in prod", blocked=True)])
    answer = ask_permission(service.socket_path, "Bash", {"command": "kubectl delete ns prod"})
    assert answer["behavior"] == "deny" and answer["interrupt"] is True
    assert "blocked by a policy rule" in answer["message"] and "never in prod" in answer["message"]


def test_permission_tool_without_app_denies(tmp_path: Path) -> None:
    answer = ask_permission(tmp_path / "none.sock", "Bash", {"command": "ls"})
    assert answer["behavior"] == "deny" and "not reachable" in answer["message"]


def test_an_upstream_that_cannot_start_is_named_and_exits_1(tmp_path: Path) -> None:
    import subprocess

    result = subprocess.run([sys.executable, "-m", "desktop_approver", "mcp-gate", "--socket", str(tmp_path / "s"),
                             "--", "no-such-mcp-server-xyz"], capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 1 and "cannot start the upstream server 'no-such-mcp-server-xyz'" in result.stderr


def _start_gate_with_a_pending_call(service: Any, folder: Path) -> Any:
    """A gate over raw pipes, initialised, with a call waiting for the person (who never answers)."""
    import subprocess

    gate_process = subprocess.Popen(gate(service.socket_path, folder), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert gate_process.stdin is not None and gate_process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert gate_process.stdin is not None
        gate_process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        gate_process.stdin.flush()

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                      "clientInfo": {"name": "test", "version": "1"}}})
    assert b'"id":1' in gate_process.stdout.readline()
    send({"method": "notifications/initialized"})
    send({"id": 2, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "a", "text": "x"}}})
    wait_for(lambda: service.person.seen)  # the question is on the desktop
    return gate_process


def wait_for(condition: Callable[[], Any]) -> None:
    import time

    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def _ends_with_one_line(gate_process: Any) -> tuple[int, str]:
    returncode = gate_process.wait(30)
    stderr = gate_process.stderr.read().decode()
    gate_process.stderr.close()
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    return returncode, stderr


def test_the_gate_ends_quietly_when_its_client_goes_away(tmp_path: Path) -> None:
    from tests.support.deciders import WaitingPerson
    from tests.support.service import ServiceThread

    with ServiceThread(tmp_path, WaitingPerson()) as service:
        gate_process = _start_gate_with_a_pending_call(service, tmp_path)
        gate_process.stdout.close()
        gate_process.stdin.close()
        returncode, stderr = _ends_with_one_line(gate_process)
        wait_for(lambda: service.person.cancelled == 1)  # the desktop's question was withdrawn
    assert returncode == 0 and "the MCP client went away" in stderr


def test_the_gate_ends_quietly_when_the_upstream_goes_away(tmp_path: Path) -> None:
    import signal

    from tests.support.deciders import WaitingPerson
    from tests.support.service import ServiceThread

    with ServiceThread(tmp_path, WaitingPerson()) as service:
        gate_process = _start_gate_with_a_pending_call(service, tmp_path)
        children = Path(f"/proc/{gate_process.pid}/task/{gate_process.pid}/children").read_text().split()
        assert len(children) == 1
        os.kill(int(children[0]), signal.SIGKILL)
        returncode, stderr = _ends_with_one_line(gate_process)
        gate_process.stdin.close()
        gate_process.stdout.close()
        wait_for(lambda: service.person.cancelled == 1)
    assert returncode == 1 and "the upstream server" in stderr and "exited" in stderr


# -- however the gate ends: one line, and the upstream server stopped ------------------------------------------

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}) + "\n"


def _silent_upstream(pid_file: Path) -> list[str]:
    """An upstream that starts, notes its pid, and never answers (not even ``initialize``)."""
    return [sys.executable, "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
                                  "time.sleep(1000)"]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gate_over(upstream: list[str], tmp_path: Path, **popen: Any) -> Any:
    import subprocess

    return subprocess.Popen([sys.executable, "-m", "desktop_approver", "mcp-gate", "--socket",
                             str(tmp_path / "none.sock"), "--", *upstream], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)), **popen)


def _stop(process: Any, pid_file: Path) -> None:
    """Whatever the test found, leave no process of it behind."""
    import signal

    if process.poll() is None:
        process.kill()
        process.wait(30)
    if pid_file.exists() and _running(int(pid_file.read_text())):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@pytest.mark.parametrize("stdin_kind", ["file", "pipe"])
def test_an_upstream_that_dies_during_its_start_up_is_one_line(tmp_path: Path, stdin_kind: str) -> None:
    import subprocess

    requests = tmp_path / "init.jsonl"
    requests.write_text(INITIALIZE)
    with requests.open("rb") as file:
        process = _gate_over(["false"], tmp_path, stdin=file if stdin_kind == "file" else subprocess.PIPE)
        try:
            if stdin_kind == "pipe":  # the client stays: only the upstream is gone
                process.stdin.write(INITIALIZE.encode())
                process.stdin.flush()
            returncode, stderr = _ends_with_one_line(process)
        finally:
            _stop(process, tmp_path / "none")
    assert returncode == 1 and "'false' ended during its start-up" in stderr


def test_a_client_that_leaves_during_the_start_up_ends_the_gate_and_its_upstream(tmp_path: Path) -> None:
    import subprocess

    pid_file = tmp_path / "upstream.pid"
    process = _gate_over(_silent_upstream(pid_file), tmp_path, stdin=subprocess.PIPE)
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text())
        process.stdin.write(INITIALIZE.encode())
        process.stdin.close()  # the client gives up before the upstream ever answered
        returncode, stderr = _ends_with_one_line(process)
        wait_for(lambda: not _running(int(pid_file.read_text())))
    finally:
        _stop(process, pid_file)
    assert returncode == 0 and "the MCP client went away" in stderr


def test_a_client_that_closes_stdin_while_serving_gets_the_one_line(tmp_path: Path) -> None:
    from tests.support.deciders import WaitingPerson
    from tests.support.service import ServiceThread

    with ServiceThread(tmp_path, WaitingPerson()) as service:
        gate_process = _start_gate_with_a_pending_call(service, tmp_path)
        gate_process.stdin.close()  # stdout stays open: nothing breaks, the client just says no more
        returncode, stderr = _ends_with_one_line(gate_process)
        gate_process.stdout.close()
        wait_for(lambda: service.person.cancelled == 1)
    assert returncode == 0 and "the MCP client went away" in stderr


def test_sigterm_stops_the_upstream_too_with_one_line(tmp_path: Path) -> None:
    import signal
    import subprocess

    pid_file = tmp_path / "upstream.pid"
    process = _gate_over(_silent_upstream(pid_file), tmp_path, stdin=subprocess.PIPE)
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text())
        process.send_signal(signal.SIGTERM)
        returncode, stderr = _ends_with_one_line(process)
        wait_for(lambda: not _running(int(pid_file.read_text())))
    finally:
        _stop(process, pid_file)
    assert returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in stderr
