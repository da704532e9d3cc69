"""docs/relay.md, "Quickstart", followed as written: `relay setup`, then the three commands it prints
(the server, the tray, an agent's request), to a first approval over TLS. Only the port is this
test's own (4222 may be taken on a shared machine), and the person at the desk is a rule."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

from tests.relay.conftest import ROOT, WAIT, child_env, free_port, nats_server_binary

SECTION = (ROOT / "docs" / "relay.md").read_text(encoding="utf-8").split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```bash\n(.*?)```", SECTION, flags=re.S)


def desktop_approver(words: list[str]) -> list[str]:
    assert words[0] == "desktop-approver"
    return [sys.executable, "-m", "desktop_approver", *words[1:]]


def printed_commands(output: str) -> list[str]:
    """The three commands `relay setup` prints, each on a line of its own under its number."""
    return [line.strip() for line in output.splitlines()
            if line.startswith("   ") and line.split()[0] in ("nats-server", "desktop-approver")
            or line.startswith("   DESKTOP_")]


def test_the_quickstart_reaches_a_first_approval_over_tls(tmp_path: Path) -> None:
    (install, setup_line), shown = BLOCKS[0].strip().splitlines(), BLOCKS[1].strip().splitlines()
    assert install.startswith("pip install") and "relay" in install
    port = free_port()
    setup = subprocess.run(desktop_approver(shlex.split(setup_line)) + ["--port", str(port)], cwd=tmp_path,
                           env=child_env(), capture_output=True, text=True, timeout=WAIT)
    assert setup.returncode == 0, setup.stderr
    folder = (tmp_path / "approver-relay").resolve()
    commands = printed_commands(setup.stdout)
    assert len(commands) == 3, setup.stdout
    # What the page shows is what the command printed, exactly, with every path absolute (the page
    # says approver-relay/ for the folder) and this test's port.
    for printed, documented in zip(commands, shown, strict=True):
        assert printed == documented.replace("approver-relay/", f"{folder}/").replace("4222", str(port))
    for path in (folder, folder / "creds", folder / "tls"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in [*(folder / "creds").iterdir(), folder / "tls" / "server-key.pem", folder / "tls" / "ca-key.pem"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    config = (folder / "nats-server.conf").read_text()
    assert f'listen: "127.0.0.1:{port}"' in config and "tls {" in config and "handshake_first: true" in config
    seeds = [line.split()[1] for path in (folder / "creds").iterdir() for line in path.read_text().splitlines()
             if line.startswith("seed:")]
    assert len(seeds) == 2 and not any(seed in config for seed in seeds)  # the configuration holds public keys only

    server_words = shlex.split(commands[0])
    binary = nats_server_binary()
    assert server_words[0] == "nats-server" and binary is not None
    elsewhere = tmp_path / "another-terminal"  # each command in a terminal of its own, anywhere
    elsewhere.mkdir()
    server = subprocess.Popen([binary, *server_words[1:]], cwd=elsewhere, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    policy = tmp_path / "policy.toml"  # the person at the desk, here: a rule
    policy.write_text('[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls*"\n')
    tray = subprocess.Popen(desktop_approver(shlex.split(commands[1])) + [
        "--no-notifications", "--socket", str(tmp_path / "s.sock"), "--policy", str(policy),
        "--audit-db", str(tmp_path / "audit.db")], cwd=tmp_path, env=child_env(QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        words = shlex.split(commands[2])
        first = next(index for index, word in enumerate(words) if "=" not in word)
        env = child_env(**dict(word.split("=", 1) for word in words[:first]))
        assert env["DESKTOP_APPROVER_URL"].startswith("tls://")
        deadline = time.monotonic() + WAIT
        while True:  # until the server listens and the tray has set the relay up on it
            done = subprocess.run(desktop_approver(words[first:]), cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=WAIT)
            if done.returncode != 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert done.returncode == 0, done.stderr
        assert '"decided_by": "policy"' in done.stdout
        assert done.stderr == ""  # nothing but the answer: no warning from the TLS connection's close
    finally:
        tray.terminate()
        tray.wait(WAIT)
        server.terminate()
        server.wait(WAIT)
    assert os.path.isdir(folder / "jetstream")
