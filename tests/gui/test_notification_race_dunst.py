"""The notification race on a real notification server: dunst on Xvfb, on a private D-Bus (issue 31).

An agent controls when its requests come and go. The person opens dunst's menu on the agent's
notification while it names one request; before they pick "Allow once", that request is
withdrawn and the agent's next one is named instead. Before issue 31 the notification was replaced
in place, and dunst ran the late pick on the new text: the next request was allowed unseen. Now
the next request gets a notification of its own and the late pick answers nothing (dunst finds its
notification gone; a server that still sends it reaches the app with the old request's key, which
opens the review: tests/gui/test_notification_actions.py): only a pick on the new notification's
own menu answers it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import AsyncClient
from tests.gui.conftest import wait_for
from tests.notify.test_dunst_xvfb import display, dunst  # noqa: F401  (fixtures: Xvfb, then dunst on it)

pytestmark = [pytest.mark.xvfb]

# dunst pipes the menu into "dmenu" and runs the line it reads back. This one holds the menu until
# the test releases it (the person hesitating), then picks the label the test names.
HOLDING_DMENU = """#!/bin/sh
tee "{menu}" > /dev/null
while [ ! -e "{release}" ]; do sleep 0.05; done
rm -f "{release}"
grep -m1 -F -- "$(cat "{choice}")" "{menu}" | tee "{picked}"
"""


@pytest.fixture
def dunst_approver(dunst: dict[str, Any], tmp_path: Path,  # noqa: F811  (the fixture imported above)
                   run: Callable[..., Any]) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover
    from desktop_approver.notify.freedesktop import DesktopNotifier

    options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0, notifier=DesktopNotifier(timeout=10.0))
    app.set_popups(False)  # requests only land in the inbox and the notifications
    run(app.start())
    yield app
    run(app.close())


async def _command(env: dict[str, str], *argv: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)


def _notification_of(approver: Any, ticket: Any, count: str) -> bool:
    """The agent's notification names ``ticket`` with ``count`` and the server has it (no Notify in flight)."""
    notifications = approver.notifications
    signature = notifications._signatures.get(ticket.identity.label, (None, ""))
    named = signature[0] == ticket.key and count in signature[1]
    return named and not notifications.notifier._senders and bool(notifications.notifier._ids)


@pytest.mark.logs("No notification server on the session bus")  # when the app starts before dunst has the name
def test_a_pick_made_on_a_withdrawn_request_never_allows_the_next(
        dunst_approver: Any, dunst: dict[str, Any], tmp_path: Path,  # noqa: F811
        run: Callable[..., Any]) -> None:
    approver = dunst_approver
    env = dunst["env"]
    release = tmp_path / "release"
    dmenu = tmp_path / "dmenu.sh"
    picked = tmp_path / "picked.txt"
    dmenu.write_text(HOLDING_DMENU.format(menu=dunst["menu"], choice=dunst["choice"], release=release, picked=picked))
    client = AsyncClient(approver.service.options.socket_path, agent="builder")

    async def scenario() -> None:
        notifier = approver.notifications.notifier
        await wait_for(lambda: notifier.server is not None and notifier.supports_actions, what="dunst on the bus",
                       timeout=30)
        # Two requests of one agent; the notification names the one with less time left.
        first = asyncio.ensure_future(client.request("write_file", {"path": "notes.txt", "content": "hi"},
                                                     session="s1", timeout=300))
        await wait_for(lambda: approver.decider.tickets(), what="the first request", timeout=30)
        second = asyncio.ensure_future(AsyncClient(approver.service.options.socket_path, agent="builder").request(
            "write_file", {"path": "other.txt", "content": "x"}, session="s1", timeout=900))
        both = await wait_for(lambda: len(approver.decider.tickets()) == 2 and approver.decider.tickets(),
                              what="both requests", timeout=30)
        assert both[0].calls[0].args["path"] == "notes.txt"
        await wait_for(lambda: _notification_of(approver, both[0], "2 waiting"), what="its notification", timeout=30)

        # The person opens the menu on the notification naming the first request, and hesitates.
        dunst["choice"].write_text("Allow once")
        menu = await _command(env, "dunstctl", "context")
        await wait_for(lambda: dunst["menu"].exists() and "Allow once" in dunst["menu"].read_text(),
                       what="dunst's menu for the first request", timeout=30)
        await menu.wait()

        # Meanwhile the agent withdraws it: the notification now names the second.
        first.cancel()
        await wait_for(lambda: approver.decider.tickets() == [both[1]], what="the first request withdrawn",
                       timeout=30)
        await wait_for(lambda: _notification_of(approver, both[1], "1 waiting"), what="the second named",
                       timeout=30)

        # The person picks "Allow once" in the menu they opened on the first request.
        release.write_text("go")
        await wait_for(lambda: picked.exists() and "Allow once" in picked.read_text(), what="the late pick", timeout=30)
        # Then picks "Deny" on the notification now shown: only that answers the second request.
        dunst["choice"].write_text("Deny")
        dunst["menu"].unlink()
        release.write_text("go")
        for _attempt in range(20):  # dunst refuses a menu while it still finishes the last one
            await (await _command(env, "dunstctl", "context")).wait()
            try:
                await wait_for(lambda: dunst["menu"].exists(), what="dunst's menu for the second request", timeout=3)
                break
            except AssertionError:
                continue
        decision = await asyncio.wait_for(second, 60)
        assert decision.decision == "deny" and decision.decided_by == "user"

    try:
        run(scenario(), timeout=120)
    finally:
        sys.stderr.write(dunst["log"].read_text()[-2000:])
