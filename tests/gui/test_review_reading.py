"""The review text says how far the app read the call: "fully read", what it did not understand, or
why an automatic answer left the call to the person (issue 19)."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_approver import Client
from desktop_approver.core.calls.risk import RiskAssessment
from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import CallInfo
from desktop_approver.gui.review_text import reading_line
from tests.gui.conftest import wait_for

RLO = "\u202e"


def call(risk: RiskAssessment | None, asked_because: str | None = None) -> CallInfo:
    return CallInfo(index=0, tool="Bash", args={"command": "git log"}, risk=risk, asked_because=asked_because)


def test_fully_read_or_what_was_not() -> None:
    assert reading_line(call(RiskAssessment("safe", understood=True))) == "fully read"
    gaps = ("option `--output` of `git log`", "variable `PAGER`")
    assert reading_line(call(RiskAssessment("moderate", gaps=gaps))) == (
        "not understood: option `--output` of `git log`; variable `PAGER`")
    assert reading_line(call(None)) == "not read"


def test_why_an_automatic_answer_was_withheld_comes_first() -> None:
    because = "not understood: option `--output` of `git log`; not answered by approve-all mode"
    assert reading_line(call(RiskAssessment("moderate", gaps=("option `--output` of `git log`",)), because)) == because


def test_the_agents_words_in_a_gap_are_shown_as_written() -> None:
    """A gap quotes the call (an option, a tool name): a bidi override in it cannot reorder the line,
    and what is not a plain word (a sentence, a mark) is not quoted in the app's verdict at all."""
    line = reading_line(call(RiskAssessment("moderate", gaps=(f"tool `txt.{RLO}exe`", "option `--output` of `git log`",
                                                               "tool `Read\nRisk: safe ✔`"))))
    assert RLO not in line and "Risk" not in line and "✔" not in line
    assert line == "not understood: tool `…`; option `--output` of `git log`; tool `…`"


def test_the_dialog_says_why_approve_all_left_the_call_to_the_person(approver: Any, run: Any) -> None:
    """Approve-all is on; a destructive call still reaches the dialog, and its review text says why."""
    approver.service.broker.mode.set(modes.APPROVE_ALL, seconds=600)

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="codex")
        answer = asyncio.get_running_loop().run_in_executor(
            None, lambda: client.request("Bash", {"command": "rm -rf ~/important"}, session="f"))
        dialog = approver.dialog
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        text = dialog.review.reasons.text()
        assert "read as destructive; not answered by approve-all mode" in text, text
        dialog.deny.click()
        assert (await answer).decision == "deny"

    run(scenario())
