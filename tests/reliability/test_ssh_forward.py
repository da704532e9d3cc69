"""An agent on the other end of an SSH-forwarded socket, through a real sshd on 127.0.0.1.

The desktop side runs the app (with ``--require-token``'s check) and ``ssh -R`` to an sshd of our
own; the "remote" agent connects to the socket sshd made. Without the token it is refused; with
it, its requests reach the person and the answers come back. The app sees the peer as the ssh
relay, so it marks the cwd as a claim. Skips only when sshd cannot start here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_approver import Client, Unauthorized
from desktop_approver.core.decisions.tickets import Verdict
from tests.reliability.app import ROOT
from tests.support.service import ScriptedPerson, ServiceThread

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
TOKEN = "forwarded-secret-token"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An sshd of our own on 127.0.0.1 that accepts one key for the current user; (port, key)."""
    if not os.path.exists(SSHD):
        pytest.skip("sshd is not installed (apt-get install openssh-server)")
    keys = Path(tempfile.mkdtemp(prefix="ssh-", dir="/tmp"))   # short paths; sshd checks their modes
    os.chmod(keys, 0o700)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "host")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / "user")], check=True)
    shutil.copy(keys / "user.pub", keys / "authorized_keys")
    port = free_port()
    config = keys / "sshd_config"
    config.write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {keys / 'host'}
PidFile {keys / 'sshd.pid'}
AuthorizedKeysFile {keys / 'authorized_keys'}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
StreamLocalBindMask 0177
LogLevel ERROR
""")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)   # sshd's privilege-separation directory
    daemon = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            pytest.skip(f"sshd cannot start here: {daemon.stderr.read() if daemon.stderr else ''}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        daemon.kill()
        pytest.skip("sshd did not listen within 20 s")
    try:
        yield port, keys / "user"
    finally:
        daemon.terminate()
        daemon.wait(20)
        shutil.rmtree(keys, ignore_errors=True)


def test_a_forwarded_socket_with_a_token(tmp_path: Path, sshd: tuple[int, Path], figures: dict[str, str]) -> None:
    port, key = sshd
    person = ScriptedPerson(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
    remote_dir = Path(tempfile.mkdtemp(prefix="remote-", dir="/tmp"))      # the "remote" agent's side
    os.chmod(remote_dir, 0o700)
    remote = remote_dir / "approver.sock"
    with ServiceThread(tmp_path, person, token_check=lambda token: token == TOKEN) as service:
        tunnel = subprocess.Popen(
            ["ssh", "-N", "-i", str(key), "-p", str(port), "-o", "StrictHostKeyChecking=no",
             "-o", "UserKnownHostsFile=/dev/null", "-o", "ExitOnForwardFailure=yes", "-o", "LogLevel=ERROR",
             "-o", "BatchMode=yes", "-R", f"{remote}:{service.socket_path}",
             f"{os.environ.get('USER', 'root')}@127.0.0.1"],
            stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while not remote.exists():
                assert tunnel.poll() is None, tunnel.stderr.read() if tunnel.stderr else ""
                assert time.monotonic() < deadline, "ssh did not forward the socket"
                time.sleep(0.05)
            env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
            env.pop("DESKTOP_APPROVER_TOKEN", None)
            request = [sys.executable, "-m", "desktop_approver", "request", "--socket", str(remote), "--tool", "deploy",
                       "--args", '{"env": "staging"}', "--agent", "remote-agent"]
            refused = subprocess.run(request, env=env, capture_output=True, text=True, timeout=60)
            assert refused.returncode == 2 and "unauthorized" in refused.stderr
            started = time.perf_counter()
            allowed = subprocess.run(request, env={**env, "DESKTOP_APPROVER_TOKEN": TOKEN}, capture_output=True,
                                     text=True, timeout=60)
            elapsed = time.perf_counter() - started
            assert allowed.returncode == 0, allowed.stderr
            with Client(remote, token="wrong") as wrong:
                with pytest.raises(Unauthorized):
                    wrong.status()
            with Client(remote, token=TOKEN) as client:
                rounds = 50
                start = time.perf_counter()
                for _ in range(rounds):
                    client.status()
                per_status = (time.perf_counter() - start) / rounds
        finally:
            tunnel.terminate()
            tunnel.wait(20)
            shutil.rmtree(remote_dir, ignore_errors=True)
    who = person.seen[0].identity
    assert who.agent == "remote-agent" and who.peer_exe and os.path.basename(who.peer_exe) == "ssh"
    assert who.peer_cwd is None and who.policy_cwd == who.cwd      # the relay's cwd says nothing: the claim is used
    figures["SSH-forwarded socket (real sshd, token)"] = (
        f"`request` cold start through the tunnel {elapsed * 1000:.0f} ms; "
        f"status round trip {per_status * 1000:.2f} ms")
