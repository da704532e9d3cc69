"""How a client picks its transport (``desktop_approver/urls.py``), reads the relay's address and
credentials (``relay/address.py``), and what a relayed identity may claim."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_approver import AsyncClient, Client
from desktop_approver.client.errors import ApproverUnavailable
from desktop_approver.client.transport import UnixSocketTransport
from desktop_approver.client.urls import UnusableTransport, open_transport
from desktop_approver.relay.address import AddressError, parse
from desktop_approver.relay.agent import RelayTransport
from tests.relay.conftest import ROOT


def test_the_socket_stays_the_default_and_unix_urls_name_one(tmp_path: Path) -> None:
    assert isinstance(open_transport(None, None), UnixSocketTransport)
    named = open_transport(None, f"unix://{tmp_path}/a.sock")
    assert isinstance(named, UnixSocketTransport) and os.fspath(named.socket_path) == f"{tmp_path}/a.sock"
    assert isinstance(open_transport(tmp_path / "b.sock", None), UnixSocketTransport)


def test_a_nats_url_from_the_environment_reaches_every_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_APPROVER_URL", "tls://alice:pw@nats.example:4222")
    client = Client()
    assert isinstance(client.transport, RelayTransport) and client.socket_path == "tls://nats.example:4222"
    assert client.transport.relay.user == "alice"
    client.close()
    assert isinstance(AsyncClient().transport, RelayTransport)
    assert isinstance(Client("/tmp/x.sock").transport, UnixSocketTransport)  # an explicit socket wins
    with pytest.raises(TypeError):
        Client("/tmp/x.sock", url="nats://h:4222")


def test_a_url_or_credentials_that_cannot_work_fail_closed_when_used(tmp_path: Path) -> None:
    for url, reason in (("http://host", "expected a nats://"), ("tls://host:4222", "no NATS user"),
                        ("tls://host:port", "bad port")):
        transport = open_transport(None, url)
        assert isinstance(transport, UnusableTransport)
        with Client(url=url) as client, pytest.raises(ApproverUnavailable, match=reason):
            client.request("Bash", {"command": "ls"})
    with Client(url="tls://bob:secret@host:4222", transport=None) as client:
        assert "secret" not in repr(client.transport) and "secret" not in str(client.socket_path)


def test_credentials_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("ci:s3cret:with:colons\n")
    address = parse("tls://nats.example:4222", str(plain))
    assert (address.user, address.password, address.creds_file) == ("ci", "s3cret:with:colons", None)
    assert "tls" in address.connect_options() and address.connect_options()["servers"] == ["tls://nats.example:4222"]
    claims = base64.urlsafe_b64encode(json.dumps({"name": "buildbox", "sub": "UABC"}).encode()).decode().rstrip("=")
    creds = tmp_path / "user.creds"
    creds.write_text(f"-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ.{claims}.sig\n------END NATS USER JWT------\n"
                     "\n-----BEGIN USER NKEY SEED-----\nSUAEXAMPLE\n------END USER NKEY SEED------\n")
    jwt = parse("tls://nats.example:4222", str(creds))
    assert (jwt.user, jwt.creds_file) == ("buildbox", str(creds))
    assert jwt.connect_options()["user_credentials"] == str(creds)
    for bad, why in (("just-a-line", "neither"), ("a.b:pw", "not 1 to 64"), ("user: x\nseed: nope", "seed file")):
        (tmp_path / "bad").write_text(bad)
        with pytest.raises(AddressError, match=why):
            parse("tls://h:4222", str(tmp_path / "bad"))


def test_the_socket_client_never_imports_the_relay_or_nats() -> None:
    code = ("import sys, desktop_approver\nfrom desktop_approver import Client\nClient()\n"
            "print([m for m in sys.modules if m.startswith(('nats', 'desktop_approver.relay'))])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "[]", done.stderr
    relayed = subprocess.run([sys.executable, "-c", code.replace("Client()", "Client(url='tls://a:b@h:1')")],
                             capture_output=True, text=True, timeout=60, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "desktop_approver.relay.agent" in relayed.stdout and "'nats'" not in relayed.stdout  # nats: on connect


def test_a_relayed_identity_never_gets_its_claimed_directory_trusted(tmp_path: Path) -> None:
    """A rule's path zone is relative to the directory the kernel vouches for; a relayed agent's is
    only claimed, so such a rule never allows its calls: the person decides."""
    from desktop_approver.core.decisions.broker import Broker
    from desktop_approver.core.decisions.tickets import Identity
    from desktop_approver.core.messages.models import ToolCall
    from desktop_approver.core.policy import Policy
    from desktop_approver.core.store.audit import AuditLog
    from tests.support.deciders import WaitingPerson

    policy = Policy.parse('[[rule]]\naction = "allow"\npath = "./scratch/**"\noperation = "write"\n', "p.toml")
    audit = AuditLog(tmp_path / "audit.sqlite3")
    broker = Broker(WaitingPerson(), audit=audit, policy=policy)
    call = ToolCall(tool="Write", args={"file_path": "scratch/notes.txt", "content": "x"})
    project = tmp_path / "project"        # a real directory: a write is judged by its facts (issue 32)
    project.mkdir()
    local = Identity(agent="a", cwd=str(project), peer_cwd=str(project))
    remote = Identity(agent="alice/a", cwd=str(project), relay_user="alice")
    assert remote.policy_cwd is None and local.policy_cwd == str(project)
    try:
        allowed = broker.triage(local, "s", "r1", "request", [call])
        assert allowed.answered is None and allowed.facts_due == [0]   # no allow before the facts
        assert asyncio.run(broker.ask(allowed))[0].decided_by == "policy"
        claimed = broker.triage(remote, "s", "r2", "request", [call])
        assert claimed.answered is None  # the person decides
    finally:
        audit.close()


def test_the_relay_imports_no_qt() -> None:
    code = ("import sys, desktop_approver.relay.approver, desktop_approver.relay.agent\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'qasync', 'shiboken6'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "[]", done.stderr


def test_nats_loads_without_aiohttp_and_the_agent_may_still_import_it() -> None:
    pytest.importorskip("aiohttp")  # only then is there something to keep out
    code = ("import sys\nfrom desktop_approver.relay.agent import import_nats\nimport_nats()\n"
            "print('aiohttp' in sys.modules)\nimport aiohttp\nprint(aiohttp.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["False", "aiohttp"], done.stderr
