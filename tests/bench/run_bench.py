"""The benchmark: ratios measured in one run, printed and written to BENCHMARKS.md.

    .venv/bin/python tests/bench/run_bench.py            # full run, rewrites BENCHMARKS.md
    .venv/bin/python tests/bench/run_bench.py --quick    # fewer rounds, prints only

Compares (1) session-memory round trips through ``Client`` against a bare asyncio echo of the
same message size (the floor), through the real app (Qt loop, GUI included) and through the
Qt-free core; (2) throughput with 50 concurrent clients; (3) the cold start of
``desktop-approver request`` against ``python -c pass`` and ``python -c "import json, socket"``;
(4) time to first paint of a 10,000-line diff.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from serve import BENCH_AGENT, BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402

from desktop_approver import AsyncClient, Client  # noqa: E402
from desktop_approver._client_base import ClientProtocol  # noqa: E402
from desktop_approver.wire import encode  # noqa: E402


@contextmanager
def server(kind: str) -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="approver-bench-")
    os.chmod(folder, 0o700)
    path = os.path.join(folder, "s.sock")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(HERE / "serve.py"), kind, path], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"{kind} server did not start")
        yield path
    finally:
        proc.terminate()
        proc.wait(10)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def request_line() -> bytes:
    _, message = ClientProtocol(session=BENCH_SESSION).request(
        BENCH_TOOL, BENCH_ARGS, session=BENCH_SESSION, description=None, preview=None, timeout=None, hints=None)
    return encode(message)


def floor_round_trips(path: str, rounds: int) -> list[float]:
    line = request_line()
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        sock.sendall(line)
        received = b""
        while not received.endswith(b"\n"):
            received += sock.recv(65536)
        samples.append(time.perf_counter() - start)
    sock.close()
    return samples


def client_round_trips(path: str, rounds: int) -> list[float]:
    client = Client(path, agent=BENCH_AGENT, session=BENCH_SESSION)
    client.request(BENCH_TOOL, BENCH_ARGS)  # connect + hello outside the timing
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        decision = client.request(BENCH_TOOL, BENCH_ARGS)
        samples.append(time.perf_counter() - start)
        assert decision.decided_by == "session", decision
    client.close()
    return samples


async def _throughput(path: str, clients: int, per_client: int) -> float:
    agents = [AsyncClient(path, agent=BENCH_AGENT, session=BENCH_SESSION) for _ in range(clients)]

    async def run(agent: AsyncClient) -> None:
        for _ in range(per_client):
            decision = await agent.request(BENCH_TOOL, BENCH_ARGS)
            assert decision.decided_by == "session"

    await asyncio.gather(*(agent.status() for agent in agents))
    start = time.perf_counter()
    await asyncio.gather(*(run(agent) for agent in agents))
    elapsed = time.perf_counter() - start
    await asyncio.gather(*(agent.aclose() for agent in agents))
    return clients * per_client / elapsed


def cold_start(command: list[str], rounds: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_call(function: Callable[[], object], number: int = 3000) -> float:
    """Median seconds per call of ``function`` over 5 batches (in this process, no socket)."""
    import timeit

    return statistics.median(timeit.repeat(function, number=number, repeat=5)) / number


def first_paint(lines: int) -> float | None:
    try:
        from bench_diff_paint import measure_first_paint
    except ImportError:
        return None
    return measure_first_paint(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds; do not rewrite BENCHMARKS.md")
    args = parser.parse_args()
    rounds = 300 if args.quick else 3000
    starts = 5 if args.quick else 25
    rows: list[tuple[str, str]] = []

    with server("echo") as path:
        floor = percentiles(floor_round_trips(path, rounds))
    with server("core") as path:
        core = percentiles(client_round_trips(path, rounds))
    with server("core-memory-audit") as path:
        core_memory = percentiles(client_round_trips(path, rounds))
    with server("app") as path:
        app = percentiles(client_round_trips(path, rounds))
        throughput = asyncio.run(_throughput(path, 50, 20 if args.quick else 100))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        request_cmd = [sys.executable, "-m", "desktop_approver", "request", "--socket", path, "--tool", BENCH_TOOL,
                       "--args", json.dumps(BENCH_ARGS), "--session", BENCH_SESSION, "--agent", BENCH_AGENT]
        check = subprocess.run(request_cmd, capture_output=True, env=env, text=True)
        assert check.returncode == 0 and '"session"' in check.stdout, check
        cold_request = cold_start(request_cmd, starts, env)
    cold_pass = cold_start([sys.executable, "-c", "pass"], starts)
    cold_json = cold_start([sys.executable, "-c", "import json, socket"], starts)
    paint = first_paint(10_000)
    from desktop_approver.core.protocol import decode
    from desktop_approver.core.risk import _assess, assess

    line = request_line().rstrip(b"\n")
    decode_cost = per_call(lambda: decode(line))
    risk_first = per_call(lambda: _assess(BENCH_TOOL, BENCH_ARGS, str(ROOT), None))
    risk_again = per_call(lambda: assess(BENCH_TOOL, BENCH_ARGS, cwd=str(ROOT)))

    us = lambda s: f"{s * 1e6:.0f} µs"  # noqa: E731
    ms = lambda s: f"{s * 1e3:.1f} ms"  # noqa: E731
    rows += [
        ("bare asyncio echo, same line (floor) p50 / p99", f"{us(floor[0])} / {us(floor[1])}"),
        ("session-memory round trip, Qt-free core p50 / p99", f"{us(core[0])} / {us(core[1])} ({core[0] / floor[0]:.2f}x floor)"),
        ("same, Qt-free core with the audit log in memory p50 / p99",
         f"{us(core_memory[0])} / {us(core_memory[1])} ({core_memory[0] / floor[0]:.2f}x floor)"),
        ("session-memory round trip, real app (Qt loop, GUI) p50 / p99",
         f"{us(app[0])} / {us(app[1])} ({app[0] / floor[0]:.2f}x floor)"),
        ("of which: validating the request line (pydantic)", us(decode_cost)),
        ("of which: risk assessment, first sight / repeated call (cached)",
         f"{us(risk_first)} / {us(risk_again)}"),
        ("throughput, 50 concurrent AsyncClients, real app", f"{throughput:,.0f} requests/s"),
        ("cold start `python -c pass` (median)", ms(cold_pass)),
        ('cold start `python -c "import json, socket"` (median)', ms(cold_json)),
        ("cold start `desktop-approver request` incl. round trip (median)",
         f"{ms(cold_request)} ({cold_request / cold_pass:.2f}x `python -c pass`, "
         f"{cold_request / cold_json:.2f}x the json+socket import)"),
    ]
    if paint is not None:
        rows.append(("10,000-line diff: set_content to first paint", ms(paint)))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    if not args.quick:
        write_report(rows, rounds, starts)
    return 0


def write_report(rows: list[tuple[str, str]], rounds: int, starts: int) -> None:
    body = "\n".join(f"| {label} | {value} |" for label, value in rows)
    text = f"""# Benchmarks

