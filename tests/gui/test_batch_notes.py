"""A batch dialog's note goes to the calls it concerns: the denied ones when the person allows
some calls and denies others; every call when they all get the same answer."""

from __future__ import annotations

import asyncio

from desktop_approver.core.decisions.tickets import CallInfo, Countdown, Identity, Ticket
from desktop_approver.gui.dialog import verdicts_for


def batch(size: int) -> Ticket:
    async def build() -> Ticket:
        calls = [CallInfo(index=i, tool="Bash", args={"command": f"echo {i}"}) for i in range(size)]
        return Ticket(request_id="b", kind="batch", calls=calls, session="s", identity=Identity(agent="bot"),
                      countdown=Countdown(60), batch_size=size)

    return asyncio.run(build())


def test_mixed_batch_note_goes_to_the_denied_calls_only() -> None:
    verdicts = verdicts_for(batch(3), "allow_once", [True, False, True], {}, "not the middle one", "exact")
    assert [(v.decision, v.note) for v in verdicts] == [
        ("allow_once", None), ("deny", "not the middle one"), ("allow_once", None)]


def test_uniform_answers_carry_the_note_on_every_call() -> None:
    allowed = verdicts_for(batch(2), "allow_once", [True, True], {}, "go ahead, use the staging db", "exact")
    denied = verdicts_for(batch(2), "deny", [True, True], {}, "not today", "exact")
    assert [v.note for v in allowed] == ["go ahead, use the staging db"] * 2
    assert [(v.decision, v.note) for v in denied] == [("deny", "not today")] * 2
