"""Round trips through a real NATS server: an agent process, an approver process (the app's core
with a scripted person), and every kind of answer the socket gives."""

from __future__ import annotations

from pathlib import Path

from tests.relay.conftest import Approver, NatsServer, run_agent


def test_a_request_goes_through_nats_and_back(tmp_path: Path, nats_server: NatsServer,
                                              approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    results = run_agent(nats_server.user_url("alice", "pw"), [
        {"op": "request", "tool": "allow", "args": {"n": 1}},
        {"op": "request", "tool": "deny", "args": {}},
        {"op": "request", "tool": "edit", "args": {"command": "rm -rf /"}},
        {"op": "batch", "calls": [["allow", {}], ["deny", {}], ["edit", {"command": "x"}]]},
    ])
    print(results)
    single, denied, edited, batch = results
    assert single["decision"]["decision"] == "allow_once" and single["decision"]["decided_by"] == "user"
    assert denied["decision"]["decision"] == "deny" and denied["decision"]["note"] == "not on a Friday"
    assert edited["decision"]["updated_args"] == {"command": "ls -l"}
    assert [d["decision"] for d in batch["decisions"]] == ["allow_once", "deny", "allow_once"]
    asked = approvers[0].expect("asked").split()
    assert asked[2] == "alice/relay-agent"  # the NATS user from the subject, the agent's claimed name


def test_session_memory_status_notice_and_what_the_relay_refuses(tmp_path: Path, nats_server: NatsServer,
                                                                 approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    url = nats_server.user_url("alice", "pw")
    first, again, other_session, status, noticed, sessions = run_agent(url, [
        {"op": "request", "tool": "session", "args": {"a": 1}, "session": "s1"},
        {"op": "request", "tool": "session", "args": {"a": 1}, "session": "s1"},
        {"op": "request", "tool": "session", "args": {"a": 1}, "session": "s2"},
        {"op": "status"},
        {"op": "notice", "text": "build finished"},
        {"op": "sessions"},
    ])
    assert first["decision"]["decision"] == "allow_session" and first["decision"]["decided_by"] == "user"
    assert again["decision"]["decision"] == "allow_session" and again["decision"]["decided_by"] == "session"
    assert other_session["decision"]["decided_by"] == "user"  # remembered for that session only
    assert status["status"]["relay"] == nats_server.url and status["status"]["user"] == "alice"
    assert noticed == {"ok": True}
    assert sessions["error"] == "ProtocolError" and "not available over the NATS relay" in sessions["message"]
    # Another NATS user's agent with the same name and session is not remembered: memory is per user.
    (bob,) = run_agent(nats_server.user_url("bob", "pw"), [
        {"op": "request", "tool": "session", "args": {"a": 1}, "session": "s1"}])
    assert bob["decision"]["decided_by"] == "user"
    approver.stop()
    assert any(e["kind"] == "notice" and "build finished" in (e["detail"] or "") for e in approver.events())
    agents = {row["agent"] for row in approver.decisions()}
    assert agents == {"alice/relay-agent", "bob/relay-agent"}


def test_the_async_client_and_its_cancel(tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    url = nats_server.user_url("alice", "pw")
    single, batch = run_agent(url, [
        {"op": "request", "tool": "edit", "args": {"command": "rm x"}, "async": True},
        {"op": "batch", "calls": [["deny", {}], ["allow", {}]], "async": True},
    ])
    assert single["decision"]["updated_args"] == {"command": "ls -l"}
    assert [d["decision"] for d in batch["decisions"]] == ["deny", "allow_once"]
    # An agent that gives up (its task cancelled) withdraws the request: the prompt goes away.
    (gave_up,) = run_agent(url, [{"op": "request", "tool": "wait", "args": {}, "async": True, "give_up_after": 1.0}])
    assert gave_up == {"error": "CancelledError", "message": ""}
    asked = approver.expect("asked", suffix=" wait").split()[1]
    assert approver.expect("withdrawn").split()[1] == asked
    approver.stop()
    withdrawn = [row for row in approver.decisions() if row["request_id"] == asked]
    assert [(row["decision"], row["decided_by"]) for row in withdrawn] == [("deny", "cancelled")]


def test_the_cli_reaches_the_relay_through_the_environment(tmp_path: Path, nats_server: NatsServer,
                                                           approvers: list[Approver]) -> None:
    import subprocess
    import sys

    from tests.relay.conftest import child_env

    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    creds = tmp_path / "alice.creds"
    creds.write_text("alice:pw\n")
    env = child_env(DESKTOP_APPROVER_URL=nats_server.url, DESKTOP_APPROVER_NATS_CREDS=str(creds))
    allowed = subprocess.run([sys.executable, "-m", "desktop_approver", "request", "--tool", "allow", "--args", "{}"],
                             capture_output=True, text=True, env=env, timeout=30)
    assert allowed.returncode == 0, allowed.stderr
    denied = subprocess.run([sys.executable, "-m", "desktop_approver", "request", "--tool", "deny", "--args", "{}"],
                            capture_output=True, text=True, env=env, timeout=30)
    assert denied.returncode == 1 and '"not on a Friday"' in denied.stdout
    del env["DESKTOP_APPROVER_NATS_CREDS"]  # the same credentials as an option
    status = subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--json", "--nats-creds", str(creds)],
                            capture_output=True, text=True, env=env, timeout=30)
    assert status.returncode == 0 and '"user": "alice"' in status.stdout, status.stderr
    plain = subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--nats-creds", str(creds)],
                           capture_output=True, text=True, env=env, timeout=30)
    assert plain.stdout.strip() == f"desktop-approver's NATS relay at {nats_server.url} as user alice: connected, " \
                                   "0 waiting", plain.stderr


def test_the_hook_and_run_go_through_the_relay_unchanged(tmp_path: Path, nats_server: NatsServer,
                                                         approvers: list[Approver]) -> None:
    import json
    import subprocess
    import sys

    from tests.relay.conftest import child_env

    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    env = child_env(DESKTOP_APPROVER_URL=nats_server.user_url("alice", "pw"))
    event = {"session_id": "cc-7", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "npm test"}}
    hook = subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code"], input=json.dumps(event),
                          capture_output=True, text=True, env=env, timeout=30)
    assert "the test person does not know Bash" in hook.stdout, (hook.stdout, hook.stderr)
    assert approver.expect("asked", suffix=" Bash").split()[2].startswith("alice/")
    marker = tmp_path / "ran"
    run = subprocess.run([sys.executable, "-m", "desktop_approver", "run", "--", "touch", str(marker)],
                         capture_output=True, text=True, env=env, timeout=30)
    from desktop_approver.commands.run import EXIT_DENIED

    assert run.returncode == EXIT_DENIED and not marker.exists(), run.stderr  # denied: never ran
    approver.expect("asked", suffix=" Bash")


def test_an_adapter_s_approver_takes_the_url(tmp_path: Path, nats_server: NatsServer,
                                             approvers: list[Approver]) -> None:
    """``Approver(url=...)``, the seam every adapter shares, reaches the relay like ``Client(url=...)``."""
    import subprocess
    import sys

    from tests.relay.conftest import child_env

    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    code = ("import sys\nfrom desktop_approver.adapters.base import Approver\n"
            "approver = Approver(agent='adapter-agent', url=sys.argv[1], timeout=20)\n"
            "allowed = approver.ask('allow', {'n': 1}).allowed\n"
            "denied = approver.ask('deny', {}).allowed\n"
            "approver.close()\n"
            "print(allowed, denied)")
    done = subprocess.run([sys.executable, "-c", code, nats_server.user_url("alice", "pw")], capture_output=True,
                          text=True, timeout=60, env=child_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    assert approvers[0].expect("asked").split()[2] == "alice/adapter-agent"
