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
    by hand with ``QT_QPA_PLATFORM``, or the display is remote and only Qt can try it)."""
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
        addresses = x_server_sockets(display)
        if addresses is None or any(_listens(address) for address in addresses):
            return None
        found.append(f"DISPLAY={display} (no X server listens at {addresses[-1]})")
    return f"no display to show dialogs on: {'; '.join(found)}; {HOW_TO_FIX}"


def x_server_sockets(display: str) -> list[str] | None:
    """Where the X server of a local ``display`` (``:N``, ``:N.S``, ``unix:N``) listens: Linux's
    abstract socket, then the file; None for a display on another host (``host:N``, an SSH
    forward), which only a connection Qt makes can check."""
    host, colon, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not colon or host not in ("", "unix") or not number.isdigit():
        return None
    path = f"/tmp/.X11-unix/X{number}"
    return [f"\0{path}", path]


def _listens(address: str) -> bool:
    """Whether something accepts a connection on the unix socket ``address`` (closed at once)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(2.0)
            probe.connect(address)
    except OSError:
        return False
    return True
