"""The red team of issue 30's parse (round 1): none of its destructive calls is answered without the person.

``tests/core/risk_calls_redteam_parse.jsonl`` holds the 156 calls an independent white-box red team
got answered without a person on the first parse, each with its family and why, in the shapes of
the agents that send them. Each row goes through the real broker in approve-all mode, with the
person denying everything: the answer must be the person's. A family whose cause is not closed
yet is listed in ``OPEN`` with what is left, and its rows still answered in ``STILL_ANSWERED`` (their
places in the file, from 0); those are strict expected failures, so closing one fails here until
it leaves the list. The families' causes, one case each in the three automatic
ways, are in ``ISSUE_30_RED_TEAM_CASES`` (tests/core/automatic_answer_cases.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.decisions import modes
from tests.support.automatic_answers import PROJECT, ask, broker_for

RED_TEAM_PROJECT = "/home/me/project"
"""The red team's project; its rows are asked in the tests' real project (``PROJECT``), so that a
path of theirs is inside the project as it was for them, never outside by the move (which would
send it to the person for the wrong reason)."""
ROWS = [json.loads(line.replace(RED_TEAM_PROJECT, PROJECT)) for line in
        (Path(__file__).parent / "risk_calls_redteam_parse.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()]
# family number -> what is left of it (see /work notes of issue 30's fixes and CHANGELOG)
OPEN: dict[str, str] = {
    "F1": "help/version words", "F2": "catalog arity", "F4": "the host curl talks to",
    "F5": "options that choose another machine",
    "F7": "code the agent writes inside the project, run by its tests (a product decision: see CHANGELOG)",
    "F8": "builtins that set variables", "F9": "git's own argv scan",
    "F10": "secrets by name (issue 32)", "F11": "named targets as values", "F12": "gawk @include",
    "F13": "dry runs that run code",
}

STILL_ANSWERED = frozenset({128})


def _family(row: dict[str, Any]) -> str:
    return str(row["family"].split()[0])


def _case(index: int, row: dict[str, Any]) -> Any:
    family = _family(row)
    marks = [pytest.mark.xfail(strict=True, reason=f"open: {OPEN[family]}")] if index in STILL_ANSWERED else []
    return pytest.param(row, id=f"{index}-{family}-{row['tool']}-{json.dumps(row['args'])[:50]}", marks=marks)


def test_the_table_is_the_red_teams() -> None:
    assert len(ROWS) == 156
    assert all(row["expect"] == "person" for row in ROWS)
    assert {_family(ROWS[index]) for index in STILL_ANSWERED} <= set(OPEN)


@pytest.mark.parametrize("row", [_case(index, row) for index, row in enumerate(ROWS)])
def test_no_red_team_call_is_answered_without_the_person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         row: dict[str, Any]) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    verdict = ask(broker, row["tool"], row["args"])
    assert verdict.decided_by == "user", row["why"]
    assert person.seen
