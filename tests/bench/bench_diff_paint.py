"""Time to first paint of a large diff in the preview view (imported by the benchmark script).

    python tests/bench/bench_diff_paint.py [lines]

prints the seconds from ``PreviewView.set_content`` to the first paint of a diff of about
``lines`` lines (a Python file edited every other line, so the diff has context, removed and
added lines and changed words everywhere), then the time until the whole diff is rendered.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any


def make_texts(lines: int = 10_000) -> tuple[str, str]:
    """Old and new text of a Python file whose diff is about ``lines`` lines long.

    Every other line changes: each change is a removed and an added line, each unchanged line
    a context line, so the diff has about 1.5 lines per line of the file.
    """
    size = max(2, int(lines / 1.5))
    old: list[str] = []
    new: list[str] = []
    n = 0
    while len(old) < size:
        n += 1
        block = [f"def function_{n}(value, other=None):",
                 f'    """Compute thing {n}."""',
                 f"    result = value * {n} + len(str(other))",
                 "    if result > 100:",
                 f"        return result - {n}",
                 "    return result"]
        for k, line in enumerate(block):
            old.append(line)
            new.append(line.replace("result", "outcome") + "  # renamed" if k % 2 else line)
    return "\n".join(old[:size]) + "\n", "\n".join(new[:size]) + "\n"


def _app() -> Any:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication([])


def measure(lines: int = 10_000, *, full: bool = False) -> dict[str, float]:
    """Seconds to first paint (and, with ``full``, until every row is rendered)."""
    app = _app()
    from desktop_approver.gui.preview_view import PreviewView

    old, new = make_texts(lines)
    view = PreviewView()
    view.resize(1100, 800)
    view.show()
    app.processEvents()
    marks: dict[str, float] = {}
    view.first_paint_done.connect(lambda: marks.setdefault("paint", time.perf_counter()))
    view.rendering_done.connect(lambda: marks.setdefault("done", time.perf_counter()))
    started = time.perf_counter()
    view.set_content("Edit", {"file_path": "big.py"}, {"kind": "diff", "path": "big.py", "old": old, "new": new})
    deadline = started + 120
    while "paint" not in marks or (full and "done" not in marks):
        app.processEvents()
        if time.perf_counter() > deadline:
            raise TimeoutError("the diff view never painted")
    result = {"first_paint_s": marks["paint"] - started, "diff_lines": float(view.total_rows())}
    if full:
        result["full_render_s"] = marks["done"] - started
    view.close()
    view.deleteLater()
    app.processEvents()
    return result


def measure_first_paint(lines: int = 10_000) -> float:
    """Seconds from ``set_content`` to the first paint of a ``lines``-line diff (offscreen)."""
    return measure(lines)["first_paint_s"]


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    numbers = measure(count, full=True)
    print(f"diff rows: {numbers['diff_lines']:.0f}")
    print(f"first paint: {numbers['first_paint_s'] * 1000:.0f} ms")
    print(f"fully rendered: {numbers['full_render_s']:.2f} s")
