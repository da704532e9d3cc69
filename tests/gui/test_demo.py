"""The demo teaches in the app (issue 31): it says these are samples, what each shows, and how to stop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop_approver.core.decisions.tickets import Verdict
from tests.gui.conftest import wait_for


def test_the_demo_says_what_it_is_and_each_sample_what_it_shows(approver: Any, run: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_approver import demo

    monkeypatch.setenv("DESKTOP_APPROVER_SOCKET", str(approver.service.options.socket_path))
    approver.set_popups(False)
    told: list[tuple[str, str, str]] = []
    approver.service.broker.notice_listeners.append(lambda who, kind, text: told.append((who.agent, kind, text)))
    descriptions: list[str] = []

    async def scenario() -> None:
        done = asyncio.get_running_loop().run_in_executor(None, demo.main)
        while not done.done():  # the person denies each sample as it comes
            for ticket in approver.decider.tickets():
                descriptions.extend(call.description or "" for call in ticket.calls)
                approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
            await asyncio.sleep(0.05)
        assert await done == 0
        await wait_for(lambda: len(told) == 2, what="the demo's two notices")

    run(scenario(), timeout=120)
    assert told[0] == ("desktop-approver demo", "info", demo.WELCOME) and "Quit desktop-approver" in demo.WELCOME
    assert told[1] == ("desktop-approver demo", "finished", demo.DONE)
    assert len(descriptions) == demo.SAMPLES + 2  # the batch's three calls each say so
    assert all(text.startswith("Sample ") and text.endswith("Nothing runs.") for text in descriptions), descriptions
    assert {text.split(":")[0] for text in descriptions} == {f"Sample {n} of {demo.SAMPLES}"
                                                             for n in range(1, demo.SAMPLES + 1)}
