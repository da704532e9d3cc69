"""The labelled tables and the figures issue 19 asks for, shared by the tests and the printing script.

Six tables: the three risk tables of issue 9 (levels only), ``risk_calls_understood.jsonl`` (the
families of issue 19 in eight agents' argument shapes, each row saying whether it must be
understood), ``risk_calls_catalog.jsonl`` (an everyday call for every catalog entry the others
do not use, also with ``understood``) and ``risk_calls_redteam.jsonl`` (the families the red team
of issue 19 found, with near variants and the everyday forms they must not catch). Each table's
calls come from its own home directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_approver.core.calls.risk import assess

HERE = Path(__file__).parent
TABLES = ("risk_calls.jsonl", "risk_calls_second_set.jsonl", "risk_calls_third_set.jsonl",
          "risk_calls_understood.jsonl", "risk_calls_catalog.jsonl")
# The red team's table: built to hold what must NOT be understood, so its safe and moderate rows
# stay out of the share approve-all saves (they measure the attack, not a day's work); its
# destructive rows count like every table's, and its calls exercise the catalog.
ADVERSARIAL = ("risk_calls_redteam.jsonl",)


def rows(*names: str) -> list[dict[str, Any]]:
    return [json.loads(line) for name in (names or (*TABLES, *ADVERSARIAL))
            for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def home_of(row: dict[str, Any]) -> str:
    """The home directory of a row's project (``/home/dev/proj`` → ``/home/dev``)."""
    parts = [part for part in row.get("cwd", "/home/dev").split("/") if part]
    return "/" + "/".join(parts[:2]) if parts[:1] == ["home"] and len(parts) >= 2 else "/home/dev"


@contextmanager
def home(path: str) -> Iterator[None]:
    saved = os.environ.get("HOME")
    os.environ["HOME"] = path
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved


@dataclass(frozen=True)
class Figures:
    """Of the safe and moderate rows, how many are understood; of the destructive rows, how many
    were understood *and* read below destructive (an automatic answer could reach them: must be 0)."""

    safe_moderate: int
    understood: int
    destructive: int
    destructive_understood_below: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.understood / self.safe_moderate if self.safe_moderate else 0.0

    def __str__(self) -> str:
        return (f"safe/moderate rows understood: {self.understood} of {self.safe_moderate} ({self.share:.1%}); "
                f"destructive rows understood at safe/moderate: {len(self.destructive_understood_below)} "
                f"of {self.destructive}")


def figures(table: list[dict[str, Any]] | None = None) -> Figures:
    """The figures of ``table`` (default: every table, the red team's counting only its destructive rows)."""
    if table is None:
        table = rows(*TABLES) + [row for row in rows(*ADVERSARIAL) if row["level"] == "destructive"]
    total = understood = destructive = 0
    leaks: list[str] = []
    for row in table:
        with home(home_of(row)):
            found = assess(row["tool"], row["args"], cwd=row["cwd"], hints=row.get("hints"))
        if row["level"] == "destructive":
            destructive += 1
            if found.understood and found.level != "destructive":
                leaks.append(f"{row['tool']} {json.dumps(row['args'])[:80]}")
        else:
            total += 1
            understood += found.understood
    return Figures(total, understood, destructive, tuple(leaks))
