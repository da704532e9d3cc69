"""Who is on the other end of a unix socket, as the kernel says (not as the peer claims)."""

from __future__ import annotations

import os
import socket
import struct
import sys
from dataclasses import dataclass

SOL_LOCAL = 0            # macOS: getsockopt level for LOCAL_PEERCRED / LOCAL_PEERPID
LOCAL_PEERCRED = 0x001
LOCAL_PEERPID = 0x002


@dataclass(frozen=True)
class PeerCredentials:
    pid: int | None
    uid: int
    gid: int | None


class PeerCredentialsUnavailable(OSError):
    """The platform gave no credentials: the connection is refused (fail closed)."""


def peer_credentials(sock: socket.socket) -> PeerCredentials:
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", raw)
        return PeerCredentials(pid or None, uid, gid)
    if sys.platform == "darwin":
        # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16]; }
        raw = sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, struct.calcsize("IIh16I"))
        _version, uid, ngroups, *groups = struct.unpack("IIh16I", raw[: struct.calcsize("IIh16I")])
        try:
            pid = struct.unpack("i", sock.getsockopt(SOL_LOCAL, LOCAL_PEERPID, 4))[0]
        except OSError:
            pid = None
        return PeerCredentials(pid, uid, groups[0] if ngroups else None)
    raise PeerCredentialsUnavailable(f"no peer credentials on {sys.platform}")


def process_exe(pid: int | None) -> str | None:
    """The peer's executable, where the platform shows it (Linux /proc); best effort."""
    if not pid:
        return None
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
