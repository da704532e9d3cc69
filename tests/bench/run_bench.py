"""The benchmark: ratios measured in one run, printed and written to BENCHMARKS.md.

    .venv/bin/python tests/bench/run_bench.py            # full run, rewrites BENCHMARKS.md
    .venv/bin/python tests/bench/run_bench.py --quick    # fewer rounds, prints only

Runs from any directory and from a fresh shell (``harness``). Compares (1) session-memory round
trips of one thin JSON-line client against a bare asyncio echo, the real app (Qt loop, GUI
included) and the Qt-free core, all up at once and measured interleaved; (2) throughput with 50
concurrent clients, the app against the echo; (3) the app's idle memory against a bare PySide6 +
qasync tray with a socket; (4) the cold start of ``desktop-approver request`` against ``python -c
pass`` and ``python -c "import json, socket"``; (5) a 10,000-line diff in the preview: its first
paint against a 100-line diff's, until every change is reachable, and the longest event-loop gap
while it renders (``bench_diff_paint``, the medians of three rounds, each in a fresh process). The targets are ratios or
waits within this one run; the exit status is 1 when one is missed (BENCHMARKS.md is written all
the same). The throughput target of issue 11 is retired (the report says why); its figure stays.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_diff_paint  # noqa: E402
import bench_idle_rss  # noqa: E402
import bench_round_trip  # noqa: E402
import bench_throughput  # noqa: E402
from harness import ROOT, Target, bench_env, percentile, report, server, servers  # noqa: E402
from serve import BENCH_AGENT, BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402


def cold_start(command: list[str], rounds: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_call(function: Callable[[], object], number: int = 3000) -> float:
    """Median seconds per call of ``function`` over 5 batches (in this process, no socket)."""
    import timeit

    return statistics.median(timeit.repeat(function, number=number, repeat=5)) / number


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds; do not rewrite BENCHMARKS.md")
    args = parser.parse_args()
    rounds = 500 if args.quick else 3000
    starts = 5 if args.quick else 25
    targets: list[Target] = []

    kinds = ("echo", "app", "core", "core-memory-audit")
    with servers(*kinds) as started:
        samples = bench_round_trip.measure({each.kind: each.path for each in started}, rounds)
    targets.append(bench_round_trip.target(samples))
    with servers("echo", "app") as started:
        flows = bench_throughput.measure({each.kind: each.path for each in started}, bench_throughput.CLIENTS,
                                         20 if args.quick else 100, 1 if args.quick else 3)
    # bench_throughput.target(flows) is retired: see the report's "Retired targets".
    app_rss, bare_rss = bench_idle_rss.measure(1.0 if args.quick else 3.0)
    targets.append(bench_idle_rss.target(app_rss, bare_rss))

    with server("app") as path:
        env = bench_env()
        request_cmd = [sys.executable, "-m", "desktop_approver", "request", "--socket", path, "--tool", BENCH_TOOL,
                       "--args", json.dumps(BENCH_ARGS), "--session", BENCH_SESSION, "--agent", BENCH_AGENT]
        check = subprocess.run(request_cmd, capture_output=True, env=env, cwd=ROOT, text=True)
        assert check.returncode == 0 and '"session"' in check.stdout, check
        cold_request = cold_start(request_cmd, starts, env)
    cold_pass = cold_start([sys.executable, "-c", "pass"], starts, bench_env())
    cold_json = cold_start([sys.executable, "-c", "import json, socket"], starts, bench_env())
    paint = bench_diff_paint.run_rounds(ROOT, 1 if args.quick else 3)
    targets.extend(bench_diff_paint.targets(paint))
    from desktop_approver.core.calls.risk import _assess, assess
    from desktop_approver.core.messages.protocol import decode

    line = json.dumps(bench_round_trip.request(1)).encode()
    decode_cost = per_call(lambda: decode(line))
    risk_first = per_call(lambda: _assess(BENCH_TOOL, BENCH_ARGS, str(ROOT), None))
    risk_again = per_call(lambda: assess(BENCH_TOOL, BENCH_ARGS, cwd=str(ROOT)))

    us = lambda s: f"{s * 1e6:.0f} µs"  # noqa: E731
    ms = lambda s: f"{s * 1e3:.1f} ms"  # noqa: E731
    floor = percentile(samples["echo"], 0.5)

    def trip(kind: str) -> str:
        p50, p99 = percentile(samples[kind], 0.5), percentile(samples[kind], 0.99)
        return f"{us(p50)} / {us(p99)} ({p50 / floor:.2f}x floor)"

    echo_flow, app_flow = statistics.median(flows["echo"]), statistics.median(flows["app"])
    rows = [
        ("bare asyncio echo, same line (floor) p50 / p99",
         f"{us(floor)} / {us(percentile(samples['echo'], 0.99))}"),
        ("session-memory round trip, Qt-free core p50 / p99", trip("core")),
        ("same, Qt-free core with the audit log in memory p50 / p99", trip("core-memory-audit")),
        ("session-memory round trip, real app (Qt loop, GUI) p50 / p99", trip("app")),
        ("of which: validating the request line (pydantic)", us(decode_cost)),
        ("of which: risk assessment, first sight / repeated call (cached)", f"{us(risk_first)} / {us(risk_again)}"),
        ("throughput, 50 concurrent clients, plain asyncio echo", f"{echo_flow:,.0f} requests/s"),
        ("throughput, 50 concurrent clients, real app",
         f"{app_flow:,.0f} requests/s ({app_flow / echo_flow:.0%} of echo)"),
        ("idle RSS, bare PySide6 + qasync tray with a socket", f"{bare_rss / 2**20:.1f} MiB"),
        ("idle RSS, real app (`desktop-approver tray`)", f"{app_rss / 2**20:.1f} MiB ({app_rss / bare_rss:.2f}x)"),
        ("cold start `python -c pass` (median)", ms(cold_pass)),
        ('cold start `python -c "import json, socket"` (median)', ms(cold_json)),
        ("cold start `desktop-approver request` incl. round trip (median)",
         f"{ms(cold_request)} ({cold_request / cold_pass:.2f}x `python -c pass`, "
         f"{cold_request / cold_json:.2f}x the json+socket import)"),
    ]
    rows += [
        ("first paint of a diff, 100 / 10,000 lines",
         f"{ms(paint['small_first_paint_s'])} / {ms(paint['first_paint_s'])} ({paint['first_paint_ratio']:.2f}x)"),
        ("10,000-line diff: every change reachable with n/p (p shows the last)", ms(paint["navigable_s"])),
        ("10,000-line diff: fully rendered; longest event-loop gap meanwhile (and with nothing to render)",
         f"{paint['full_render_s']:.1f} s; {ms(paint['longest_gap_s'])} ({ms(paint['idle_gap_s'])})"),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    status = report(targets)
    if not args.quick:
        write_report(rows, targets, rounds, starts)
    return status


def write_report(rows: list[tuple[str, str]], targets: list[Target], rounds: int, starts: int) -> None:
    body = "\n".join(f"| {label} | {value} |" for label, value in rows)
    goals = "\n".join(f"| {target.name} | {target.shown(target.ratio)} | {target.bound} | {target.verdict} |"
                      for target in targets)
    text = f"""# Benchmarks

