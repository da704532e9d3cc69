"""Round trip of a call answered from session memory, against an echo, in one run.

    python tests/bench/bench_round_trip.py [--rounds 3000] [--kinds app core ...]

One sequential client per server, all servers up at once and measured interleaved, block by
block, so the machine's noise falls on all alike. The client is the same for every server and as
thin as a client can be: it writes one JSON line (a ``request`` the app remembered "for this
session", ``serve.py``) and reads one JSON line back, with ``json.dumps`` / ``json.loads`` on its
side. The baseline, ``echo``, is a bare asyncio unix-socket server that writes each line back: what
any line-based asyncio server costs. The target is the real app's (``app``: the tray app on Qt's
loop through qasync, GUI and all) median over the echo's median; the process exits with 1 when
it is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Target, add_server_options, percentile, report, server_kinds, servers  # noqa: E402
from serve import BENCH_AGENT, BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402

TARGET = 2.5
"""The app's session-memory round trip at most this many times the echo's (issue 11)."""
BLOCK = 250


def hello() -> dict[str, object]:
    """What ``Client`` says first (its cwd the real one, as the kernel sees it)."""
    return {"v": 1, "type": "hello", "client": {"agent": BENCH_AGENT, "pid": os.getpid(), "cwd": os.getcwd()}}


def request(number: int) -> dict[str, object]:
    """The call ``serve.py`` remembered for the bench agent's session, as ``Client.request`` sends it."""
    return {"v": 1, "type": "request", "id": f"r{number}", "tool": BENCH_TOOL, "args": BENCH_ARGS,
            "session": BENCH_SESSION}


def check(reply: dict[str, object]) -> None:
    """The echo's reply is the request itself; the app's must come from session memory."""
    if reply.get("type") != "request" and reply.get("decided_by") != "session":
        raise AssertionError(f"not answered from session memory: {reply}")


class LineClient:
    """A blocking unix-socket client of one JSON line out, one JSON line in."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer = b""
        self.count = 0
        self.exchange(hello())

    def exchange(self, message: dict[str, object]) -> dict[str, object]:
        self.sock.sendall(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        while b"\n" not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        reply: dict[str, object] = json.loads(line)
        return reply

    def request(self) -> dict[str, object]:
        self.count += 1
        return self.exchange(request(self.count))

    def timed(self, rounds: int) -> list[float]:
        samples = []
        clock = time.perf_counter
        for _ in range(rounds):
            start = clock()
            reply = self.request()
            samples.append(clock() - start)
        check(reply)
        return samples

    def close(self) -> None:
        self.sock.close()


def measure(paths: dict[str, str], rounds: int, block: int = BLOCK) -> dict[str, list[float]]:
    """Seconds per round trip for each server, measured in alternating blocks of ``block``."""
    clients = {kind: LineClient(path) for kind, path in paths.items()}
    try:
        for client in clients.values():
            client.timed(min(200, rounds))  # warm up: first-sight risk assessment, caches, allocations
        samples: dict[str, list[float]] = {kind: [] for kind in clients}
        for _ in range(max(1, rounds // block)):
            for kind, client in clients.items():
                samples[kind] += client.timed(block)
        return samples
    finally:
        for client in clients.values():
            client.close()


def target(samples: dict[str, list[float]]) -> Target:
    return Target("session-memory round trip, real app / echo (p50)",
                  percentile(samples["app"], 0.5) / percentile(samples["echo"], 0.5), TARGET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3000, help="round trips per server (default 3000)")
    add_server_options(parser)
    options = parser.parse_args()
    with servers(*server_kinds(options)) as started:
        samples = measure({each.kind: each.path for each in started}, options.rounds)
    floor = percentile(samples["echo"], 0.5)
    for kind, values in samples.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"{kind:24s} p50 {p50 * 1e6:6.0f} µs  p99 {p99 * 1e6:6.0f} µs  ({p50 / floor:.2f}x echo)")
    return report([target(samples)])


if __name__ == "__main__":
    sys.exit(main())
