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
import sys

from .errors import UntrustedServer

_SOL_LOCAL, _LOCAL_PEERCRED = 0, 0x001  # macOS <sys/un.h>
_UCRED_SIZE = 12
"""Linux's ``struct ucred``: pid, uid, gid, each 32 bits (read without ``struct``, which a hook
would load for this alone)."""
_XUCRED_SIZE = 76
"""macOS's ``struct xucred``: version and uid (32 bits each), the group count (16 bits, padded to
32) and 16 groups of 32 bits."""


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
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED_SIZE)
    elif sys.platform == "darwin":
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE)
    else:
        return None
    if len(raw) < 8:  # never from a kernel that knows the option; a uid read from nothing would be 0
        raise OSError(f"the peer credentials are {len(raw)} bytes long")
    return int.from_bytes(raw[4:8], sys.byteorder)  # the uid: the second 32-bit field of both


def check_server(sock: socket.socket, path: os.PathLike[str] | str) -> None:
    """Refuse a connected socket whose server runs as another user."""
    try:
        uid = server_uid(sock)
    except OSError as exc:
        raise UntrustedServer(path, f"the kernel gave no credentials for the server: {exc}") from None
    if uid is not None and uid != os.getuid():
        raise UntrustedServer(path, f"the server runs as uid {uid}, not as us ({os.getuid()}); "
                                    "another user may be impersonating desktop-approver")
