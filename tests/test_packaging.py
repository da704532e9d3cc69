"""The app as users install it: ``python -m build`` makes an sdist and, from it, a wheel; the wheel
goes into a fresh venv (not editable); from there the app starts offscreen, loads its icons from
the installed package, answers a request, and ``status`` sees it. The slow test builds the
PyInstaller one-folder bundle from that venv and does the same with its one executable.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAIT = 60.0
POLICY = '[[rule]]\naction = "allow"\ntool = "ping"\n'
WHEEL_RESOURCES = ["desktop_approver/resources/desktop-approver.desktop",
                   "desktop_approver/resources/io.github.desktop_approver.DesktopApprover.metainfo.xml",
                   "desktop_approver/resources/icons/hicolor/256x256/apps/desktop-approver.png",
                   "desktop_approver/resources/icons/hicolor/scalable/apps/desktop-approver.svg",
                   "desktop_approver/resources/icons/tray/waiting.svg",
                   "desktop_approver/resources/icons/tray/degraded-symbolic.svg",
                   "desktop_approver/resources/linux/desktop-approver.socket",
                   "desktop_approver/resources/linux/desktop-approver.service",
                   "desktop_approver/resources/linux/desktop-approver-autostart.desktop",
                   "desktop_approver/core/calls/catalog/git.toml", "desktop_approver/core/calls/catalog/tools.toml",
                   "desktop_approver/core/calls/catalog/credentials.toml"]


def _clean_env(home: Path) -> dict[str, str]:
    """An environment that cannot see the source tree: no PYTHONPATH, a private HOME and XDG dirs."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), QT_QPA_PLATFORM="offscreen")
    env.pop("XDG_RUNTIME_DIR", None)
    env.pop("DESKTOP_APPROVER_SOCKET", None)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, as ``python -m build`` makes them."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its [app] extra installed (a regular install, not -e)."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    wheel = next(dist.glob("*.whl"))
    done = subprocess.run([str(where / "bin" / "pip"), "install", "-q", f"{wheel}[app]"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return where


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class RunningApp:
    """The tray app started from an installed command, offscreen, with an allow rule for ``ping``."""

    def __init__(self, command: list[str], home: Path) -> None:
        self.command = command
        self.home = home
        self.env = _clean_env(home)
        self.socket = home / "run" / "approver.sock"
        policy = home / "policy.toml"
        home.mkdir(parents=True, exist_ok=True)
        policy.write_text(POLICY)
        self.log = (home / "app.log").open("w+b")
        self.process = subprocess.Popen([*command, "tray", "--no-notifications", "--socket", str(self.socket),
                                         "--policy", str(policy)], cwd=home, env=self.env,
                                        stdout=self.log, stderr=subprocess.STDOUT)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.command, *args, "--socket", str(self.socket)], cwd=self.home, env=self.env,
                              capture_output=True, text=True, timeout=WAIT)

    def wait_ready(self) -> None:
        _wait_until(lambda: self.process.poll() is not None or self.cli("status").returncode == 0, "the app to answer")
        assert self.process.poll() is None, self.output()

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def running(request: pytest.FixtureRequest) -> Iterator[Callable[[list[str], Path], RunningApp]]:
    started: list[RunningApp] = []

    def start(command: list[str], home: Path) -> RunningApp:
        app = RunningApp(command, home)
        started.append(app)
        app.wait_ready()
        return app

    yield start
    for app in started:
        app.stop()


def _answers_and_reports(app: RunningApp) -> None:
    answered = app.cli("request", "--tool", "ping", "--args", "{}")
    assert answered.returncode == 0, answered.stderr
    decision = json.loads(answered.stdout)
    assert decision["decision"] == "allow_once" and decision["decided_by"] == "policy"
    status = json.loads(app.cli("status", "--json").stdout)
    assert status["running"] is True and status["pid"] == app.process.pid
    assert status["socket"] == str(app.socket)


