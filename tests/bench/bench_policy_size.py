"""Rules at any size (issue 34, item 3): a rule-answered call with 10 and with 50,000 rules.

    .venv/bin/python tests/bench/bench_policy_size.py [--rules 50000]

The call goes through the broker's triage (reading, risk, rules, the audit log's commit), as on
the server's way in; the 50,000 rules (about 3.4 MB) name many tools and programs, as a generated
file would. Also: the file's reading (off the event loop in the app) and the explain view, which
still checks every rule. Prints rows for BENCHMARKS.md; never asserted in tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from desktop_approver.core.decisions.broker import Broker  # noqa: E402
from desktop_approver.core.decisions.tickets import Identity  # noqa: E402
from desktop_approver.core.messages.models import ToolCall  # noqa: E402
from desktop_approver.core.policy import Policy, PolicyCall  # noqa: E402
from desktop_approver.core.store.audit import AuditLog  # noqa: E402
from tests.support.deciders import ScriptedPerson  # noqa: E402

ANSWERING = '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "ls *"\nnote = "listing is fine"\n\n'


def policy_text(rules: int) -> str:
    """``rules`` rules over many tools and programs, then the one that answers ``ls -la``."""
    kinds = (
        lambda n: f'[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "prog{n} *"\n',
        lambda n: f'[[rule]]\naction = "deny"\ntool = "mcp__srv{n}__run"\nnote = "n{n}"\n',
        lambda n: f'[[rule]]\naction = "ask"\ntool = "Bash"\ncommand = ["tool{n} deploy *", "tool{n} push"]\n',
        lambda n: f'[[rule]]\naction = "allow"\ntool = "mcp__srv{n}__read"\n',
    )
    body = "".join(kinds[n % len(kinds)](n) + "\n" for n in range(max(rules - 1, 0)))
    return "version = 1\n" + body + ANSWERING


def per_call(broker: Broker, rounds: int) -> float:
    who = Identity(agent="bench", cwd=str(ROOT), peer_pid=1, peer_cwd=str(ROOT))
    calls = [ToolCall(tool="Bash", args={"command": "ls -la"})]
    times = []
    for n in range(rounds):
        started = time.perf_counter()
        triage = broker.triage(who, "s", f"r{n}", "request", calls)
        times.append(time.perf_counter() - started)
        assert triage.answered is not None and triage.answered[0].decided_by == "policy", triage
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rules", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    medians = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in (10, args.rules):
            path = Path(tmp) / f"policy-{count}.toml"
            path.write_text(policy_text(count))
            started = time.perf_counter()
            policy, _ = Policy.read(path)
            loaded = time.perf_counter() - started
            broker = Broker(ScriptedPerson(), audit=AuditLog(Path(tmp) / f"audit-{count}.sqlite3"), policy=policy)
            per_call(broker, 20)  # warm
            medians[count] = per_call(broker, args.rounds)
            rows.append((f"{count:,} rules ({path.stat().st_size / 1e6:.1f} MB): read and indexed (in a thread)",
                         f"{loaded:.2f} s"))
            rows.append((f"{count:,} rules: a rule-answered call, triage median", f"{medians[count] * 1e6:.0f} µs"))
            if count == args.rules:
                call = PolicyCall("Bash", {"command": "ls -la"}, risk="safe", understood=True, cwd=str(ROOT))
                started = time.perf_counter()
                policy.explain(call)
                rows.append((f"{count:,} rules: the explain view (checks every rule)",
                             f"{time.perf_counter() - started:.2f} s"))
    rows.append((f"ratio {args.rules:,} / 10 rules, per rule-answered call",
                 f"{medians[args.rules] / medians[10]:.2f}x"))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"| {label:<{width}} | {value} |")


if __name__ == "__main__":
    main()
