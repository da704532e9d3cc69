"""``desktop-approver install`` and ``uninstall``: make it a desktop app for this user.

Writes the menu entry, the icons and the AppStream metadata into the XDG locations
(``$XDG_DATA_HOME``, default ``~/.local/share``), and with ``--systemd`` the user units that
start the app on the first agent request (``$XDG_CONFIG_HOME/systemd/user``), or with
``--autostart`` an XDG autostart entry (``$XDG_CONFIG_HOME/autostart``). Every path is printed;
running it twice changes nothing; ``--dry-run`` only says what it would do. The files come from
the installed package (``desktop_approver.resources``), with ``Exec=`` / ``ExecStart=`` pointing
at the command that runs this very install.

Exit codes: 0 done; 1 the files are in place but the socket unit could not be enabled (the reason
is printed); 2 bad input or a file could not be written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path

RESOURCES = "desktop_approver.resources"
LINUX_RESOURCES = "desktop_approver.resources.linux"  # packaging/linux in the repository
APP_ID = "desktop-approver"
METAINFO = "io.github.desktop_approver.DesktopApprover.metainfo.xml"
ICON_SIZES = (16, 22, 24, 32, 48, 64, 128, 256)
SOCKET_UNIT, SERVICE_UNIT = "desktop-approver.socket", "desktop-approver.service"
SYSTEMCTL_TIMEOUT = 30.0


@dataclass(frozen=True)
class Target:
    """One file we install: where it goes, and how its content is made from the package."""

    path: Path
    content: Callable[[], bytes]


def add_install_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Exit codes: 0 done; 1 the units are installed but the socket could not be enabled "
                     "(the reason is printed); 2 a file could not be written.")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--systemd", action="store_true",
                     help="also install systemd user units and enable the socket: the first agent request "
                          "starts the app (recommended where systemd runs the session)")
    how.add_argument("--autostart", action="store_true",
                     help="also start the app with the desktop session (XDG autostart), for desktops without systemd")
    parser.add_argument("--dry-run", action="store_true", help="print what would be written and run; change nothing")


def add_uninstall_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print what would be removed and run; change nothing")


# -- where things go ----------------------------------------------------------------------------

def _base(env_name: str, fallback: str) -> Path:
    value = os.environ.get(env_name)
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


def data_home() -> Path:
    return _base("XDG_DATA_HOME", ".local/share")


def config_home() -> Path:
    return _base("XDG_CONFIG_HOME", ".config")


def unit_dir() -> Path:
    return config_home() / "systemd" / "user"


def autostart_path() -> Path:
    return config_home() / "autostart" / f"{APP_ID}.desktop"


def _package_file(*parts: str, package: str = RESOURCES) -> bytes:
    path = resources.files(package)
    for part in parts:
        path = path / part
    return path.read_bytes()


def app_command() -> list[str]:
    """The command that starts this installation of the app, as absolute as we can make it."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle: its one executable runs every command
        return [os.path.abspath(sys.executable)]
    beside = Path(sys.executable).parent / APP_ID  # a venv's (or pipx's) console script
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which(APP_ID)
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "desktop_approver"]


def _desktop_quote(word: str) -> str:
    """Quote one Exec= argument as the Desktop Entry spec wants it."""
    if word and all(ch.isalnum() or ch in "/._-+,:@=" for ch in word):
        return word
    escaped = "".join("\\" + ch if ch in '"`$\\' else ch for ch in word)
    return f'"{escaped}"'.replace("%", "%%")


