"""What the idle app leaves unloaded: Pygments, jeepney and the windows nobody opened.

The app's idle memory is measured against a bare PySide6 + qasync tray (tests/bench/
bench_idle_rss.py); this checks the imports behind it, in a fresh interpreter (this test process
has imported everything already), not the megabytes.
"""

from __future__ import annotations

import json
import os
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
