"""The Qt-free service on its own asyncio loop in a thread, with a scripted person
(:mod:`tests.support.deciders`), so tests can use blocking sockets, subprocess clients or the
real client library against it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.service import ApproverService, ServiceOptions
from tests.support.deciders import Choice, QueuedPerson, ScriptedPerson

__all__ = ["WAIT", "Choice", "QueuedPerson", "ScriptedPerson", "ServiceThread", "serve"]

WAIT = 20.0  # generous: only there so a broken service fails the test instead of hanging it

class ServiceThread:
    """``with ServiceThread(tmp_path[, person], **options) as running:``; options may still be
    changed between construction and ``with``."""

    def __init__(self, tmp: Path, person: Any = None, **options: Any) -> None:
        self.options = ServiceOptions(**{"socket_path": tmp / "sock" / "approver.sock",
                                         "audit_path": tmp / "audit.sqlite3", "policy_path": None,
                                         "state_path": None, **options})
        self.person = person if person is not None else QueuedPerson()
        self.loop: asyncio.AbstractEventLoop  # made on entering, so a service never started leaks no loop
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def socket_path(self) -> Path:
        return self.options.socket_path

    def answer(self, choose: Choice) -> None:
        """Queue the next answer of a :class:`QueuedPerson`."""
        self.loop.call_soon_threadsafe(self.person.answers.put_nowait, choose)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.service = ApproverService(self.options, self.person)
        self.loop.run_until_complete(self.service.start())
        self.ready.set()
        self.loop.run_forever()

    def __enter__(self) -> ServiceThread:
        self.loop = asyncio.new_event_loop()
        self.thread.start()
        assert self.ready.wait(WAIT), "the service did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.service.close(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)
        self.loop.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Choice], ServiceThread]]:
    running: list[ServiceThread] = []

    def start(choose: Choice) -> ServiceThread:
        service = ServiceThread(tmp_path, ScriptedPerson(choose)).__enter__()
        running.append(service)
        return service

    yield start
    for service in running:
        service.__exit__()
