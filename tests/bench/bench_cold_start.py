"""Cold starts of what runs once per tool call: ``import desktop_approver``, ``request``, ``hook``.

    .venv/bin/python tests/bench/bench_cold_start.py [--rounds 25]

Prints the median of each, against ``python -c pass``, with the Qt-free core (``serve.py core``)
answering from session memory. Used to check that the adapters (issue 12) did not make the
commands agents run on every call any slower; the numbers are recorded in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from run_bench import cold_start, server  # noqa: E402
from serve import BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25)
    rounds = parser.parse_args().rounds
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    python = sys.executable
    event = json.dumps({"session_id": BENCH_SESSION, "cwd": str(ROOT), "hook_event_name": "PreToolUse",
                        "tool_name": BENCH_TOOL, "tool_input": BENCH_ARGS})
    rows = {"python -c pass": cold_start([python, "-c", "pass"], rounds),
            "import desktop_approver": cold_start([python, "-c", "import desktop_approver"], rounds, env)}
    with server("core") as path:
        request = [python, "-m", "desktop_approver", "request", "--socket", path, "--tool", BENCH_TOOL,
                   "--args", json.dumps(BENCH_ARGS), "--session", BENCH_SESSION]
        hook = [python, "-m", "desktop_approver", "hook", "claude-code", "--socket", path]
        check = subprocess.run(hook, input=event, capture_output=True, text=True, env=env)
        assert '"allow"' in check.stdout, check
        rows["desktop-approver request"] = cold_start(request, rounds, env)
        rows["desktop-approver hook claude-code (PreToolUse)"] = _cold_start_with_stdin(hook, event, rounds, env)
    for name, seconds in rows.items():
        print(f"{name:50s} {seconds * 1000:6.1f} ms  ({seconds / rows['python -c pass']:.2f}x python -c pass)")
    return 0


def _cold_start_with_stdin(command: list[str], stdin: str, rounds: int, env: dict[str, str]) -> float:
    import statistics
    import time

    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    sys.exit(main())