def _systemd_quote(word: str) -> str:
    escaped = word.replace("%", "%%")
    if escaped and all(ch.isalnum() or ch in "/._-+,:@=%" for ch in escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _with_line(text: bytes, key: str, value: str) -> bytes:
    """``text`` with its ``key=`` line (the first) replaced by ``key=value``."""
    lines = text.decode().splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith(f"{key}="):
            lines[index] = f"{key}={value}\n"
            return "".join(lines).encode()
    raise ValueError(f"no {key}= line to set")


def _exec_line(quote: Callable[[str], str]) -> str:
    return " ".join(quote(word) for word in [*app_command(), "tray"])


def base_targets() -> list[Target]:
    """The menu entry, the icons and the AppStream metadata."""
    data = data_home()
    icons = data / "icons" / "hicolor"
    targets = [Target(data / "applications" / f"{APP_ID}.desktop",
                      lambda: _with_line(_package_file(f"{APP_ID}.desktop"), "Exec", _exec_line(_desktop_quote))),
               Target(data / "metainfo" / METAINFO, lambda: _package_file(METAINFO))]
    for size in ICON_SIZES:
        name = f"{size}x{size}"
        targets.append(Target(icons / name / "apps" / f"{APP_ID}.png",
                              partial(_package_file, "icons", "hicolor", name, "apps", f"{APP_ID}.png")))
    for folder, file in (("scalable", f"{APP_ID}.svg"), ("symbolic", f"{APP_ID}-symbolic.svg")):
        targets.append(Target(icons / folder / "apps" / file,
                              partial(_package_file, "icons", "hicolor", folder, "apps", file)))
    return targets


def systemd_targets() -> list[Target]:
    units = unit_dir()
    def service() -> bytes:
        return _with_line(_package_file(SERVICE_UNIT, package=LINUX_RESOURCES), "ExecStart", _exec_line(_systemd_quote))

    return [Target(units / SOCKET_UNIT, lambda: _package_file(SOCKET_UNIT, package=LINUX_RESOURCES)),
            Target(units / SERVICE_UNIT, service)]


def autostart_targets() -> list[Target]:
    entry = f"{APP_ID}-autostart.desktop"
    return [Target(autostart_path(), lambda: _with_line(_package_file(entry, package=LINUX_RESOURCES),
                                                        "Exec", _exec_line(_desktop_quote)))]


# -- doing it -----------------------------------------------------------------------------------

class Installer:
    """Writes, removes and runs, printing each step; in a dry run it only prints."""

    def __init__(self, dry_run: bool) -> None:
        self.dry_run = dry_run
        self.failed = False

    def say(self, text: str) -> None:
        print(text, flush=True)

    def write(self, target: Target) -> None:
        content = target.content()
        path = target.path
        try:
            if path.is_file() and path.read_bytes() == content:
                self.say(f"unchanged      {path}")
                return
            if self.dry_run:
                self.say(f"would write    {path}")
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_bytes(content)
            os.replace(temporary, path)  # never a half-written unit or entry
        except OSError as exc:
            self.say(f"could not write {path}: {exc.strerror or exc}")
            self.failed = True
            return
        self.say(f"wrote          {path}")

    def remove(self, path: Path, stop_at: Path) -> None:
        if not path.exists() and not path.is_symlink():
            return
        if self.dry_run:
            self.say(f"would remove   {path}")
            return
        try:
            path.unlink()
        except OSError as exc:
            self.say(f"could not remove {path}: {exc.strerror or exc}")
            self.failed = True
            return
        self.say(f"removed        {path}")
        parent = path.parent  # folders we made and left empty go too, never the XDG base itself
        while parent != stop_at and stop_at in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def systemctl(self, *args: str) -> str | None:
        """Run ``systemctl --user ARGS``; None when it worked, otherwise why it did not."""
        command = ["systemctl", "--user", *args]
        if self.dry_run:
            self.say(f"would run      {' '.join(command)}")
            return None
        if shutil.which("systemctl") is None:
            return "systemctl is not installed (is this session run by systemd?)"
        self.say(f"running        {' '.join(command)}")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return f"`{' '.join(command)}` did not finish within {SYSTEMCTL_TIMEOUT:g} s"
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()
            return f"`{' '.join(command)}` failed: {reason[-1] if reason else f'exit code {done.returncode}'}"
        return None


def run_install(args: argparse.Namespace) -> int:
    installer = Installer(args.dry_run)
    for target in base_targets():
        installer.write(target)
    if args.systemd:
        _remove_autostart(installer)
        by_hand = None if any(t.path.exists() for t in systemd_targets()) else _running_pid()
        for target in systemd_targets():
            installer.write(target)
        if installer.failed:
            return 2
        code = _enable_socket(installer)
        if by_hand is not None and not args.dry_run:
            installer.say(f"note: desktop-approver runs now (pid {by_hand}), started by hand: quit it from its "
                          "tray menu; systemd starts it from now on.")
        return code
    if args.autostart:
        _remove_units(installer)
        for target in autostart_targets():
            installer.write(target)
    return 2 if installer.failed else 0


def run_uninstall(args: argparse.Namespace) -> int:
    installer = Installer(args.dry_run)
    _remove_units(installer)
    _remove_autostart(installer)
    data = data_home()
    for target in base_targets():
        installer.remove(target.path, data)
    return 2 if installer.failed else 0


def _remove_autostart(installer: Installer) -> None:
    installer.remove(autostart_path(), config_home())


def _remove_units(installer: Installer) -> None:
    """Stop and disable our units (when installed), then remove them."""
    installed = [target.path for target in systemd_targets() if target.path.exists()]
    if installed:
        why = installer.systemctl("disable", "--now", SOCKET_UNIT, SERVICE_UNIT)
        if why:
            installer.say(f"note: could not disable the units: {why}")
    for path in installed:
        installer.remove(path, config_home())
    if installed and not installer.dry_run and shutil.which("systemctl"):
        installer.systemctl("daemon-reload")


def _enable_socket(installer: Installer) -> int:
    for step in (("daemon-reload",), ("enable", "--now", SOCKET_UNIT)):
        why = installer.systemctl(*step)
        if why:
            installer.say(f"desktop-approver: the units are installed but the socket is not enabled: {why}\n"
                          f"  Where systemd runs your session, log in to it and run:\n"
                          f"    systemctl --user daemon-reload && systemctl --user enable --now {SOCKET_UNIT}\n"
                          f"  Otherwise use `desktop-approver install --autostart`.")
            return 1
    if not installer.dry_run:
        installer.say(f"The socket is listening: the first agent request starts the app ({SOCKET_UNIT}).")
    return 0


def _running_pid() -> int | None:
    """The pid of an app that answers on the default socket now (asked before the units exist,
    so that asking cannot start one)."""
    from ..client import Client
    from ..client.errors import ApproverError

    client = Client(connect_timeout=0.5)
    try:
        status = client.status()
    except ApproverError:
        return None
    finally:
        client.close()
    pid = status.get("pid")
    return pid if isinstance(pid, int) else None
