"""Thousands of requests through the running app (its real qasync loop, GUI included).

PySide6 6.12.0 on Python 3.11 under qasync dies after a few thousand loop events
("Fatal Python error: none_dealloc"); this test is what keeps the pinned versions honest.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop_approver import Client

SOAK_REQUESTS = 5000


@pytest.mark.slow
def test_five_thousand_session_memory_answers_then_still_alive(approver: Any, run: Any) -> None:
    approver.service.memory.remember("soak", "Bash", {"command": "make test"}, agent="soak-agent")
    path = approver.service.options.socket_path

    def hammer() -> list[str]:
        client = Client(path, agent="soak-agent", session="soak")
        try:
            return [client.request("Bash", {"command": "make test"}).decided_by for _ in range(SOAK_REQUESTS)]
        finally:
            client.close()

    async def scenario() -> None:
        decided_by = await asyncio.get_running_loop().run_in_executor(None, hammer)
        assert decided_by == ["session"] * SOAK_REQUESTS
        status = await asyncio.get_running_loop().run_in_executor(None, lambda: Client(path).status())
        assert status["pending"] == 0
        assert approver.service.audit.count() == SOAK_REQUESTS

    run(scenario(), timeout=600)
