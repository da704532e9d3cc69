"""``desktop-approver install`` / ``uninstall`` against a temporary HOME and XDG directories:
the right files appear and go away, every path is printed, nothing outside that home changes,
and the installed entries and units pass the desktop's own validators."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_approver.commands import install

ROOT = Path(__file__).resolve().parent.parent
ICON_FILES = [f".local/share/icons/hicolor/{n}x{n}/apps/desktop-approver.png" for n in install.ICON_SIZES] + [
    ".local/share/icons/hicolor/scalable/apps/desktop-approver.svg",
    ".local/share/icons/hicolor/symbolic/apps/desktop-approver-symbolic.svg"]
BASE_FILES = [".local/share/applications/desktop-approver.desktop",
              f".local/share/metainfo/{install.METAINFO}", *ICON_FILES]
UNIT_FILES = [".config/systemd/user/desktop-approver.socket", ".config/systemd/user/desktop-approver.service"]
AUTOSTART_FILE = ".config/autostart/desktop-approver.desktop"
FAKE_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$SYSTEMCTL_LOG"
"""


def _tree(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def _files(root: Path) -> set[str]:
    return set(_tree(root))


def _run(tmp_path: Path, *args: str, fake_systemctl: bool = True) -> subprocess.CompletedProcess[str]:
    # No way to the desktop's own user manager: XDG_RUNTIME_DIR is the test's (conftest), and no bus.
    env = {key: value for key, value in os.environ.items() if key != "DBUS_SESSION_BUS_ADDRESS"}
    if fake_systemctl:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        fake = bin_dir / "systemctl"
        fake.write_text(FAKE_SYSTEMCTL)
        fake.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
        env["SYSTEMCTL_LOG"] = str(tmp_path / "systemctl.log")
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def _systemctl_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "systemctl.log"
    return log.read_text().splitlines() if log.exists() else []


def _printed_paths(output: str) -> list[Path]:
    return [Path(line.split(None, 1)[1].strip()) for line in output.splitlines()
            if line.split(None, 1)[0] in ("wrote", "unchanged", "removed", "would")
            and "/" in line and not line.startswith("would run")]


def test_dry_run_prints_every_path_and_changes_nothing(tmp_path: Path, private_home: Path) -> None:
    before = _tree(private_home)
    done = _run(tmp_path, "install", "--systemd", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert _tree(private_home) == before
    assert _systemctl_calls(tmp_path) == []
    for name in [*BASE_FILES, *UNIT_FILES]:
        assert f"would write    {private_home / name}" in done.stdout
    assert "would run      systemctl --user enable --now desktop-approver.socket" in done.stdout


def test_install_systemd_is_idempotent_and_uninstall_takes_it_all_away(tmp_path: Path, private_home: Path) -> None:
    before = _files(private_home)
    first = _run(tmp_path, "install", "--systemd")
    assert first.returncode == 0, first.stdout + first.stderr
    assert _files(private_home) - before == {*BASE_FILES, *UNIT_FILES}
    assert all(private_home in path.parents for path in _printed_paths(first.stdout))
    assert _systemctl_calls(tmp_path) == ["--user daemon-reload", "--user enable --now desktop-approver.socket"]

    service = (private_home / UNIT_FILES[1]).read_text()
    command = install.app_command()
    assert f"ExecStart={' '.join(command)} tray" in service
    entry = (private_home / BASE_FILES[0]).read_text()
    assert f"Exec={' '.join(command)} tray" in entry
    shipped = ROOT / "resources/icons/hicolor/16x16/apps/desktop-approver.png"
    assert (private_home / ICON_FILES[0]).read_bytes() == shipped.read_bytes()

    installed = _tree(private_home)
    again = _run(tmp_path, "install", "--systemd")
    assert again.returncode == 0
    assert "wrote" not in again.stdout and again.stdout.count("unchanged") == len(BASE_FILES) + len(UNIT_FILES)
    assert _tree(private_home) == installed

    gone = _run(tmp_path, "uninstall")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert "--user disable --now desktop-approver.socket desktop-approver.service" in _systemctl_calls(tmp_path)
    assert _files(private_home) == before
    for name in [*BASE_FILES, *UNIT_FILES]:
        assert f"removed        {private_home / name}" in gone.stdout
    assert _run(tmp_path, "uninstall").stdout == ""  # nothing left to remove: nothing said


def test_autostart_and_systemd_replace_each_other(tmp_path: Path, private_home: Path) -> None:
    assert _run(tmp_path, "install", "--autostart").returncode == 0
    entry = private_home / AUTOSTART_FILE
    assert entry.is_file() and not (private_home / UNIT_FILES[0]).exists()
    assert f"Exec={' '.join(install.app_command())} tray" in entry.read_text()
    assert _run(tmp_path, "install", "--systemd").returncode == 0
    assert not entry.exists() and (private_home / UNIT_FILES[0]).is_file()
    assert _run(tmp_path, "install", "--autostart").returncode == 0
    assert entry.is_file() and not (private_home / UNIT_FILES[0]).exists()
    assert _run(tmp_path, "install", "--systemd", "--autostart").returncode == 2  # one or the other


def test_without_a_user_manager_it_says_why_the_socket_is_not_enabled(tmp_path: Path, private_home: Path) -> None:
    done = _run(tmp_path, "install", "--systemd", fake_systemctl=False)
    if shutil.which("systemctl") is None:
        assert "systemctl is not installed" in done.stdout
    assert done.returncode == 1
    assert "the units are installed but the socket is not enabled" in done.stdout
    assert "systemctl --user daemon-reload && systemctl --user enable --now desktop-approver.socket" in done.stdout
    assert (private_home / UNIT_FILES[0]).is_file()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (Debian: systemd)")
def test_installed_units_pass_systemd_analyze_verify(tmp_path: Path, private_home: Path) -> None:
    assert _run(tmp_path, "install", "--systemd").returncode == 0
    units = [str(private_home / name) for name in UNIT_FILES]
    done = subprocess.run(["systemd-analyze", "--user", "verify", *units], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="needs desktop-file-utils")
def test_installed_entries_are_valid_even_with_a_space_in_the_command(tmp_path: Path, private_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "app_command", lambda: ["/opt/Desktop Approver/desktop-approver"])
    for target in [*install.base_targets()[:1], *install.autostart_targets()]:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        target.path.write_bytes(target.content())
        assert 'Exec="/opt/Desktop Approver/desktop-approver" tray' in target.path.read_text()
        done = subprocess.run(["desktop-file-validate", str(target.path)], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stdout + done.stderr
    service = install.systemd_targets()[1].content().decode()
    assert 'ExecStart="/opt/Desktop Approver/desktop-approver" tray' in service


def test_quoting() -> None:
    assert install._desktop_quote("/usr/bin/desktop-approver") == "/usr/bin/desktop-approver"
    assert install._desktop_quote('/a b/$x"') == '"/a b/\\$x\\""'
    assert install._desktop_quote("/100%/x") == '"/100%%/x"'
    assert install._systemd_quote("/home/me/100%/bin") == "/home/me/100%%/bin"
    assert install._systemd_quote('/a b/"q"') == '"/a b/\\"q\\""'
