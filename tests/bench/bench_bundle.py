"""The packaged app: build times, the PyInstaller bundle's size, and cold starts from the bundle
against the same commands from a venv with the wheel installed. Writes the "Packaged app"
section of BENCHMARKS.md (run_bench.py keeps it when it rewrites the rest).

    .venv/bin/python tests/bench/bench_bundle.py            # builds wheel, venv and bundle (~3 min)
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Packaged app"
STARTS = 7
CALLS = 25
POLICY = '[[rule]]\naction = "allow"\ntool = "ping"\n'


def timed(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def run(*command: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    subprocess.run(command, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def folder_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file() and not item.is_symlink())


def app_start(command: str, home: Path) -> tuple[float, subprocess.Popen[bytes], Path, dict[str, str]]:
    """Seconds from starting ``tray`` to its first answered ``status``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XDG_RUNTIME_DIR", "DESKTOP_APPROVER_SOCKET")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "c"), XDG_DATA_HOME=str(home / "d"),
               XDG_STATE_HOME=str(home / "s"), QT_QPA_PLATFORM="offscreen")
    home.mkdir(parents=True, exist_ok=True)
    (home / "policy.toml").write_text(POLICY)
    sock = home / "run" / "approver.sock"
    start = time.perf_counter()
    process = subprocess.Popen([command, "tray", "--no-notifications", "--socket", str(sock), "--policy",
                                str(home / "policy.toml")], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    while subprocess.run([command, "status", "--socket", str(sock)], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode != 0:
        if process.poll() is not None or time.perf_counter() - start > 120:
            raise RuntimeError(f"{command} tray did not come up")
    return time.perf_counter() - start, process, sock, env


def measure(command: str, work: Path) -> dict[str, float]:
    starts = []
    for round_ in range(STARTS):
        seconds, process, sock, env = app_start(command, work / f"home-{round_}")
        starts.append(seconds)
        if round_ == STARTS - 1:
            status = [timed(lambda sock=sock, env=env: run(command, "status", "--socket", str(sock), env=env))
                      for _ in range(CALLS)]
            request = [timed(lambda sock=sock, env=env: run(command, "request", "--socket", str(sock), "--tool", "ping",
                                                             "--args", "{}", env=env)) for _ in range(CALLS)]
        process.terminate()
        process.wait(30)
    version = [timed(lambda: run(command, "--version")) for _ in range(CALLS)]
    return {"app": statistics.median(starts), "status": statistics.median(status),
            "request": statistics.median(request), "version": statistics.median(version)}


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-bundle-"))
    try:
        return bench(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(work: Path) -> int:
    build_time = timed(lambda: run(sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(ROOT)))
    wheel = next((work / "dist").glob("*.whl"))
    venv = work / "venv"
    install_time = timed(lambda: (run(sys.executable, "-m", "venv", str(venv)),
                                  run(str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[app,bundle]")))
    bundle_time = timed(lambda: run(str(venv / "bin" / "pyinstaller"), "--noconfirm", "--clean", "--distpath",
                                    str(work / "bundle"), "--workpath", str(work / "build"),
                                    str(ROOT / "packaging" / "pyinstaller" / "desktop-approver.spec"), cwd=work))
    bundle = work / "bundle" / "desktop-approver"
    from_venv = measure(str(venv / "bin" / "desktop-approver"), work / "venv-runs")
    from_bundle = measure(str(bundle / "desktop-approver"), work / "bundle-runs")

    def row(label: str, key: str) -> str:
        ratio = from_bundle[key] / from_venv[key]
        return f"| {label} | {from_venv[key] * 1000:.0f} ms | {from_bundle[key] * 1000:.0f} ms ({ratio:.2f}x) |"

    section = f"""{HEADING}

Measured by `.venv/bin/python tests/bench/bench_bundle.py` ({platform.machine()}, {os.cpu_count()} cores,
Python {platform.python_version()}): `python -m build` (sdist, then the wheel from it), a fresh venv
with the wheel and its `[app,bundle]` extras, and the PyInstaller one-folder bundle built from that
venv. Medians: app start of {STARTS} runs, commands of {CALLS}.

- `python -m build` (sdist + wheel): {build_time:.0f} s; fresh venv + wheel install: {install_time:.0f} s;
  PyInstaller bundle: {bundle_time:.0f} s.
- Bundle size: {folder_size(bundle) / 1e6:.0f} MB on disk (`dist/desktop-approver/`; PySide6 is most of it).
- Wheel size: {wheel.stat().st_size / 1e3:.0f} kB.

| cold start | from the venv (wheel) | from the bundle |
| --- | --- | --- |
{row("`tray`: start to the first answered `status`", "app")}
{row("`status` against the running app", "status")}
{row("`request` answered by a policy rule", "request")}
{row("`--version`", "version")}

The bundle's executable pays for PyInstaller's bootloader and its compressed module archive on
every start: hooks that run once per tool call start faster from a pip or pipx install.
"""
    report = ROOT / "BENCHMARKS.md"
    text = report.read_text()
    text = text[:text.index(HEADING)].rstrip() + "\n" if HEADING in text else text.rstrip() + "\n"
    report.write_text(text + "\n" + section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
