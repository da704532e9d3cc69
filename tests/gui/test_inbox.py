"""The inbox: three agents at once, grouped; selection stays put; decide several together."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_approver import Client
from desktop_approver.core.decisions.tickets import Verdict
from tests.gui.conftest import wait_for


def ask(app: Any, agent: str, session: str, tool: str, args: dict) -> asyncio.Future[Any]:
    client = Client(app.service.options.socket_path, agent=agent)
    return asyncio.get_running_loop().run_in_executor(None, lambda: client.request(tool, args, session=session))


def test_three_agents_in_queue_order_and_decided_together(approver: Any, run: Any) -> None:
    from desktop_approver.gui.inbox import AGENT, LEFT, PLACE, REQUEST

    approver.set_popups(False)  # inbox only
    inbox = approver.inbox

    async def scenario() -> None:
        answers = [ask(approver, "coder", "c1", "Bash", {"command": "make"}),
                   ask(approver, "coder", "c1", "write_file", {"path": "a.py", "content": "x"}),
                   ask(approver, "ops", "o1", "Bash", {"command": "git push --force origin main"}),
                   ask(approver, "research", "r1", "fetch", {"url": "https://example.org"})]
        await wait_for(lambda: len(approver.decider.tickets()) == 4, what="four tickets")
        await wait_for(lambda: len(inbox._rows) == 4, what="four inbox rows")
        assert not approver.dialog.isVisible()
        rows = [inbox.tree.topLevelItem(i) for i in range(4)]
        # The dialog's queue: the destructive push first, then the others by time left.
        assert [row.data(0, __import__("desktop_approver.gui.inbox", fromlist=["TICKET_ROLE"]).TICKET_ROLE)
                for row in rows] == [t.key for t in approver.decider.tickets()]
        assert rows[0].text(AGENT) == "“ops” · “o1”" and "git push --force" in rows[0].text(REQUEST)
        assert [row.text(PLACE) for row in rows] == ["1", "2", "3", "4"]
        assert all(":" in row.text(LEFT) for row in rows)  # a countdown column ("4:59")
        assert inbox.summary.text().startswith("4 requests waiting from 3 agents")

        coder_rows = [row for row in rows if row.text(AGENT) == "“coder” · “c1”"]
        for row in coder_rows:
            row.setSelected(True)
        assert len(inbox.selected_tickets()) == 2
        assert inbox.allow_once.text() == "Allow 2 &once" and inbox.deny.text() == "&Deny 2"
        assert inbox.review.ticket is not None and inbox.review.ticket.identity.agent == "coder"
        assert inbox.decide_selected("allow_once") == 2
        assert len(inbox._rows) == 2  # decided requests leave at once, before the agents hear back
        first_two = await asyncio.gather(*answers[:2])
        assert [d.decision for d in first_two] == ["allow_once", "allow_once"]

        research_row = inbox._rows[[t for t in approver.decider.tickets() if t.identity.agent == "research"][0].key]
        inbox.tree.clearSelection()
        research_row.setSelected(True)
        inbox.tree.setCurrentItem(research_row)
        assert inbox.allow_once.text() == "Allow &once" and inbox.deny.text() == "&Deny"
        late = ask(approver, "late-agent", "l1", "Bash", {"command": "rm -rf ~/.cache/tool"})
        await wait_for(lambda: len(inbox._rows) == 3, what="the late arrival")
        assert inbox.tree.topLevelItem(1).text(AGENT).startswith("“late-agent”")  # destructive: above research
        assert inbox.selected_tickets()[0].identity.agent == "research"  # the arrival took no selection
        assert inbox.tree.currentItem() is research_row
        inbox.review.note.setText("not now")
        inbox.decide_selected("deny")
        research = await answers[3]
        assert research.decision == "deny" and research.note == "not now"
        for ticket in approver.decider.tickets():
            approver.decider.answer(ticket, [Verdict("deny") for _ in ticket.calls])
        await asyncio.gather(answers[2], late)
        await wait_for(lambda: not inbox._rows, what="an empty inbox")

    run(scenario())


FLOODER = r"""
import socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
sock.sendall(b"".join(
    b'{"v":1,"type":"request","id":"f%d","tool":"Bash","args":{"command":"echo %d"}}\n' % (i, i)
    for i in range(1000)))
