"""The real app core in its own process, for the reliability suite.

``python tests/reliability/app.py SOCKET AUDIT PERSON [--token T] [--limits JSON] [--history-days N]`` starts the
Qt-free service (server, broker, audit log, policy, memory: everything but the windows) on a plain
asyncio loop and prints ``ready`` when it listens (nothing after: nobody reads its stdout).
``PERSON`` is who answers: ``allow`` and ``deny`` answer every call at once, ``never`` never
answers (requests wait until cancelled, timed out or the process dies).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


async def main(argv: list[str]) -> None:
    import faulthandler

    faulthandler.register(signal.SIGUSR1)  # a stuck app can be asked where it is
    sys.path.insert(0, str(ROOT))
    from desktop_approver.core.service import ApproverService, ServiceOptions
    from desktop_approver.core.transport.limits import Limits
    from tests.support.deciders import ScriptedPerson, WaitingPerson, every

    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("audit")
    parser.add_argument("person", choices=("allow", "deny", "never"))
    parser.add_argument("--token")
    parser.add_argument("--limits", default="{}")
    parser.add_argument("--max-pending", type=int, default=128)
    parser.add_argument("--policy")
    parser.add_argument("--state")
    parser.add_argument("--history-days", type=float)
    args = parser.parse_args(argv)

    person = {"allow": ScriptedPerson(every("allow_once")), "deny": ScriptedPerson(every("deny")),
              "never": WaitingPerson()}[args.person]

    token_check = (lambda token: token == args.token) if args.token else None
    options = ServiceOptions(socket_path=Path(args.socket), audit_path=Path(args.audit),
                             policy_path=Path(args.policy) if args.policy else None,
                             state_path=Path(args.state) if args.state else None,
                             token_check=token_check, max_pending_per_client=args.max_pending,
                             history_days=args.history_days,
                             limits=Limits(**json.loads(args.limits)))
    service = ApproverService(options, person)
    await service.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    await service.close()


class AppProcess:
    """``with AppProcess(tmp, "deny") as app:`` the app core in a child process, stopped after."""

    def __init__(self, tmp: Path, person: str, *, token: str | None = None, limits: dict[str, Any] | None = None,
                 max_pending: int = 128, socket_path: Path | None = None, audit_path: Path | None = None,
                 policy: Path | None = None, state: Path | None = None, prefix: list[str] | None = None,
                 env: dict[str, str] | None = None, history_days: float | None = None) -> None:
        self.socket_path = socket_path or tmp / "run" / "approver.sock"
        self.audit_path = audit_path or tmp / "audit.sqlite3"
        command = [*(prefix or []), sys.executable, str(Path(__file__)), str(self.socket_path), str(self.audit_path),
                   person, "--limits", json.dumps(limits or {}), "--max-pending", str(max_pending)]
        if token:
            command += ["--token", token]
        if policy is not None:
            command += ["--policy", str(policy)]
        if state is not None:
            command += ["--state", str(state)]
        if history_days is not None:
            command += ["--history-days", str(history_days)]
        self.stderr_path = tmp / f"app-{time.monotonic_ns()}.stderr"
        with open(self.stderr_path, "w") as stderr:  # a file, not a pipe nobody drains: logging never blocks the app
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                            env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
        assert self.process.stdout is not None
        first = self.process.stdout.readline().strip()
        if first != "ready":
            self.process.kill()
            raise AssertionError(f"the app did not start: {first!r} {self.stderr_path.read_text()}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        """What the app has said so far (its log: warnings and errors on stderr)."""
        return self.stderr_path.read_text()

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> str:
        """SIGTERM, wait; the app's stderr (for tracebacks)."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
        return self.stderr_path.read_text()

    def __enter__(self) -> AppProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def clock() -> float:
    return time.perf_counter()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
