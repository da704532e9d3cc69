"""Six thousand requests that reach the person: the tray's menu and the app's memory stay bounded.

Each request waits in the queue (the tray rebuilds its menu when it arrives and when it leaves) and
is answered by the person's side of the queue (``GuiDecider.answer``), as the dialog would. Before
the menu kept its fixed part, every rebuild left a "Mode" submenu behind: 66 KB a request.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
from PySide6.QtWidgets import QMenu

from desktop_approver.core.decisions.tickets import Verdict

SOAK_REQUESTS = 6_000
AGENTS = 8            # agents asking at once (one process), so the queue is seldom empty
WARM_UP = 1_000       # requests before the first measurement (caches, pools, the audit log's pages)
ALLOWED_GROWTH = 40 * 1024 * 1024  # RSS bytes from the warm-up to the end (the leak: 66 KB a request, 330 MB here)


AGENTS_SCRIPT = """
import asyncio, sys
from desktop_approver import AsyncClient

async def agent(path, number, count):
    async with AsyncClient(path, agent=f"soak-{number}") as client:
        return {(await client.request("Bash", {"command": f"touch out-{number}-{index}"})).decision
                for index in range(count)}

async def main(path, agents, count):
    results = await asyncio.gather(*(agent(path, number, count) for number in range(agents)))
    print(*set().union(*results))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.timeout(300)  # each request is judged with its facts (git asked): minutes on two busy cores
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")
def test_six_thousand_requests_reaching_the_person_leave_the_tray_menu_and_memory_bounded(
        approver: Any, run: Any) -> None:
    approver.set_popups(False)  # the tray and the queue carry every request; the dialog is not the subject
    decider, tray = approver.decider, approver.tray
    loop = asyncio.get_event_loop()
    answered = 0
    measured: dict[str, int] = {}
    menus_seen: list[int] = []

    def answer_soon(ticket: Any) -> None:
        def answer() -> None:
            nonlocal answered
            menus_seen.append(len(tray.menu.findChildren(QMenu)))
            if decider.answer(ticket, [Verdict("allow_once", "user") for _ in ticket.calls]):
                answered += 1
                if answered == WARM_UP:
                    measured["warm"] = rss_bytes()
        loop.call_soon(answer)

    decider.ticket_added.connect(answer_soon)
    # The agents are another process (as they are in life), so the app has the interpreter to itself.
    agents = subprocess.Popen([sys.executable, "-c", AGENTS_SCRIPT, str(approver.service.options.socket_path),
                               str(AGENTS), str(SOAK_REQUESTS // AGENTS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    async def scenario() -> tuple[str, str]:
        return await loop.run_in_executor(None, agents.communicate)

    out, err = run(scenario(), timeout=600)
    decider.ticket_added.disconnect(answer_soon)
    assert agents.returncode == 0, err
    assert out.split() == ["allow_once"], out
    assert answered == SOAK_REQUESTS
    growth = rss_bytes() - measured["warm"]
    print(f"RSS after {WARM_UP} requests {measured['warm'] / 2**20:.1f} MiB, growth over the next "
          f"{SOAK_REQUESTS - WARM_UP}: {growth / 2**20:.1f} MiB")
    assert max(menus_seen) <= 1, f"the tray menu held up to {max(menus_seen)} submenus"
    assert len(tray.menu.findChildren(QMenu)) == 1
    assert len(tray.menu.actions()) < 40
    assert growth < ALLOWED_GROWTH, f"RSS grew by {growth / 2**20:.0f} MiB"
