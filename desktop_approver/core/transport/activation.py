"""Socket activation: take the listening socket a service manager passed us instead of binding one.

systemd (``desktop-approver.socket``), ``systemd-socket-activate`` and launchd-style wrappers
that speak the same convention create the socket before the app runs and start the app on the
first connection, so an agent that asks while the app is not running is answered rather than
denied. The convention (sd_listen_fds(3)): ``LISTEN_PID`` is our pid, ``LISTEN_FDS`` the number of
sockets passed, the first one is fd 3.

Standard library only; the server calls :func:`listening_socket` once, at start.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from pathlib import Path

from ...client.paths import ensure_private_dir

log = logging.getLogger(__name__)

LISTEN_FDS_START = 3
ACTIVATION_ENV = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


class ActivationError(RuntimeError):
    """The service manager said it passed a socket, but fd 3 is not one we can serve on."""


def listening_socket(environ: dict[str, str] | None = None) -> socket.socket | None:
    """The unix stream socket passed to this process, or None when we were not socket-activated.

    The variables are removed from the environment once read (as sd_listen_fds(1) does), so a
    process we start (the demo agent) never believes the socket was meant for it. A passed
    socket that is not a listening unix stream socket raises :class:`ActivationError`: serving
    on something else would be worse than refusing to start.
    """
    env = os.environ if environ is None else environ
    pid, count = env.get("LISTEN_PID"), env.get("LISTEN_FDS")
    for name in ACTIVATION_ENV:
        env.pop(name, None)
    if pid is None or count is None:
        return None
    if not pid.isdigit() or int(pid) != os.getpid():
        log.info("ignoring LISTEN_FDS meant for pid %s", pid)
        return None
    if not count.isdigit() or int(count) < 1:
        return None
    if int(count) > 1:
        log.warning("%s sockets passed; serving on the first (fd %d)", count, LISTEN_FDS_START)
    try:
        sock = socket.socket(fileno=LISTEN_FDS_START)
    except OSError as exc:
        raise ActivationError(f"LISTEN_FDS is set but fd {LISTEN_FDS_START} is not a socket: {exc}") from exc
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise ActivationError(f"the passed socket (fd {LISTEN_FDS_START}) is not a unix stream socket")
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        sock.detach()
        raise ActivationError(f"the passed socket (fd {LISTEN_FDS_START}) is not listening "
                              "(use a socket unit without Accept=yes)")
    sock.set_inheritable(False)
    sock.setblocking(False)
    return sock


def socket_path_of(sock: socket.socket) -> Path | None:
    """The filesystem path the socket is bound to (None for an abstract or unnamed socket)."""
    name = sock.getsockname()
    if isinstance(name, bytes):
        name = name.decode(errors="surrogateescape")
    if not name or name.startswith("\0"):
        return None
    return Path(name)


def secure_socket_file(path: Path) -> None:
    """Give a passed socket the modes we would have created it with: directory 0700, socket 0600.

    A systemd unit already sets them (DirectoryMode=0700, SocketMode=0600); a bare
    ``systemd-socket-activate`` leaves them to its umask. Peer credentials are checked on every
    connection anyway, so this closes the door, it does not guard it alone.
    """
    ensure_private_dir(path.parent)
    info = path.lstat()
    if not stat.S_ISSOCK(info.st_mode):
        raise ActivationError(f"{path} is not a socket")
    if info.st_uid != os.getuid():
        raise ActivationError(f"{path} belongs to uid {info.st_uid}, not to us ({os.getuid()})")
    if stat.S_IMODE(info.st_mode) != 0o600:
        os.chmod(path, 0o600)
