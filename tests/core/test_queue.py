"""The one queue order every view shows: destructive first, then the least time left."""

from __future__ import annotations

import asyncio

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions.queue import (
    ArrivalNumbers,
    by_urgency,
    count_text,
    riskiest_first,
    time_left_text,
    urgency_key,
    waited_text,
)
from desktop_approver.core.decisions.tickets import CallInfo, Countdown, Identity, Ticket


def ticket(agent: str, *commands: str, timeout: float = 300) -> Ticket:
    calls = [CallInfo(index=i, tool="Bash", args={"command": c}, risk=assess("Bash", {"command": c}, cwd="/w"))
             for i, c in enumerate(commands)]
    return Ticket(request_id=agent, kind="batch" if len(calls) > 1 else "request", calls=calls, session="s",
                  identity=Identity(agent=agent), countdown=Countdown(timeout), batch_size=len(calls))


def test_destructive_first_then_time_left_then_age() -> None:
    async def scenario() -> None:
        pytest_first = ticket("a", "pytest")
        push = ticket("b", "git push --force origin main")
        soon = ticket("c", "make", timeout=30)
        later = ticket("d", "ls")
        batch = ticket("e", "ls", "rm -rf build/")
        order = by_urgency([pytest_first, push, soon, later, batch])
        assert [t.request_id for t in order] == ["b", "e", "c", "a", "d"]
        assert urgency_key(push)[0] == 0 and urgency_key(pytest_first)[0] == 1
        pytest_first.countdown.pause()  # paused while read: it keeps its place
        assert [t.request_id for t in by_urgency([pytest_first, later])] == ["a", "d"]
        for t in (pytest_first, push, soon, later, batch):
            t.countdown.cancel()

    asyncio.run(scenario())


def test_counts_are_in_requests_with_calls_in_brackets() -> None:
    async def scenario() -> None:
        one, two = ticket("a", "ls"), ticket("b", "ls", "pwd", "rm -rf x")
        assert count_text([one]) == "1 request"
        assert count_text([one, two]) == "2 requests (4 calls)"
        assert count_text([]) == "0 requests"
        assert [c.args["command"] for c in riskiest_first(two.calls)] == ["rm -rf x", "ls", "pwd"]
        for t in (one, two):
            t.countdown.cancel()

    asyncio.run(scenario())


def test_time_texts() -> None:
    assert time_left_text(299.2) == "5:00" and time_left_text(0) == "0:00" and time_left_text(-3) == "0:00"
    assert waited_text(5) == "5 s" and waited_text(600) == "10 min" and waited_text(7300) == "2 h"


def test_the_order_never_changes_by_the_clock_or_a_pause_and_moderate_comes_before_safe() -> None:
    async def scenario() -> None:
        first = ticket("a", "ls")
        second = ticket("b", "ls")
        risky = ticket("c", "pip install requests", timeout=600)  # moderate, and more time left than "a"
        assert risky.risk_level == "moderate" and first.risk_level == "safe"
        before = [urgency_key(t) for t in (first, second, risky)]
        first.countdown.pause()  # the person reads it: the others' clocks run on and pass its time left
        await asyncio.sleep(0.2)
        assert [urgency_key(t) for t in (first, second, risky)] == before
        assert [t.request_id for t in by_urgency([second, first, risky])] == ["c", "a", "b"]
        for t in (first, second, risky):
            t.countdown.cancel()

    asyncio.run(scenario())


def test_arrival_numbers_stay_while_a_ticket_waits_and_restart_when_none_does() -> None:
    async def scenario() -> None:
        pytest_first, push, late = ticket("a", "pytest"), ticket("b", "git push --force origin main"), ticket("c", "ls")
        numbers = ArrivalNumbers()
        numbers.update([pytest_first])
        assert numbers.number(pytest_first) == 1
        numbers.update(by_urgency([pytest_first, push]))  # more urgent, listed first: numbered second
        assert (numbers.number(pytest_first), numbers.number(push)) == (1, 2)
        numbers.update([push, late])  # the first one left: the others keep theirs
        assert (numbers.number(push), numbers.number(late)) == (2, 3)
        numbers.update([])
        fresh = ticket("d", "ls")
        numbers.update([fresh])
        assert numbers.number(fresh) == 1
        for t in (pytest_first, push, late, fresh):
            t.countdown.cancel()

    asyncio.run(scenario())
