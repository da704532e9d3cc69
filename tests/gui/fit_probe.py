"""Run the real app on one screen and report where its windows and buttons are, as JSON.

    QT_QPA_PLATFORM=offscreen:configfile=SCREEN.json QT_SCALE_FACTOR=2 python tests/gui/fit_probe.py

For each hostile input (500-character names, a 5,000-character command, a description of
60 line breaks, a 3,000-line diff, a 10-call batch) it sends the request through the real
client, waits for the dialog, then opens the inbox on it, and writes the geometry of every
window and button it saw, and the width of every visible labelled control beside the width its
text needs.
tests/gui/test_fit_matrix.py runs it once per screen and scale and judges the numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

LONG = 500
TOOL_LONGEST = 200  # the protocol's limit on a tool's name
COMMAND = ("cd /work/project && " + " ".join(f"--option-{i}=value-{i}" for i in range(260))
           + " ; rm -rf ~/ --no-preserve-root")
BLANK_LINES = "Runs the unit tests.\n" + "\n" * 60 + "(end)"
OLD = "".join(f"line {i}\n" for i in range(3000))
NEW = "".join(f"line {i} changed with a much longer text to widen the diff {'=' * 60}\n" for i in range(3000))


async def until(predicate: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()):
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
    return value


async def settle(rounds: int = 25) -> None:
    for _ in range(rounds):  # lazy rendering and the deferred fit run on the loop meanwhile
        await asyncio.sleep(0.02)


def rect(box: Any) -> list[int]:
    return [box.x(), box.y(), box.width(), box.height()]


def measure(window: Any, buttons: dict[str, Any]) -> dict[str, Any]:
    """The window's place, its minimum sizes and each visible button's place on the screen."""
    shown = {}
    for name, button in buttons.items():
        if button.isVisibleTo(window):
            top_left = button.mapTo(window, button.rect().topLeft())
            shown[name] = {"rect": [window.x() + top_left.x(), window.y() + top_left.y(), button.width(),
                                    button.height()],
                           "hint_width": button.sizeHint().width(), "text": button.text()}
    hint = window.minimumSizeHint()
    return {"window": rect(window.geometry()), "frame": rect(window.frameGeometry()),
            "min_hint": [hint.width(), hint.height()], "minimum": [window.minimumWidth(), window.minimumHeight()],
            "buttons": shown, "controls": labelled_controls(window)}


def labelled_controls(window: Any) -> list[dict[str, Any]]:
    """Every visible control that shows a text of its own (check boxes, buttons, one-line labels):
    its width and the width its text needs. Word-wrapped labels wrap and elided labels cut on
    purpose (the tooltip has the whole text); they are left out."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QAbstractButton, QLabel

    from desktop_approver.gui.elided import ElidedLabel

    found = []
    for widget in window.findChildren(QAbstractButton) + window.findChildren(QLabel):
        if not widget.isVisibleTo(window) or not widget.text() or widget.width() <= 0:
            continue
        if isinstance(widget, QLabel) and (widget.wordWrap() or isinstance(widget, ElidedLabel)
                                           or widget.textFormat() == Qt.TextFormat.RichText or "<" in widget.text()):
            continue  # wraps, elides on purpose, or rich text (wraps in its own way)
        found.append({"name": widget.objectName() or type(widget).__name__, "text": widget.text()[:80],
                      "width": widget.width(), "needs": widget.minimumSizeHint().width()
                      if isinstance(widget, QLabel) else widget.sizeHint().width()})
    return found


