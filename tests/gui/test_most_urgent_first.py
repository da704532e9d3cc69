"""The most dangerous first, and stable: the dialog opens on the worst of a burst, "Also waiting"
follows the queue's order, and a batch's badge is its most dangerous call's level."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.gui.badges import risk_text
from tests.gui.conftest import ask_bash, wait_for
from tests.support.projects import work_where_it_loses_data


def test_the_dialog_opens_on_the_most_dangerous_of_a_burst(approver: Any, run: Any) -> None:
    dialog = approver.dialog
    approver.decider.settle_s = 600.0  # the whole burst arrives inside the settling moment, however slow the machine

    async def scenario() -> None:
        answers = [ask_bash(approver, "pytest -q", agent="coder")]
        await wait_for(lambda: dialog.ticket is not None, what="the first dialog")
        answers += [ask_bash(approver, "git push --force origin main", agent="ops"),
                    ask_bash(approver, "ls", agent="research")]
        await wait_for(lambda: len(approver.decider.tickets()) == 3, what="three requests")
        await wait_for(lambda: dialog.ticket.identity.agent == "ops", what="the destructive request in view")
        assert dialog.position.text().endswith(" · 3 waiting")
        strip = dialog.next_strip.text()
        assert strip.index("coder") < strip.index("research")  # the same order as the queue, not wrapped round
        dialog.pause_countdown()  # touched: an arrival no longer takes its place
        answers.append(ask_bash(approver, "rm -rf build/", agent="late"))
        await wait_for(lambda: len(approver.decider.tickets()) == 4, what="a fourth request")
        assert dialog.ticket.identity.agent == "ops"
        for _ in range(4):
            dialog.deny.click()
        await asyncio.gather(*answers)

    run(scenario())


def test_an_arrival_after_the_settling_moment_never_replaces_the_request_in_view_nor_its_number(
        approver: Any, run: Any) -> None:
    dialog = approver.dialog
    approver.decider.settle_s = 0.0

    async def scenario() -> None:
        first = ask_bash(approver, "pytest -q", agent="coder")
        await wait_for(lambda: dialog.ticket is not None, what="the first dialog")
        assert dialog.position.text() == "Request #1 · 1 waiting"
        push = ask_bash(approver, "git push --force origin main", agent="ops")
        await wait_for(lambda: len(approver.decider.tickets()) == 2, what="two requests")
        # A more urgent arrival is listed first, but the request being read keeps its number.
        assert dialog.ticket.identity.agent == "coder" and dialog.position.text() == "Request #1 · 2 waiting"
        strip = dialog.next_strip.text()
        assert strip.startswith("Also waiting: <a")
        assert "#2 ⚠ Destructive “Bash”: git push --force origin main — “ops”" in strip
        dialog.deny.click()
        dialog.deny.click()
        await asyncio.gather(first, push)

    run(scenario())


def test_a_batchs_badge_is_its_most_dangerous_calls_level(approver: Any, run: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work_where_it_loses_data(tmp_path))   # not the checkout's own build/ or git state
    dialog = approver.dialog

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="ops")
        answer = asyncio.get_running_loop().run_in_executor(None, lambda: client.request_batch(
            [("Bash", {"command": "git status"}), ("Bash", {"command": "git reset --hard"})]))
        await wait_for(lambda: dialog.ticket is not None, what="the batch")
        review = dialog.review
        assert review.calls.currentRow() == 0 and review.current_call().risk.level == "destructive"  # opens on it
        review.calls.setCurrentRow(review.row_of(0))  # the safe call selected
        assert dialog.ticket.calls[0].risk.level == "safe"
        assert review.badge.text() == risk_text("destructive")
        assert "this call: ✔ Safe" in review.reasons.text().lower() or "✔ Safe" in review.reasons.text()
        dialog.deny.click()
        await answer
        client.close()

    run(scenario())
