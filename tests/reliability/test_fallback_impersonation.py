"""The fallback socket path (no XDG_RUNTIME_DIR: SSH sessions, cron, containers) against a real
second local user, end to end: the squatter is refused by every client and by the app; once the
squat is gone, our app takes the path and the second user cannot reach it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.reliability.app import ROOT, AppProcess
from tests.support.users import SYSTEM_PYTHON, as_second_user
from tests.test_impersonation import Impostor


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def test_fallback_path_squatted_then_reclaimed(tmp_path: Path, shared_tmp: Path, second_uid: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(TMPDIR=str(shared_tmp), PYTHONPATH=str(ROOT))
    ours = shared_tmp / f"desktop-approver-{os.getuid()}"
    squatter = Impostor(ours / "approver.sock", shared_tmp)
    assert ours.stat().st_uid == second_uid
    try:
        request = cli(env, "request", "--tool", "Bash", "--args", '{"command": "rm -rf ~/important"}')
        assert request.returncode == 2 and f"uid {second_uid}" in request.stderr
        hook = cli(env, "hook", "claude-code", stdin=json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}}))
        assert json.loads(hook.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        tray = cli({**env, "QT_QPA_PLATFORM": "offscreen"}, "tray", "--no-notifications")
        assert tray.returncode == 2 and len(tray.stderr.strip().splitlines()) == 1
        assert "refusing to start" in tray.stderr
        assert squatter.connections_before() == []          # not one client reached the squatter
    finally:
        squatter.stop()
    shutil.rmtree(ours)                                         # the person removes the squat (root may)

    with AppProcess(tmp_path, "allow", socket_path=ours / "approver.sock") as app:
        assert (ours.stat().st_uid, ours.stat().st_mode & 0o777) == (os.getuid(), 0o700)
        allowed = cli(env, "request", "--tool", "Bash", "--args", '{"command": "ls"}')
        assert allowed.returncode == 0, allowed.stderr
        probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                 "try:\n    s.connect(sys.argv[1]); print('connected')\nexcept OSError as e: print(type(e).__name__)\n")
        intruder = subprocess.run(as_second_user(SYSTEM_PYTHON, "-c", probe, str(app.socket_path)),
                                  capture_output=True, text=True, timeout=30)
        assert intruder.stdout.strip() == "PermissionError"     # the 0700 directory keeps the other user out
