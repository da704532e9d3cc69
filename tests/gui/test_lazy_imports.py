"""What the idle app leaves unloaded: Pygments, jeepney and the windows nobody opened.

The app's idle memory is measured against a bare PySide6 + qasync tray (tests/bench/
bench_idle_rss.py); this checks the imports behind it, in a fresh interpreter (this test process
has imported everything already), not the megabytes. The last test starts the tray as a person
does (``desktop-approver tray``) and looks at it once it listens: which modules it loaded, whether
it keeps its modules' source text (PySide6 makes it read all of it: ``gui/source_lines.py``), and,
from outside through ``/proc``, whether it loaded Qt's image plugins.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = r"""
import json, sys
from pathlib import Path
from PySide6.QtWidgets import QApplication

app = QApplication(sys.argv[:1])
from desktop_approver.core.service import ServiceOptions
from desktop_approver.gui import theme
from desktop_approver.gui.app import DesktopApprover
from desktop_approver.notify.freedesktop import DesktopNotifier

theme.apply("dark")
folder = Path(sys.argv[1])
options = ServiceOptions(socket_path=folder / "sock" / "approver.sock", audit_path=folder / "audit.sqlite3",
                         policy_path=folder / "policy.toml", state_path=folder / "state.json")
approver = DesktopApprover(options, notifier=DesktopNotifier())
idle = sorted(sys.modules)
approver.dialog  # built as for the first request shown
with_dialog = sorted(sys.modules)
from desktop_approver.render import highlight

print(json.dumps({"idle": idle, "with_dialog": with_dialog, "paper": highlight.PAPER,
                  "dark_paper": highlight.DARK_PALETTE["PAPER"]}))
"""

NEVER_AT_START = ("pygments", "jeepney", "desktop_approver.gui.history_window", "desktop_approver.gui.sessions_window",
                  "desktop_approver.gui.settings_window", "desktop_approver.gui.statistics_view",
                  "desktop_approver.gui.always_allow", "desktop_approver.gui.rules_file")
BUILT_WHEN_SHOWN = ("desktop_approver.gui.dialog", "desktop_approver.gui.review", "desktop_approver.gui.preview_view",
                    "desktop_approver.render.highlight")
BUILT_WHEN_OPENED = ("desktop_approver.gui.inbox",)


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if any(module == name or module.startswith(name + ".") for module in modules)]


def test_the_app_and_its_dialog_leave_pygments_jeepney_and_the_other_windows_unloaded(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert loaded(seen["idle"], NEVER_AT_START + BUILT_WHEN_SHOWN + BUILT_WHEN_OPENED) == []
    assert loaded(seen["with_dialog"], BUILT_WHEN_SHOWN) == list(BUILT_WHEN_SHOWN)
    assert loaded(seen["with_dialog"], NEVER_AT_START + BUILT_WHEN_OPENED) == []
    # The renderer, loaded after the theme was applied, still paints in the theme's colours.
    assert seen["paper"] == seen["dark_paper"]


TRAY = r"""
import json, linecache, os, stat, sys, threading, time

socket_path = sys.argv[1]


def report_once_listening() -> None:
    while not (os.path.exists(socket_path) and stat.S_ISSOCK(os.stat(socket_path).st_mode)):
        time.sleep(0.02)  # polling for the socket, as an agent would find it
    kept = [name for name, entry in list(linecache.cache.items()) if len(entry) > 1]
    print(json.dumps({"modules": sorted(sys.modules), "source_lines_kept": kept}), flush=True)


threading.Thread(target=report_once_listening, daemon=True).start()
from desktop_approver.cli import main

sys.exit(main(["tray", "--socket", socket_path]))
"""

NOT_IN_THE_IDLE_TRAY = ("desktop_approver.relay", "desktop_approver.core.transport.tokens", "hmac",
                        "desktop_approver.gui.badges", "pydantic",
                        *(name for name in NEVER_AT_START if name != "jeepney"), *BUILT_WHEN_SHOWN, *BUILT_WHEN_OPENED)
"""The relay loads only for a relay (``--relay``, the settings); the tokens (hashlib, OpenSSL's
digests) only for ``--require-token``; the badges (QLabel) with the
first request shown; pydantic with the first connection. (The tray on Linux loads jeepney at start:
notifications and the GlobalShortcuts portal speak D-Bus with it.)"""


def test_the_idle_tray_keeps_no_source_text_no_image_plugin_and_none_of_the_deferred_modules(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    socket_path = tmp_path / "run" / "approver.sock"
    tray = subprocess.Popen([sys.executable, "-c", TRAY, str(socket_path)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert tray.stdout is not None
        readable, _, _ = select.select([tray.stdout], [], [], 60)
        assert readable, "the tray did not listen within 60 s"
        line = tray.stdout.readline()
        assert line, tray.communicate(timeout=30)[1]
        seen = json.loads(line)
        mapped = Path(f"/proc/{tray.pid}/maps").read_text()
        assert tray.stderr is not None
        said = [tray.stderr.readline()]
        while said[-1] and "is listening on" not in said[-1]:  # printed once its signal handlers are in place
            said.append(tray.stderr.readline())
    finally:
        tray.send_signal(signal.SIGTERM)  # the app's clean way out: the socket removed, the audit log closed
        try:
            _, stderr = tray.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            tray.kill()
            tray.communicate()
            raise
    stderr = "".join(said) + stderr
    assert tray.returncode == 0, stderr
    assert len(seen["source_lines_kept"]) <= 1, seen["source_lines_kept"]  # the file read last, at most
    assert loaded(seen["modules"], NOT_IN_THE_IDLE_TRAY) == []
    # The app icon is read when a window needs it, by its format: no plugin was loaded to guess one.
    assert "/imageformats/" not in mapped
    assert not socket_path.exists()
