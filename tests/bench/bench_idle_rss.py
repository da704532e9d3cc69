"""Idle memory of the tray app against a bare PySide6 + qasync tray with a listening socket.

    .venv/bin/python tests/bench/bench_idle_rss.py [--rounds 3] [--settle 3] [--notifications]

Starts, side by side and offscreen (``QT_QPA_PLATFORM=offscreen``, private temporary XDG
directories), the real app (``python -m desktop_approver tray``) and :data:`BARE_TRAY`: a
QApplication, a tray icon, a qasync loop and a unix socket that listens. Once both are up they are
left alone for ``--settle`` seconds, then ``VmRSS`` is read from ``/proc``; the ratio is taken in
the same round, so the machine's state falls on both alike. The app runs with
``--no-notifications`` unless ``--notifications`` is given (then it reaches for a session bus
that offscreen runs usually do not have). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

BARE_TRAY = r"""
import asyncio, sys
from PySide6.QtGui import QIcon, QPixmap, QColor
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
import qasync

app = QApplication(sys.argv[:1])
app.setQuitOnLastWindowClosed(False)
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
pixmap = QPixmap(22, 22)
pixmap.fill(QColor("#3b82f6"))
tray = QSystemTrayIcon(QIcon(pixmap))
tray.show()

async def serve(reader, writer):
    writer.close()

async def main():
    server = await asyncio.start_unix_server(serve, path=sys.argv[1])
    print("listening", file=sys.stderr, flush=True)
    await asyncio.Event().wait()

loop.run_until_complete(main())
"""


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def wait_listening(process: subprocess.Popen[str], word: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"exited before listening (code {process.wait()})")
        if word in line:
            return
    raise RuntimeError("not listening in time")


def one_round(settle: float, notifications: bool) -> tuple[int, int]:
    with tempfile.TemporaryDirectory(prefix="da-rss-") as folder:
        home = Path(folder)
        runtime = home / "run"
        runtime.mkdir(mode=0o700)
        env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                   XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
                   XDG_RUNTIME_DIR=str(runtime), QT_QPA_PLATFORM="offscreen",
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        for name in ("DESKTOP_APPROVER_SOCKET", "DESKTOP_APPROVER_TOKEN", "DESKTOP_APPROVER_LOG_LEVEL"):
            env.pop(name, None)
        if not notifications:
            env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        app_command = [sys.executable, "-m", "desktop_approver", "tray", "--socket", str(runtime / "app.sock")]
        if not notifications:
            app_command.append("--no-notifications")
        app = subprocess.Popen(app_command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        bare = subprocess.Popen([sys.executable, "-c", BARE_TRAY, str(runtime / "bare.sock")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_listening(app, "listening on")
            wait_listening(bare, "listening")
            time.sleep(settle)
            return vm_rss_kib(app.pid), vm_rss_kib(bare.pid)
        finally:
            for process in (app, bare):
                process.terminate()
            for process in (app, bare):
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds both are left idle before reading")
    parser.add_argument("--notifications", action="store_true", help="let the app reach for desktop notifications")
    options = parser.parse_args()
    ratios = []
    for number in range(1, options.rounds + 1):
        app, bare = one_round(options.settle, options.notifications)
        ratios.append(app / bare)
        print(f"round {number}: app {app / 1024:.1f} MiB, bare tray {bare / 1024:.1f} MiB, "
              f"ratio {app / bare:.2f}x", flush=True)
    print(f"median ratio {statistics.median(ratios):.2f}x over {len(ratios)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
