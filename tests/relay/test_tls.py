"""TLS when asked means TLS (``relay/secure.py``, ``relay/address.py``): against a real nats-server
with TLS from a generated CA, a plain one, and a proxy that strips the server's TLS offer, no
credential leaves without a verified TLS session; a plain ``nats://`` to another host is refused."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverUnavailable
from desktop_approver.client.urls import UnusableTransport, open_transport
from desktop_approver.relay.address import AddressError, parse
from desktop_approver.relay.certs import make_ca, make_server_certificate
from tests.relay.conftest import WAIT, Approver, NatsServer, child_env, relay_config, run_agent

SECRET = "pw"  # the tests' agents' password (conftest.relay_config): what must never be seen in clear


def write_tls(folder: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """A generated CA and a server certificate for ``hosts``: (ca.pem, server-cert.pem, server-key.pem)."""
    ca = make_ca()
    server = make_server_certificate(ca, hosts)
    paths = folder / "ca.pem", folder / "server-cert.pem", folder / "server-key.pem"
    for path, data in zip(paths, (ca.certificate, server.certificate, server.key), strict=True):
        path.write_bytes(data)
    return paths


def tls_config(tmp: Path, cert: Path, key: Path, *, first: bool = True) -> Path:
    """The tests' server configuration with TLS; ``first``: TLS before the server's INFO, as ``relay
    setup`` writes it (the clients insist on it)."""
    config = relay_config(tmp)
    config.write_text(config.read_text() + f'\ntls {{\n  cert_file: "{cert}"\n  key_file: "{key}"\n'
                      + ("  handshake_first: true\n" if first else "") + "}\n")
    return config


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[NatsServer, Path]]:
    ca, cert, key = write_tls(tmp_path, ["127.0.0.1", "localhost"])
    server = NatsServer(tmp_path, config=tls_config(tmp_path, cert, key)).start()
    yield server, ca
    server.stop()


def test_a_tls_server_from_a_generated_ca_answers_with_the_ca_given(
        tmp_path: Path, tls_server: tuple[NatsServer, Path], approvers: list[Approver]) -> None:
    server, ca = tls_server
    env = {"DESKTOP_APPROVER_NATS_CA": str(ca)}
    approvers.append(Approver(tmp_path, f"tls://desk:x@127.0.0.1:{server.port}", "desk", env=env))
    plan = [{"op": "request", "tool": "allow", "args": {}},
            {"op": "request", "tool": "allow", "args": {}, "async": True}]
    results = run_agent(f"tls://alice:{SECRET}@127.0.0.1:{server.port}", plan, env=env)
    assert [result["decision"]["decision"] for result in results] == ["allow_once", "allow_once"], results
    # Client takes the CA (and the credentials) as arguments too.
    creds = tmp_path / "alice.txt"
    creds.write_text(f"alice:{SECRET}\n")
    with Client(url=f"tls://localhost:{server.port}", credentials=creds, ca_file=ca, agent="args") as client:
        assert client.request("allow", {}).decision == "allow_once"
    # The approver app's status says where its relay is, as whom, and that it is connected.
    with Client(socket_path=approvers[0].folder / "sock" / "approver.sock") as client:
        relay = client.status()["relay"]
    assert relay == {"server": f"tls://127.0.0.1:{server.port}", "user": "desk", "connected": True, "pending": 0}
    shown = subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--socket",
                            str(approvers[0].folder / "sock" / "approver.sock")], capture_output=True, text=True,
                           timeout=60, env=child_env())
    assert f"relay:   tls://127.0.0.1:{server.port} as desk, connected, 0 waiting here" in shown.stdout, shown


def test_a_certificate_from_another_ca_is_refused(tmp_path: Path, tls_server: tuple[NatsServer, Path]) -> None:
    server, _ = tls_server
    stranger = make_ca("someone else").certificate
    (tmp_path / "other-ca.pem").write_bytes(stranger)
    with Client(url=f"tls://alice:{SECRET}@127.0.0.1:{server.port}", ca_file=tmp_path / "other-ca.pem") as client, \
            pytest.raises(ApproverUnavailable, match="(?i)certificate"):
        client.request("allow", {})


def test_a_host_name_the_certificate_does_not_name_is_refused(tmp_path: Path) -> None:
    ca, cert, key = write_tls(tmp_path, ["relay.example"])
    server = NatsServer(tmp_path, config=tls_config(tmp_path, cert, key)).start()
    try:
        with Client(url=f"tls://alice:{SECRET}@127.0.0.1:{server.port}", ca_file=ca) as client, \
                pytest.raises(ApproverUnavailable, match="(?i)certificate|hostname|match"):
            client.request("allow", {})
    finally:
        server.stop()


class Recorder:
    """A TCP listener on loopback that plays a NATS server's first line and records every byte a
    client sends; ``upstream``: a real server behind it that starts in clear (no ``handshake_first``),
    its INFO passed on with the TLS offer removed (someone on the path stripping TLS)."""

    def __init__(self, upstream: int | None = None) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received = bytearray()
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(peer,), daemon=True).start()

    def _one(self, peer: socket.socket) -> None:
        with peer:
            info = {"server_id": "fake", "version": "2.15.1", "proto": 1, "headers": True, "max_payload": 1048576,
                    "auth_required": True, "nonce": "abc"}
            if self.upstream is not None:
                with socket.create_connection(("127.0.0.1", self.upstream)) as real:
                    line = real.makefile("rb").readline()
                    info = json.loads(line.split(b" ", 1)[1])
                    assert info.get("tls_required") is True  # the real server offers TLS...
            info.pop("tls_required", None)  # ...and the one in the middle removes the offer
            info.pop("tls_available", None)
            peer.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
            peer.settimeout(5)
            try:
                while chunk := peer.recv(65536):
                    self.received += chunk
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("behind", ["nothing", "tls server"])
def test_tls_is_never_stripped_and_no_credential_leaves(tmp_path: Path, behind: str) -> None:
    server = None
    if behind == "tls server":
        ca, cert, key = write_tls(tmp_path, ["127.0.0.1"])
        server = NatsServer(tmp_path, config=tls_config(tmp_path, cert, key, first=False)).start()
    recorder = Recorder(upstream=server.port if server else None)
    creds = tmp_path / "creds"
    creds.write_text(f"alice:{SECRET}-{behind}\n")
    try:
        for url in (f"tls://127.0.0.1:{recorder.port}", f"tls://localhost:{recorder.port}"):
            with Client(url=url, credentials=creds) as client, \
                    pytest.raises(ApproverUnavailable, match="refused to send credentials without TLS"):
                client.request("allow", {})
        results = run_agent(f"tls://alice:{SECRET}-{behind}@127.0.0.1:{recorder.port}",
                            [{"op": "request", "tool": "allow", "args": {}, "async": True}])
        assert results[0]["error"] == "ApproverUnavailable" and "without TLS" in results[0]["message"]
        assert recorder.connections >= 3
        password = f"{SECRET}-{behind}".encode()  # long enough not to turn up by chance in a TLS hello
        assert password not in recorder.received and b"CONNECT" not in recorder.received, recorder.received
        assert only_tls_handshakes(recorder.received)
    finally:
        recorder.close()
        if server is not None:
            server.stop()


def test_the_approver_never_sends_its_credentials_in_clear_either(tmp_path: Path) -> None:
    recorder = Recorder()
    try:
        approver = Approver(tmp_path, f"tls://desk:{SECRET}-desk@127.0.0.1:{recorder.port}", "desk", wait=False)
        try:
            problem = approver.expect("problem relay")
            assert "refused to send credentials without TLS" in problem, problem
        finally:
            approver.stop()
        assert b"CONNECT" not in recorder.received and f"{SECRET}-desk".encode() not in recorder.received
        assert only_tls_handshakes(recorder.received)
    finally:
        recorder.close()


def test_plain_nats_to_another_host_is_refused_unless_the_person_opts_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DESKTOP_APPROVER_NATS_PLAINTEXT", raising=False)
    with pytest.raises(AddressError, match=r"would send credentials in clear to another host; use "
                                           r"tls://nats.example:4222 .*DESKTOP_APPROVER_NATS_PLAINTEXT=1") as refused:
        parse("nats://alice:secret@nats.example:4222")
    assert "secret" not in str(refused.value) and "\n" not in str(refused.value)
    transport = open_transport(None, "nats://alice:secret@nats.example:4222")
    assert isinstance(transport, UnusableTransport) and "in clear" in transport.reason
    for loopback in ("127.0.0.1", "localhost", "[::1]", "127.3.4.5"):
        assert not parse(f"nats://alice:secret@{loopback}:4222").requires_tls
    assert parse("tls://alice:secret@127.0.0.1:4222").requires_tls
    monkeypatch.setenv("DESKTOP_APPROVER_NATS_PLAINTEXT", "1")
    opted = parse("nats://alice:secret@nats.example:4222")
    assert opted.plaintext and not opted.requires_tls
    assert parse("tls://alice:secret@nats.example:4222").requires_tls  # tls:// stays TLS whatever is set


def test_malformed_urls_say_url(tmp_path: Path) -> None:
    for url, said in (("nats//host:4222", "not a URL"), ("tls:/host:4222", "not a NATS URL"),
                      ("nats://host:4222/path", "nothing after it"), ("nats://a:b@host:99999", "bad port"),
                      ("ftp://host", "expected a nats://")):
        transport = open_transport(None, url)
        assert isinstance(transport, UnusableTransport), url
        assert said in transport.reason, (url, transport.reason)
        assert "b@" not in transport.address
    for url, said in (("nats://a:b@127.0.0.1:0", "0 is no server's port"),  # red team F8
                      ("nats://a:b@127.0.0.1\n:4222", "a line break"), ("tls://a:b@host :4222", "a space"),
                      ("nats://a:b@127.0.0.1:4222\t", "control")):
        with pytest.raises(AddressError, match=said) as refused:
            parse(url, None)
        assert "b@" not in str(refused.value)
    assert parse("tls://a:b@[::1]:4222").shown == "tls://[::1]:4222"
    assert parse("nats://a:b@127.0.0.1").shown == "nats://127.0.0.1"
    for url in ("tls://[::1", "tls://a:b@[::1", "nats://[zz]:4222", "tls://a:b@[::1:4222"):  # red team F3
        transport = open_transport(None, url)
        assert isinstance(transport, UnusableTransport) and "not a URL" in transport.reason, url
        assert "b@" not in transport.address and "b@" not in transport.reason
        with pytest.raises(AddressError, match="not a URL"):
            parse(url, None)


HOOK_EVENT = json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                         "tool_input": {"command": "rm -rf /tmp/x"}, "cwd": "/tmp"})


@pytest.mark.parametrize("url", ["tls://[::1", "nats://alice:pw@[zz]:4222", "tls://host:99x"])
def test_a_malformed_url_is_denied_by_the_hook_and_exit_2_for_request(url: str) -> None:
    """Red team F3: a URL ``urlsplit`` cannot read is the documented 'unavailable', never an exit 1
    (Claude Code takes a hook's exit 1 as 'go on without it')."""
    env = child_env(DESKTOP_APPROVER_URL=url)
    hook = subprocess.run([sys.executable, "-m", "desktop_approver", "hook", "claude-code"], input=HOOK_EVENT,
                          capture_output=True, text=True, timeout=60, env=env)
    assert hook.returncode == 0, hook.stderr
    output = json.loads(hook.stdout)["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "desktop-approver at" in output["permissionDecisionReason"]
    assert "Traceback" not in hook.stderr and "pw" not in hook.stdout
    asked = subprocess.run([sys.executable, "-m", "desktop_approver", "request", "--tool", "Bash", "--args",
                            '{"command": "ls"}'], capture_output=True, text=True, timeout=60, env=env)
    assert asked.returncode == 2 and "treat as denied" in asked.stderr, asked
    assert "Traceback" not in asked.stderr


class CutThenStrip:
    """A proxy on loopback: the first connection is passed on untouched (TLS end to end) until
    :meth:`cut`; every later one (the client's reconnects) gets an INFO in clear without a TLS offer
    (the real server, TLS first, gives none to copy), and every byte the client sends on it is recorded."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received = bytearray()
        self.stripped = threading.Event()
        self._first: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            target = self._pass if not self._first else self._strip
            threading.Thread(target=target, args=(peer,), daemon=True).start()

    def _pass(self, peer: socket.socket) -> None:
        real = socket.create_connection(("127.0.0.1", self.upstream))
        self._first += [peer, real]

        def pump(source: socket.socket, sink: socket.socket) -> None:
            try:
                while chunk := source.recv(65536):
                    sink.sendall(chunk)
            except OSError:
                return

        threading.Thread(target=pump, args=(real, peer), daemon=True).start()
        pump(peer, real)

    def _strip(self, peer: socket.socket) -> None:
        with peer:
            info = {"server_id": "stripped", "version": "2.15.1", "proto": 1, "headers": True,
                    "max_payload": 1048576, "auth_required": True, "nonce": "abc"}
            peer.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
            self.stripped.set()
            peer.settimeout(10)
            try:
                while chunk := peer.recv(65536):
                    self.received += chunk
            except OSError:
                return

    def cut(self) -> None:
        for sock in self._first:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.listener.close()


def test_what_waits_while_a_reconnect_is_stripped_never_leaves_in_clear(
        tmp_path: Path, tls_server: tuple[NatsServer, Path], approvers: list[Approver]) -> None:
    """Red team F1: a dropped connection, reconnects stripped of TLS, a request made meanwhile (it
    waits in nats-py's pending buffer), then the client closes: not one byte of the request, nor any
    other, reaches the stripped connection."""
    server, ca = tls_server
    env = {"DESKTOP_APPROVER_NATS_CA": str(ca)}
    approvers.append(Approver(tmp_path, f"tls://desk:x@127.0.0.1:{server.port}", "desk", env=env))
    proxy = CutThenStrip(server.port)
    creds = tmp_path / "alice.txt"
    creds.write_text(f"alice:{SECRET}\n")
    marker = "Bearer SECRET-TOKEN-on-the-wire"
    try:
        client = Client(url=f"tls://127.0.0.1:{proxy.port}", credentials=creds, ca_file=ca, agent="leaktest")
        try:
            assert client.status()["connected"] is True
            proxy.cut()
            assert proxy.stripped.wait(WAIT), "the client never reconnected"
            with pytest.raises(ApproverUnavailable):
                client.request("Bash", {"command": f"curl -H '{marker}' https://example.invalid"}, timeout=4)
        finally:
            client.close()
        assert only_tls_handshakes(proxy.received), bytes(proxy.received[:300])
        assert marker.encode() not in proxy.received and b"PUB" not in proxy.received
    finally:
        proxy.close()


def only_tls_handshakes(data: bytes | bytearray) -> bool:
    """Whether ``data`` is nothing but TLS records of the handshake (a client's hello, and nothing in
    clear after it): each record is a type byte (22, handshake), a version, a length, that many bytes."""
    at = 0
    while at < len(data):
        if data[at] != 22 or at + 5 > len(data):
            return False
        at += 5 + int.from_bytes(data[at + 3:at + 5], "big")
    return True


class Tap:
    """A proxy on loopback in front of a real server that records both ways (what someone on the path sees)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.from_client = bytearray()
        self.from_server = bytearray()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(peer,), daemon=True).start()

    def _one(self, peer: socket.socket) -> None:
        with peer, socket.create_connection(("127.0.0.1", self.upstream)) as real:
            back = threading.Thread(target=self._pump, args=(real, peer, self.from_server), daemon=True)
            back.start()
            self._pump(peer, real, self.from_client)
            back.join(WAIT)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, seen: bytearray) -> None:
        try:
            while chunk := source.recv(65536):
                seen += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


def test_tls_comes_first_and_nothing_not_even_info_is_in_clear(
        tmp_path: Path, tls_server: tuple[NatsServer, Path], approvers: list[Approver]) -> None:
    """Red team F4: with ``handshake_first`` (as ``relay setup`` writes it) the first byte either way
    is TLS's: the server's INFO (its nonce, its list of servers, its largest message) is never in
    clear for someone on the path to read or rewrite."""
    server, ca = tls_server
    env = {"DESKTOP_APPROVER_NATS_CA": str(ca)}
    approvers.append(Approver(tmp_path, f"tls://desk:x@127.0.0.1:{server.port}", "desk", env=env))
    tap = Tap(server.port)
    try:
        with Client(url=f"tls://alice:{SECRET}@127.0.0.1:{tap.port}", ca_file=ca) as client:
            assert client.request("allow", {}).decision == "allow_once"
        assert tap.from_client[:1] == b"\x16" and tap.from_server[:1] == b"\x16"  # a TLS handshake record
        for seen in (tap.from_client, tap.from_server):  # (the password is too short to look for in ciphertext)
            assert b"INFO" not in seen and b"CONNECT" not in seen
    finally:
        tap.close()


def test_a_server_that_starts_in_clear_is_refused_never_downgraded(tmp_path: Path, approvers: list[Approver]) -> None:
    """A TLS server set up without ``handshake_first`` sends its INFO in clear: agent and approver
    refuse it with the reason (what to set), sending nothing but their TLS hello, and never fall back."""
    ca, cert, key = write_tls(tmp_path, ["127.0.0.1"])
    server = NatsServer(tmp_path, config=tls_config(tmp_path, cert, key, first=False)).start()
    tap = Tap(server.port)
    try:
        with Client(url=f"tls://alice:{SECRET}@127.0.0.1:{tap.port}", ca_file=ca) as client, \
                pytest.raises(ApproverUnavailable, match="in clear instead of starting TLS first.*handshake_first"):
            client.request("allow", {})
        results = run_agent(f"tls://alice:{SECRET}@127.0.0.1:{tap.port}",
                            [{"op": "request", "tool": "allow", "args": {}, "async": True}],
                            env={"DESKTOP_APPROVER_NATS_CA": str(ca)})
        assert results[0]["error"] == "ApproverUnavailable" and "handshake_first" in results[0]["message"]
        approver = Approver(tmp_path, f"tls://desk:{SECRET}-desk@127.0.0.1:{tap.port}", "desk", wait=False,
                            env={"DESKTOP_APPROVER_NATS_CA": str(ca)})
        approvers.append(approver)
        problem = approver.expect("problem relay")
        assert "starting TLS first" in problem, problem
        assert b"INFO" in tap.from_server  # the server did speak in clear...
        assert only_tls_handshakes(tap.from_client)  # ...and the clients never did: only their hello
    finally:
        tap.close()
        server.stop()
