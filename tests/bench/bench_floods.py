"""Floods that end together (issue 34, item 5), in-process on the real server and audit log.

    .venv/bin/python tests/bench/bench_floods.py [--requests 1000] [--withdrawn 20000]

1. ``--requests`` requests from one agent, all timing out at the same moment: the longest the event
   loop was held meanwhile (a 1 ms ticker's longest gap), and how long another agent's request with
   a 1 s timeout took to be answered while they did.
2. ``--withdrawn`` requests asked and withdrawn (cancel) one after the other: the app's memory
   (tracemalloc) after the first 1,000 and after all of them.
Prints rows for BENCHMARKS.md; never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from desktop_approver.core.service import ApproverService, ServiceOptions  # noqa: E402
from tests.support.deciders import WaitingPerson  # noqa: E402


def line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


HELLO = line({"v": 1, "type": "hello", "client": {"agent": "flood", "pid": 1}})


def request(request_id: str, timeout: float) -> bytes:
    return line({"v": 1, "type": "request", "id": request_id, "tool": "Bash",
                 "args": {"command": f"rm -rf build-{request_id}"}, "timeout": timeout})


async def read_until(reader: asyncio.StreamReader, count: int) -> None:
    for _ in range(count):
        await reader.readline()


async def timeouts_together(service: ApproverService, path: Path, requests: int) -> tuple[float, float]:
    longest = 0.0
    ticking = True

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while ticking:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(HELLO + b"".join(request(f"f{n}", 3.0) for n in range(requests)))
    await reader.readline()  # welcome
    while service.broker.status()["pending"] < requests:
        await asyncio.sleep(0.01)
    tick = asyncio.create_task(ticker())
    other_reader, other_writer = await asyncio.open_unix_connection(str(path))
    await asyncio.sleep(max(0.0, 3.0 - 1.0 - 0.5))  # the other agent asks half a second before the flood ends
    started = time.perf_counter()
    other_writer.write(HELLO + request("other", 1.0))
    await other_reader.readline()
    await other_reader.readline()
    other = time.perf_counter() - started
    await read_until(reader, requests)
    ticking = False
    await tick
    for each in (writer, other_writer):
        each.close()
    return longest, other


async def withdrawn(service: ApproverService, path: Path, count: int) -> list[tuple[int, float]]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(HELLO)
    await reader.readline()
    sizes = []
    for n in range(count):
        writer.write(request(f"w{n}", 60.0) + line({"v": 1, "type": "cancel", "id": f"w{n}"}))
        await reader.readline()
        if n + 1 in (5000, count):
            gc.collect()
            sizes.append((n + 1, tracemalloc.get_traced_memory()[0] / 2**20))
    writer.close()
    return sizes


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run" / "approver.sock"
        options = ServiceOptions(socket_path=path, audit_path=Path(tmp) / "audit.sqlite3", max_pending_per_client=10**6)
        service = ApproverService(options, WaitingPerson())
        await service.start()
        try:
            longest, other = await timeouts_together(service, path, args.requests)
            print(f"| {args.requests:,} requests timing out together: longest loop hold | {longest * 1000:.0f} ms |")
            print(f"| another agent's 1 s request meanwhile, answered after | {other:.2f} s |")
            tracemalloc.start()
            sizes = await withdrawn(service, path, args.withdrawn)
            tracemalloc.stop()
            (first, at_first), (last, at_last) = sizes
            print(f"| memory after {first:,} / {last:,} withdrawn requests (tracemalloc) | {at_first:.1f} MiB / "
                  f"{at_last:.1f} MiB (+{(at_last - at_first) * 1024 / (last - first):.2f} KiB each) |")
        finally:
            await service.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--withdrawn", type=int, default=20000)
    asyncio.run(main(parser.parse_args()))
