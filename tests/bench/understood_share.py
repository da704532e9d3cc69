"""Print issue 19's figures: of the labelled tables' safe and moderate rows, the share the reader
fully understands (what approve-all, session memory and allow rules may answer), and the
destructive rows it understood at safe or moderate (must be none), table by table and in all (the
red team's table counts only its destructive rows in all: its safe and moderate rows are there
to be left to the person); then issue 30's set of ordinary calls in the agents' tool shapes.

    PYTHONPATH=. python tests/bench/understood_share.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.core.understood_tables import ADVERSARIAL, TABLES, figures, rows  # noqa: E402


def main() -> None:
    for name in (*TABLES, *ADVERSARIAL):
        print(f"{name:32} {figures(rows(name))}")
    print(f"{'all tables':32} {figures()}")
    from tests.core.test_automatic_answers_parse import ordinary_share

    answered, total = ordinary_share()
    print(f"{'risk_calls_ordinary.jsonl':32} understood at safe/moderate: {answered} of {total} "
          f"({100 * answered / total:.1f}%)")


if __name__ == "__main__":
    main()
