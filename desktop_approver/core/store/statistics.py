"""Numbers from the audit log for the statistics tab: who asks, when, who decides, how fast (Qt-free).

Read-only queries on the audit database; the app's own connection is never shared.
"""

from __future__ import annotations

import sqlite3
import statistics as stats
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Statistics:
    requests: int = 0
    per_agent: list[tuple[str, int]] = field(default_factory=list)
    per_day: list[tuple[str, int]] = field(default_factory=list)      # newest day first
    decided_by: list[tuple[str, int]] = field(default_factory=list)   # person, rule, session, mode, timeout...
    median_seconds_to_decide: float | None = None                     # the person's decisions only
    rule_uses: dict[str, int] = field(default_factory=dict)           # the audit's rule text -> answers


DECIDED_BY_NAMES = {"user": "person", "policy": "rule", "session": "session memory", "mode": "mode",
                    "timeout": "timeout", "cancelled": "cancelled"}


def compute(audit_path: Path | str, days: int = 14) -> Statistics:
    path = Path(audit_path)
    if not path.exists():
        return Statistics()
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        requests = db.execute("SELECT count(*) FROM requests").fetchone()[0]
        per_agent = db.execute("SELECT coalesce(agent, '(unnamed)'), count(*) FROM requests GROUP BY 1 "
                               "ORDER BY 2 DESC, 1").fetchall()
        per_day = db.execute("SELECT date(created, 'unixepoch', 'localtime'), count(*) FROM requests GROUP BY 1 "
                             "ORDER BY 1 DESC LIMIT ?", (days,)).fetchall()
        decided_by = db.execute("SELECT decided_by, count(*) FROM decisions GROUP BY 1 ORDER BY 2 DESC").fetchall()
        waits = [row[0] for row in db.execute(
            "SELECT d.decided - r.created FROM decisions d JOIN requests r ON d.request = r.id "
            "WHERE d.decided_by = 'user'")]
        rules = dict(db.execute("SELECT rule, count(*) FROM decisions WHERE decided_by = 'policy' "
                                "AND rule IS NOT NULL GROUP BY rule").fetchall())
    finally:
        db.close()
    return Statistics(requests, [(a, n) for a, n in per_agent], [(d, n) for d, n in per_day],
                      [(DECIDED_BY_NAMES.get(by, by), n) for by, n in decided_by],
                      stats.median(waits) if waits else None, rules)


def uses_of(summary: str, rule_uses: dict[str, int]) -> int:
    """How often a rule answered: audit entries name a rule as "<where>: <summary>"."""
    return sum(count for text, count in rule_uses.items() if text.endswith(": " + summary))
