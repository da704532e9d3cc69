"""``desktop-approver tray`` in a child process, as a person starts it: for the reliability suite.

Its stderr goes to a file the test reads: the app logs there what it tells the person (the tray's
degraded tooltip is the same text). ``apps`` (tests/reliability/conftest.py) closes every one a
test started, whatever path the test took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.waiting import WAIT, wait_for

ROOT = Path(__file__).resolve().parents[2]


class TrayApp:
    """The tray app with ``options``, its socket at ``socket_path`` (default ``tmp/run/approver.sock``),
    its audit log and stderr at ``tmp/NAME.sqlite3`` and ``tmp/NAME.stderr``; with ``wait``, started
    once it listens."""

    def __init__(self, tmp: Path, *options: str, socket_path: Path | None = None, env: dict[str, str] | None = None,
                 policy: Path | None = None, notifications: bool = False, name: str = "app", wait: bool = True,
                 log_level: str = "info") -> None:
        self.socket_path = socket_path or tmp / "run" / "approver.sock"
        self.audit_path = tmp / f"{name}.sqlite3"
        self.stderr_path = tmp / f"{name}.stderr"
        command = [sys.executable, "-m", "desktop_approver", "tray", "--log-level", log_level,
                   "--socket", str(self.socket_path), "--audit-db", str(self.audit_path),
                   "--policy", str(policy or tmp / "no-policy.toml"), "--timeout", "3600", *options]
        if not notifications:
            command.append("--no-notifications")
        environment = dict(env or os.environ, PYTHONPATH=str(ROOT))
        environment.setdefault("QT_QPA_PLATFORM", "offscreen")
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(command, cwd=ROOT, env=environment, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=stderr)
        if wait:
            wait_for(lambda: "is listening on" in self.stderr() or not self.alive(), f"{name} to listen")
            assert self.alive(), self.stderr()

    def __repr__(self) -> str:
        return f"<TrayApp pid={self.pid} socket={self.socket_path} alive={self.alive()}>"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def told(self, text: str) -> bool:
        """Whether the app has logged ``text`` (what it tells the person)."""
        return text in self.stderr()

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send ``signum`` and wait for the exit code; an app that does not end is killed, and that fails."""
        if self.alive():
            self.process.send_signal(signum)
        try:
            return self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the app did not end on signal {signum}: {self.stderr()[-3000:]}") from None

    def close(self) -> None:
        """Stop it if it still runs (woken first: a test may have stopped it with SIGSTOP)."""
        if self.alive():
            self.process.send_signal(signal.SIGCONT)
            self.stop()
