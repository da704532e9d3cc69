"""Run under a real X server: does a new approval dialog steal the keyboard from another window?

Prints one JSON line with what it saw; tests/gui/test_focus_xvfb.py runs it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


async def probe() -> dict:
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QLineEdit

    from desktop_approver import Client
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    tmp = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=tmp / "s" / "a.sock", audit_path=tmp / "a.sqlite3", policy_path=None,
                             state_path=None)
    approver = DesktopApprover(options)
    await approver.start()
    editor = QLineEdit()
    editor.setWindowTitle("the person's editor")
    editor.show()
    editor.activateWindow()
    editor.setFocus()
    for _ in range(100):
        if editor.hasFocus():
            break
        await asyncio.sleep(0.02)
    result: dict = {"editor_focused_before": editor.hasFocus()}
    answers: list = []
    client = Client(options.socket_path, agent="focus-probe")
    threading.Thread(target=lambda: answers.append(client.request("Bash", {"command": "ls"})), daemon=True).start()
    for _ in range(250):
        if approver.dialog.isVisible():
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    QTest.keyClicks(QApplication.focusWidget() or editor, "o d\r")  # the person keeps typing
    await asyncio.sleep(0.2)
    result.update(dialog_visible=approver.dialog.isVisible(), dialog_active=approver.dialog.isActiveWindow(),
                  editor_focused_after=editor.hasFocus(), editor_text=editor.text(), answered=bool(answers),
                  focus_widget=type(QApplication.focusWidget()).__name__)
    approver.decider.answer(approver.dialog.ticket, [__import__("desktop_approver.core.decisions.tickets",
                                                                fromlist=["Verdict"]).Verdict("deny")])
    await asyncio.sleep(0.2)
    await approver.close()
    return result


if __name__ == "__main__":
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    print(json.dumps(qasync.run(probe())), flush=True)
