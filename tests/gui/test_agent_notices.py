"""An agent's notice ("codex is waiting for you", "... finished") in the tray and as a notification."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.tickets import Identity
from desktop_approver.gui.tray import NOTICE_LIFETIME


def test_the_tray_shows_the_newest_notice_per_agent_on_top(approver: Any) -> None:
    broker = approver.service.broker
    broker.tell(Identity(agent="codex"), "waiting", "codex is waiting for you")
    broker.tell(Identity(agent="claude"), "finished", "claude finished")
    broker.tell(Identity(agent="codex"), "finished", "codex finished")       # replaces codex's word
    texts = [action.text() for action in approver.tray.menu.actions()]
    assert texts[0].startswith("■ “codex”: “codex finished”") and texts[1].startswith("■ “claude”: “claude finished”")
    assert not any("waiting for you" in text for text in texts)
    assert "codex finished" in approver.tray.toolTip()


def test_old_notices_leave_the_tray(approver: Any) -> None:
    approver.tray.notices["old"] = ("waiting", "old is waiting for you", time.time() - NOTICE_LIFETIME - 1)
    approver.tray.refresh()
    assert not any("old is waiting" in action.text() for action in approver.tray.menu.actions())


def test_a_notice_becomes_a_quiet_notification_but_not_in_do_not_disturb(approver: Any, run: Any) -> None:
    shown: list[tuple[str, str, int]] = []

    class Notifier:
        on_action = None

        async def show(self, key: str, title: str, body: str, actions: Any, urgency: int = 1) -> int:
            shown.append((key, title, urgency))
            return 1

    from desktop_approver.gui.notifications import TicketNotifications
    notes = TicketNotifications(approver.decider, approver.service.mode, Notifier())
    notes.available = True
    notes.announce("codex", "waiting", "codex is waiting for you")
    approver.service.mode.set(modes.DO_NOT_DISTURB)
    notes.announce("codex", "waiting", "codex is waiting for you again")
    run(asyncio.sleep(0.05))
    assert shown == [("notice:codex", "“codex”: “codex is waiting for you”", 1)]
