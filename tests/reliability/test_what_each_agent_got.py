"""The log says what each agent got (issue 34's fault injection, F4 and F8), against the real app.

"Delivered" means the agent could read the answer: its bytes were in the agent's socket. An answer
recorded as given that did not get there (the connection ended while it sat in the app's write
buffer, or was closed when it was written) is named by an ``undelivered`` event; one whose agent
was gone before the commit is recorded as ``deny`` by ``cancelled`` ("agent gone"). Here the agents
know exactly what they could read: an agent that gives up shuts its socket both ways first (after
that, nothing more can arrive) and reads what had arrived.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from desktop_approver import Client
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


def what_the_log_says(audit: Path, agent: str) -> dict[str, str]:
    """request id -> the decision its agent got, as the log says: "undelivered" where an event names it."""
    with contextlib.closing(sqlite3.connect(f"{audit.as_uri()}?mode=ro", uri=True)) as db:
        undelivered = {row for (detail,) in db.execute("SELECT detail FROM events WHERE kind = 'undelivered'")
                       for row in json.loads(detail)["decisions"]}
        rows = db.execute("SELECT r.request_id, d.id, d.decision FROM requests r JOIN decisions d ON d.request = r.id"
                          " WHERE r.agent = ?", (agent,)).fetchall()
    return {request_id: "undelivered" if row in undelivered else decision for request_id, row, decision in rows}


def lines_of(data: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def answers_in(data: bytes) -> dict[str, str]:
    """request id -> decision, for every whole answer line in ``data``."""
    return {str(m["id"]): str(m["decision"]) for m in lines_of(data[:data.rfind(b"\n") + 1]) if m["type"] == "decision"}


def hello(agent: str) -> bytes:
    return json.dumps({"v": 1, "type": "hello", "client": {"agent": agent, "pid": os.getpid()}}).encode() + b"\n"


def request(request_id: str, command: str) -> bytes:
    return json.dumps({"v": 1, "type": "request", "id": request_id, "tool": "Bash",
                       "args": {"command": command}}).encode() + b"\n"


@pytest.mark.timeout(300)
def test_an_agent_that_never_reads_is_recorded_as_getting_only_what_reached_its_socket(
        tmp_path: Path, figures: dict[str, str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "allow"\n')
    with AppProcess(tmp_path, "never", policy=policy) as app:
        data = hello("never-reads") + b"".join(request(f"r{n}", "ls") for n in range(3000))
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(str(app.socket_path))
        sock.setblocking(False)
        sent, looks = 0, [-1]

        def taken_all_it_will() -> bool:
            nonlocal sent
            with contextlib.suppress(BlockingIOError):
                while sent < len(data):
                    sent += sock.send(data[sent:sent + 65536])
            recorded = len(what_the_log_says(app.audit_path, "never-reads"))
            settled, looks[0] = recorded == looks[0] and recorded > 0, recorded
            return sent == len(data) and settled or settled

        wait_for(taken_all_it_will, "the app to answer what it reads")
        app.process.send_signal(signal.SIGSTOP)  # nothing reaches the socket between the look and the close
        try:
            waiting = b""
            with contextlib.suppress(BlockingIOError):
                waiting = sock.recv(64 << 20, socket.MSG_PEEK)
            readable = answers_in(waiting)
            sock.close()
        finally:
            app.process.send_signal(signal.SIGCONT)
        assert readable and set(readable.values()) == {"allow_once"}

        def recorded_allows() -> set[str]:
            return {rid for rid, got in what_the_log_says(app.audit_path, "never-reads").items() if got == "allow_once"}

        wait_for(lambda: recorded_allows() == set(readable), "the log to say exactly what reached the agent",
                 timeout=WAIT)
        said = what_the_log_says(app.audit_path, "never-reads")
        figures["an agent that never reads, 3,000 pipelined: answered and recorded / in its socket / "
                "named undelivered"] = (f"{len(said)} / {len(readable)} / "
                                        f"{sum(got == 'undelivered' for got in said.values())}")
        with Client(app.socket_path) as client:
            assert client.request("Bash", {"command": "ls"}, timeout=WAIT).decision == "allow_once"
    assert "Traceback" not in app.stderr()


class Agent(threading.Thread):
    """Asks one call at a time; gives up after ``patience`` seconds: shuts its socket both ways, reads
    what had arrived, and starts again on a new connection. ``received``: every answer it could read."""

    def __init__(self, app: AppProcess, name: str, until: float, patience: float = 0.7) -> None:
        super().__init__(name=name)
        self.app, self.until, self.patience = app, until, patience
        self.received: dict[str, str] = {}
        self.asked = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while time.monotonic() < self.until:
                self._one_connection()
        except BaseException as exc:  # the test reads it
            self.failure = exc

    def _one_connection(self) -> None:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(WAIT)
            sock.connect(str(self.app.socket_path))
            sock.sendall(hello(self.name))
            buffer = b""
            while time.monotonic() < self.until:
                request_id = f"{self.name}-{self.asked}"
                command = "ls -la" if self.asked % 2 else f"rm -rf build{self.asked}"  # a rule; the person
                self.asked += 1
                sock.sendall(request(request_id, command))
                deadline = time.monotonic() + self.patience
                while request_id not in self.received and time.monotonic() < deadline:
                    ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
                    if ready:
                        chunk = sock.recv(65536)
                        if not chunk:
                            return
                        buffer += chunk
                        self.received.update(answers_in(buffer))
                if request_id not in self.received:  # give up: nothing can arrive after the shutdown
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    sock.setblocking(False)
                    with contextlib.suppress(OSError):
                        while chunk := sock.recv(65536):
                            buffer += chunk
                    self.received.update(answers_in(buffer))
                    return


@pytest.mark.timeout(400)
def test_under_a_stop_storm_every_recorded_allow_is_one_its_agent_received(
        tmp_path: Path, figures: dict[str, str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('version = 1\n[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls *"\n')
    storm = 20.0
    with AppProcess(tmp_path, "allow", policy=policy) as app:
        until = time.monotonic() + storm
        agents = [Agent(app, f"agent{n}", until) for n in range(6)]
        for agent in agents:
            agent.start()
        rng = random.Random(34)
        try:
            while time.monotonic() < until:
                app.process.send_signal(signal.SIGSTOP)
                time.sleep(rng.uniform(0, 1.2))  # the fault itself: the app stopped, then running a moment
                app.process.send_signal(signal.SIGCONT)
                time.sleep(rng.uniform(0, 0.3))
        finally:
            app.process.send_signal(signal.SIGCONT)
        for agent in agents:
            agent.join(WAIT * 2)
            assert agent.failure is None, agent.failure
        wait_for(lambda: Client(app.socket_path).status()["pending"] == 0, "every request to be settled")
        gave_up = undelivered = gone = 0
        for agent in agents:
            said = what_the_log_says(app.audit_path, agent.name)
            for request_id, got in said.items():
                if got == "allow_once":  # recorded as received: it was
                    assert agent.received.get(request_id) == "allow_once", (request_id, got)
            for request_id, got in agent.received.items():  # every answer received is the one recorded
                assert said.get(request_id) == got, (request_id, got, said.get(request_id))
            gave_up += agent.asked - len(agent.received)
            undelivered += sum(got == "undelivered" for got in said.values())
            gone += sum(got == "deny" and request_id not in agent.received for request_id, got in said.items())
        assert gave_up > 0  # the storm made agents give up (else it tested nothing)
        figures[f"a {storm:.0f} s SIGSTOP/SIGCONT storm, 6 agents: asked / gave up / recorded agent gone / "
                "named undelivered"] = f"{sum(a.asked for a in agents)} / {gave_up} / {gone} / {undelivered}"
    assert "Traceback" not in app.stderr()
