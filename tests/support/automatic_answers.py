"""The real broker, asked one call the way agents ask it: for the tests of automatic answers.

Automatic answers (approve-all, a session approval, an allow rule) are tested through the real
broker with the real reader, in the argument shapes of the agents that send the calls
(:func:`bash` for Claude Code, :func:`codex`, ...). :func:`broker_for` gives a broker whose person
denies whatever reaches them; :func:`asked_with_reason` checks that a call reached the person and
that the ticket and the audit log say why in one line. :func:`unattended_broker` is the other
side: a broker whose person must never be asked.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.decisions.memory import SessionMemory
from desktop_approver.core.decisions.tickets import Identity, Verdict
from desktop_approver.core.messages.models import ToolCall
from desktop_approver.core.policy import Policy
from desktop_approver.core.store.audit import AuditLog
from tests.support.deciders import FailingPerson, ScriptedPerson

PROJECT = tempfile.mkdtemp(prefix="project-")
"""A real, empty project directory: an automatic answer needs the facts of what a call touches
(issue 32), and a working directory that is not on this machine has none."""
atexit.register(shutil.rmtree, PROJECT, ignore_errors=True)
Path(PROJECT, "dst").mkdir()
Path(PROJECT, "dst", "notes.txt").write_text("only here: no git, no build makes it again\n")
WHO = Identity(agent="agent", cwd=PROJECT, peer_pid=7, peer_cwd=PROJECT)
Call = tuple[str, dict[str, Any]]


def bash(command: str) -> Call:
    """Claude Code's Bash tool."""
    return "Bash", {"command": command, "description": "run it"}


def codex(command: str) -> Call:
    """Codex's shell tool: an argv through bash -lc."""
    return "shell", {"command": ["bash", "-lc", command], "workdir": PROJECT}


def gemini(command: str) -> Call:
    return "run_shell_command", {"command": command, "description": "run it", "directory": "."}


def openhands(command: str) -> Call:
    return "execute_bash", {"command": command, "is_input": "false"}


def cline(command: str) -> Call:
    return "execute_command", {"command": command, "requires_approval": "false"}


def goose(command: str) -> Call:
    return "developer__shell", {"command": command}


def local_shell(argv: list[str], **action: Any) -> Call:
    """OpenAI's local_shell tool (Codex): the command and its options inside ``action``."""
    return "local_shell", {"action": {"type": "exec", "command": argv, **action}}


def broker_for(tmp_path: Path, rule: dict[str, Any] | None = None) -> tuple[Broker, ScriptedPerson]:
    """A broker (with one allow ``rule``, if given) whose person denies every call that reaches them."""
    person = ScriptedPerson(lambda ticket: [Verdict("deny", "user") for _ in ticket.calls])
    policy = Policy.parse(rule_toml(rule), "policy.toml") if rule else None
    broker = Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(), policy=policy,
                    mode=modes.ModeState(tmp_path / "state.json"))
    return broker, person


def unattended_broker(tmp_path: Path, policy: Policy | None = None) -> Broker:
    """A broker whose person must never be asked."""
    return Broker(FailingPerson(AssertionError("the person was asked")), audit=AuditLog(tmp_path / "audit.sqlite3"),
                  memory=SessionMemory(), policy=policy, mode=modes.ModeState(tmp_path / "state.json"))


def rule_toml(rule: dict[str, Any]) -> str:
    """A policy file with one allow rule whose conditions are ``rule``: it is rule 1, at line 2."""
    lines = ["version = 1", "[[rule]]", 'action = "allow"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in rule.items()]
    return "\n".join(lines) + "\n"


def ask(broker: Broker, tool: str, args: dict[str, Any]) -> Verdict:
    """The broker's verdict on one call of agent ``WHO`` in session ``s``."""
    return asyncio.run(broker.submit(WHO, "s", "r", "request", [ToolCall(tool=tool, args=args)]))[0]


def asked_with_reason(person: ScriptedPerson, broker: Broker, verdict: Verdict, passed_over: str) -> str:
    """The person was asked, and told in one line why the automatic answer was withheld; so is the audit log."""
    assert (verdict.decision, verdict.decided_by) == ("deny", "user")
    [ticket] = person.seen
    because = ticket.calls[0].asked_because
    assert because is not None and "\n" not in because
    assert because.startswith(("not understood: ", "read as destructive")), because
    assert passed_over in because, because
    assert because in broker.audit.history()[0].risk_reasons
    return because
