"""Modes are the person's standing orders: they survive a restart of the app, approve-all ends
by itself, and `desktop-approver status` tells which one is in force."""

from __future__ import annotations

import json
from pathlib import Path

from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import Verdict
from tests.support.service import ScriptedPerson, ServiceThread
from tests.test_cli import cli


def _service(tmp_path: Path) -> ServiceThread:
    thread = ServiceThread(tmp_path, ScriptedPerson(lambda t: []))
    thread.options.state_path = tmp_path / "state.json"
    return thread


def test_mode_survives_restart_and_is_in_status(tmp_path: Path) -> None:
    with _service(tmp_path) as first:
        first.loop.call_soon_threadsafe(first.service.mode.set, modes.DENY_ALL)
        socket = str(first.options.socket_path)
        status = json.loads(cli("status", "--json", "--socket", socket).stdout)
        assert status["running"] is True and status["mode"] == "deny_all"
    with _service(tmp_path) as second:
        done = cli("status", "--socket", socket)
        assert done.returncode == 0 and "mode:    deny_all" in done.stdout
        denied = cli("request", "--socket", socket, "--tool", "deploy", "--args", "{}")
        assert denied.returncode == 1
        assert json.loads(denied.stdout)["decided_by"] == "mode"
        assert second.person.seen == []       # nobody was asked


def test_approve_all_shows_time_left_and_never_covers_destructive(tmp_path: Path) -> None:
    with _service(tmp_path) as service:
        service.loop.call_soon_threadsafe(lambda: service.service.mode.set(modes.APPROVE_ALL, seconds=3600))
        socket = str(service.options.socket_path)
        status = json.loads(cli("status", "--json", "--socket", socket).stdout)
        assert status["mode"] == "approve_all" and status["mode_until"] is not None
        assert "s more)" in cli("status", "--socket", socket).stdout
        allowed = json.loads(cli("request", "--socket", socket, "--tool", "Bash",
                                 "--args", '{"command": "pytest -q"}').stdout)
        assert allowed["decision"] == "allow_once" and allowed["decided_by"] == "mode"
        service.person.choose = lambda ticket: [Verdict("deny", "user", note="looked") for _ in ticket.calls]
        destructive = json.loads(cli("request", "--socket", socket, "--tool", "Bash",
                                     "--args", '{"command": "rm -rf build"}').stdout)
        assert destructive["decided_by"] == "user" and destructive["note"] == "looked"
    with _service(tmp_path) as again:
        status = json.loads(cli("status", "--json", "--socket", str(again.options.socket_path)).stdout)
        assert status["mode"] == "approve_all"


def test_app_options_reach_the_service(tmp_path: Path) -> None:
    from desktop_approver.cli import build_parser
    from desktop_approver.core.service import ServiceOptions

    args = build_parser().parse_args(["tray", "--socket", str(tmp_path / "s.sock"), "--timeout", "45",
                                      "--session-idle", "0.5", "--history-days", "30",
                                      "--policy", str(tmp_path / "p.toml")])
    options = ServiceOptions.from_args(args)
    assert options.default_timeout == 45 and options.session_idle_seconds == 1800
    assert options.history_days == 30 and options.policy_path == tmp_path / "p.toml"
    assert options.socket_path == tmp_path / "s.sock"
    default = ServiceOptions.from_args(build_parser().parse_args(["tray"]))
    assert default.session_idle_seconds == 8 * 3600 and default.default_timeout == 300
