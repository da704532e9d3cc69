"""Idle memory of the app against the least a tray app with a socket can be, in one run.

    python tests/bench/bench_idle_rss.py [--settle 3] [--against TREE]

Starts, side by side and offscreen, the app as a person starts it (``desktop-approver tray``, in
a private HOME: default settings, no policy file yet, notifications on) and ``serve.py
bare-tray`` (PySide6's QApplication on a qasync loop, a tray icon with a menu, a listening unix
socket), lets both settle, and reads each one's resident set size (``VmRSS``) from ``/proc``,
three times a second apart, keeping the largest. The target is the app's at most 1.3 times the
bare tray's; the process exits with 1 when it is missed. ``--against TREE`` also measures the app of
another checkout (e.g. the commit before a change) in the same run, reported beside this one's.
Each tree's bytecode is compiled first, as pip does when it installs a wheel: run with
``PYTHONDONTWRITEBYTECODE`` set, the app would compile every module at start and hold what the
compiler left behind (about a megabyte), which no installed app does. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, Target, bench_env, report, servers  # noqa: E402

TARGET = 1.3
"""The app's idle RSS at most this many times the bare tray's (issue 11)."""
START_TIMEOUT = 60.0


def rss(pid: int) -> int:
    """Resident set size in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def settled_rss(pid: int, settle: float) -> int:
    time.sleep(settle)  # idle: let start-up work and deferred imports finish before measuring
    samples = []
    for _ in range(3):
        samples.append(rss(pid))
        time.sleep(1.0)
    return max(samples)


def wait_listening(path: str, process: subprocess.Popen[bytes]) -> None:
    """Until the app's socket exists, without connecting to it: a connection is an agent talking to
    the app, which loads the protocol (the bare tray is not probed either)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited with {process.returncode}")
        if stat.S_ISSOCK(os.stat(path).st_mode) if os.path.exists(path) else False:
            return
        time.sleep(0.05)  # polling for the socket, not as synchronisation of a result
    raise RuntimeError(f"the app did not listen on {path} within {START_TIMEOUT:g} s")


def app_rss(settle: float, root: Path = ROOT) -> int:
    """``desktop-approver tray`` as a person starts it, in a private HOME, on the code of the tree at ``root``."""
    with tempfile.TemporaryDirectory(prefix="approver-bench-") as folder:
        os.chmod(folder, 0o700)
        home = os.path.join(folder, "home")
        os.mkdir(home)
        path = os.path.join(folder, "s.sock")
        env = bench_env(root, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                        XDG_DATA_HOME=os.path.join(home, ".local/share"),
                        XDG_STATE_HOME=os.path.join(home, ".local/state"), XDG_RUNTIME_DIR=folder)
        process = subprocess.Popen([sys.executable, "-m", "desktop_approver", "tray", "--socket", path], cwd=root,
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_listening(path, process)
            return settled_rss(process.pid, settle)
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def measure(settle: float) -> tuple[int, int]:
    """(app, bare tray) resident bytes, both measured while the other runs too."""
    app, baseline, _ = measure_against(settle, None)
    return app, baseline


def measure_against(settle: float, against: Path | None) -> tuple[int, int, int | None]:
    """(app, bare tray, the ``against`` tree's app or None) resident bytes: the apps one after the
    other, while the bare tray runs."""
    for root in (ROOT, against) if against else (ROOT,):
        compileall.compile_dir(str(root / "desktop_approver"), quiet=1)
    with servers("bare-tray") as (bare,):
        app = app_rss(settle)
        other = app_rss(settle, against.resolve()) if against else None
        baseline = settled_rss(bare.pid, 0.0)
    return app, baseline, other


def target(app: int, baseline: int) -> Target:
    return Target("idle RSS, app / bare PySide6 + qasync tray with a socket", app / baseline, TARGET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settle", type=float, default=3.0, help="seconds of idleness before measuring (3)")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="also measure the app of another checkout (e.g. the commit before a change)")
    options = parser.parse_args()
    app, baseline, other = measure_against(options.settle, options.against)
    print(f"app        {app / 2**20:6.1f} MiB  {app / baseline:.2f}x")
    if other is not None:
        print(f"app of {options.against}: {other / 2**20:6.1f} MiB  {other / baseline:.2f}x")
    print(f"bare tray  {baseline / 2**20:6.1f} MiB")
    return report([target(app, baseline)])


if __name__ == "__main__":
    sys.exit(main())
