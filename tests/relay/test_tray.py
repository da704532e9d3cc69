"""``desktop-approver tray --relay``: the real app process answers relayed requests with the same
broker as local ones (here its policy, so no window is needed), beside its socket."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from desktop_approver import Client
from tests.relay.conftest import WAIT, NatsServer, child_env, run_agent

POLICY = """
[[rule]]
action = "allow"
tool = "Bash"
command = "ls*"

[[rule]]
action = "deny"
tool = "deploy"
note = "not from CI"
"""


def test_the_tray_answers_relayed_requests_with_its_policy(tmp_path: Path, nats_server: NatsServer) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    creds = tmp_path / "desk.creds"
    creds.write_text("desk:x\n")
    log = (tmp_path / "tray.log").open("w")
    tray = subprocess.Popen(
        [sys.executable, "-m", "desktop_approver", "tray", "--no-notifications", "--socket", str(tmp_path / "s.sock"),
         "--audit-db", str(tmp_path / "audit.db"), "--policy", str(policy), "--relay", nats_server.url,
         "--relay-creds", str(creds), "--log-level", "debug"], env=child_env(QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        url = nats_server.user_url("alice", "pw")
        deadline = time.monotonic() + WAIT
        while True:  # until the app has set the relay up on the server
            (first,) = run_agent(url, [{"op": "request", "tool": "Bash", "args": {"command": "ls -l"}}])
            if "decision" in first or time.monotonic() > deadline or tray.poll() is not None:
                break
            assert "no approver has set up the relay" in first["message"], first
            time.sleep(0.2)
        assert "decision" in first, (first, tray.poll(), (tmp_path / "tray.log").read_text()[-3000:])
        assert (first["decision"]["decision"], first["decision"]["decided_by"]) == ("allow_once", "policy")
        (denied,) = run_agent(url, [{"op": "request", "tool": "deploy", "args": {"env": "prod"}}])
        assert (denied["decision"]["decision"], denied["decision"]["note"]) == ("deny", "not from CI")
        local = subprocess.run([sys.executable, "-m", "desktop_approver", "request", "--socket",
                                str(tmp_path / "s.sock"), "--tool", "deploy", "--args", "{}"], env=child_env(),
                               capture_output=True, text=True, timeout=WAIT)
        assert local.returncode == 1 and "not from CI" in local.stdout  # local agents keep the socket
    finally:
        tray.terminate()
        tray.wait(WAIT)
        log.close()
    assert tray.returncode == 0, (tmp_path / "tray.log").read_text()[-3000:]


def test_a_relay_url_the_tray_cannot_use_stops_it_with_the_reason(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "desktop_approver", "tray", "--no-notifications", "--socket",
                           str(tmp_path / "s.sock"), "--relay", "http://example.org"],
                          env=child_env(QT_QPA_PLATFORM="offscreen"), capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 1
    assert "--relay: not a NATS URL" in done.stderr


def test_the_tray_says_while_the_relay_server_is_out_of_reach_and_when_it_works_again(
        tmp_path: Path, nats_server: NatsServer) -> None:
    """The NATS server down (issue 34's relay outage): the tray shows it degraded and ``status``
    says so (not connected, the problem) while it lasts; both clear once the server is back."""
    creds = tmp_path / "desk.creds"
    creds.write_text("desk:x\n")
    socket_path = tmp_path / "s.sock"
    log = (tmp_path / "tray.log").open("w")
    tray = subprocess.Popen(
        [sys.executable, "-m", "desktop_approver", "tray", "--no-notifications", "--socket", str(socket_path),
         "--audit-db", str(tmp_path / "audit.db"), "--relay", nats_server.url, "--relay-creds", str(creds),
         "--log-level", "debug"], env=child_env(QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.DEVNULL, stderr=log, text=True)

    def status_until(wanted: Any) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT * 2
        while True:
            try:
                with Client(socket_path=socket_path) as client:
                    status = client.status()
            except Exception:  # noqa: BLE001 - not listening yet
                status = {}
            if wanted(status) or time.monotonic() > deadline or tray.poll() is not None:
                assert wanted(status), (status, (tmp_path / "tray.log").read_text()[-3000:])
                return status
            time.sleep(0.2)

    def connected(status: dict[str, Any]) -> bool:
        return bool((status.get("relay") or {}).get("connected")) and not status.get("problems")

    try:
        status_until(connected)
        nats_server.kill()
        down = status_until(lambda status: bool(status.get("problems")))
        assert down["relay"]["connected"] is False
        (problem,) = down["problems"]
        assert f"the NATS server at {nats_server.url} is out of reach" in problem, problem
        shown = subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--socket", str(socket_path)],
                               capture_output=True, text=True, timeout=WAIT, env=child_env())
        assert "not connected" in shown.stdout and "degraded: " + problem in shown.stdout, shown.stdout
        nats_server.start()
        status_until(connected)
    finally:
        tray.terminate()
        tray.wait(WAIT)
        log.close()
    text = (tmp_path / "tray.log").read_text()
    assert "degraded (relay): the NATS server at" in text and "no longer degraded (relay)" in text, text[-3000:]
    assert "relay works again" in text
    assert tray.returncode == 0, text[-3000:]
