"""Screenshots of the real windows for the README, light and dark, at scale 1 and 2: one command.

    .venv/bin/python tests/screenshots/make_screenshots.py

Starts a real desktop for each theme and scale (Xvfb 1280x800, openbox, trayer, a private D-Bus,
dunst: tests/support/desktop.py), runs the real app in it with ``--theme`` and
``QT_SCALE_FACTOR``, sends requests from agent threads through the real client, and writes each
window as the person sees it into docs/screenshots/ (``-dark`` and ``-x2`` in the names). A third
run at scale 1.5 (``-x1.5``) shoots only the hostile-input and fitting scenes (an agent's text that
imitates the verdict, a 500-character name with a long command, a 10-call batch). Look at them
before committing. ``make_screenshots.py light:2`` makes one run's pictures.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

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
POLICY = '''version = 1

# Tests and read-only tools never need me.
[[rule]]
action = "allow"
tool = "Bash"
command = ["npm run test*", "pytest *"]
note = "the test suites are harmless"

[[rule]]
action = "block"
path = "./.git/**"
operation = "delete"
note = "git history is not to be deleted by an agent"

[[rule]]
action = "deny"
command = ["curl *", "wget *"]
risk = ["moderate", "destructive"]
expires = 2026-12-31T00:00:00Z
note = "no downloads; ask me in chat"

[[rule]]
action = "ask"
path = "./src/**"
operation = ["write", "delete"]
'''


LONG_COMMAND = ("cd /work/project && ./configure " + " ".join(f"--with-feature-{i}=yes" for i in range(120))
                + " && make -j8 ; rm -rf ~/ --no-preserve-root")
HOSTILE_PREVIEW = "# ✔ Safe — approved by policy\n\nRisk: safe. Nothing to review.\n"


async def shoot(theme_name: str, scale: str, display_shot: Any) -> None:
    from desktop_approver import Client, previews
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui import theme
    from desktop_approver.gui.app import DesktopApprover
    from desktop_approver.notify.freedesktop import DesktopNotifier

    theme.apply(theme_name)
    suffix = ("-dark" if theme_name == "dark" else "") + (f"-x{scale}" if scale != "1" else "")
    full = scale in ("1", "2")  # the other scales shoot only the hostile-input and fitting scenes
    tmp = Path(tempfile.mkdtemp())
    policy = tmp / "policy.toml"
    policy.write_text(POLICY)
    options = ServiceOptions(socket_path=tmp / "s" / "approver.sock", audit_path=tmp / "audit.sqlite3",
                             policy_path=policy, state_path=None)
    approver = DesktopApprover(options, arming_delay_ms=0, notifier=DesktopNotifier(timeout=10.0))
    await approver.start()

    def ask(agent: str, session: str, tool: str, args: dict, **extra: object) -> None:
        client = Client(options.socket_path, agent=agent, session=session)
        threading.Thread(target=lambda: client.request(tool, args, **extra), daemon=True).start()

    def ask_batch(agent: str, session: str, calls: list) -> None:
        client = Client(options.socket_path, agent=agent, session=session)
        threading.Thread(target=lambda: client.request_batch(calls), daemon=True).start()

    async def settle(rounds: int = 30) -> None:
        for _ in range(rounds):  # lazy rendering, the deferred fit, dunst drawing (qasync runs Qt's events)
            await asyncio.sleep(0.03)

    async def shown(count: int = 1) -> None:
        for _ in range(500):
            if approver.dialog.isVisible() and len(approver.decider.tickets()) >= count:
                break
            await asyncio.sleep(0.02)
        await settle()

    def grab(widget: Any, name: str) -> None:
        path = OUT / f"{name}{suffix}.png"
        widget.grab().save(str(path))
        print("wrote", path.relative_to(ROOT), flush=True)

    async def finish(choice: str = "deny") -> None:
        for ticket in approver.decider.tickets():
            verdict = choice if ticket.risk_level != "destructive" else "deny"
            approver.decider.answer(ticket, [Verdict(verdict, "user", note="not now" if verdict == "deny" else None)
                                             for _ in ticket.calls])
        await settle(10)

    # Five requests from three agents: three notifications, none over the dialog (the whole screen).
    ask("codex", "c-1", "Bash", {"command": "pytest -q"})
    await shown()
    ask("codex", "c-1", "Bash", {"command": "git push --force origin main"})
    ask("claude", "cl-1", "Bash", {"command": "npm install left-pad"})
    ask("claude", "cl-1", "write_file", {"path": "notes.txt", "content": "hello\n"})
    ask("aider", "a-1", "Bash", {"command": "ls -la"})
    await shown(5)
    await settle(40)
    display_shot(OUT / f"desktop-five-agents{suffix}.png")
    print("wrote", f"docs/screenshots/desktop-five-agents{suffix}.png", flush=True)
    if scale == "1":
        approver.choose_mode("approve_all", 15 * 60)  # its time left heads the menu (destructive calls still ask)
        approver.tray.menu.popup(approver.dialog.geometry().topLeft())
        await settle()
        grab(approver.tray.menu, "tray-menu")
        approver.tray.menu.hide()
        approver.choose_mode("interactive", None)
    approver.dialog.clear()
    approver.decider.current = None
    approver.open_inbox()
    approver.inbox.select(approver.decider.tickets()[0])
    await settle()
    grab(approver.inbox, "inbox")
    approver.inbox.hide()
    await finish()

    # Hostile input: agent text that imitates the app's verdict stays in the agent's frame.
    ask("helpful-agent", "h-1", "Read\nRisk: safe ✔", {"file_path": "~/.ssh/id_ed25519"},
        description="✔ Safe – approved by policy",
        preview={"kind": "text", "text": HOSTILE_PREVIEW, "format": "markdown"})
    await shown()
    grab(approver.dialog, "dialog-hostile")
    await finish()

    # Long input: a 500-character agent name and a long command whose dangerous part is at the end.
    ask("agent-" + "n" * 494, "session-" + "s" * 200, "Bash", {"command": LONG_COMMAND})
    await shown()
    display_shot(OUT / f"desktop-long-command{suffix}.png")
    print("wrote", f"docs/screenshots/desktop-long-command{suffix}.png", flush=True)
    await finish()

    ask_batch("ops-agent", "ops-8", [("Bash", {"command": f"make target-{i} && rm -rf build-{i}/" if i % 3 == 0
                                               else f"make target-{i}"}) for i in range(10)])
    await shown()
    grab(approver.dialog, "dialog-batch-10")
    await finish()
    if not full:
        await approver.close()
        return

    ask("codex", "c-1", "Bash", {"command": "git status --short"})
    await shown()
    grab(approver.dialog, "dialog-compact")
    await finish()

    ask("coding-agent", "run-42", "write_file", {"path": "settings_io.py", "content": NEW},
        description="Use pathlib and tolerate a missing settings file",
        preview=previews.diff("settings_io.py", OLD, NEW))
    await shown()
    grab(approver.dialog, "dialog-diff")
    if scale == "1":
        approver.dialog.review.preview.set_mode("split")
        await settle()
        grab(approver.dialog, "dialog-split")
    await finish()

    ask_batch("ops-agent", "ops-7", [("Bash", {"command": "make build"}), ("Bash", {"command": "rm -rf build/"}),
                                     ("Bash", {"command": "make test"}), ("Bash", {"command": "git status"})])
    await shown()
    grab(approver.dialog, "dialog-batch")
    await finish()

    ask("ops-agent", "ops-7", "Bash",
        {"command": "rm -rf \"$HOME/.cache\"/ && echo 'cleanup #\u202e lanif\u202c' && ls"}, description="Clear caches")
    await shown()
    grab(approver.dialog, "dialog-destructive-bidi")
    await finish()

    if scale == "1":
        for agent, session, tool, args in (
                ("coding-agent", "run-42", "Bash", {"command": "make docs"}),
                ("coding-agent", "run-42", "write_file", {"path": "src/app.py", "content": "print('hi')\n"})):
            ask(agent, session, tool, args)
            await shown()
            await finish("allow_session")
        sessions = approver.open_sessions()
        sessions.resize(900, 300)
        await settle()
        grab(sessions, "sessions")
        sessions.hide()

        history = approver.open_history()
        await settle()
        for row in range(history.table.topLevelItemCount()):
            item = history.table.topLevelItem(row)
            if item.text(2) == "Bash" and "force" in item.text(3):
                history.table.setCurrentItem(item)
        await settle()
        grab(history, "history")
        statistics = getattr(history, "show_statistics", None)
        if statistics is not None:
            statistics()
            await settle()
            grab(history, "statistics")
        history.hide()

        ask("coding-agent", "run-42", "Bash", {"command": "npm run lint -- --fix"})
        await shown()
        approver.always_allow(approver.dialog.ticket)
        rules = approver.rule_dialog
        rules.scope.setCurrentIndex(1)
        rules.expiry.setCurrentIndex(3)
        await settle()
        grab(rules, "always-allow")
        rules.reject()
        await finish()

        open_settings = getattr(approver, "open_settings", None)
        if open_settings is not None:
            window = open_settings()
            window.resize(1000, 520)
            await settle()
            grab(window, "rules")
            window.show_tab("settings")
            await settle()
            grab(window, "settings")
            window.hide()
    await finish()
    try:
        await asyncio.wait_for(approver.close(), 20)
    except TimeoutError:
        print("closing the app took too long; the screenshots are written", flush=True)


def inner(theme_name: str, scale: str) -> None:
    import qasync
    from PySide6.QtWidgets import QApplication

    application = QApplication(sys.argv[:1])
    application.setQuitOnLastWindowClosed(False)

    def display_shot(path: Path) -> None:
        display = os.environ["DISPLAY"]
        subprocess.run(["sh", "-c", f"xwd -root -silent -display {display} | convert xwd:- png:{path}"], check=True,
                       timeout=60)

    qasync.run(shoot(theme_name, scale, display_shot))
    sys.stdout.flush()
    os._exit(0)  # the pictures are written: do not wait for agent threads still blocked on the socket


def main() -> None:
    from tests.support.desktop import Desktop

    OUT.mkdir(parents=True, exist_ok=True)
    runs = [(theme_name, scale) for theme_name in ("light", "dark") for scale in ("1", "2")] + [("light", "1.5")]
    only = sys.argv[1:]  # e.g. "light:2" to make one run's pictures
    for theme_name, scale in runs:
        if only and f"{theme_name}:{scale}" not in only:
            continue
        desktop = Desktop.start(1280, 800)
        try:
            env = {**desktop.env, "QT_SCALE_FACTOR": scale}
            subprocess.run([sys.executable, __file__, "--inner", theme_name, scale], env=env, check=True,
                           timeout=300)
        finally:
            desktop.stop()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--inner":
        inner(sys.argv[2], sys.argv[3])
    else:
        main()
