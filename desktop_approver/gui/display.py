"""Whether there is a display to show dialogs on, asked before Qt is.

Qt's answer to "no display" is to abort the process (``qt.qpa.xcb: could not connect to display``,
then SIGABRT): the person gets a core dump instead of a sentence, and agents a socket that never
appears. So the tray looks first and, with none, exits 1 saying what it found (ipc/PROTOCOL.md,
"Running without a display"). Standard library only: this runs before PySide6 is imported.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

NON_X11_PLATFORMS = ("darwin", "win32", "cygwin")
"""Where Qt shows windows without X11 or Wayland: there is always a display to ask for."""

HOW_TO_FIX = ("start the app inside the desktop session, import its variables into the service manager "
              "(systemctl --user import-environment DISPLAY WAYLAND_DISPLAY), or choose Qt's platform "
              "yourself (QT_QPA_PLATFORM=offscreen runs it with dialogs nobody sees)")


def display_problem(env: Mapping[str, str] | None = None, platform: str | None = None) -> str | None:
    """Why no dialog could be shown here, or None when a display answers (or Qt's platform was chosen
    by hand with ``QT_QPA_PLATFORM``)."""
    env = os.environ if env is None else env
    if (platform or sys.platform) in NON_X11_PLATFORMS or env.get("QT_QPA_PLATFORM"):
        return None
    wayland, display = env.get("WAYLAND_DISPLAY"), env.get("DISPLAY")
    if not wayland and not display:
        return f"no display to show dialogs on: neither DISPLAY nor WAYLAND_DISPLAY is set; {HOW_TO_FIX}"
    found = []
    if wayland:  # Qt tries Wayland first, then X11: either answering is enough
        path = wayland if wayland.startswith("/") else os.path.join(env.get("XDG_RUNTIME_DIR") or "", wayland)
        if _listens(path):
            return None
        found.append(f"WAYLAND_DISPLAY={wayland} (nothing listens at {path})")
    if display:
        addresses = x_server_addresses(display)
        if addresses is None or any(_answers(address) for address in addresses):
            return None
        found.append(f"DISPLAY={display} (no X server listens at {_named(addresses[-1])})")
    return f"no display to show dialogs on: {'; '.join(found)}; {HOW_TO_FIX}"


X11_TCP_BASE = 6000
"""The X server of display N on another host (an SSH forward: ``localhost:10``) listens on TCP 6000 + N."""

Address = str | tuple[str, int]
"""A unix socket's path (a leading NUL: Linux's abstract namespace), or a TCP host and port."""


def x_server_addresses(display: str) -> list[Address] | None:
    """Where the X server of ``display`` answers: for ``:N``, ``:N.S`` and ``unix:N`` Linux's abstract
    socket, then the file; for ``host:N`` (an SSH forward) TCP port 6000 + N on that host; for a
    socket's path (``/tmp/.X11-unix/X0``, launchd's ``/private/tmp/...:0``) that path. None for a
    value that names no display Qt could open either way (left to Qt to say)."""
    if display.startswith("/"):
        return [display.rsplit(":", 1)[0] if ":" in display.rsplit("/", 1)[-1] else display]
    host, colon, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not colon or not number.isdigit():
        return None
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        return [f"\0{path}", path]
    return [(host.strip("[]"), X11_TCP_BASE + int(number))]


def _answers(address: Address) -> bool:
    if isinstance(address, tuple):
        try:
            with socket.create_connection(address, timeout=2.0):
                return True
        except OSError:
            return False
    return _listens(address)


def _named(address: Address) -> str:
    return f"{address[0]} port {address[1]}" if isinstance(address, tuple) else address


def _listens(address: str) -> bool:
    """Whether something accepts a connection on the unix socket ``address`` (closed at once)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(2.0)
            probe.connect(address)
    except OSError:
        return False
    return True
