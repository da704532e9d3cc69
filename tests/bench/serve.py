"""Servers for the benchmark, each in its own process.

``python tests/bench/serve.py echo PATH``: the floor, a bare asyncio unix-socket line echo.
``python tests/bench/serve.py app PATH``: the real tray app (service, dialog, tray on a qasync
loop inside a QApplication, offscreen) with one call pre-remembered for session ``bench``.
``python tests/bench/serve.py core PATH``: the same service on a plain asyncio loop, no Qt.
``python tests/bench/serve.py core-memory-audit PATH``: the core with its audit log in memory, to
show what writing every request and decision durably to disk costs.
``python tests/bench/serve.py bare-tray PATH``: the least a tray app with a socket can be, the
baseline of the idle memory: PySide6's QApplication on a qasync loop, a tray icon with a menu, and
the echo listening on PATH.

Each prints ``ready`` on stdout once its socket listens (``harness.server`` waits for it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

BENCH_SESSION = "bench"
BENCH_AGENT = "bench-agent"  # session memory is per (agent, session)
BENCH_TOOL = "Bash"
BENCH_ARGS = {"command": "pytest -q tests/unit/test_widgets.py -k 'not slow' --maxfail=1 --color=no --tb=short -x"}


async def echo(path: str) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            writer.write(line)
    server = await asyncio.start_unix_server(handle, path=path)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def options(path: str, audit: str | None = None):  # type: ignore[no-untyped-def]
    from desktop_approver.core.service import ServiceOptions

    # The 50 benchmark clients share one process, i.e. one peer pid; the per-process flood guard
    # (32 waiting requests) is tested elsewhere and not what is measured here.
    return ServiceOptions(socket_path=Path(path), audit_path=audit or Path(tempfile.mkdtemp()) / "audit.sqlite3",
                          policy_path=None, state_path=None, max_pending_per_client=1024)


def seed(service) -> None:  # type: ignore[no-untyped-def]
    service.memory.remember(BENCH_SESSION, BENCH_TOOL, BENCH_ARGS, agent=BENCH_AGENT)


async def core(path: str, audit: str | None = None) -> None:
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ApproverService

    class Refuse:
        async def decide(self, ticket):  # type: ignore[no-untyped-def]
            return [Verdict("deny", "user") for _ in ticket.calls]

    service = ApproverService(options(path, audit), Refuse())
    seed(service)
    await service.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


def bare_tray(path: str) -> None:
    import qasync
    from PySide6.QtGui import QColor, QIcon, QPixmap
    from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon

    qt = QApplication([])
    qt.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qt)
    asyncio.set_event_loop(loop)
    pixmap = QPixmap(22, 22)
    pixmap.fill(QColor("darkgreen"))
    menu = QMenu()
    menu.addAction("Quit", qt.quit)
    tray = QSystemTrayIcon(QIcon(pixmap))
    tray.setContextMenu(menu)
    tray.show()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            writer.write(line)

    loop.run_until_complete(asyncio.start_unix_server(handle, path=path))
    print("ready", flush=True)
    loop.run_forever()


def app(path: str) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from desktop_approver.gui.app import DesktopApprover

    try:
        from desktop_approver.gui.event_loop import AppEventLoop as Loop  # the app's own loop (gui/app.py)
    except ImportError:  # an older tree measured with --against: the app ran on qasync's loop as it is
        from qasync import QEventLoop as Loop

    qt = QApplication([])
    loop = Loop(qt)
    asyncio.set_event_loop(loop)
    approver = DesktopApprover(options(path))
    seed(approver.service)
    loop.run_until_complete(approver.start())
    print("ready", flush=True)
    loop.run_forever()


if __name__ == "__main__":
    kind, socket_path = sys.argv[1], sys.argv[2]
    if kind == "app":
        app(socket_path)
    elif kind == "bare-tray":
        bare_tray(socket_path)
    else:
        asyncio.run(echo(socket_path) if kind == "echo"
                    else core(socket_path, ":memory:" if kind == "core-memory-audit" else None))