Measured by `.venv/bin/python tests/bench/run_bench.py` (this file is rewritten by it; it runs
from any directory, in a fresh shell, and always measures the checkout it belongs to). All
numbers come from one run on one machine, so compare the ratios, not the absolute times: the
machines are shared and noisy. Speed is never asserted in the tests; the runner exits with 1 when
a target below is missed. Each target also has a script of its own in `tests/bench/`
(`bench_round_trip.py`, `bench_throughput.py`, `bench_idle_rss.py`; `--against TREE` adds another
checkout's app to the same run).

- Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}
- Round trips: {rounds} sequential requests over one connection per server, each answered from
  session memory (the call was remembered with "Allow for session"). Every server is up at once
  and the same thin client (one JSON line out, one JSON line back, `json` on its side) measures
  them in alternating blocks, so the machine's noise falls on all alike. The floor is a bare
  asyncio unix-socket server that writes each line back.
- "Audit log in memory" runs the same core with SQLite in memory: the difference to the row above
  is what committing every request and decision to disk (WAL) before answering costs.
- "Of which" rows time the two biggest steps of a request on their own, in-process: validating
  the line against the pydantic models, and the risk classifier parsing the shell command (the
  first time it sees a call; repeats come from a cache keyed by the call's canonical JSON).
- A call answered without a person (session memory, a rule, the mode) is written to the audit log
  with its decision in the commit that every call answered in the same loop turn shares, made when
  the turn ends, and the agent hears the answer only after it; a call that waits for the person is
  committed before anyone is asked.
  Copying the write-ahead log back into the database (with its disk syncs) is done by a thread of
  the audit log's own, never inside a commit.
- Throughput: 50 asyncio clients in one process, one connection each, each sending its next
  request when the answer to the last is in, against the echo and the app in turn (medians of 3).
- Idle RSS: `desktop-approver tray` in a private HOME (no policy file, notifications on) and the
  bare tray, both offscreen and side by side, after 3 s of idleness (VmRSS, the largest of three).
- Cold starts: the median of {starts} runs of each command, the request one answered from session memory.
- Large diff: `bench_diff_paint.py` (a Python file edited every other line), medians of three
  rounds, each in a fresh process after a warm-up of each size. "Every change reachable" is the
  time until `p`, pressed as soon as the view knows every change, has the last one on screen. The
  loop gap is the longest between two ticks of a 1 ms timer from the first paint to the last row;
  in brackets, the longest gap of the same timer over 2 s with nothing to render: the floor that
  the load of these shared cores puts under it.

| what | result |
| --- | --- |
{body}

## Targets, each within this run

Issue 11's round trip and idle memory, issue 23's large diff (its first paint against a 100-line
diff's; every change reachable with n/p; no event-loop stall while the rest renders, measured as
the longest gap between the ticks of a 1 ms timer). `tests/bench/bench_diff_paint.py --against TREE`
puts another checkout's figures beside them.

| target | now | aim | |
| --- | --- | --- | --- |
{goals}

### Retired targets

- Throughput with 50 clients at half of a bare asyncio echo (issue 11): retired by issue 23. The
  app answers 4,400–5,100 requests a second, three orders of magnitude beyond what people
  approving agents' calls can produce, and what is left to close is Python spread over every step
  of a request (see "Issue 11" below): closing it would cost the code its clarity. The figure is
  still measured (the throughput rows above) so that a regression shows.
- The first cut aimed at a session-memory round trip under 3x the floor (since tightened to 2.5x)
  and a cold start within 2x of `python -c "import json, socket"` (issue 23 sets the hook's).

Read the round-trip rows against each other: the difference between the two core rows is the
durable audit commit, the difference between the core and the app rows is the Qt event loop
(qasync) that the app's requests share with the GUI.
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
