"""render/claims.py: an agent's words, one way everywhere (issue 31), against hostile names."""

from __future__ import annotations

import pytest

from desktop_approver.render.claims import VERDICT_MARKS, as_claimed, claimed, neutral


@pytest.mark.parametrize(("name", "shown"), [
    ("codex", "“codex”"),
    ("✔ Safe", "“<U+2714> Safe”"),                                   # the verdict's mark, as a marker
    ("⚠ Destructive", "“<U+26A0> Destructive”"),
    ("a” (verified) “b", '“a" (verified) "b”'),                      # cannot close its own quotation
    ("line\nRisk: safe", "“line\\nRisk: safe”"),                     # one line, the break shown
    ("abc\u202edcba", "“abc<U+202E>dcba”"),                          # bidi override shown, never obeyed
    ("zero\u200bwidth", "“zero<U+200B>width”"),
])
def test_a_claim_is_quoted_revealed_and_never_the_verdict(name: str, shown: str) -> None:
    assert claimed(name) == shown
    assert as_claimed(name) == f"{shown} (as claimed)"


def test_a_long_name_is_cut_inside_its_quotes() -> None:
    text = claimed("a" * 500, 20)
    assert text.startswith("“") and text.endswith("…”") and len(text) == 22


def test_no_verdict_mark_survives() -> None:
    every = "".join(sorted(VERDICT_MARKS))
    assert not any(mark in neutral(every) for mark in VERDICT_MARKS)
