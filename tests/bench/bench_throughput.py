"""Throughput with 50 concurrent clients, the real app against a plain asyncio echo, in one run.

    python tests/bench/bench_throughput.py [--clients 50] [--requests 100] [--runs 3]

Both servers are up at once; the same 50 asyncio clients (one process, one connection each, one
request at a time, the next sent when the answer is in) run against the echo and against the app
in turn, ``--runs`` times each, and the medians are compared. Every request is one the app
answers at once, from session memory (``serve.py``), so what is measured is the app's own work
per request, not a person. The target is the app's requests per second at least half the
echo's; the process exits with 1 when it is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_round_trip import check, hello, request  # noqa: E402
from harness import Target, add_server_options, report, server_kinds, servers  # noqa: E402

TARGET = 0.5
"""The app's throughput at least this share of the echo's (issue 11)."""
CLIENTS = 50


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def throughput(path: str, clients: int, per_client: int) -> float:
    """Requests per second of ``clients`` connections, each sending ``per_client`` in sequence."""
    connections = [await asyncio.open_unix_connection(path) for _ in range(clients)]
    for _, writer in connections:
        writer.write(_line(hello()))
    for reader, _ in connections:
        await reader.readline()

    async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> dict[str, object]:
        reply: dict[str, object] = {}
        for number in range(per_client):
            writer.write(_line(request(number)))
            reply = json.loads(await reader.readline())
        return reply

    start = time.perf_counter()
    replies = await asyncio.gather(*(run(reader, writer) for reader, writer in connections))
    elapsed = time.perf_counter() - start
    for reply in replies:
        check(reply)
    for _, writer in connections:
        writer.close()
        await writer.wait_closed()
    return clients * per_client / elapsed


def measure(paths: dict[str, str], clients: int, per_client: int, runs: int) -> dict[str, list[float]]:
    """Requests per second of each server, ``runs`` times, alternating between the servers."""
    results: dict[str, list[float]] = {kind: [] for kind in paths}
    for path in paths.values():
        asyncio.run(throughput(path, clients, max(1, per_client // 10)))  # warm up
    for _ in range(runs):
        for kind, path in paths.items():
            results[kind].append(asyncio.run(throughput(path, clients, per_client)))
    return results


def target(results: dict[str, list[float]]) -> Target:
    return Target(f"throughput, {CLIENTS} clients, real app / echo (medians)",
                  statistics.median(results["app"]) / statistics.median(results["echo"]), TARGET,
                  at_most=False, unit="%")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--requests", type=int, default=100, help="requests per client and run (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="runs against each server (default 3)")
    add_server_options(parser)
    options = parser.parse_args()
    with servers(*server_kinds(options)) as started:
        results = measure({each.kind: each.path for each in started}, options.clients, options.requests,
                          options.runs)
    echo = statistics.median(results["echo"])
    for kind, values in results.items():
        runs = ", ".join(f"{value:,.0f}" for value in values)
        print(f"{kind:24s} {statistics.median(values):9,.0f} requests/s  "
              f"({statistics.median(values) / echo:4.0%} of echo; runs: {runs})")
    return report([target(results)])


if __name__ == "__main__":
    sys.exit(main())
