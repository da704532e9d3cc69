"""The uncached reader's cost per call, this tree against another, in one run (issue 30).

    .venv/bin/python tests/bench/bench_reader.py --against /tmp/base [--rounds 5]

Every call of the labelled tables (``tests/core/risk_calls*.jsonl``, this tree's) is read by
``risk._assess`` (no verdict cache) in a fresh interpreter per round for each tree, the trees
alternating; before each pass every ``lru_cache`` of ``desktop_approver.core.calls`` but the
shipped catalog is emptied, so each call is read from its words (the per-program parse and path
caches too). Prints the median µs per call of each tree, the ratio of the medians and that of the
best rounds (on a shared machine the best round is the one least disturbed by other work). Make the other tree with
``git archive main | (mkdir -p /tmp/base && tar -x -C /tmp/base)``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORKER = r"""
import functools, gc, json, os, sys, time
sys.path.insert(0, sys.argv[1])
os.environ["HOME"] = "/home/dev"
import importlib, pkgutil
import desktop_approver.core.calls as calls
from desktop_approver.core.calls.risk import _assess
from desktop_approver.core.calls.catalog import shipped_catalog
shipped_catalog()
for info in pkgutil.walk_packages(calls.__path__, calls.__name__ + "."):
    importlib.import_module(info.name)
caches = [obj for name, module in list(sys.modules.items()) if name.startswith("desktop_approver.core.calls")
          for obj in vars(module).values() if hasattr(obj, "cache_clear") and obj is not shipped_catalog]
rows = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
best = None
for _ in range(3):
    for cache in caches:
        cache.cache_clear()
    gc.collect()
    start = time.perf_counter()
    for row in rows:
        _assess(row["tool"], row["args"], row["cwd"], None)
    took = (time.perf_counter() - start) / len(rows)
    best = took if best is None else min(best, took)
print(best * 1e6)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="another tree of the project (e.g. main)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    calls = Path("/tmp") / "bench_reader_calls.jsonl"
    with calls.open("w", encoding="utf-8") as out:
        for table in sorted((ROOT / "tests" / "core").glob("risk_calls*.jsonl")):
            for line in table.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    out.write(json.dumps({"tool": row["tool"], "args": row["args"], "cwd": row["cwd"]}) + "\n")
    times: dict[str, list[float]] = {"this tree": [], "against": []}
    for _ in range(args.rounds):
        for label, tree in (("this tree", ROOT), ("against", Path(args.against))):
            done = subprocess.run([sys.executable, "-c", WORKER, str(tree), str(calls)], capture_output=True,
                                  text=True, cwd="/", check=True)
            times[label].append(float(done.stdout.strip()))
    rows = sum(1 for _ in calls.open(encoding="utf-8"))
    mine, theirs = statistics.median(times["this tree"]), statistics.median(times["against"])
    print(f"{rows} calls, {args.rounds} rounds alternating, best of 3 passes each")
    print(f"this tree: {mine:.0f} µs a call (rounds: {', '.join(f'{t:.0f}' for t in times['this tree'])})")
    print(f"against:   {theirs:.0f} µs a call (rounds: {', '.join(f'{t:.0f}' for t in times['against'])})")
    print(f"ratio of the medians: {mine / theirs:.2f}x; of the best rounds (least disturbed by other work on "
          f"the machine): {min(times['this tree']) / min(times['against']):.2f}x")


if __name__ == "__main__":
    main()
