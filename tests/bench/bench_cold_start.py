"""Cold starts of what runs once per tool call: ``import desktop_approver``, ``request``, ``hook``.

    python tests/bench/bench_cold_start.py [--rounds 40] [--against OLD_CHECKOUT]

Prints the median CPU time (user + system, from the kernel's accounting of each finished child) of
each, and its ratio to ``python -c "import json, socket"``, the least a hook written in Python can
do (the request and the hook are answered from session memory by the Qt-free core, ``serve.py
core``), and the number of modules each loads. Each tree's bytecode is compiled first, as pip
does when it installs a wheel: a tree run with ``PYTHONDONTWRITEBYTECODE`` set would otherwise
compile every module on every start and measure the compiler. With ``--against`` (a checkout of an
older commit, e.g. ``git archive BASE | tar -x -C /tmp/base``) both trees are run interleaved,
round by round, so the machine's noise falls on both alike. Used to check that the adapters
(issue 12) left the commands agents run on every call as fast as they were (BENCHMARKS.md).

Runs from any directory: each tree's commands run in that tree, with only that tree on
``PYTHONPATH`` and as ``bench-agent`` (``harness.bench_env``), so the current directory never
shadows the code measured and the calls are the ones the bench server remembers.
"""

from __future__ import annotations

import argparse
import compileall
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from harness import bench_env, server  # noqa: E402
from serve import BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402

MODULE_COUNT = ("import sys; before = set(sys.modules); import desktop_approver\n"
                "first = len(set(sys.modules) - before)\n"
                "import desktop_approver.cli as cli; cli.build_parser(with_module_commands=['hook'])\n"
                "import desktop_approver.client; print(first, len(set(sys.modules) - before))")


def commands(socket: str) -> dict[str, tuple[list[str], str | None]]:
    python = sys.executable
    event = json.dumps({"session_id": BENCH_SESSION, "cwd": str(ROOT), "hook_event_name": "PreToolUse",
                        "tool_name": BENCH_TOOL, "tool_input": BENCH_ARGS})
    return {
        "python -c pass": ([python, "-c", "pass"], None),
        "python -c 'import json, socket'": ([python, "-c", "import json, socket"], None),
        "import desktop_approver": ([python, "-c", "import desktop_approver"], None),
        "desktop-approver request": ([python, "-m", "desktop_approver", "request", "--socket", socket, "--tool",
                                      BENCH_TOOL, "--args", json.dumps(BENCH_ARGS), "--session", BENCH_SESSION], None),
        "desktop-approver hook claude-code (PreToolUse)": (
            [python, "-m", "desktop_approver", "hook", "claude-code", "--socket", socket], event),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--against", type=Path, metavar="OLD_CHECKOUT", help="an older tree to compare with")
    options = parser.parse_args()
    trees = {"this tree": ROOT}
    if options.against:
        trees["--against"] = options.against.resolve()
    for root in trees.values():
        compileall.compile_dir(str(root / "desktop_approver"), quiet=1)
    times: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    with server("core") as socket:
        for _ in range(options.rounds):
            for tree, root in trees.items():
                env = bench_env(root)
                for name, (command, stdin) in commands(socket).items():
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, cwd=root)
                    times.setdefault((tree, name), []).append(time.perf_counter() - start)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu.setdefault((tree, name), []).append(after.ru_utime - before.ru_utime
                                                            + after.ru_stime - before.ru_stime)
                    if done.returncode != 0:
                        raise RuntimeError(f"{name} failed in {root}: {done.stderr}")
    for tree, root in trees.items():
        loaded = subprocess.run([sys.executable, "-c", MODULE_COUNT], capture_output=True, text=True,
                                env=bench_env(root), cwd=root, check=True).stdout.split()
        print(f"{tree} ({root}): import desktop_approver loads {loaded[0]} modules, "
              f"the hook's parser and client {loaded[1]}")
        floor = statistics.median(cpu[(tree, "python -c 'import json, socket'")])
        for name in commands("x"):
            used = statistics.median(cpu[(tree, name)])
            wall = statistics.median(times[(tree, name)])
            print(f"  {name:50s} cpu {used * 1000:6.1f} ms ({used / floor:.2f}x import json, socket)"
                  f"  wall {wall * 1000:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
