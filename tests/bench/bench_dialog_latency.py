"""From an agent's request to a dialog the person can see, on a real X server (issue 23).

    python tests/bench/bench_dialog_latency.py [--rounds 15]

Starts a real little desktop (Xvfb, openbox, trayer, a private D-Bus, dunst: ``tests/support/desktop.py``)
and the real app in it, then measures, round by round:

- **one agent**: one request sent, until the dialog is painted on screen showing it;
- **five agents at once**: five requests from five clients sent together (one of them destructive),
  until the dialog is first painted, and until it is painted showing the destructive one (the queue's
  most urgent; the dialog may open on the first arrival and move to the most urgent within its
  settling moment).

"Painted" is the dialog's first paint event after the request's ticket is in view, seen by an
event filter inside the app; each send is stamped by the client thread on the same clock just
before the bytes go out. Prints medians and the ratio of five-at-once to one alone, in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

FIVE = [("codex", {"command": "pytest -q"}), ("claude", {"command": "npm install left-pad"}),
        ("aider", {"command": "ls -la"}), ("goose", {"command": "git push --force origin main"}),
        ("cline", {"command": "cargo build"})]


async def measure(rounds: int) -> dict[str, list[float]]:
    from PySide6.QtCore import QEvent, QObject

    from desktop_approver import Client
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover
    from desktop_approver.notify.freedesktop import DesktopNotifier

    tmp = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=tmp / "s" / "approver.sock", audit_path=tmp / "audit.sqlite3",
                             policy_path=None, state_path=None)
    approver = DesktopApprover(options, arming_delay_ms=0, notifier=DesktopNotifier(timeout=10.0))
    await approver.start()
    paints: list[tuple[float, Any]] = []

    class PaintWatch(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
            if event.type() == QEvent.Type.Paint and approver.dialog.isVisible():
                paints.append((time.perf_counter(), approver.decider.current))
            return False

    watch = PaintWatch()
    approver.dialog.installEventFilter(watch)
    sent: list[float] = []
    lock = threading.Lock()

    def ask(agent: str, args: dict[str, Any], start: threading.Event) -> None:
        client = Client(options.socket_path, agent=agent, session=f"{agent}-bench")
        client._connect()  # connected beforehand: the figure is the request's way, not the connect
        start.wait()
        with lock:
            sent.append(time.perf_counter())
        try:
            client.request("Bash", args, timeout=120)
        finally:
            client.close()

    async def until(condition: Any, what: str) -> None:
        for _ in range(3000):
            if condition():
                return
            await asyncio.sleep(0.005)
        raise RuntimeError(f"timed out waiting for {what}")

    async def all_waiting(count: int) -> None:
        await until(lambda: len(approver.decider.tickets()) == count, "every request waiting")

    async def answer_all() -> None:
        for ticket in approver.decider.tickets():
            approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        await until(lambda: not approver.decider.tickets() and not approver.dialog.isVisible(), "the dialog to close")
        await asyncio.sleep(0.2)

    results: dict[str, list[float]] = {"one agent": [], "five agents, first paint": [],
                                       "five agents, most urgent painted": []}
    for _ in range(rounds):
        for name, calls in (("one", FIVE[:1]), ("five", FIVE)):
            paints.clear()
            sent.clear()
            start = threading.Event()
            threads = [threading.Thread(target=ask, args=(agent, args, start), daemon=True) for agent, args in calls]
            for thread in threads:
                thread.start()
            await asyncio.sleep(0.3)  # every client connected
            start.set()
            if name == "one":
                await until(lambda: any(ticket is not None for _, ticket in paints), "the dialog painted")
                results["one agent"].append(next(t for t, ticket in paints if ticket is not None) - min(sent))
            else:
                await until(lambda: any(t is not None and t.risk_level == "destructive" for _, t in paints),
                            "the most urgent request painted")
                first = min(sent)
                results["five agents, first paint"].append(next(t for t, ticket in paints if ticket) - first)
                results["five agents, most urgent painted"].append(
                    next(t for t, ticket in paints if ticket is not None and ticket.risk_level == "destructive")
                    - first)
            await all_waiting(len(calls))
            await answer_all()
    await approver.close()
    return results


def inner(rounds: int) -> None:
    import qasync
    from PySide6.QtWidgets import QApplication

    application = QApplication(sys.argv[:1])
    application.setQuitOnLastWindowClosed(False)
    results = qasync.run(measure(rounds))
    one = statistics.median(results["one agent"])
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:36s} median {median * 1000:7.1f} ms  (min {min(values) * 1000:6.1f}, "
              f"max {max(values) * 1000:6.1f}; {median / one:.2f}x one agent)", flush=True)
    sys.stdout.flush()
    os._exit(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.inner:
        inner(options.rounds)
        return 0
    from tests.support.desktop import Desktop

    desktop = Desktop.start(1280, 800)
    try:
        print(f"request to a painted dialog, {options.rounds} rounds, real X server (Xvfb, openbox, dunst):")
        return subprocess.run([sys.executable, __file__, "--inner", "--rounds", str(options.rounds)],
                              env={**desktop.env, "PYTHONPATH": str(ROOT)}, timeout=900).returncode
    finally:
        desktop.stop()


if __name__ == "__main__":
    sys.exit(main())
