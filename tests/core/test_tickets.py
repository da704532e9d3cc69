"""Tickets, identities and verdicts: the small facts the GUI and the broker rely on."""

from __future__ import annotations

import asyncio

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions.tickets import CallInfo, Countdown, Identity, Ticket, Verdict


def test_identity_label_and_verified_pid() -> None:
    assert Identity(agent="bot").label == "bot"
    assert Identity(peer_exe="/usr/bin/python3").label == "python3"
    assert Identity().label == "unknown agent"
    assert Identity(pid=5, peer_pid=5).pid_verified and not Identity(pid=5, peer_pid=6).pid_verified
    assert not Identity().pid_verified
    assert Identity(agent="a", peer_uid=1).as_dict()["peer_uid"] == 1


def test_verdict_allowed() -> None:
    assert Verdict("allow_once").allowed and Verdict("allow_session").allowed
    assert not Verdict("deny").allowed and not Verdict("deny", "policy", blocked=True).allowed


def test_ticket_risk_summary_and_unique_keys() -> None:
    async def build() -> tuple[Ticket, Ticket]:
        calls = [CallInfo(i, "Bash", {"command": c}, risk=assess("Bash", {"command": c}, cwd="/w"))
                 for i, c in enumerate(["ls", "rm -rf /"])]
        first = Ticket("r1", "batch", calls, "s", Identity(agent="bot"), Countdown(60), batch_size=2)
        second = Ticket("r2", "request", calls[:1], "s", Identity(), Countdown(60))
        first.countdown.cancel()
        second.countdown.cancel()
        return first, second

    first, second = asyncio.run(build())
    assert first.risk_level == "destructive" and second.risk_level == "safe"
    assert first.summary() == "bot: Bash (+1 more)" and second.summary() == "unknown agent: Bash"
    assert first.key != second.key


def test_the_badge_shows_not_understood_rather_than_a_guessed_level() -> None:
    """Issue 30: a call the reader did not understand, and does not know to be destructive, shows
    "not understood" wherever a ticket's badge is drawn; a destructive call always shows destructive."""
    async def build(*commands: str) -> Ticket:
        calls = [CallInfo(i, "Bash", {"command": c}, risk=assess("Bash", {"command": c}, cwd="/w/proj"))
                 for i, c in enumerate(commands)]
        ticket = Ticket("r", "batch", calls, "s", Identity(agent="bot"), Countdown(60), batch_size=len(calls))
        ticket.countdown.cancel()
        return ticket

    guessed = asyncio.run(build("deploy-everything --prod"))
    assert guessed.risk_level in ("safe", "moderate") and guessed.shown_level == "not understood"
    assert asyncio.run(build("ls", "deploy-everything --prod", "rm -rf /")).shown_level == "destructive"
    assert asyncio.run(build("ls", "git status")).shown_level == "safe"
    assert asyncio.run(build("ls", "npm test")).shown_level == "moderate"
