"""``desktop-approver run -- CMD``: real processes, a real socket, the command really exec'd."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.commands.run import (
    CODES,
    EXIT_BAD_INPUT,
    EXIT_BLOCKED,
    EXIT_DENIED,
    EXIT_UNAVAILABLE,
    command_to_run,
)
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


def test_denied_command_does_not_run_and_exits_with_the_denied_code_and_the_note(serve: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    service = serve(every("deny", "use the staging bucket"))
    result = cli("run", "--socket", str(service.socket_path), "--tool", "deploy", "--", "touch", str(marker))
    assert result.returncode == EXIT_DENIED
    assert "use the staging bucket" in result.stderr and result.stdout == ""
    assert not marker.exists()
    assert service.person.seen[0].calls[0].tool == "deploy"


def test_blocked_command_exits_with_the_blocked_code(serve: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    service = serve(lambda ticket: [Verdict("deny", "policy", note="never", blocked=True) for _ in ticket.calls])
    result = cli("run", "--socket", str(service.socket_path), "--", "touch", str(marker))
    assert result.returncode == EXIT_BLOCKED and "blocked by policy: never" in result.stderr
    assert not marker.exists()


def test_unreachable_app_exits_with_its_code_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = cli("run", "--socket", str(tmp_path / "none.sock"), "--", "touch", str(marker))
    assert result.returncode == EXIT_UNAVAILABLE and "not reachable" in result.stderr
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
    assert result.returncode == EXIT_BAD_INPUT and "no command" in result.stderr


def test_a_command_s_own_1_2_3_cannot_be_taken_for_a_deny_and_the_status_file_says_which(
        serve: Any, tmp_path: Path) -> None:
    """The command's own exit codes stay its own; ours are distinct, and the status file is exact."""
    status = tmp_path / "status"
    allowing = serve(every("allow_once"))
    for code in (1, 2, 3):
        result = cli("run", "--socket", str(allowing.socket_path), "--status-file", str(status), "--",
                     "sh", "-c", f"exit {code}")
        assert result.returncode == code and status.read_text() == "allowed\n"
        assert result.returncode not in CODES
    denied = cli("run", "--socket", str(tmp_path / "none.sock"), "--status-file", str(status), "--", "true")
    assert denied.returncode == EXIT_UNAVAILABLE and status.read_text() == "unavailable\n"
    assert len({EXIT_DENIED, EXIT_UNAVAILABLE, EXIT_BLOCKED, EXIT_BAD_INPUT}) == 4


def test_status_file_for_a_deny_and_a_block(serve: Any, tmp_path: Path) -> None:
    status = tmp_path / "status"
    denying = serve(lambda ticket: [Verdict("deny", "policy", note="no", blocked=True) for _ in ticket.calls])
    result = cli("run", "--socket", str(denying.socket_path), "--status-file", str(status), "--", "true")
    assert result.returncode == EXIT_BLOCKED and status.read_text() == "blocked\n"


def test_an_unwritable_status_file_runs_nothing(serve: Any, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    service = serve(every("allow_once"))
    result = cli("run", "--socket", str(service.socket_path), "--status-file", str(tmp_path / "no" / "dir"),
                 "--", "touch", str(marker))
    assert result.returncode == EXIT_BAD_INPUT and "cannot write --status-file" in result.stderr
    assert not marker.exists()


def test_codes_are_listed_by_codes_and_in_help() -> None:
    listed = cli("run", "--codes")
    assert listed.returncode == 0
    helped = cli("run", "--help").stdout
    for code, (word, _) in CODES.items():
        assert f"{code:>3}  {word}" in listed.stdout and f"{code:>3}  {word}" in helped


def test_the_status_file_says_waiting_while_the_person_decides_not_an_earlier_word(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.support.service import ServiceThread
    from tests.test_cli import ROOT

    status = tmp_path / "status"
    status.write_text("allowed\n")  # an earlier run's word
    with ServiceThread(tmp_path) as service:  # nobody answers
        run = subprocess.Popen([sys.executable, "-m", "desktop_approver", "run", "--socket", str(service.socket_path),
                                "--status-file", str(status), "--", "true"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(400):  # until the question reaches the app (bounded: 20 s)
                if service.service.broker.pending:
                    break
                time.sleep(0.05)
            assert service.service.broker.pending, "the request never reached the app"
            run.send_signal(signal.SIGKILL)  # killed while waiting: nothing more gets written
        finally:
            run.wait(20)
    assert status.read_text() == "waiting\n"
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")] == []


def test_a_status_file_that_is_a_symbolic_link_is_refused_and_nothing_runs(serve: Any, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("precious\n")
    link = tmp_path / "status"
    link.symlink_to(target)
    marker = tmp_path / "ran"
    service = serve(every("allow_once"))
    result = cli("run", "--socket", str(service.socket_path), "--status-file", str(link), "--", "touch", str(marker))
    assert result.returncode == EXIT_BAD_INPUT and "symbolic link" in result.stderr
    assert target.read_text() == "precious\n" and link.is_symlink() and not marker.exists()
    assert service.person.seen == []  # refused before asking


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-7"])
def test_a_timeout_that_cannot_be_waited_is_bad_input(tmp_path: Path, value: str) -> None:
    status = tmp_path / "status"
    result = cli("run", "--socket", str(tmp_path / "none.sock"), f"--timeout={value}", "--status-file", str(status),
                 "--", "true")
    assert result.returncode == EXIT_BAD_INPUT and "Traceback" not in result.stderr, result.stderr
    assert "--timeout" in result.stderr and status.read_text() == "bad-input\n"