Measured by `.venv/bin/python tests/bench/run_bench.py` (this file is rewritten by it). All
numbers come from one run on one machine, so compare the ratios, not the absolute times: the
machines are shared and noisy. Speed is never asserted in the tests.

- Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}
- Round trips: {rounds} sequential requests over one connection, each answered from session memory
  (the call was remembered with "Allow for session"), against a bare asyncio unix-socket echo of the
  same request line in its own process.
- "Audit log in memory" runs the same core with SQLite in memory: the difference to the row above
  is what committing every request and decision to disk (WAL) before answering costs.
- "Of which" rows time the two biggest steps of a request on their own, in-process: validating
  the line against the pydantic models, and the risk classifier parsing the shell command (the
  first time it sees a call; repeats come from a cache keyed by the call's canonical JSON).
- A call answered without a person (session memory, a rule, the mode) is answered in the same
  loop step that read it, and written to the audit log with its decision in one commit before the
  agent hears the answer; a call that waits for the person is committed before anyone is asked.
- Cold starts: the median of {starts} runs of each command, the request one answered from session memory.

| what | result |
| --- | --- |
{body}

The first cut aimed at a session-memory round trip under 3x the floor and a cold start within 2x
of `python -c "import json, socket"`. Read the rows above against them: the difference between the
two core rows is the durable audit commit, the difference between the core and the app rows is the
Qt event loop (qasync) that the app's requests share with the GUI.
"""
    (ROOT / "BENCHMARKS.md").write_text(text + kept_sections())


KEPT_MARKER = "<!-- Sections below are written by other benchmark scripts; run_bench.py keeps them. -->"


def kept_sections() -> str:
    """What other benchmark scripts recorded below the marker, carried over on a rewrite."""
    try:
        old = (ROOT / "BENCHMARKS.md").read_text()
    except OSError:
        return ""
    at = old.find(KEPT_MARKER)
    return "\n" + old[at:] if at >= 0 else ""


if __name__ == "__main__":
    sys.exit(main())
