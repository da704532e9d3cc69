"""Real projects on disk for the tests of consequences (issue 32): a git repository with every kind
of file a call may touch, and the broker in approve-all mode that judges calls run in it."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.decisions.memory import SessionMemory
from desktop_approver.core.decisions.tickets import Identity, Ticket, Verdict
from desktop_approver.core.messages.models import ToolCall
from desktop_approver.core.store.audit import AuditLog
from tests.support.deciders import ScriptedPerson

GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"   # made up, in the scanner's shape


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def make_repository(root: Path) -> Path:
    """A repository with tracked and unchanged files (``a.txt``, ``src/``), a tracked file with
    uncommitted changes (``b.txt``), untracked data (``c.txt``), ignored build output (``build/``,
    ``node_modules/``), ignored data that is no build output (``data/``), an ignored ``.env``
    holding a token, and a private key nobody committed (``certs/key.pem``)."""
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("build/\nnode_modules/\n.env\ndata/\n")
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    (repo / "src" / "app.py").write_text("print('hello')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (repo / "b.txt").write_text("b, changed and not committed\n")
    (repo / "c.txt").write_text("untracked notes\n")
    for folder in ("build", "node_modules/pkg"):
        (repo / folder).mkdir(parents=True)
        for n in range(3):
            (repo / folder / f"out{n}.js").write_text(f"// generated {n}\n")
    (repo / "data").mkdir()
    (repo / "data" / "results.csv").write_text("only,copy\n")
    (repo / ".env").write_text(f"GITHUB_TOKEN={GITHUB_TOKEN}\n")
    (repo / "certs").mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(repo / "certs" / "key.pem")], check=True)
    (repo / "certs" / "key.pem.pub").unlink()
    return repo


def who_in(directory: Path, **changes: Any) -> Identity:
    """A local agent working in ``directory`` (the kernel agrees)."""
    fields: dict[str, Any] = {"agent": "agent", "cwd": str(directory), "peer_pid": 7, "peer_cwd": str(directory),
                              "cwd_agrees": True}
    fields.update(changes)
    return Identity(**fields)


def approve_all(tmp_path: Path) -> tuple[Broker, ScriptedPerson]:
    """The real broker in approve-all mode; whatever reaches the person is denied (and seen)."""
    person = ScriptedPerson(lambda ticket: [Verdict("deny", "user") for _ in ticket.calls])
    broker = Broker(person, audit=AuditLog(tmp_path / "audit.sqlite3"), memory=SessionMemory(),
                    mode=modes.ModeState(tmp_path / "state.json"))
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    return broker, person


def run(broker: Broker, who: Identity, command: str, tool: str = "Bash") -> Verdict:
    args = {"command": command} if tool == "Bash" else {"file_path": command}
    return asyncio.run(broker.submit(who, "s", "r", "request", [ToolCall(tool=tool, args=args)]))[0]


def last_ticket(person: ScriptedPerson) -> Ticket:
    return person.seen[-1]


def work_where_it_loses_data(tmp_path: Path, folder: str = "build") -> Path:
    """A project (no git) whose ``folder`` holds the only copy of a file: deleting it, or any git
    discard there, is destructive by what it would lose (issue 32), whatever the checkout the tests
    run in holds. Returns the directory to ``monkeypatch.chdir`` into (the agent is this process)."""
    project = tmp_path / "project"
    (project / folder).mkdir(parents=True)
    (project / folder / "only-copy.txt").write_text("data\n")
    return project
