"""``desktop-approver run -- CMD``: real processes, a real socket, the command really exec'd."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from desktop_approver.commands.run import command_to_run
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from tests.test_cli import cli, every


def test_allowed_command_is_exec_d_with_its_own_exit_code_and_output(serve: Any, tmp_path: Path) -> None:
    service = serve(every("allow_once"))
    result = cli("run", "--socket", str(service.socket_path), "--session", "s-run", "--",
                 "sh", "-c", 'echo "ran with $1"; exit 7', "sh", "-la")
    assert result.returncode == 7, result.stderr
    assert result.stdout == "ran with -la\n"
    call = service.person.seen[0].calls[0]
    assert call.tool == "Bash"
    assert call.args == {"command": ["sh", "-c", 'echo "ran with $1"; exit 7', "sh", "-la"]}
    assert call.preview is not None and call.preview["kind"] == "command"
    assert call.preview["argv"] == call.args["command"] and call.preview["cwd"] == os.getcwd()
    assert service.person.seen[0].session == "s-run"


def test_denied_command_does_not_run_and_exits_1_with_the_note(serve: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    service = serve(every("deny", "use the staging bucket"))
    result = cli("run", "--socket", str(service.socket_path), "--tool", "deploy", "--", "touch", str(marker))
    assert result.returncode == 1
    assert "use the staging bucket" in result.stderr and result.stdout == ""
    assert not marker.exists()
    assert service.person.seen[0].calls[0].tool == "deploy"


def test_blocked_command_exits_3(serve: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    service = serve(lambda ticket: [Verdict("deny", "policy", note="never", blocked=True) for _ in ticket.calls])
    result = cli("run", "--socket", str(service.socket_path), "--", "touch", str(marker))
    assert result.returncode == 3 and "blocked by policy: never" in result.stderr
    assert not marker.exists()


def test_unreachable_app_exits_2_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = cli("run", "--socket", str(tmp_path / "none.sock"), "--", "touch", str(marker))
    assert result.returncode == 2 and "not reachable" in result.stderr
    assert not marker.exists()


def test_edited_arguments_are_what_runs(serve: Any, tmp_path: Path) -> None:
    def edit(ticket: Ticket) -> list[Verdict]:
        return [Verdict("allow_once", "user", updated_args={"command": ["echo", "edited"]})]

    service = serve(edit)
    result = cli("run", "--socket", str(service.socket_path), "--", "echo", "original")
    assert result.returncode == 0 and result.stdout == "edited\n"


def test_missing_program_after_allow_exits_127(serve: Any) -> None:
    service = serve(every("allow_once"))
    result = cli("run", "--socket", str(service.socket_path), "--", "no-such-program-xyz")
    assert result.returncode == 127 and "command not found" in result.stderr


def test_edited_shell_line_runs_through_sh_and_bad_edits_are_refused() -> None:
    assert command_to_run(None, ["ls", "-l"]) == ["ls", "-l"]
    assert command_to_run({"command": "ls | wc -l"}, ["ls"]) == ["/bin/sh", "-c", "ls | wc -l"]
    for bad in ({"command": []}, {"command": [1, 2]}, {"command": "  "}, {}):
        try:
            command_to_run(bad, ["ls"])
        except ValueError:
            continue
        raise AssertionError(f"{bad} was accepted")


def test_no_command_is_bad_input(tmp_path: Path) -> None:
    result = cli("run", "--socket", str(tmp_path / "none.sock"), "--")
    assert result.returncode == 2
