"""Before a client sends anything, it makes sure the app on the socket runs as its own user.

Without ``XDG_RUNTIME_DIR`` (SSH sessions, cron, containers) the socket lives in the shared temp
directory, where another local user can create ``desktop-approver-<uid>`` first and listen there.
A client that talked to such a socket would accept that user's answers (``allow_session``...).
So, before the hello:

1. the socket's directory must belong to our uid and be writable by nobody else (the app
   creates it 0700), so nobody else can put a socket there;
2. the socket must belong to our uid and be closed to group and others (the app creates it 0600);
3. after connecting, the listening process's peer credentials (``SO_PEERCRED`` on Linux,
   ``LOCAL_PEERCRED`` on macOS) must be our uid; where the platform has neither, steps 1 and 2
   stand alone.

Any failure is :class:`~desktop_approver.client.errors.UntrustedServer` (an ``ApproverUnavailable``:
fail closed) naming the reason. Standard library only, a few system calls: hooks run per call.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import sys

from .errors import UntrustedServer

_SOL_LOCAL, _LOCAL_PEERCRED = 0, 0x001  # macOS <sys/un.h>


def check_socket_path(path: os.PathLike[str] | str) -> None:
    """Refuse a socket whose directory or file another user could have made; OSError if absent."""
    path = os.fspath(path)
    uid = os.getuid()
    folder = os.path.dirname(os.path.abspath(path))
    info = os.stat(folder)  # followed: a link to our own private directory is fine
    if info.st_uid != uid:
        raise UntrustedServer(path, f"its directory {folder} belongs to uid {info.st_uid}, not to us ({uid}); "
                                    "another user may be impersonating desktop-approver")
    if info.st_mode & 0o022:
        raise UntrustedServer(path, f"its directory {folder} is writable by others "
                                    f"(mode {stat.S_IMODE(info.st_mode):04o}; it must be 0700 or at least not "
                                    "group/other-writable)")
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise UntrustedServer(path, "it is not a socket")
    if info.st_uid != uid:
        raise UntrustedServer(path, f"the socket belongs to uid {info.st_uid}, not to us ({uid}); "
                                    "another user may be impersonating desktop-approver")
    if info.st_mode & 0o077:
        raise UntrustedServer(path, f"the socket is open to others (mode {stat.S_IMODE(info.st_mode):04o}, "
                                    "it must be 0600)")


def server_uid(sock: socket.socket) -> int | None:
    """The uid of the process listening on the other end, where the kernel tells it; else None."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", raw)[1])
    if sys.platform == "darwin":
        size = struct.calcsize("IIh16I")
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, size)
        return int(struct.unpack("IIh16I", raw[:size])[1])
    return None


def check_server(sock: socket.socket, path: os.PathLike[str] | str) -> None:
    """Refuse a connected socket whose server runs as another user."""
    try:
        uid = server_uid(sock)
    except OSError as exc:
        raise UntrustedServer(path, f"the kernel gave no credentials for the server: {exc}") from None
    if uid is not None and uid != os.getuid():
        raise UntrustedServer(path, f"the server runs as uid {uid}, not as us ({os.getuid()}); "
                                    "another user may be impersonating desktop-approver")
