"""Screenshots of "What this touches" (issue 32), light and dark, at scale 1 and 2.

    .venv/bin/python tests/screenshots/consequences_screenshots.py

Like make_screenshots.py: a real desktop per theme and scale (tests/support/desktop.py), the real
app, and an agent thread working in a real git repository (tests/support/projects.py) with
untracked data, uncommitted changes and ignored build output. Writes
docs/screenshots/consequences-lost*.png (a delete that loses data beside build output) and
consequences-calm*.png (a delete of build output only: one line).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"


async def shoot(theme_name: str, scale: str) -> None:
    from desktop_approver import Client
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui import theme
    from desktop_approver.gui.app import DesktopApprover
    from tests.support.projects import make_repository

    theme.apply(theme_name)
    suffix = ("-dark" if theme_name == "dark" else "") + (f"-x{scale}" if scale != "1" else "")
    tmp = Path(tempfile.mkdtemp())
    os.chdir(make_repository(tmp))           # the agent (a thread of this process) works in the repository
    options = ServiceOptions(socket_path=tmp / "s" / "approver.sock", audit_path=tmp / "audit.sqlite3",
                             policy_path=None, state_path=None)
    approver = DesktopApprover(options, arming_delay_ms=0)
    await approver.start()

    async def scene(command: str, name: str) -> None:
        client = Client(options.socket_path, agent="codex", session=name)
        threading.Thread(target=lambda: client.request("Bash", {"command": command}), daemon=True).start()
        for _ in range(500):
            if approver.dialog.isVisible() and approver.decider.tickets():
                break
            await asyncio.sleep(0.02)
        for _ in range(30):
            await asyncio.sleep(0.03)
        path = OUT / f"{name}{suffix}.png"
        approver.dialog.grab().save(str(path))
        print("wrote", path.relative_to(ROOT), flush=True)
        for ticket in approver.decider.tickets():
            approver.decider.answer(ticket, [Verdict("deny", "user") for _ in ticket.calls])
        for _ in range(10):
            await asyncio.sleep(0.03)

    await scene("rm -rf build node_modules data c.txt", "consequences-lost")
    await scene("rm -rf build node_modules", "consequences-calm")
    await asyncio.wait_for(approver.close(), 20)


def inner(theme_name: str, scale: str) -> None:
    import qasync
    from PySide6.QtWidgets import QApplication

    application = QApplication(sys.argv[:1])
    application.setQuitOnLastWindowClosed(False)
    qasync.run(shoot(theme_name, scale))
    sys.stdout.flush()
    os._exit(0)


def main() -> None:
    from tests.support.desktop import Desktop

    OUT.mkdir(parents=True, exist_ok=True)
    only = sys.argv[1:]
    for theme_name in ("light", "dark"):
        for scale in ("1", "2"):
            if only and f"{theme_name}:{scale}" not in only:
                continue
            desktop = Desktop.start(1280, 800)
            try:
                subprocess.run([sys.executable, __file__, "--inner", theme_name, scale],
                               env={**desktop.env, "QT_SCALE_FACTOR": scale}, check=True, timeout=300)
            finally:
                desktop.stop()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--inner":
        inner(sys.argv[2], sys.argv[3])
    else:
        main()
