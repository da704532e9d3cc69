"""Nothing gets in: the sample server configuration (packaging/nats/approver.conf) on a real
server. Agents publish only on their own subject and read only their own decisions; only
approvers write decisions; wrong credentials are refused. Whatever the server lets through that
does not fit is refused by the app, and audited."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.relay.conftest import ROOT, UNCONFINED, Approver, NatsServer, join, run_agent, start_agent
from tests.relay.test_approvers import stored_decisions

SAMPLE = ROOT / "packaging" / "nats" / "approver.conf"


@pytest.fixture
def sample_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path, config=SAMPLE).start()
    yield server
    server.stop()


def raw(server: NatsServer, user: str, password: str, work: Any, complaints_expected: int = 0) -> list[str]:
    """Run ``work(nc)`` as ``user`` with a plain nats-py connection; the server's complaints (waited
    for until there are ``complaints_expected``)."""
    import nats

    complaints: list[str] = []

    async def complain(error: Exception) -> None:
        complaints.append(str(error))

    async def go() -> None:
        nc = await nats.connect(server.url, user=user, password=password, error_cb=complain,
                                inbox_prefix=f"_INBOX_{user}", allow_reconnect=False)
        try:
            await work(nc)
            await nc.flush()
            deadline = time.monotonic() + 10
            while len(complaints) < complaints_expected and time.monotonic() < deadline:
                await asyncio.sleep(0.01)  # the error callbacks run as tasks of their own
        finally:
            await nc.close()

    asyncio.run(go())
    return complaints


def test_agents_and_approvers_of_the_sample_configuration_work(tmp_path: Path, sample_server: NatsServer,
                                                               approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk"))
    creds = tmp_path / "ci.creds"
    creds.write_text("ci:change-me-ci\n")
    single, batch, status = run_agent(sample_server.url, [
        {"op": "request", "tool": "allow", "args": {}},
        {"op": "batch", "calls": [["deny", {}], ["allow", {}]]},
        {"op": "status"},
    ], env={"DESKTOP_APPROVER_NATS_CREDS": str(creds)})
    assert single["decision"]["decision"] == "allow_once"
    assert [d["decision"] for d in batch["decisions"]] == ["deny", "allow_once"]
    assert status["status"]["user"] == "ci"
    assert "ci.creds" not in (sample_server.log.read_text())


def test_wrong_credentials_are_refused(tmp_path: Path, sample_server: NatsServer, approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk"))
    (result,) = run_agent(sample_server.user_url("ci", "guess"), [{"op": "request", "tool": "allow", "args": {}}])
    assert result["error"] == "ApproverUnavailable" and "refused or did not answer" in result["message"]
    assert "guess" not in result["message"]
    assert stored_decisions(sample_server, "desk", "change-me-desk") == 0
    assert 'authentication error - User "ci"' in sample_server.log.read_text()  # the server's record of it


def test_an_agent_cannot_publish_as_another_read_anothers_decisions_or_write_any(
        tmp_path: Path, sample_server: NatsServer, approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, sample_server.user_url("desk", "change-me-desk"), "desk")
    approvers.append(approver)
    envelope = {"relay": 1, "id": "forged1", "client": {"agent": "x"},
                "message": {"v": 1, "type": "request", "id": "forged1", "tool": "allow", "args": {}}}
    forged = {"relay": 1, "approver": "ci", "reply": {"v": 1, "type": "decision", "id": "r1", "decision": "allow_once",
                                                      "decided_by": "user"}}
    # buildbox waits for a decision; ci tries to ask in its name, read its key and answer it.
    waiting = start_agent(sample_server.user_url("buildbox", "change-me-buildbox"),
                          [{"op": "request", "tool": "wait", "args": {}, "timeout": 2}])
    unique = approver.expect("asked").split()[1]

    async def attempts(nc: Any) -> None:
        await nc.publish("approver.req.buildbox.x", json.dumps(envelope).encode())
        await nc.publish(f"$KV.approver_decisions.buildbox.{unique}", json.dumps(forged).encode())
        await nc.publish(f"$KV.approver_decisions.ci.{unique}", json.dumps(forged).encode())
        await nc.publish("$JS.API.STREAM.DELETE.APPROVER_REQUESTS", b"")
        await nc.subscribe(f"$KV.approver_decisions.buildbox.{unique}")
        with pytest.raises(Exception):  # noqa: B017 - refused: nats-py sees no reply (a timeout)
            await nc.request(f"$JS.API.DIRECT.GET.KV_approver_decisions.$KV.approver_decisions.buildbox.{unique}",
                             b"", timeout=0.5)

    complaints = raw(sample_server, "ci", "change-me-ci", attempts, complaints_expected=6)
    refused = " ".join(complaints).lower()
    for subject in ("approver.req.buildbox.x", f"approver_decisions.buildbox.{unique}",
                    f"approver_decisions.ci.{unique}", "stream.delete", "direct.get"):
        assert f"{subject}".lower() in refused, (subject, complaints)
    out, _ = waiting.communicate(timeout=30)
    decision = json.loads(out)["decision"]
    assert (decision["decision"], decision["decided_by"]) == ("deny", "timeout")  # the app's answer, not ci's
    assert stored_decisions(sample_server, "desk", "change-me-desk") == 1
    assert approver.lines == []  # the forged request never reached the person
    # The server records each refusal with the user; none of them reached the app to be audited there.
    violations = [line for line in sample_server.log.read_text().splitlines() if '"CI/user:ci"' in line]
    assert len([line for line in violations if "Violation" in line]) >= 5, violations


def test_a_permission_the_server_refuses_fails_the_agent_closed(tmp_path: Path, approvers: list[Approver]) -> None:
    config = tmp_path / "narrow.conf"  # an operator forgot the agent's subscription to its decisions
    config.write_text(SAMPLE.read_text().replace('"_INBOX_ci.>", "$KV.approver_decisions.ci.>"',
                                                 '"_INBOX_ci.>", "nothing.here"'))
    server = NatsServer(tmp_path, config=config).start()
    try:
        approvers.append(Approver(tmp_path, server.user_url("desk", "change-me-desk"), "desk"))
        (result,) = run_agent(server.user_url("ci", "change-me-ci"), [{"op": "request", "tool": "allow", "args": {}}])
        assert result["error"] == "ApproverUnavailable"
        assert "refused user 'ci'" in result["message"] and "permissions violation" in result["message"].lower()
    finally:
        server.stop()


def test_what_does_not_fit_is_refused_and_audited(tmp_path: Path, nats_server: NatsServer,
                                                  approvers: list[Approver]) -> None:
    """Sent as the unconfined test user: the server's configuration would stop most of it."""
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)

    def envelope(unique: str, **message: Any) -> bytes:
        return json.dumps({"relay": 1, "id": unique, "client": {"agent": "raw"}, "sent_at": time.time(),
                           "deadline": time.time() + 60, "message": {
                               "v": 1, "type": "request", "id": unique, "tool": "allow", "args": {}, "timeout": 30,
                               **message}}).encode()

    async def send(nc: Any) -> None:
        js = nc.jetstream()
        await js.publish("approver.req.alice.raw.extra", envelope("long1"))  # a token too many
        await js.publish("approver.req.alice.raw", b"{not json")               # malformed
        await js.publish("approver.req.alice.raw", envelope("bad1", tool=""))  # fails the app's ladder
        await js.publish("approver.req.alice.raw", envelope("once1"), headers={"Nats-Msg-Id": "once1"})
        await js.publish("approver.req.alice.raw", envelope("once1"), headers={"Nats-Msg-Id": "once1"})  # dropped
        await js.publish("approver.req.alice.raw", envelope("once1"), headers={"Nats-Msg-Id": "once1-again"})

    join(nats_server, {"alice": "pw"})
    raw(nats_server, UNCONFINED, "x", send)
    approver.expect("asked", suffix=" allow")
    until = time.monotonic() + 30
    while time.monotonic() < until and not (stored_decisions(nats_server) >= 2 and any(
            event["code"] == "replayed_id" for event in approver.events("refused"))):
        time.sleep(0.1)
    approver.stop()
    refused = {event["code"]: event["detail"] for event in approver.events("refused")}
    assert "approver.req.alice.raw.extra" in refused["relay_subject"]
    assert "not JSON" in refused["relay_envelope"]
    assert "invalid_message" in refused and "bad1" in refused["invalid_message"]
    # refused whether the first once1 was still open ("again") or already decided when it came
    assert "once1 again" in refused["replayed_id"] or "once1 was already decided" in refused["replayed_id"]
    rows = approver.decisions()
    assert [(row["request_id"], row["decision"]) for row in rows] == [("once1", "allow_once")]  # answered once
    assert stored_decisions(nats_server) == 2  # once1's answer and bad1's error: nothing else was written
    assert approver.lines == []


