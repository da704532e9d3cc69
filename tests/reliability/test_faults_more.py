"""More faults injected into the real tray app (``desktop-approver tray``, its own process).

What a red team found after issue 20's first round, each against the running app:

- a keyring read that hangs once (token rotation stopped for good), an emptied keyring entry
  (a new token made without a word, ``status`` said "not running");
- a rules path that cannot be looked at (a symlink loop, a regular file as its parent), at start
  and while running; the rules file deleted or emptied while approve-all is on;
- the socket's directory replaced by a regular file;
- the notification server stopped (SIGSTOP) for longer than the app waits for it.

The app logs at ``info`` to a file: that is how the tests learn what it told the person (the
tray's degraded tooltip is the same text, ``degraded (WHAT): ...``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import keyring
import pytest

from desktop_approver.client import Client
from desktop_approver.core.transport.tokens import TokenStore
from tests.reliability.test_faults_live import Agent, pending_requests
from tests.support.session_bus import Session
from tests.support.tray_process import TrayApp
from tests.support.waiting import WAIT, wait_for

ROOT = Path(__file__).resolve().parents[2]
STALLING = "tests.support.stalling_keyring.StallingKeyring"


def status(app: TrayApp, token: str | None = None) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if token is not None:
        env["DESKTOP_APPROVER_TOKEN"] = token
    done = subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--socket", str(app.socket_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT)
    return done.returncode, done.stdout


def accepted(app: TrayApp, token: str) -> bool:
    code, out = status(app, token)
    return code == 0 and "is running" in out


def refused(app: TrayApp, token: str) -> bool:
    code, out = status(app, token)
    return code != 0 and "refused this client" in out


# -- the keyring token -----------------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_a_keyring_that_hangs_once_is_told_and_a_later_rotation_takes_effect(
        tmp_path: Path, apps: list[TrayApp], figures: dict[str, str]) -> None:
    stall = tmp_path / "keyring-stalls"
    app = TrayApp(tmp_path, "--require-token", env=dict(os.environ, PYTHON_KEYRING_BACKEND=STALLING,
                                                   STALLING_KEYRING_FILE=str(stall)))
    apps.append(app)
    old = TokenStore().get()
    assert old and accepted(app, old)
    stall.touch()  # the keyring stops answering the app
    wait_for(lambda: app.told("degraded (token)") and app.told("the keyring does not answer"),
             "the tray degraded: the keyring does not answer")
    assert accepted(app, old)  # the last known token is kept while the keyring hangs (documented)
    stall.unlink()
    new = TokenStore().rotate()
    began = time.monotonic()
    wait_for(lambda: accepted(app, new), "the rotated token accepted")
    figures["keyring hung once, then `token rotate`: new token accepted after"] = (
        f"{time.monotonic() - began:.2f} s (refresh every 10 s)")
    assert refused(app, old)
    wait_for(lambda: app.told("no longer degraded (token)"), "the tray no longer degraded")
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]


@pytest.mark.timeout(240)
def test_an_emptied_keyring_entry_is_told_and_status_says_refused(tmp_path: Path, apps: list[TrayApp]) -> None:
    app = TrayApp(tmp_path, "--require-token")
    apps.append(app)
    old = TokenStore().get()
    assert old and accepted(app, old)
    keyring.delete_password("desktop-approver", "socket-token")
    wait_for(lambda: app.told("degraded (token)") and app.told("missing from the keyring"),
             "the tray degraded: the token was missing")
    assert "WARNING" in next(line for line in app.stderr().splitlines() if "missing from the keyring" in line)
    new = TokenStore().get()
    assert new and new != old
    assert refused(app, old)  # running, and saying why this client is refused: not "not running"
    assert accepted(app, new)
    wait_for(lambda: app.told("no longer degraded (token)"), "cleared once a client has the new token")


# -- the rules file ----------------------------------------------------------------------------------

def approve_all_for_an_hour() -> None:
    """The stored mode the app starts with: approve-all (the state file under the test's private HOME)."""
    from desktop_approver.client import paths

    state = paths.default_state_path()
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"mode": "approve_all", "until": time.time() + 3600, "seconds": 3600}))


def decided(app: TrayApp, command: str) -> tuple[str, str]:
    """How the app decides a Bash call when nobody answers its window within a second."""
    with Client(app.socket_path, agent="faults") as client:
        decision = client.request("Bash", {"command": command}, timeout=1)
    return decision.decision, decision.decided_by


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["ELOOP", "ENOTDIR"])
def test_a_rules_path_that_cannot_be_looked_at_starts_in_the_safe_state(tmp_path: Path, apps: list[TrayApp],
                                                                         fault: str) -> None:
    approve_all_for_an_hour()
    if fault == "ELOOP":
        policy = tmp_path / "policy.toml"
        policy.symlink_to(tmp_path / "other.toml")
        (tmp_path / "other.toml").symlink_to(policy)
        reason = "Too many levels of symbolic links"
    else:
        (tmp_path / "rules").write_text("")
        policy = tmp_path / "rules" / "policy.toml"
        reason = "Not a directory"
    app = TrayApp(tmp_path, policy=policy)
    apps.append(app)
    assert app.told("degraded (policy)") and app.told(reason)
    assert decided(app, "ls")[1] != "mode"  # approve-all does not answer: the person is asked
    with Client(app.socket_path) as client:
        assert any(reason in problem for problem in client.status()["problems"])
    if fault == "ELOOP":
        (tmp_path / "other.toml").unlink()
        (tmp_path / "other.toml").write_text('[tools]\nBash = "deny"\n')
    else:
        (tmp_path / "rules").unlink()
        (tmp_path / "rules").mkdir()
        policy.write_text('[tools]\nBash = "deny"\n')
    wait_for(lambda: decided(app, "ls") == ("deny", "policy"), "the fixed rules in force")
    wait_for(lambda: app.told("no longer degraded (policy)"), "the tray no longer degraded")
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]


