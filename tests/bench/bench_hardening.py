"""Figures for the hardening section of BENCHMARKS.md (issue 10), in-process and single-threaded.

    .venv/bin/python tests/bench/bench_hardening.py

Prints rows; the section is kept by hand in BENCHMARKS.md together with the reliability suite's
figures (``pytest tests/reliability -s`` prints them at the end). Never asserted in tests.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from desktop_approver.client import wire  # noqa: E402
from desktop_approver.core.messages.protocol import decode  # noqa: E402
from desktop_approver.core.policy import Policy  # noqa: E402


def best_of(runs: int, action) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def policy_text(rules: int) -> str:
    return "version = 1\n" + "".join(f'[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "cmd{i} *"\n'
                                     f'note = "rule {i}"\n\n' for i in range(rules))


def main() -> None:
    import tomllib

    rows = []
    for rules in (2000, 8000):
        text = policy_text(rules)
        total = best_of(3, lambda text=text: Policy.parse(text, "bench.toml"))
        toml = best_of(3, lambda text=text: tomllib.loads(text))
        rows.append((f"policy file of {rules:,} rules: load (of which tomllib)", f"{total:.2f} s ({toml:.2f} s)"))
    line = b"x" * (1024 * 1024)

    def trickle() -> None:
        framer = wire.LineFramer(limit=2 * len(line))
        for index in range(len(line)):
            for _ in framer.feed(line[index:index + 1]):
                pass
        assert list(framer.feed(b"\n")) == [line]

    rows.append(("framer: a 1 MiB line fed one byte at a time", f"{best_of(1, trickle):.2f} s"))
    huge = b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"n": ' + b"9" * 5000 + b"}}"
    rows.append(("refusing a line with a 5,000-digit integer", f"{best_of(200, lambda: decode(huge)) * 1e6:.0f} µs"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"| {label:<{width}} | {value} |")


if __name__ == "__main__":
    main()
