"""`desktop-approver show [--inbox|--history]`: a key the person binds reaches the waiting request or a
window of the running app, over its socket (the CLI runs as its own process, as a desktop runs it)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from desktop_approver import AsyncClient, Client
from desktop_approver.core.decisions.tickets import Verdict
from tests.gui.conftest import ask_bash, wait_for


async def show(app: Any, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "desktop_approver", "show", *options,
               "--socket", str(app.service.options.socket_path)]
    return await asyncio.get_running_loop().run_in_executor(
        None, lambda: subprocess.run(command, capture_output=True, text=True, timeout=60))


def deny_all(app: Any) -> None:
    for ticket in app.decider.tickets():
        app.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])


@pytest.mark.parametrize("option", ["--inbox", "--history"])
def test_show_raises_the_window_asked_for(approver: Any, run: Any, option: str) -> None:
    async def scenario() -> None:
        done = await show(approver, option)
        assert done.returncode == 0, done.stderr
        window = approver.inbox if option == "--inbox" else approver.history_window
        assert window is not None and window.isVisible()

    run(scenario())


def test_show_brings_back_the_waiting_request_and_decides_nothing(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask_bash(approver, "git push --force origin main")
        await wait_for(lambda: approver.dialog.ticket is not None, what="the dialog")
        approver.dialog.hide()  # the person looked away; the request still waits
        done = await show(approver)
        assert done.returncode == 0, done.stderr
        await wait_for(approver.dialog.isVisible, what="the dialog raised again")
        assert approver.dialog.ticket is approver.decider.tickets()[0]
        assert not answer.done() and len(approver.decider.tickets()) == 1  # nothing was decided
        deny_all(approver)
        assert (await answer).decision == "deny"

    run(scenario())


def test_show_with_nothing_waiting_opens_the_inbox_and_the_async_client_agrees(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        done = await show(approver)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("desktop-approver show: nothing is waiting")  # said, not silent (issue 31)
        assert approver.inbox.isVisible() and not approver.decider.tickets()
        approver.inbox.hide()
        async with AsyncClient(approver.service.options.socket_path) as client:
            assert await client.show("inbox") is True
        assert approver.inbox.isVisible()

    run(scenario())


def test_show_without_the_app_says_so_and_fails(tmp_path: Any) -> None:
    done = subprocess.run([sys.executable, "-m", "desktop_approver", "show", "--socket", str(tmp_path / "none.sock")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("desktop-approver show: ")


def test_a_service_without_windows_answers_shown_false(approver: Any, run: Any) -> None:
    approver.service.broker.show_listeners.clear()  # as a service run without its GUI

    async def scenario() -> None:
        path = approver.service.options.socket_path
        assert await asyncio.get_running_loop().run_in_executor(None, lambda: Client(path).show("history")) is False
        done = await show(approver, "--history")
        assert done.returncode == 2 and "no windows" in done.stderr

    run(scenario())
