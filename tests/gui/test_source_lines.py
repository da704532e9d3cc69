"""The tray keeps no copy of its modules' source (PySide6 reads every module's source through
``linecache``), and a traceback still shows its source lines, read from the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = r"""
import json, linecache, traceback
from desktop_approver.gui.source_lines import stop_keeping_source_lines

stop_keeping_source_lines()
from PySide6.QtWidgets import QApplication  # reads the source of every module loaded so far
import email.message  # and of every module loaded after it

try:
    json.loads("{")
except ValueError:
    shown = traceback.format_exc()
print(json.dumps({"kept": [name for name, entry in linecache.cache.items() if len(entry) > 1], "shown": shown,
                  "first_line": linecache.getline(json.__file__, 1), "read": open(json.__file__).readline()}))
"""


def test_no_module_source_is_kept_and_tracebacks_still_show_their_lines() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert len(seen["kept"]) <= 1  # the file read last, at most
    assert "return _default_decoder.decode(s)" in seen["shown"]  # a line of json/__init__.py, read from the file
    assert seen["first_line"] == seen["read"] != ""


ZIPPED = r"""
import json, linecache, sys, traceback, zipfile
from desktop_approver.gui.source_lines import stop_keeping_source_lines

stop_keeping_source_lines()
archive = sys.argv[1]
with zipfile.ZipFile(archive, "w") as zipped:  # no source file on disk: linecache asks the loader
    zipped.writestr("zipped_module.py", "def fail():\n    raise ValueError('from the archive')\n")
sys.path.insert(0, archive)
import zipped_module

for _ in range(2):
    try:
        zipped_module.fail()
    except ValueError:
        shown = traceback.format_exc()
print(json.dumps({"shown": shown, "kept": [name for name, entry in linecache.cache.items() if len(entry) > 1]}))
"""


def test_a_module_without_a_source_file_still_shows_its_lines(tmp_path: Path) -> None:
    """As in the PyInstaller bundle, where modules live in an archive: linecache's lazy entries work."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", ZIPPED, str(tmp_path / "modules.zip")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert "raise ValueError('from the archive')" in seen["shown"]
    assert len(seen["kept"]) <= 1
