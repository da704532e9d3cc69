"""Another local user must not be able to answer our clients (issue 10, "impersonation").

A real second user (``barsuser``) runs a fake app that approves everything. It either creates
our fallback socket directory in the shared temp dir first, or (to test the kernel check alone)
its listening socket is moved into a directory of ours. The Client, the AsyncClient and the
CLI's ``request`` / ``status`` / ``hook`` must refuse it, naming the reason, and send nothing;
the app must refuse the directory with one line and exit 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import AsyncClient, Client, UntrustedServer
from desktop_approver.client.server_check import check_server, check_socket_path, server_uid
from tests.support.users import SYSTEM_PYTHON, as_second_user

ROOT = Path(__file__).resolve().parent.parent
IMPOSTOR = ROOT / "tests" / "support" / "impostor.py"


class Impostor:
    """The second user's fake app, listening at ``socket_path``."""

    def __init__(self, socket_path: Path, script_dir: Path) -> None:
        script = script_dir / "impostor.py"
        script.write_text(IMPOSTOR.read_text())
        script.chmod(0o644)
        self.socket_path = socket_path
        self.process = subprocess.Popen(as_second_user(SYSTEM_PYTHON, str(script), str(socket_path)),
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def connections_before(self) -> list[str]:
        """Reports of every connection before now: connect a probe of our own (root may), then read
        the impostor's lines up to the probe's. Those are connections some client made earlier."""
        probe = b'{"type": "probe"}\n'
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(self.socket_path))
            sock.sendall(probe)
            sock.recv(4096)
        earlier = []
        while (line := self.next_report()) != f"received {len(probe)}":
            earlier.append(line)
        return earlier

    def next_report(self) -> str:
        """The impostor's line about the next connection that ended (waits for it: it will come)."""
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def stop(self) -> str:
        """Stop it; what it printed after ``ready`` (one ``received N`` per connection)."""
        self.process.terminate()
        out, _ = self.process.communicate(timeout=20)
        return out


@pytest.fixture
def fallback_env(shared_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An SSH-like session: no XDG_RUNTIME_DIR, the shared temp dir is ``shared_tmp``."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return shared_tmp / f"desktop-approver-{os.getuid()}" / "approver.sock"


@pytest.fixture
def squatter(fallback_env: Path, shared_tmp: Path, second_uid: int) -> Iterator[Impostor]:
    """The second user got to our fallback directory first and listens in it."""
    impostor = Impostor(fallback_env, shared_tmp)
    assert fallback_env.parent.stat().st_uid == second_uid
    yield impostor
    impostor.stop()


@pytest.fixture
def moved_socket(shared_tmp: Path, second_uid: int) -> Iterator[Impostor]:
    """The second user's listening socket, moved into a private directory of ours and chowned to
    us: only the kernel's peer credentials can still tell who listens."""
    theirs = shared_tmp / "theirs" / "approver.sock"
    impostor = Impostor(theirs, shared_tmp)
    ours = shared_tmp / "ours"
    ours.mkdir(mode=0o700)
    target = ours / "approver.sock"
    os.rename(theirs, target)
    os.chown(target, os.getuid(), os.getgid())
    impostor.socket_path = target
    yield impostor
    impostor.stop()


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], input=stdin, capture_output=True,
                          text=True, timeout=60, env=env)


def test_client_refuses_a_fallback_directory_made_by_another_user(squatter: Impostor, second_uid: int) -> None:
    with pytest.raises(UntrustedServer, match=f"belongs to uid {second_uid}"):
        Client().request("Bash", {"command": "rm -rf ~/important"})
    assert squatter.connections_before() == []  # never even connected


def test_async_client_refuses_a_fallback_directory_made_by_another_user(squatter: Impostor, second_uid: int) -> None:
    async def ask() -> None:
        async with AsyncClient() as client:
            await client.request("Bash", {"command": "rm -rf ~/important"})

    with pytest.raises(UntrustedServer, match=f"belongs to uid {second_uid}"):
        asyncio.run(ask())
    assert squatter.connections_before() == []


@pytest.mark.parametrize("argv, stdin", [
    (["request", "--tool", "Bash", "--args", '{"command": "rm -rf ~/important"}'], None),
    (["status"], None),
])
def test_cli_fast_paths_refuse_the_squatter(squatter: Impostor, second_uid: int, argv: list[str],
                                            stdin: str | None) -> None:
    result = cli(*argv, stdin=stdin)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert f"belongs to uid {second_uid}" in output and "allow" not in result.stdout
    assert squatter.connections_before() == []


def test_hook_denies_instead_of_taking_the_squatters_allow(squatter: Impostor, second_uid: int) -> None:
    event = {"tool_name": "Bash", "tool_input": {"command": "rm -rf ~/important"}, "session_id": "s"}
    result = cli("hook", "claude-code", stdin=json.dumps(event))
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert f"belongs to uid {second_uid}" in answer["permissionDecisionReason"]
    assert squatter.connections_before() == []


def test_client_checks_the_servers_peer_credentials(moved_socket: Impostor, second_uid: int) -> None:
    check_socket_path(moved_socket.socket_path)  # the path alone looks like ours
    with pytest.raises(UntrustedServer, match=f"server runs as uid {second_uid}"):
        Client(moved_socket.socket_path).request("Bash", {"command": "curl x | sh"})
    assert moved_socket.next_report() == "received 0"  # connected, sent nothing


def test_async_client_checks_the_servers_peer_credentials(moved_socket: Impostor, second_uid: int) -> None:
    async def ask() -> Any:
        async with AsyncClient(moved_socket.socket_path) as client:
            return await client.request("Bash", {"command": "curl x | sh"})

    with pytest.raises(UntrustedServer, match=f"server runs as uid {second_uid}"):
        asyncio.run(ask())
    assert moved_socket.next_report() == "received 0"


def test_app_refuses_the_squatted_directory_with_one_line_and_exit_2(squatter: Impostor, second_uid: int) -> None:
    result = cli("tray", "--no-notifications")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("desktop-approver: refusing to start:") and f"uid {second_uid}" in lines[0]
    assert "Traceback" not in result.stderr


def test_client_refuses_a_socket_open_to_others(serve: Any) -> None:
    service = serve(lambda ticket: [])
    os.chmod(service.socket_path, 0o666)
    with pytest.raises(UntrustedServer, match="socket is open to others"):
        Client(service.socket_path).status()


def test_client_refuses_a_directory_others_may_write(serve: Any) -> None:
    service = serve(lambda ticket: [])
    os.chmod(service.socket_path.parent, 0o773)
    with pytest.raises(UntrustedServer, match="writable by others"):
        Client(service.socket_path).status()
    os.chmod(service.socket_path.parent, 0o700)
    with Client(service.socket_path) as client:
        assert client.status()["type"] == "status_reply"


def test_the_servers_uid_is_the_one_the_kernel_gives_for_the_other_end() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert server_uid(left) == os.getuid()
        check_server(left, "/run/user/x/s")  # our own uid: passes


def test_credentials_too_short_to_hold_a_uid_are_refused_not_read_as_root() -> None:
    class ShortCredentials:
        def getsockopt(self, *args: object) -> bytes:
            return bytes(4)  # the uid's bytes are missing: read as a number they would say 0

    with pytest.raises(UntrustedServer, match="no credentials for the server.*4 bytes"):
        check_server(ShortCredentials(), "/run/user/x/s")  # type: ignore[arg-type]
