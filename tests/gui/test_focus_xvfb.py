"""Under a real X server (Xvfb): typing in another window must not answer a new dialog."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xvfb]
HERE = Path(__file__).resolve().parent


def free_display() -> int:
    for number in range(150, 250):
        if not os.path.exists(f"/tmp/.X11-unix/X{number}") and not os.path.exists(f"/tmp/.X{number}-lock"):
            return number
    raise RuntimeError("no free X display number")


@pytest.fixture
def xvfb_display() -> str:
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    number = free_display()
    server = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x900x24", "-nolisten", "tcp",
                             "-noreset"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(f"/tmp/.X11-unix/X{number}"):
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            pytest.fail("Xvfb did not start")
        time.sleep(0.05)
    yield f":{number}"
    server.terminate()
    server.wait(10)


def test_new_dialog_does_not_steal_keystrokes(xvfb_display: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    env.update(DISPLAY=xvfb_display, QT_QPA_PLATFORM="xcb")
    probe = subprocess.run([sys.executable, str(HERE / "focus_probe.py")], capture_output=True, text=True,
                           env=env, timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["editor_focused_before"] and seen["dialog_visible"]
    assert not seen["dialog_active"], seen
    assert seen["editor_focused_after"] and seen["editor_text"] == "o d", seen
    assert not seen["answered"], seen