async def main() -> dict[str, Any]:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from desktop_approver import Client, previews
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    tmp = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=tmp / "s" / "a.sock", audit_path=tmp / "a.sqlite3", policy_path=None,
                             state_path=None)
    approver = DesktopApprover(options, arming_delay_ms=0)
    await approver.start()
    screen = QApplication.primaryScreen()
    result: dict[str, Any] = {"area": rect(screen.availableGeometry()), "ratio": screen.devicePixelRatio(),
                              "inputs": {}}

    def in_thread(send: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                send()
            except Exception as error:  # noqa: BLE001  # a refused request must show in the report
                print(f"request failed: {error!r}", file=sys.stderr, flush=True)

        threading.Thread(target=run, daemon=True).start()

    def ask(agent: str, session: str, tool_name: str, args: dict[str, Any], **extra: Any) -> None:
        client = Client(options.socket_path, agent=agent, session=session)
        in_thread(lambda: client.request(tool_name, args, **extra))

    def ask_batch(agent: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        client = Client(options.socket_path, agent=agent, session="batch")
        in_thread(lambda: client.request_batch(calls))

    inputs: dict[str, Callable[[], None]] = {
        "long-names": lambda: ask("agent-" + "n" * LONG, "session-" + "s" * LONG, "tool_" + "t" * (TOOL_LONGEST - 5),
                                  {"path": "/" + "p" * LONG, "content": "x\n"}, description="d" * LONG,
                                  preview=previews.diff("/" + "p" * LONG, "a\n", "b\n")),
        "long-command": lambda: ask("codex", "c-1", "Bash", {"command": COMMAND}),
        "blank-lines-description": lambda: ask("coder", "c-3", "Bash", {"command": "pytest -q"},
                                               description=BLANK_LINES),
        "big-diff": lambda: ask("coder", "c-2", "write_file", {"path": "big.txt", "content": NEW},
                                preview=previews.diff("big.txt", OLD, NEW)),
        "batch-of-10": lambda: ask_batch("ops-" + "o" * 60, [
            ("Bash", {"command": f"make target-{i} && rm -rf build-{i}/" if i % 3 == 0 else f"make target-{i}"})
            for i in range(10)]),
        # The agent's order puts its destructive calls last, out of view: the dialog must not (issue 31).
        "batch-of-50": lambda: ask_batch("ops", [
            ("Bash", {"command": f"rm -rf build-{i}/" if i >= 46 else f"make target-{i}"}) for i in range(50)]),
    }
    dialog = approver.dialog
    for name, send in inputs.items():
        send()
        await until(lambda: dialog.isVisible() and dialog.ticket is not None, f"the dialog for {name}")
        await settle()
        seen: dict[str, Any] = {"dialog": measure(dialog, {
            "allow_once": dialog.allow_once, "allow_session": dialog.allow_session, "deny": dialog.deny,
            "always_allow": dialog.always_allow, "countdown": dialog.countdown}), "title": dialog.windowTitle()}
        pages = dialog.review.preview.pages  # the call itself: in the first view, without scrolling
        top = pages.mapTo(dialog.scroll.viewport(), QPoint(0, 0)).y()
        seen["call_in_first_view"] = pages.isVisibleTo(dialog) and top + 40 <= dialog.scroll.viewport().height()
        seen["first_view"] = [top, dialog.scroll.viewport().height()]
        if os.environ.get("FIT_PROBE_SHOTS"):
            dialog.grab().save(os.path.join(os.environ["FIT_PROBE_SHOTS"], f"{name}.png"))
        review = dialog.review
        if review.calls.count() > 1:  # which call it opens on, what the list shows first, the left-out line
            current = review.current_call()
            viewport = dialog.scroll.viewport()
            left_out_top = review.left_out.mapTo(viewport, QPoint(0, 0)).y()
            seen["batch"] = {
                "opens_on": current.risk.level if current is not None and current.risk else None,
                "first_rows": [review.calls.item(row).text().split("   ")[0] for row in range(review.calls.count())
                               if review.calls.visualItemRect(review.calls.item(row)).bottom()
                               <= review.calls.viewport().height()],
                "left_out": review.left_out.text(),
                "left_out_in_first_view": review.left_out.isVisibleTo(dialog)
                and 0 <= left_out_top and left_out_top + review.left_out.height() <= viewport.height()}
        ticket = dialog.ticket
        approver.open_inbox(ticket)
        await settle()
        inbox = approver.inbox
        seen["inbox"] = measure(inbox, {"allow_once": inbox.allow_once, "allow_session": inbox.allow_session,
                                        "deny": inbox.deny})
        from desktop_approver.gui.inbox import RISK

        risk_column = inbox.tree.header().sectionViewportPosition(RISK)
        seen["inbox"]["risk_column_x"] = risk_column
        seen["inbox"]["tree_width"] = inbox.tree.viewport().width()
        inbox.hide()
        approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        await until(lambda: not approver.decider.tickets(), f"{name} answered")
        await until(lambda: not dialog.isVisible(), "the dialog to close")
        result["inputs"][name] = seen
    return result


if __name__ == "__main__":
    from PySide6.QtWidgets import QApplication

    from desktop_approver.gui.event_loop import AppEventLoop

    application = QApplication(sys.argv[:1])
    application.setQuitOnLastWindowClosed(False)
    loop = AppEventLoop(application)
    asyncio.set_event_loop(loop)
    report = loop.run_until_complete(asyncio.wait_for(main(), 240))
    print(json.dumps(report), flush=True)
    os._exit(0)  # the agents' threads still wait on the socket: do not wait for them
