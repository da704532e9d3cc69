"""One wording for every way in (``client/wording.py``): the hook, the adapters (and so the MCP
gate, which asks through an adapter ``Approver``) tell the model the same sentence when the app is
not reachable and when it refused the request, each said once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from desktop_approver.adapters.base import Approver
from desktop_approver.core.decisions.tickets import Verdict
from tests.test_cli import cli


def hook_denial(socket: Path, tool: str, tool_input: dict[str, Any]) -> str:
    event = {"session_id": "cc-1", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": tool,
             "tool_input": tool_input}
    result = cli("hook", "claude-code", "--socket", str(socket), stdin=json.dumps(event))
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny", output
    return str(output["permissionDecisionReason"])


def test_app_not_reachable_reads_the_same_from_the_hook_and_the_adapters(tmp_path: Path) -> None:
    socket = tmp_path / "nobody.sock"
    adapter = Approver(socket_path=socket).ask("Bash", {"command": "ls"}).message
    assert adapter == hook_denial(socket, "Bash", {"command": "ls"})
    assert adapter.startswith(f"The tool call was not run: desktop-approver is not reachable at {socket}: ")
    assert adapter.count("not reachable") == 1 and adapter.endswith(".") and not adapter.endswith("..")


def test_a_refused_request_reads_the_same_from_the_hook_and_the_adapters(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
    tool = "t" * 201  # longer than a tool name may be (ipc/PROTOCOL.md): the app refuses the message
    adapter = Approver(socket_path=service.socket_path).ask(tool, {"command": "ls"}).message
    assert adapter == hook_denial(service.socket_path, tool, {"command": "ls"})
    assert adapter.startswith("The tool call was not run: desktop-approver refused the request (")
    assert service.person.seen == []
