"""Screenshots of the real windows under Xvfb, for the README (run by hand, looked at by a person).

    Xvfb :95 -screen 0 1400x1000x24 &  DISPLAY=:95 .venv/bin/python tests/screenshots/make_screenshots.py

Starts the real app on a private socket, sends requests from agent threads through the real
client, and grabs each window as it is shown to the person.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"

OLD = '''import json


def load(path):
    with open(path) as handle:
        return json.load(handle)


def save(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle)
'''
NEW = '''import json
from pathlib import Path


def load(path: Path) -> dict:
    """Read a settings file; a missing file is an empty dict."""
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def save(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)
'''


async def main() -> None:
    from PySide6.QtWidgets import QApplication

    from desktop_approver import Client, previews
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    tmp = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=tmp / "s" / "approver.sock", audit_path=tmp / "audit.sqlite3",
                             policy_path=tmp / "policy.toml", state_path=None)
    approver = DesktopApprover(options, arming_delay_ms=0)
    await approver.start()
    app = QApplication.instance()

    def ask(agent: str, session: str, tool: str, args: dict, **extra: object) -> None:
        client = Client(options.socket_path, agent=agent, session=session)
        threading.Thread(target=lambda: client.request(tool, args, **extra), daemon=True).start()

    async def shown(count: int = 1) -> None:
        for _ in range(500):
            if approver.dialog.isVisible() and len(approver.decider.tickets()) >= count:
                break
            await asyncio.sleep(0.02)
        for _ in range(40):  # let lazy rendering finish
            app.processEvents()
            await asyncio.sleep(0.02)

    def grab(widget, name: str) -> None:  # type: ignore[no-untyped-def]
        widget.grab().save(str(OUT / name))
        print("wrote", OUT / name)

    async def finish(choice: str = "deny") -> None:
        from desktop_approver.core.tickets import Verdict

        for ticket in approver.decider.tickets():
            verdict = choice if ticket.risk_level != "destructive" else "deny"
            approver.decider.answer(ticket, [Verdict(verdict, "user", note="not now" if verdict == "deny" else None)
                                             for _ in ticket.calls])
        await asyncio.sleep(0.2)

    ask("coding-agent", "run-42", "write_file", {"path": "settings_io.py", "content": NEW},
        description="Use pathlib and tolerate a missing settings file",
        preview=previews.diff("settings_io.py", OLD, NEW))
    await shown()
    approver.dialog.resize(980, 760)
    await asyncio.sleep(0.2)
    grab(approver.dialog, "dialog-diff.png")
    approver.dialog.review.preview.set_mode("split")
    for _ in range(20):
        app.processEvents()
        await asyncio.sleep(0.02)
    grab(approver.dialog, "dialog-split.png")
    await finish()

    ask("ops-agent", "ops-7", "Bash", {"command": "rm -rf \"$HOME/.cache\"/ && echo 'cleanup #\u202e lanif\u202c' && ls"},
        description="Clear caches")
    await shown()
    grab(approver.dialog, "dialog-destructive-bidi.png")
    await finish()

    for agent, session, tool, args in (
            ("coding-agent", "run-42", "Bash", {"command": "pytest -q"}),
            ("coding-agent", "run-42", "write_file", {"path": "src/app.py", "content": "print('hi')\n"}),
            ("ops-agent", "ops-7", "Bash", {"command": "git push --force origin main"}),
            ("research-agent", "r-1", "fetch", {"url": "https://docs.python.org/3/"})):
        ask(agent, session, tool, args)
    await shown(4)
    approver.dialog.clear()
    approver.open_inbox()
    approver.inbox.select(approver.decider.tickets()[0])
    await asyncio.sleep(0.5)
    grab(approver.inbox, "inbox.png")
    await finish("allow_session")
    approver.inbox.hide()

    sessions = approver.open_sessions()
    sessions.resize(900, 300)
    await asyncio.sleep(0.3)
    grab(sessions, "sessions.png")
    sessions.hide()

    history = approver.open_history()
    await asyncio.sleep(0.3)
    for row in range(history.table.topLevelItemCount()):
        if history.table.topLevelItem(row).text(2) == "Bash" and "force" in history.table.topLevelItem(row).text(3):
            history.table.setCurrentItem(history.table.topLevelItem(row))
    await asyncio.sleep(0.5)
    grab(history, "history.png")
    history.hide()

    ask("coding-agent", "run-42", "Bash", {"command": "npm run test -- --watch"})
    await shown()
    approver.always_allow(approver.dialog.ticket)
    rules = approver.rule_dialog
    rules.scope.setCurrentIndex(1)
    rules.expiry.setCurrentIndex(3)
    await asyncio.sleep(0.3)
    grab(rules, "always-allow.png")
    rules.reject()
    await finish()
    await approver.close()


if __name__ == "__main__":
    import qasync
    from PySide6.QtWidgets import QApplication

    application = QApplication(sys.argv[:1])
    OUT.mkdir(parents=True, exist_ok=True)
    qasync.run(main())
