"""resources/ and packaging/ checked by the tools the desktop itself uses: desktop-file-validate,
appstreamcli, systemd-analyze, plistlib; the app icon's PNGs still match their SVG."""

from __future__ import annotations

import ast
import importlib.util
import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
LINUX = ROOT / "packaging" / "linux"
METAINFO = RESOURCES / "io.github.desktop_approver.DesktopApprover.metainfo.xml"
PLIST = ROOT / "packaging" / "macos" / "io.github.desktop_approver.DesktopApprover.plist"


def _needs(tool: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(tool) is None, reason=f"needs {tool}")


@_needs("desktop-file-validate")
def test_desktop_entries_validate() -> None:
    entries = [RESOURCES / "desktop-approver.desktop", LINUX / "desktop-approver-autostart.desktop"]
    done = subprocess.run(["desktop-file-validate", *map(str, entries)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "error" not in done.stdout, done.stdout + done.stderr


@_needs("appstreamcli")
def test_metainfo_validates_and_its_screenshots_exist() -> None:
    done = subprocess.run(["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    shots = re.findall(r"<image>[^<]*/docs/screenshots/([^<]+)</image>", METAINFO.read_text())
    assert len(shots) >= 3
    for name in shots:
        assert (ROOT / "docs" / "screenshots" / name).is_file(), name
    assert "<launchable type=\"desktop-id\">desktop-approver.desktop</launchable>" in METAINFO.read_text()


@_needs("systemd-analyze")
def test_units_as_shipped_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # The shipped service starts %h/.local/bin/desktop-approver (pipx's place): give it one.
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "desktop-approver").symlink_to(Path(sys.executable).parent / "desktop-approver")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    units = [str(LINUX / "desktop-approver.socket"), str(LINUX / "desktop-approver.service")]
    env = dict(os.environ, HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
    done = subprocess.run(["systemd-analyze", "--user", "verify", *units], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_socket_unit_makes_the_documented_socket() -> None:
    socket_unit = (LINUX / "desktop-approver.socket").read_text()
    assert "ListenStream=%t/desktop-approver/approver.sock" in socket_unit  # paths.default_socket_path()
    assert "SocketMode=0600" in socket_unit and "DirectoryMode=0700" in socket_unit
    assert "Accept=" not in socket_unit  # one app for all connections: it needs the listening socket


def test_launch_agent_plist() -> None:
    with PLIST.open("rb") as handle:
        agent = plistlib.load(handle)
    assert agent["Label"] == "io.github.desktop_approver.DesktopApprover"
    assert agent["KeepAlive"] == {"SuccessfulExit": False} and agent["RunAtLoad"] is True
    command = agent["ProgramArguments"][-1]
    assert "DARWIN_USER_TEMP_DIR" in command and command.endswith('desktop-approver" tray')


def test_macos_spec_builds_a_menu_bar_app() -> None:
    spec = (ROOT / "packaging" / "macos" / "desktop-approver-app.spec").read_text()
    tree = ast.parse(spec)  # valid Python, as PyInstaller will execute it
    bundle = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and getattr(node.func, "id", None) == "BUNDLE")
    keywords = {keyword.arg: keyword.value for keyword in bundle.keywords}
    assert ast.literal_eval(keywords["name"]) == "Desktop Approver.app"
    info = keywords["info_plist"]
    assert isinstance(info, ast.Dict)
    pairs = zip(info.keys, info.values, strict=True)
    plist = {ast.literal_eval(key): ast.literal_eval(value) for key, value in pairs if key}
    assert plist["LSUIElement"] is True


@pytest.mark.gui
def test_app_icon_pngs_match_their_svg(qapp: object) -> None:
    """Stale PNGs fail here: run `python packaging/render_icons.py` after changing the SVG."""
    spec = importlib.util.spec_from_file_location("render_icons", ROOT / "packaging" / "render_icons.py")
    assert spec and spec.loader
    render_icons = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_icons)
    from PySide6.QtGui import QImage

    svg = RESOURCES / "icons" / "hicolor" / "scalable" / "apps" / "desktop-approver.svg"
    for size in render_icons.SIZES:
        png = QImage(str(RESOURCES / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "desktop-approver.png"))
        assert (png.width(), png.height()) == (size, size)
        fresh = render_icons.render(svg, size).convertToFormat(QImage.Format.Format_ARGB32)
        stored = png.convertToFormat(QImage.Format.Format_ARGB32)
        worst = max(abs(a - b) for a, b in zip(bytes(fresh.constBits()), bytes(stored.constBits()), strict=True))
        assert worst <= 8, f"{size}px PNG differs from the SVG by {worst}: re-render it"
