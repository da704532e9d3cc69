"""What gathering the facts of a call costs over a tree of 10,000 files (issue 32), and that it
never blocks the event loop.

    .venv/bin/python tests/bench/bench_facts.py [--rounds 40]

Builds a git repository with 10,000 files: ``src/`` tracked (5,000 files, some changed, some
untracked beside them) and ``node_modules/`` ignored build output (5,000 files). Times
:func:`desktop_approver.core.calls.facts.gather` for deletes over each half and over all of it
(every file stat-ed and given git's state), a git discard and a search (the content scan is
bounded at 200 files), warm, ``--rounds`` times each, and reports p50 and p95. Then submits the
largest call through the real broker in approve-all mode while a ticker on the same loop measures
how late it runs: the facts are gathered in an executor, so the loop's worst lag stays near the
ticker's period whatever the tree costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

FILES_PER_HALF = 5_000


def build_tree(root: Path) -> Path:
    from tests.support.projects import git

    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("node_modules/\n")
    for n in range(FILES_PER_HALF):
        folder = repo / "src" / f"pkg{n // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n}.py").write_text(f"value = {n}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tree")
    for n in range(0, FILES_PER_HALF, 500):      # a few changed, a few untracked
        (repo / "src" / f"pkg{n // 100}" / f"mod{n}.py").write_text("changed\n")
        (repo / "src" / f"pkg{n // 100}" / f"new{n}.py").write_text("untracked\n")
    for n in range(FILES_PER_HALF):
        folder = repo / "node_modules" / f"dep{n // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"index{n}.js").write_text("module.exports = 1\n")
    return repo


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def time_gather(repo: Path, command: str, rounds: int) -> tuple[float, float, int]:
    from desktop_approver.core.calls.facts import gather
    from desktop_approver.core.calls.reading import read_call

    reading = read_call("Bash", {"command": command}, str(repo))
    facts = gather(reading, str(repo), budget=30)           # warm: the page cache, detect-secrets' import
    files = sum(loss.files for loss in facts.losses) + facts.scanned
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        facts = gather(reading, str(repo), budget=30)
        times.append((time.perf_counter() - started) * 1000)
        assert facts.complete, facts.why
    return statistics.median(times), percentile(times, 0.95), files


async def loop_lag(repo: Path, command: str) -> tuple[float, float]:
    from desktop_approver.core.decisions import modes
    from desktop_approver.core.decisions.broker import Broker
    from desktop_approver.core.decisions.memory import SessionMemory
    from desktop_approver.core.messages.models import ToolCall
    from desktop_approver.core.store.audit import AuditLog
    from tests.support.deciders import ScriptedPerson, every
    from tests.support.projects import who_in

    tmp = Path(tempfile.mkdtemp())
    broker = Broker(ScriptedPerson(every("deny")), audit=AuditLog(tmp / "audit.sqlite3"), memory=SessionMemory(),
                    mode=modes.ModeState(tmp / "state.json"))
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    period, worst = 0.002, 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        while not done:
            before = time.perf_counter()
            await asyncio.sleep(period)
            worst = max(worst, time.perf_counter() - before - period)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    await broker.submit(who_in(repo), "s", "r", "request", [ToolCall(tool="Bash", args={"command": command})])
    took = time.perf_counter() - started
    done = True
    await task
    broker.audit.close()
    return took * 1000, worst * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = build_tree(Path(tmp))
        print(f"tree: {FILES_PER_HALF * 2:,} files + {FILES_PER_HALF // 500 * 1} untracked; rounds: {options.rounds}")
        print(f"{'call':<34} {'files':>7} {'p50 ms':>8} {'p95 ms':>8}")
        for command in ("rm -rf node_modules", "rm -rf src", "rm -rf src node_modules", "git checkout -- src",
                        "git clean -fdX", "grep -r value src/pkg0"):
            p50, p95, files = time_gather(repo, command, options.rounds)
            print(f"{command:<34} {files:>7,} {p50:>8.1f} {p95:>8.1f}")
        floor = []
        for _ in range(options.rounds):   # what any answer must pay: walking the tree and asking git once
            started = time.perf_counter()
            for _here, _dirs, names in os.walk(repo):
                for name in names:
                    os.lstat(os.path.join(_here, name))
            subprocess.run(["git", "-C", str(repo), "status", "--porcelain=v2", "-z", "--ignored=traditional"],
                           capture_output=True, check=True)
            floor.append((time.perf_counter() - started) * 1000)
        print(f"{'floor: lstat every file + git status':<34} {FILES_PER_HALF * 2:>7,} "
              f"{statistics.median(floor):>8.1f} {percentile(floor, 0.95):>8.1f}")
        took, lag = asyncio.run(loop_lag(repo, "rm -rf src node_modules"))
        print(f"through the broker (approve-all): {took:.1f} ms for the request; the loop's worst lag meanwhile "
              f"{lag:.1f} ms (ticker every 2 ms)")


if __name__ == "__main__":
    main()
