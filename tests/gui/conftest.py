"""Run the real app (service, dialog, tray) on a qasync loop inside the test's QApplication."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.waiting import WAIT

T = TypeVar("T")


@pytest.fixture
def view(qtbot: Any) -> Any:
    """A preview view (``gui/preview_view.py``) on screen at a usual size, for the preview tests."""
    from desktop_approver.gui.preview_view import PreviewView

    widget = PreviewView()
    qtbot.addWidget(widget)
    widget.resize(900, 600)
    widget.show()
    return widget


@pytest.fixture
def qloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """The app's own event loop (``gui/event_loop.py``) on the test's QApplication."""
    from desktop_approver.gui.event_loop import AppEventLoop

    loop = AppEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    try:
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def run(qloop: asyncio.AbstractEventLoop) -> Callable[[Awaitable[T]], T]:
    """Run a coroutine on the Qt-integrated loop, with a bound so a broken test cannot hang (the
    shared ``WAIT`` per scenario: 30 s was reached by a whole scenario on two busy cores)."""

    def runner(coro: Awaitable[T], timeout: float = 2 * WAIT) -> T:
        return qloop.run_until_complete(asyncio.wait_for(coro, timeout))

    return runner


@pytest.fixture
def approver(tmp_path: Path, run: Callable[..., Any]) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


async def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll on the running loop (Qt events are processed meanwhile); fail clearly when it never holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def ask_bash(app: Any, command: str, agent: str = "coder") -> asyncio.Future[Any]:
    """A ``Bash`` request from ``agent`` to the running app, in a worker thread; the client is closed after."""
    from desktop_approver import Client

    def request() -> Any:
        with Client(app.service.options.socket_path, agent=agent) as client:
            return client.request("Bash", {"command": command})

    return asyncio.get_running_loop().run_in_executor(None, request)