def test_build_makes_an_sdist_and_a_wheel_that_carry_the_resources(dist: Path) -> None:
    wheel, = dist.glob("*.whl")
    sdist, = dist.glob("*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(WHEEL_RESOURCES) <= names
    assert not any(name.startswith(("resources/", "packaging/", "tests/")) for name in names)
    import tarfile

    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for source in ("resources/icons/hicolor/scalable/apps/desktop-approver.svg",
                   "packaging/linux/desktop-approver.socket", "packaging/pyinstaller/desktop-approver.spec",
                   "packaging/macos/desktop-approver-app.spec", "setup.py"):
        assert source in members


def test_the_wheel_in_a_fresh_venv_runs_the_app_with_its_own_icons(venv: Path, tmp_path: Path, running) -> None:
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", (
        "import sys, desktop_approver, importlib.resources as r\n"
        "from PySide6.QtWidgets import QApplication\n"
        "app = QApplication([])\n"
        "from desktop_approver.gui import icons\n"
        "image = icons.tray_image(icons.TrayState.WAITING, 3, 44)\n"
        "assert not image.isNull() and image.width() == 44\n"
        "assert len(icons.app_icon().availableSizes()) == len(icons.APP_ICON_SIZES)\n"
        "print(desktop_approver.__file__); print(r.files(icons.RESOURCES))\n")],
        cwd=tmp_path, env=_clean_env(tmp_path / "probe-home"), capture_output=True, text=True, timeout=WAIT)
    assert probe.returncode == 0, probe.stderr
    package, resources = probe.stdout.split()
    site = str(venv / "lib")
    assert package.startswith(site) and resources.startswith(site)  # from the wheel, not the checkout

    app = running([str(venv / "bin" / "desktop-approver")], tmp_path / "home")
    _answers_and_reports(app)


@pytest.mark.slow
def test_pyinstaller_bundle_runs_the_app_and_the_commands(venv: Path, dist: Path, tmp_path: Path, running) -> None:
    wheel = next(dist.glob("*.whl"))
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[app,bundle]"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    started = time.monotonic()
    build = subprocess.run([str(venv / "bin" / "pyinstaller"), "--noconfirm", "--clean",
                            "--distpath", str(tmp_path / "dist"), "--workpath", str(tmp_path / "work"),
                            str(ROOT / "packaging" / "pyinstaller" / "desktop-approver.spec")],
                           cwd=tmp_path, env=_clean_env(tmp_path / "build-home"), capture_output=True, text=True,
                           timeout=1200)
    assert build.returncode == 0, build.stderr[-4000:]
    print(f"bundle built in {time.monotonic() - started:.0f} s")
    executable = tmp_path / "dist" / "desktop-approver" / "desktop-approver"
    assert executable.is_file()

    app = running([str(executable)], tmp_path / "home")
    _answers_and_reports(app)
    hook = subprocess.run([str(executable), "hook", "claude-code", "--socket", str(app.socket)],
                          input=json.dumps({"session_id": "s1", "tool_name": "ping", "tool_input": {},
                                            "hook_event_name": "PreToolUse", "cwd": str(tmp_path)}),
                          cwd=tmp_path, env=app.env, capture_output=True, text=True, timeout=WAIT)
    assert hook.returncode == 0, hook.stderr
    assert json.loads(hook.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"

    # `install` from the bundle writes the bundle's executable into the entries it installs.
    install_home = tmp_path / "install-home"
    installed = subprocess.run([str(executable), "install", "--autostart"], cwd=tmp_path,
                               env=_clean_env(install_home), capture_output=True, text=True, timeout=WAIT)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    autostart = install_home / ".config" / "autostart" / "desktop-approver.desktop"
    assert f"Exec={executable} tray" in autostart.read_text()
    assert (install_home / ".local/share/icons/hicolor/48x48/apps/desktop-approver.png").is_file()
    shutil.rmtree(tmp_path / "work", ignore_errors=True)