@pytest.mark.timeout(180)
def test_a_symlink_loop_while_running_is_told_once_without_tracebacks(tmp_path: Path, apps: list[TrayApp]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "allow"\n')
    app = TrayApp(tmp_path, policy=policy)
    apps.append(app)
    policy.unlink()
    (tmp_path / "other.toml").symlink_to(policy)
    policy.symlink_to(tmp_path / "other.toml")
    wait_for(lambda: app.told("degraded (policy)") and app.told("symbolic links"), "the tray degraded")
    assert decided(app, "ls")[1] != "policy"  # the safe state: the allow rule no longer answers
    lines = app.stderr().count("symbolic links")
    time.sleep(3)  # the fault's length: the watcher looks every second
    assert app.stderr().count("symbolic links") == lines  # told once, not once a second
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]
    (tmp_path / "other.toml").unlink()
    (tmp_path / "other.toml").write_text('[tools]\nBash = "allow"\n')
    wait_for(lambda: app.told("no longer degraded (policy)"), "recovered")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["deleted", "emptied"])
def test_a_rules_file_deleted_or_emptied_under_approve_all_keeps_its_deny_rule(tmp_path: Path, apps: list[TrayApp],
                                                                                fault: str) -> None:
    """Red team: `rm b` went from deny/policy to allow_once/mode after the file was deleted."""
    approve_all_for_an_hour()
    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "deny"\n')
    app = TrayApp(tmp_path, policy=policy)
    apps.append(app)
    assert decided(app, "rm b") == ("deny", "policy")
    assert decided(app, "ls") == ("deny", "policy")
    if fault == "deleted":
        policy.unlink()
        told = "is gone: the last rules stay in force until it is back or you restart"
    else:
        policy.write_text("")
        told = "was emptied: the last rules stay in force"
    wait_for(lambda: app.told("degraded (policy)") and app.told(told), "the tray degraded")
    assert decided(app, "rm b") == ("deny", "policy")
    policy.write_text('[tools]\nBash = "deny"\n')
    wait_for(lambda: app.told("no longer degraded (policy)"), "the file back")
    assert decided(app, "rm b") == ("deny", "policy")
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]


# -- the socket's directory ----------------------------------------------------------------------------

@pytest.mark.timeout(180)
def test_the_socket_directory_replaced_by_a_file_is_told_once_and_recovered(tmp_path: Path,
                                                                            apps: list[TrayApp]) -> None:
    app = TrayApp(tmp_path)
    apps.append(app)
    run = app.socket_path.parent
    shutil.rmtree(run)
    run.write_text("not a directory")
    wait_for(lambda: app.told("degraded (socket)") and app.told("Not a directory"), "the tray degraded")
    lines = app.stderr().count("Not a directory")
    time.sleep(3)  # the fault's length: the watch looks every second
    assert app.stderr().count("Not a directory") == lines  # told once, not once a second
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]
    run.unlink()
    wait_for(lambda: app.told("no longer degraded (socket)"), "the socket made again")
    with Client(app.socket_path) as client:
        assert client.status()["pid"] == app.process.pid


# -- the notification server ------------------------------------------------------------------------

@pytest.mark.xvfb
@pytest.mark.timeout(240)
def test_a_stopped_notification_server_is_told_and_cleared_when_it_answers(
        tmp_path: Path, session: Session, apps: list[TrayApp]) -> None:
    session.start_dunst()
    assert session.dunst is not None
    app = TrayApp(tmp_path, env=session.env, notifications=True)
    apps.append(app)
    wait_for(lambda: app.told("notification server"), "the notification server found")
    session.dunst.send_signal(signal.SIGSTOP)
    agent = Agent(app.socket_path, "codex")
    try:
        agent.ask("r1", "touch stopped")
        wait_for(lambda: pending_requests(app.audit_path) == 1, "the request waiting")
        wait_for(lambda: app.told("degraded (notifications): The notification server does not answer"),
                 "the tray degraded: the server does not answer")
        session.dunst.send_signal(signal.SIGCONT)
        wait_for(lambda: app.told("no longer degraded (notifications)"), "the tray no longer degraded")
        assert session.shown() == 1
    finally:
        session.dunst.send_signal(signal.SIGCONT)
        agent.close()
    assert "Traceback" not in app.stderr(), app.stderr()[-3000:]
