"""The docs' "Agents on other machines": its commands run as written (the server's address and the
credentials files aside) against the sample configuration, and the agent's request is answered."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.relay.conftest import ROOT, WAIT, NatsServer, child_env


def _section(title: str) -> str:
    """The text under ``title`` up to its first subsection, on whichever page has it (README.md or a
    page of the docs site)."""
    for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        found = re.search(rf"^(#+) {re.escape(title)}\n(.*)", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        if found and "```bash" in found.group(2).split("\n" + "#" * (len(found.group(1)) + 1) + " ", 1)[0]:
            return found.group(2).split("\n" + "#" * (len(found.group(1)) + 1) + " ", 1)[0]
    raise AssertionError(f"no page has a section {title!r} with commands")


SECTION = _section("Agents on other machines")
BLOCKS = re.findall(r"```bash\n(.*?)```", SECTION, flags=re.S)


def desktop_approver(words: list[str]) -> list[str]:
    assert words[0] == "desktop-approver"
    return [sys.executable, "-m", "desktop_approver", *words[1:]]


def test_the_readme_commands_start_a_server_and_answer_an_agent(tmp_path: Path) -> None:
    (server_line, agent_line), (tray_line,) = (block.strip().splitlines() for block in BLOCKS)
    assert shlex.split(server_line) == ["nats-server", "-c", "packaging/nats/approver.conf"]
    server = NatsServer(tmp_path, config=ROOT / "packaging" / "nats" / "approver.conf").start()
    address = f"127.0.0.1:{server.port}"  # the README's nats.example:4222, here
    (tmp_path / "ci.creds").write_text("ci:change-me-ci\n")
    (tmp_path / "desk.creds").write_text("desk:change-me-desk\n")
    policy = tmp_path / "policy.toml"  # the person at the desk, here: a rule
    policy.write_text('[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls*"\n')
    tray_words = shlex.split(tray_line.replace("nats.example:4222", address))
    tray = subprocess.Popen(desktop_approver(tray_words) + [
        "--no-notifications", "--socket", str(tmp_path / "s.sock"), "--policy", str(policy),
        "--audit-db", str(tmp_path / "audit.db")], cwd=tmp_path, env=child_env(QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        *assignments, command = _split_env(shlex.split(agent_line.replace("nats.example:4222", address)))
        env = child_env(**dict(assignment.split("=", 1) for assignment in assignments))
        deadline = time.monotonic() + WAIT
        while True:  # until the tray has set the relay up on the server
            done = subprocess.run(desktop_approver(command), cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=WAIT)
            if done.returncode != 2 or time.monotonic() > deadline:
                break
            assert "no approver has set up the relay" in done.stderr, done.stderr
            time.sleep(0.2)
        assert done.returncode == 0, done.stderr
        assert '"decided_by": "policy"' in done.stdout
    finally:
        tray.terminate()
        tray.wait(WAIT)
        server.stop()
    assert os.path.isdir(tmp_path / "approver-jetstream")  # the sample's own store


def _split_env(words: list[str]) -> list[str | list[str]]:
    """``A=1 B=2 desktop-approver ...`` -> ``["A=1", "B=2", [desktop-approver, ...]]``."""
    first = next(index for index, word in enumerate(words) if "=" not in word)
    return [*words[:first], words[first:]]
