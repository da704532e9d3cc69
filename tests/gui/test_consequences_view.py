""""What this touches" in the review (issue 32): counts and recoverability for a local agent's call,
calm when nothing is lost, and "facts unavailable" for an agent elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.core.calls.facts import Facts
from desktop_approver.core.calls.risk.touching import assess_touching
from desktop_approver.gui.consequences_view import ConsequencesView
from tests.gui.conftest import wait_for
from tests.support.projects import make_repository


def facts_of(repo: Path, command: str) -> Facts:
    _, facts = assess_touching("Bash", {"command": command}, cwd=str(repo))
    assert facts is not None
    return facts


def test_one_calm_line_when_nothing_is_lost(qtbot: Any, tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    view = ConsequencesView()
    qtbot.addWidget(view)
    view.show_facts(facts_of(repo, "rm -rf build node_modules"))
    assert view.summary.text() == "What this touches: Nothing is lost: everything it changes can be brought back."
    assert view.details.isHidden() and view.diff.isHidden()
    assert "6 build output ignored by git" not in view.details.text()
    assert "3 build output ignored by git" in view.toolTip()     # the counts, for whoever asks


def test_what_is_lost_comes_first_with_its_counts_and_the_diff(qtbot: Any, tmp_path: Path) -> None:
    repo = make_repository(tmp_path)
    view = ConsequencesView()
    qtbot.addWidget(view)
    view.show_facts(facts_of(repo, "rm -rf build data"))
    assert view.summary.text().startswith("What this touches: Loses 1 file")
    first = view.details.text().splitlines()[0]
    assert "`data`" in first and "cannot all be brought back" in first
    view.show_facts(facts_of(repo, "git reset --hard"))
    assert not view.diff.isHidden() and "b.txt" in view.diff.text()


def test_an_agent_elsewhere_is_told_facts_are_unavailable(qtbot: Any) -> None:
    view = ConsequencesView()
    qtbot.addWidget(view)
    view.show_facts(Facts.unavailable("the agent is on another machine (over the relay)"))
    assert view.summary.text() == ("What this touches: Facts unavailable: the agent is on another machine "
                                   "(over the relay).")
    view.show_facts(None)
    assert view.isHidden()


def test_the_dialog_shows_what_a_local_agents_call_touches(approver: Any, run: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repository(tmp_path)
    monkeypatch.chdir(repo)   # the agent works in the repository: the kernel says so

    async def scenario() -> None:
        client = Client(approver.service.options.socket_path, agent="codex")
        answer = asyncio.get_running_loop().run_in_executor(
            None, lambda: client.request("Bash", {"command": "rm -rf build data"}, session="t"))
        dialog = approver.dialog
        await wait_for(lambda: dialog.isVisible() and dialog.ticket is not None, what="the dialog")
        touches = dialog.review.touches
        assert touches.isVisibleTo(dialog)
        assert touches.summary.text().startswith("What this touches: Loses 1 file"), touches.summary.text()
        assert "3 build output ignored by git" in touches.details.text()
        dialog.deny.click()
        assert (await answer).decision == "deny"

    run(scenario())


def test_the_tooltip_is_plain_text_whatever_the_files_are_named(qtbot: Any, tmp_path: Path) -> None:
    """A file named like markup (red team rt32, RT32-20) is shown as its name, and every later
    line is still in the tooltip; a call with thousands of lines gets a bounded one."""
    repo = make_repository(tmp_path)
    (repo / "notes").mkdir()
    (repo / "notes" / "!<b>all fine<b><!--").write_text("x\n")
    (repo / "notes" / "zlink").symlink_to("/etc/hostname")
    view = ConsequencesView()
    qtbot.addWidget(view)
    view.show_facts(facts_of(repo, "cat notes/*"))
    tip = view.toolTip()
    assert "<b>all fine" not in tip and "&lt;b&gt;all fine" in tip
    assert "outside the project" in tip          # the line after the odd name is not swallowed
    many = Facts(problems=[f"problem {n}" for n in range(5_000)])
    view.show_facts(many)
    assert view.toolTip().count("<br>") <= 41 and "more" in view.toolTip()
