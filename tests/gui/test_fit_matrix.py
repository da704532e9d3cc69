"""Every window fits every screen, whatever the input: a matrix of screens times hostile inputs.

Each screen is a fresh app process on Qt's offscreen platform, given the screen's size in a
configuration file and the scale in ``QT_SCALE_FACTOR`` (both honoured offscreen; under Xvfb the
same variables give the same logical sizes). ``fit_probe.py`` sends 500-character names, a
5,000-character command, a description of 60 line breaks, a 3,000-line diff and a 10-call
batch through the real client, and
reports the dialog's and the inbox's geometry and their buttons'.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.gui import placement

pytestmark = pytest.mark.slow  # five app processes, about 25 s each on two loaded cores

PROBE = Path(__file__).with_name("fit_probe.py")
ROOT = PROBE.parent.parent.parent
SCREENS = [(1280, 800, "1"), (1280, 800, "1.5"), (1280, 800, "2"), (1366, 768, "1"), (3840, 2160, "2")]


def probe(tmp_path: Path, width: int, height: int, scale: str) -> dict[str, Any]:
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "QT_SCALE_FACTOR": scale,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(PROBE)], env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "request failed" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def inside(box: list[int], area: list[int]) -> bool:
    x, y, width, height = box
    return x >= area[0] and y >= area[1] and x + width <= area[0] + area[2] and y + height <= area[1] + area[3]


@pytest.mark.parametrize(("width", "height", "scale"), SCREENS, ids=[f"{w}x{h}@{s}" for w, h, s in SCREENS])
def test_every_window_and_its_buttons_are_on_screen(tmp_path: Path, width: int, height: int, scale: str) -> None:
    report = probe(tmp_path, width, height, scale)
    area = report["area"]
    assert area[2] == round(width / float(scale)) or abs(area[2] - width / float(scale)) <= 1, area
    assert set(report["inputs"]) == {"long-names", "long-command", "blank-lines-description", "big-diff",
                                     "batch-of-10", "batch-of-50"}
    for name, seen in report["inputs"].items():
        for window in ("dialog", "inbox"):
            where = f"{window} with {name} on {width}x{height} at {scale}"
            box, frame = seen[window]["window"], seen[window]["frame"]
            assert inside(box, area) and inside(frame, area), (where, box, frame, area)
            # and room for a real window manager's title bar and borders (the offscreen frame is thin)
            framed = [frame[0], frame[1], box[2] + placement.FRAME[0], box[3] + placement.FRAME[1]]
            assert inside(framed, area), (where, box, frame, area)
            for minimum in (seen[window]["min_hint"], seen[window]["minimum"]):
                assert minimum[0] <= area[2] and minimum[1] <= area[3], (where, minimum, area)
            buttons = seen[window]["buttons"]
            assert {"allow_once", "deny"} <= set(buttons), (where, buttons)
            for button, place in buttons.items():
                assert inside(place["rect"], box), (where, button, place, box)
                if button != "countdown":
                    assert place["rect"][2] >= place["hint_width"], (where, button, place)  # never cut ("De")
            for control in seen[window]["controls"]:  # every check box, button and one-line label read whole
                assert control["width"] >= control["needs"], (where, control)
        if not name.startswith("batch-"):  # a batch's list of calls comes first; its selected call below
            assert seen["call_in_first_view"], (name, width, height, scale)
        else:  # most dangerous first (issue 31), the ones Allow leaves out named in the first view
            batch = seen["batch"]
            assert batch["opens_on"] == "destructive", (name, batch)
            assert batch["first_rows"][:4] == ["⚠ Destructive"] * 4, (name, batch)
            assert batch["left_out"].startswith("Unticked, denied when you allow: ⚠ "), (name, batch)
            assert batch["left_out_in_first_view"], (name, width, height, scale, batch)
        inbox = seen["inbox"]
        assert 0 <= inbox["risk_column_x"] < inbox["tree_width"], (name, inbox)  # the Risk column in view
        assert len(seen["title"]) <= 140, seen["title"]
    assert "rm -rf ~/" in report["inputs"]["long-command"]["title"]  # the dangerous tail first, not cut off