errors, buffer = 0, b""
while errors < int(sys.argv[2]):
    buffer += sock.recv(65536)
    errors = buffer.count(b'"too_many_pending"')
print(errors, flush=True)
sys.stdin.read()  # keep the connection (and its pending requests) until told to go
"""


def test_flood_from_one_client_is_limited_and_others_still_shown(approver: Any, run: Any) -> None:
    import sys

    from PySide6.QtWidgets import QApplication

    from desktop_approver.core.decisions.tickets import Verdict

    path = str(approver.service.options.socket_path)
    limit = approver.service.server.max_pending_per_client
    approver.decider.settle_s = 0.0  # the dialog keeps the flood's request in view; the polite one comes next

    async def scenario() -> None:
        flooder = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOODER, path, str(1000 - limit),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert flooder.stdout is not None and flooder.stdin is not None
        line = await asyncio.wait_for(flooder.stdout.readline(), 30)
        assert int(line) == 1000 - limit  # a typed error for everything past the limit
        await wait_for(lambda: len(approver.decider.tickets()) == limit, what="the flooder's pending requests")
        polite = ask(approver, "polite", "p1", "Bash", {"command": "rm -rf build"})
        await wait_for(lambda: any(t.identity.agent == "polite" for t in approver.decider.tickets()),
                       what="the other agent's request")
        windows = [w for w in QApplication.topLevelWidgets() if w.isVisible() and w.objectName() == "approvalDialog"]
        assert len(windows) == 1  # one window for the whole burst
        polite_ticket = [t for t in approver.decider.tickets() if t.identity.agent == "polite"][0]
        # Destructive first: the other agent's dangerous call is not buried behind the flood.
        assert approver.decider.next_ticket() is polite_ticket
        assert approver.decider.position(polite_ticket) == (1, limit + 1)
        approver.decider.answer(approver.dialog.ticket, [Verdict("deny")])
        await wait_for(lambda: approver.dialog.ticket is polite_ticket, what="the polite request to be shown next")
        flooder.stdin.close()  # the flooder goes away: all its requests are cancelled
        await flooder.wait()
        await wait_for(lambda: [t.identity.agent for t in approver.decider.tickets()] == ["polite"],
                       what="the flooder's requests to be cancelled")
        approver.decider.answer(polite_ticket, [Verdict("allow_once", "user")])
        assert (await polite).decision == "allow_once"
        assert approver.service.audit.count() == limit + 1
        approver.service.server._write_refusal_summary()  # refusals past the audit budget are counted in one row
        refused = approver.service.audit.events(kind="refused", limit=2000)
        one_by_one = sum(1 for event in refused if event["code"] == "too_many_pending")
        summed = sum(int(event["detail"].split()[0]) for event in refused if event["code"] == "rate_limited")
        assert one_by_one + summed == 1000 - limit and one_by_one <= 200

    run(scenario(), timeout=90)


def test_inbox_only_setting_survives_a_restart(tmp_path: Any, run: Any) -> None:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    def make() -> Any:
        options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock",
                                 audit_path=tmp_path / "audit.sqlite3", policy_path=None,
                                 state_path=tmp_path / "state.json")
        return DesktopApprover(options, arming_delay_ms=0)

    first = make()
    assert first.popups_enabled()
    first.set_popups(False)
    second = make()
    assert not second.popups_enabled() and not second.decider.show_dialogs
    second.set_popups(True)
    assert make().popups_enabled()
    for app in (first, second):
        app.service.audit.close()


def test_the_review_goes_with_the_last_request(approver: Any, run: Any) -> None:
    async def scenario() -> None:
        answer = ask(approver, "coder", "s", "Bash", {"command": "make lint"})
        await wait_for(lambda: approver.decider.tickets(), what="the request")
        approver.set_popups(False)
        approver.open_inbox(approver.decider.tickets()[0])
        inbox = approver.inbox
        await wait_for(lambda: inbox.review.ticket is not None, what="the review")
        assert "make lint" in inbox.review.preview.command_browser.toPlainText()
        inbox.decide_selected("deny")
        await answer
        assert inbox.summary.text().startswith("Nothing is waiting")
        review = inbox.review
        assert review.ticket is None and review.tool.text() == "" and not review.agent_frame.isVisibleTo(review)
        assert "coder" not in review.identity.text()

    run(scenario())


def test_an_inbox_with_nothing_selected_shows_no_verdict(approver: Any, run: Any) -> None:
    """A verdict is the app's word on a call: with no call selected there is none to say (it said
    "▲ Moderate" beside "Nothing selected")."""
    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        answer = ask(approver, "coder", "s", "Bash", {"command": "rm -rf ~/projects"})
        await wait_for(lambda: len(inbox._rows) == 1, what="the row")
        inbox.show()
        await wait_for(lambda: inbox.isVisible(), what="the inbox")
        review = inbox.review
        assert not inbox.selected_tickets() and review.ticket is None
        assert not review.badge.isVisibleTo(review) and not review.agent_frame.isVisibleTo(review)
        assert review.reasons.text() == "Nothing selected."
        inbox.select(approver.decider.tickets()[0])
        assert review.badge.isVisibleTo(review) and review.badge.level == "destructive"
        inbox.decide_selected("deny")
        await answer
        assert not review.badge.isVisibleTo(review)

    run(scenario())


def test_long_agent_names_never_squeeze_the_request_or_the_risk_out_of_view(approver: Any, run: Any) -> None:
    """Three agents with 500-character names: at the inbox's size on a 1366x768 screen the list is
    540 px; the Agent column took ~370 px of it and the request shrank to “Bash” (issue 31 review F4).
    The risk and what is asked stay in view; the names are cut (their tooltip has them)."""
    from desktop_approver.gui.inbox import AGENT, REQUEST, RISK

    approver.set_popups(False)
    inbox = approver.inbox

    async def scenario() -> None:
        answers = [ask(approver, f"{n} " + "✔ Safe agent " * 40, "s", "Bash", {"command": f"rm -rf ~/project{n}"})
                   for n in range(3)]
        await wait_for(lambda: len(inbox._rows) == 3, what="three rows")
        from PySide6.QtCore import Qt

        inbox.resize(1200, 720)  # as fit() makes it on a 1366x768 screen (the test's screen is smaller)
        inbox.splitter.setOrientation(Qt.Orientation.Horizontal)
        inbox.show()
        inbox.splitter.setSizes([540, 660])
        await wait_for(lambda: inbox.tree.viewport().width() < 560, what="the list at 540 px")
        header, view = inbox.tree.header(), inbox.tree.viewport().width()
        assert header.sectionViewportPosition(RISK) >= 0
        assert header.sectionViewportPosition(RISK) + header.sectionSize(RISK) <= view
        request_left = header.sectionViewportPosition(REQUEST)
        assert request_left >= 0 and request_left + header.sectionSize(REQUEST) <= view
        row = inbox.tree.topLevelItem(0)
        needed = inbox.tree.fontMetrics().horizontalAdvance(row.text(REQUEST)[:22])  # “Bash”  rm -rf ~/proje…
        assert header.sectionSize(REQUEST) >= needed, (header.sectionSize(REQUEST), needed)
        assert header.sectionSize(AGENT) < header.sectionSize(REQUEST)
        for ticket in approver.decider.tickets():
            inbox.select(ticket)
            inbox.decide_selected("deny")
        await asyncio.gather(*answers)

    run(scenario())
