"""One huge command line against the real app (issue 34, F9): what another agent waits meanwhile.

    .venv/bin/python tests/bench/bench_large_command.py [--kib 900] [--rounds 30]

The app core runs in its own process (``tests/reliability/app.py``) with an allow rule ``ls *``.
1. ``status`` latency from another client, the app idle (median and slowest of ``--rounds``).
2. The same while one agent sends a ``--kib`` KiB ``ls a a a ...`` (under the 1 MiB line cap) and
   it is read: measured from the first byte sent until the huge call waits for the person.
3. In-process: the reading (``assess``) of a few shapes of long command line.
Prints rows for BENCHMARKS.md; never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from desktop_approver import Client  # noqa: E402
from desktop_approver.core.calls.risk.assessment import _assess  # noqa: E402
from tests.reliability.app import AppProcess  # noqa: E402


def status_latency(app: AppProcess) -> tuple[float, int]:
    started = time.perf_counter()
    with Client(app.socket_path, agent="other") as client:
        pending = client.status()["pending"]
    return time.perf_counter() - started, pending


def huge_request(app: AppProcess, kib: int) -> tuple[socket.socket, threading.Thread]:
    command = "ls " + "a " * (kib * 512)
    lines = [{"v": 1, "type": "hello", "client": {"agent": "huge", "pid": os.getpid()}},
             {"v": 1, "type": "request", "id": "huge", "tool": "Bash", "args": {"command": command}}]
    payload = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(app.socket_path))
    sender = threading.Thread(target=sock.sendall, args=(payload,))
    return sock, sender


def shapes() -> list[tuple[str, float]]:
    cases = {
        "900 KiB of short words": "ls " + "a " * 460_800,
        "one 900 KiB word": "ls " + "a" * 921_600,
        "900 KiB here-document": "cat > f <<'EOF'\n" + "hello world line\n" * 54_000 + "EOF\n",
        "1,990 words (within the budget)": "ls " + "a " * 1_990,
        "ls -la": "ls -la",
    }
    _assess("Bash", {"command": "ls"}, "/tmp", None)  # the catalog loaded
    out = []
    for name, command in cases.items():
        started = time.perf_counter()
        reading = _assess("Bash", {"command": command}, "/tmp", None)
        out.append((f"{name}: {'understood' if reading.understood else reading.gaps[0]}",
                    time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kib", type=int, default=900)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.toml"
        policy.write_text('version = 1\n[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls *"\n')
        with AppProcess(Path(tmp), "never", policy=policy) as app:
            idle = [status_latency(app)[0] for _ in range(args.rounds)]
            sock, sender = huge_request(app, args.kib)
            during: list[float] = []
            started = time.perf_counter()
            sender.start()
            while True:
                took, pending = status_latency(app)
                during.append(took)
                if pending == 1:
                    break
            waiting_after = time.perf_counter() - started
            sender.join()
            during += [status_latency(app)[0] for _ in range(args.rounds)]
            sock.close()
    print(f"status, app idle: median {statistics.median(idle) * 1000:.1f} ms, slowest {max(idle) * 1000:.1f} ms")
    print(f"status during a {args.kib} KiB command: median {statistics.median(during) * 1000:.1f} ms, "
          f"slowest {max(during) * 1000:.1f} ms ({len(during)} asked); slowest/idle median "
          f"{max(during) / statistics.median(idle):.1f}x")
    print(f"the {args.kib} KiB call waiting for the person (not read: too long) after {waiting_after:.2f} s")
    for name, took in shapes():
        print(f"reading {name}: {took * 1000:.1f} ms")


if __name__ == "__main__":
    main()
