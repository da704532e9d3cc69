"""Verified identity: the kernel's cwd and executable beside what a client claims; policy ``cwd``
conditions match the kernel's; client text in the app's log is escaped."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.core.decisions.tickets import Identity, Ticket, Verdict
from desktop_approver.core.store.logsafe import EscapingFormatter, printable
from desktop_approver.core.transport.peercred import process_cwd, process_exe, same_directory
from tests.support.deciders import FailingPerson, ScriptedPerson
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def allow(ticket: Ticket) -> list[Verdict]:
    return [Verdict("allow_once", "user") for _ in ticket.calls]


@linux_only
def test_process_cwd_and_exe_are_the_kernels() -> None:
    assert process_cwd(os.getpid()) == os.getcwd()
    assert process_exe(os.getpid()) == os.path.realpath(sys.executable)
    assert process_cwd(None) is None and process_cwd(2 ** 22 + 12345) is None   # no such process


def test_same_directory_follows_links_and_says_when_it_cannot_tell(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert same_directory(str(real) + "/", str(real)) is True
    assert same_directory(str(tmp_path / "link"), str(real)) is True
    assert same_directory("/elsewhere", str(real)) is False
    assert same_directory(None, str(real)) is None and same_directory("/x", None) is None


@linux_only
def test_the_ticket_carries_the_real_cwd_and_marks_a_false_claim(tmp_path: Path) -> None:
    person = ScriptedPerson(allow)
    with ServiceThread(tmp_path, person) as service:
        with Client(service.socket_path, agent="liar") as client:
            client.protocol.cwd = "/claimed/elsewhere"
            client.request("Bash", {"command": "ls"})
        with Client(service.socket_path, agent="honest") as client:
            client.request("Bash", {"command": "ls"})
    liar, honest = (ticket.identity for ticket in person.seen)
    assert (liar.cwd, liar.peer_cwd, liar.cwd_agrees) == ("/claimed/elsewhere", os.getcwd(), False)
    assert liar.policy_cwd == os.getcwd() and liar.peer_exe == os.path.realpath(sys.executable)
    assert (honest.cwd, honest.peer_cwd, honest.cwd_agrees) == (os.getcwd(), os.getcwd(), True)


@linux_only
def test_a_cwd_rule_matches_where_the_process_really_is_not_its_claim(tmp_path: Path) -> None:
    zone = tmp_path / "blocked-zone"
    zone.mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text(f'version = 1\n[[rule]]\naction = "block"\ncwd = "{zone}/**"\nnote = "not here"\n')
    script = ("import json, sys\nfrom desktop_approver import Client\n"
              "client = Client(sys.argv[1], agent='mover')\nclient.protocol.cwd = '/tmp'  # the claim moves away\n"
              "print(json.dumps(client.request('Bash', {'command': 'ls'}).to_json()))\n")
    person = ScriptedPerson(allow)
    with ServiceThread(tmp_path, person, policy_path=policy) as service:
        out = subprocess.run([sys.executable, "-c", script, str(service.socket_path)], cwd=zone, capture_output=True,
                             text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    decision = json.loads(out.stdout)
    assert (decision["decision"], decision["blocked"], decision["note"]) == ("deny", True, "not here")
    assert person.seen == []


def test_printable_escapes_control_and_invisible_characters() -> None:
    assert printable("r1\x1b[31mred\r\nFAKE LINE\u202e") == "r1\\x1b[31mred\\x0d\\x0aFAKE LINE\\u202e"
    assert len(printable("x" * 1000)) == 200


def test_the_formatter_escapes_what_slips_through_but_keeps_traceback_lines() -> None:
    record = logging.LogRecord("t", logging.ERROR, __file__, 1, "bad %s", ("\x1b[2J",), None)
    assert EscapingFormatter("%(message)s").format(record) == "bad \\x1b[2J"
    record = logging.LogRecord("t", logging.ERROR, __file__, 1, "line one\nline two", (), None)
    assert EscapingFormatter("%(message)s").format(record) == "line one\nline two"


def test_a_request_id_with_ansi_escapes_reaches_the_log_escaped(tmp_path: Path, caplog: Any) -> None:
    evil = "r\x1b[31mRED\x1b[0m\nforged: everything is fine"
    caplog.set_level(logging.ERROR)
    with ServiceThread(tmp_path, FailingPerson(RuntimeError("the prompt broke"))) as service:
        with Client(service.socket_path) as client:
            client.protocol.new_id = lambda prefix="r": evil  # type: ignore[method-assign]
            assert client.request("Bash", {"command": "ls"}).decided_by == "cancelled"
    messages = [record.getMessage() for record in caplog.records]
    assert any("r\\x1b[31mRED" in message for message in messages), messages
    assert not any("\x1b" in message or "\nforged" in message for message in messages)


def test_identity_as_dict_reports_both_sides() -> None:
    who = Identity(agent="a", cwd="/x", peer_cwd="/y", cwd_agrees=False)
    assert who.as_dict()["peer_cwd"] == "/y" and who.as_dict()["cwd_agrees"] is False and who.policy_cwd == "/y"
    assert Identity(cwd="/x").policy_cwd == "/x"   # a forwarded socket: only the claim