def test_over_tls_with_a_private_ca(tmp_path: Path, approvers: list[Approver]) -> None:
    """``tls://`` verifies the server's certificate: with ``SSL_CERT_FILE`` naming the private CA it
    works; without it the agent is refused (fail closed), never talks in the clear."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make a certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    config = tmp_path / "tls.conf"
    config.write_text(SAMPLE.read_text().replace("# tls {", "tls {").replace(
        '#   cert_file: "/etc/nats/server-cert.pem"', f'  cert_file: "{tmp_path / "cert.pem"}"').replace(
        '#   key_file:  "/etc/nats/server-key.pem"', f'  key_file: "{tmp_path / "key.pem"}"').replace(
        "#   handshake_first: true", "  handshake_first: true").replace("# }", "}"))
    server = NatsServer(tmp_path, config=config).start()
    trust = {"SSL_CERT_FILE": str(tmp_path / "cert.pem")}
    try:
        approvers.append(Approver(tmp_path, f"tls://desk:change-me-desk@127.0.0.1:{server.port}", "desk", env=trust))
        url = f"tls://ci:change-me-ci@127.0.0.1:{server.port}"
        (allowed,) = run_agent(url, [{"op": "request", "tool": "allow", "args": {}}], env=trust)
        assert allowed["decision"]["decision"] == "allow_once"
        (untrusted,) = run_agent(url, [{"op": "request", "tool": "allow", "args": {}}])
        assert untrusted["error"] == "ApproverUnavailable" and "certificate verify failed" in untrusted["message"]
    finally:
        server.stop()


def test_an_approver_the_server_refuses_to_let_answer_tells_the_person(tmp_path: Path,
                                                                        approvers: list[Approver]) -> None:
    """An operator forgot an approver's permission to write decisions: the person is told (the
    app's ``relay`` problem), the agent is denied at its deadline, nothing is allowed."""
    config = tmp_path / "no-writes.conf"
    config.write_text(SAMPLE.read_text().replace('"$JS.ACK.>", "$KV.approver_decisions.>"',
                                                 '"$JS.ACK.>"'))
    server = NatsServer(tmp_path, config=config).start()
    try:
        approver = Approver(tmp_path, server.user_url("desk", "change-me-desk"), "desk")
        approvers.append(approver)
        (result,) = run_agent(server.user_url("ci", "change-me-ci"),
                              [{"op": "request", "tool": "allow", "args": {}, "timeout": 1}])
        assert (result["decision"]["decision"], result["decision"]["decided_by"]) == ("deny", "timeout")
        problem = approver.expect("problem relay")
        assert "refuses desk" in problem and "permissions violation" in problem.lower()
        assert "approver_decisions" in problem
    finally:
        server.stop()
