"""Socket activation: the listening socket a service manager passes on fd 3.

Each case runs in a child process, because it has to put something on fd 3 and claim to be the
process the service manager meant (``LISTEN_PID``) without disturbing pytest's own descriptors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, socket, sys
from desktop_approver.core.transport import activation

case, where = sys.argv[1], sys.argv[2]
os.dup2(os.open(os.devnull, os.O_RDONLY), 3)  # fd 3 taken, so what we make below lands elsewhere
if case == "listening":
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(where)
    sock.listen()
    os.dup2(sock.fileno(), 3)
elif case == "not_listening":
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(where)
    os.dup2(sock.fileno(), 3)
elif case == "tcp":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    os.dup2(sock.fileno(), 3)
elif case == "pipe":
    read_end, _write_end = os.pipe()
    os.dup2(read_end, 3)
pid = os.getpid() + (1 if case == "other_pid" else 0)
env = {"LISTEN_PID": str(pid), "LISTEN_FDS": "1", "LISTEN_FDNAMES": "approver"}
if case == "not_activated":
    env = {}
try:
    passed = activation.listening_socket(env)
except activation.ActivationError as exc:
    result = {"error": str(exc)}
else:
    result = {"socket": None if passed is None else str(activation.socket_path_of(passed)),
              "blocking": None if passed is None else passed.getblocking(),
              "inheritable": None if passed is None else passed.get_inheritable()}
result["env_left"] = sorted(env)
print(json.dumps(result))
"""


def _child(case: str, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, case, str(tmp_path / "a.sock")], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_passed_listening_socket_is_taken_and_the_variables_cleared(tmp_path: Path) -> None:
    result = _child("listening", tmp_path)
    assert result == {"socket": str(tmp_path / "a.sock"), "blocking": False, "inheritable": False,
                      "env_left": []}


@pytest.mark.parametrize("case", ["not_activated", "other_pid"])
def test_without_activation_for_us_the_app_binds_its_own(case: str, tmp_path: Path) -> None:
    assert _child(case, tmp_path) == {"socket": None, "blocking": None, "inheritable": None, "env_left": []}


@pytest.mark.parametrize(("case", "words"), [
    ("pipe", "is not a socket"),
    ("tcp", "not a unix stream socket"),
    ("not_listening", "not listening"),
])
def test_a_wrong_descriptor_is_refused_with_a_reason(case: str, words: str, tmp_path: Path) -> None:
    result = _child(case, tmp_path)
    assert words in str(result["error"])
    assert result["env_left"] == []


def test_secure_socket_file_sets_the_documented_modes(tmp_path: Path) -> None:
    import socket
    import stat

    from desktop_approver.core.transport.activation import secure_socket_file

    directory = tmp_path / "run"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(directory / "approver.sock"))
        (directory / "approver.sock").chmod(0o666)
        secure_socket_file(directory / "approver.sock")
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        assert stat.S_IMODE((directory / "approver.sock").stat().st_mode) == 0o600
    finally:
        sock.close()
