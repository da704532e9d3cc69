"""Screenshots of the tray icon in every state, in a real system tray (trayer) under Xvfb, on a
light and a dark panel, in colour and symbolic looks, at scale 1 and 2.

    .venv/bin/python tests/screenshots/tray_screenshots.py [OUT_DIR]     (default docs/screenshots)

Each panel shows, right to left (trayer puts each new icon on the left): idle; 3 waiting; 12
waiting, one destructive; approve-all; approve-all with 2 waiting; deny-all; do-not-disturb with
4 queued; degraded.
``tests/gui/test_tray_xvfb.py`` runs it and checks every icon was embedded and drawn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"
WAIT = 30.0
SHOWN = [("idle", 0, False), ("waiting", 3, False), ("waiting", 12, True), ("approve-all", 0, False),
         ("approve-all", 2, False), ("deny-all", 0, False), ("do-not-disturb", 4, False), ("degraded", 0, False)]


@dataclass(frozen=True)
class Panel:
    name: str
    tint: str      # trayer's background, 0xRRGGBB
    style: str     # the app's --tray-icons
    dark: bool     # what the symbolic look is told about the panel
    scale: int     # QT_SCALE_FACTOR: 2 is a HiDPI screen (a 48-pixel panel)

    @property
    def height(self) -> int:
        return 24 * self.scale


PANELS = [
    Panel("tray-color-light", "0xf2f2f2", "color", False, 1),
    Panel("tray-color-dark", "0x2b2b2b", "color", True, 1),
    Panel("tray-symbolic-light", "0xf2f2f2", "symbolic", False, 1),
    Panel("tray-symbolic-dark", "0x2b2b2b", "symbolic", True, 1),
    Panel("tray-color-light@2x", "0xf2f2f2", "color", False, 2),
    Panel("tray-symbolic-dark@2x", "0x2b2b2b", "symbolic", True, 2),
]


def child(style: str, dark: bool) -> int:
    """Show one tray icon per state until stdin closes."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QSystemTrayIcon

    from desktop_approver.gui import icons

    app = QApplication(sys.argv[:1])
    deadline = time.monotonic() + WAIT
    while not QSystemTrayIcon.isSystemTrayAvailable():
        if time.monotonic() > deadline:
            print("no system tray", flush=True)
            return 1
        app.processEvents()
        time.sleep(0.05)
    trays = []
    for state, pending, destructive in SHOWN:
        tray = QSystemTrayIcon(icons.tray_icon(icons.TrayState(state), pending, destructive=destructive,
                                               style=style, dark_panel=dark))
        tray.setToolTip(f"{state} {pending}")
        tray.show()
        trays.append(tray)
        app.processEvents()
    print("shown", flush=True)
    stdin_closed = QTimer()
    stdin_closed.timeout.connect(lambda: app.quit() if _stdin_closed() else None)
    stdin_closed.start(100)
    return app.exec()


def _stdin_closed() -> bool:
    import select

    readable, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(readable) and not sys.stdin.buffer.read1(1)


def _wait(condition: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + WAIT
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1000x200x24", "-nolisten", "tcp",
                             "-noreset"],
                            pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()
    if not number:
        xvfb.kill()
        raise RuntimeError("Xvfb did not report a display")
    return xvfb, f":{number}"


def _trayer_width(env: dict[str, str]) -> int:
    # trayer's panel window is named "panel" (WM_CLASS "panel", "trayer"); it grows with each icon.
    found = subprocess.run(["xdotool", "search", "--name", "^panel$"], env=env, capture_output=True, text=True)
    widths = []
    for window in found.stdout.split():
        geometry = subprocess.run(["xdotool", "getwindowgeometry", window], env=env, capture_output=True, text=True)
        for line in geometry.stdout.splitlines():
            if "Geometry:" in line:
                widths.append(int(line.split()[-1].split("x")[0]))
    return max(widths, default=0)


def _grab(env: dict[str, str], width: int, height: int, target: Path) -> bytes:
    subprocess.run(["import", "-window", "root", "-crop", f"{width}x{height}+0+0", "+repage", str(target)],
                   env=env, check=True, capture_output=True)
    return target.read_bytes()


def shoot(panel: Panel, display: str, out: Path) -> Path:
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", QT_SCALE_FACTOR=str(panel.scale))
    trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "left", "--widthtype", "request",
                               "--heighttype", "pixel", "--height", str(panel.height), "--transparent", "true",
                               "--alpha", "0", "--tint", panel.tint, "--SetDockType", "true", "--expand", "true",
                               "--iconspacing", str(2 * panel.scale)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    icons = subprocess.Popen([sys.executable, __file__, "--child", panel.style, "dark" if panel.dark else "light"],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert icons.stdout is not None
        line = icons.stdout.readline().decode().strip()
        if line != "shown":
            raise RuntimeError(f"the tray icons did not show: {line!r}")
        # Embedded when the panel has grown to hold them all; drawn when two grabs agree.
        _wait(lambda: _trayer_width(env) >= len(SHOWN) * panel.height * 0.9, "trayer to embed every icon")
        width = _trayer_width(env)
        target = out / f"{panel.name}.png"
        previous = [b""]

        def settled() -> bool:
            now = _grab(env, width, panel.height, target)
            same = now == previous[0]
            previous[0] = now
            return same

        _wait(settled, "the icons to be drawn")
        return target
    finally:
        if icons.stdin is not None:
            icons.stdin.close()
        try:
            icons.wait(10)
        except subprocess.TimeoutExpired:
            icons.kill()
            icons.wait()
        if icons.stdout is not None:
            icons.stdout.close()
        trayer.terminate()
        trayer.wait(10)


def main(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    xvfb, display = start_xvfb()
    try:
        return [shoot(panel, display, out) for panel in PANELS]
    finally:
        xvfb.terminate()
        xvfb.wait(10)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2], sys.argv[3] == "dark"))
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
