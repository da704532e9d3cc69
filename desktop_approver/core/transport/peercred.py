"""Who is on the other end of a unix socket, as the kernel says (not as the peer claims).

The uid (refused unless ours), the pid, and from the pid the executable and the working directory,
which the dialog shows beside what the client claims and policy ``cwd`` conditions match.
"""

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


FORWARDERS = frozenset({"sshd", "sshd-session", "ssh"})
"""Executables that relay a forwarded socket: their cwd says nothing about the remote agent's."""


def process_exe(pid: int | None) -> str | None:
    """The peer's executable as the kernel knows it (Linux ``/proc``, macOS libproc); best effort."""
    if not pid:
        return None
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        pass
    return _darwin_path(pid, cwd=False) if sys.platform == "darwin" else None


def process_cwd(pid: int | None) -> str | None:
    """The peer's real working directory (Linux ``/proc/<pid>/cwd``, macOS libproc); best effort.

    None when the kernel does not say, or when the peer only relays a forwarded socket (sshd):
    then the directory is the relay's, not the agent's.
    """
    if not pid:
        return None
    exe = process_exe(pid)
    if exe is not None and os.path.basename(exe.removesuffix(" (deleted)")) in FORWARDERS:
        return None
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        pass
    return _darwin_path(pid, cwd=True) if sys.platform == "darwin" else None


def same_directory(claimed: str | None, real: str | None) -> bool | None:
    """Does the client's claimed cwd name the directory the kernel says it is in? None: unknown."""
    if not claimed or not real:
        return None
    if os.path.normpath(claimed) == real:
        return True
    try:
        return os.path.realpath(claimed) == real  # a claimed path through a symlink is still honest
    except (OSError, ValueError):
        return False


def _darwin_path(pid: int, *, cwd: bool) -> str | None:
    """libproc through ctypes: ``proc_pidpath`` for the executable, ``PROC_PIDVNODEPATHINFO`` for
    the cwd (``struct proc_vnodepathinfo``: the cwd's ``vnode_info`` of 152 bytes, then its path)."""
    try:
        import ctypes
        import ctypes.util

        libproc = ctypes.CDLL(ctypes.util.find_library("proc") or "/usr/lib/libproc.dylib")
        if not cwd:
            buffer = ctypes.create_string_buffer(4096)
            size = libproc.proc_pidpath(ctypes.c_int(pid), buffer, ctypes.c_uint32(len(buffer)))
            return buffer.raw[:size].decode() if size > 0 else None
        vnode_info, max_path, pidvnodepathinfo = 152, 1024, 9
        buffer = ctypes.create_string_buffer(2 * (vnode_info + max_path))
        size = libproc.proc_pidinfo(ctypes.c_int(pid), ctypes.c_int(pidvnodepathinfo), ctypes.c_uint64(0),
                                    buffer, ctypes.c_int(len(buffer)))
        if size <= 0:
            return None
        path = buffer.raw[vnode_info:vnode_info + max_path].split(b"\0", 1)[0]
        return path.decode() or None
    except (OSError, AttributeError, UnicodeDecodeError, ValueError):
        return None
