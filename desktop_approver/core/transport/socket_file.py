"""The socket file: made without ever replacing another's, watched, and removed only when it is ours.

A path is not an identity: the file at the socket's path may be deleted (a cleanup script, a
``rm -rf $XDG_RUNTIME_DIR/...``) or replaced by another app's socket while this app runs. So the
app remembers the (device, inode) of the socket it bound, and holds the file open (``O_PATH``,
an :class:`Anchor`) so that the inode number cannot be given to another file while it is in
use: a socket another app binds after ours was deleted always has an identity of its own. Where
there is no ``O_PATH`` (macOS), a live listener at the path that is not this process also
proves the file is not ours (its peer credentials). Then the app:

- binds with a bare ``bind(2)``, which fails when anything is at the path, instead of asyncio's
  ``create_unix_server(path=...)``, which first deletes a socket file it finds there: two apps
  starting at once, or one recreating its socket, never delete each other's;
- unlinks the path on quit only while it is still the file it bound (:func:`remove_if_ours`);
- checks every :data:`CHECK_INTERVAL` seconds (:class:`SocketWatch`) that the path is still its
  socket. Deleted, or left as a dead socket: it binds a new one there (logged, and the person is
  told while it cannot). A path that cannot even be looked at (its directory replaced by a
  file) is told the same way, once, and the socket made again when the path is free. Taken by
  another live app: it never takes it back from that app, says so (agents now reach the other
  app; this one still answers the connections it has), and binds again once the path is free.

Standard library and asyncio only (no Qt); the server owns one :class:`SocketWatch`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

from ...client.paths import InsecureDirectory
from .peercred import peer_credentials

log = logging.getLogger(__name__)

CHECK_INTERVAL = 1.0
"""Seconds between checks that the socket's path is still our socket (one ``lstat``)."""
PROBE_EVERY = 10
"""While another app holds the path, ask whether it still answers every this many checks."""
BACKLOG = 100  # asyncio's default for create_unix_server

FileIdentity = tuple[int, int]
"""(st_dev, st_ino): which file a path names now."""


class Anchor:
    """The socket file held open (``O_PATH``, Linux): its inode number is not reused while we hold it."""

    def __init__(self, path: Path) -> None:
        self.fd: int | None = None
        flag = getattr(os, "O_PATH", None)
        if flag is None:
            return
        try:
            self.fd = os.open(path, flag | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:  # gone already, or a file system that refuses: the identity check stays
            log.debug("cannot hold %s open: %s", path, exc)

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


def identity(path: Path) -> FileIdentity | None:
    """The file at ``path`` now (not following a link), or None when there is none."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def bind_listening(path: Path) -> tuple[socket.socket, FileIdentity]:
    """A listening unix socket bound at ``path``, born 0600, and the identity of its file
    (hold an :class:`Anchor` on it right away).

    Raises ``OSError`` (EADDRINUSE) when anything is already at the path: nothing is replaced.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)  # no moment where another user could connect
        try:
            sock.bind(os.fspath(path))
        finally:
            os.umask(old_umask)
        bound = path.lstat()
        os.chmod(path, 0o600)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock, (bound.st_dev, bound.st_ino)


NOBODY = -1
""":func:`listener` found no live listener at the path."""


def listener(path: Path) -> int | None:
    """Who listens at ``path``: its pid, :data:`NOBODY` (nothing answers), or None (alive, pid unknown).

    A unix ``connect`` completes at once against a listening socket (no accept is needed), so this
    never waits; the connection it makes is closed before anyone reads from it.
    """
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        probe.connect(os.fspath(path))
    except BlockingIOError:
        return None  # its backlog is full: alive, and we cannot ask who it is
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK, errno.ENOTDIR):
            return NOBODY
        return None
    else:
        try:
            return peer_credentials(probe).pid
        except OSError:
            return None
    finally:
        probe.close()


def remove_if_ours(path: Path, ours: FileIdentity | None) -> bool:
    """Unlink ``path`` if it is still the file we bound; another app's socket there stays (logged).

    Call it once this app has stopped listening: a live listener at the path is then someone else.
    """
    if ours is None:
        return False
    now = identity(path)
    if now is None:
        log.info("socket %s was already gone", path)
        return False
    if now != ours or listener(path) not in (NOBODY, os.getpid()):
        log.warning("not removing %s: it is no longer the socket this app made (another app's?)", path)
        return False
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    log.debug("removed socket %s", path)
    return True


HealthListener = Callable[[str | None], None]


class SocketWatch:
    """Keeps the path pointing at this app: checks it, rebinds when it is free, reports when it cannot.

    ``rebind()`` (the server's) binds a new listening socket at the path and returns its identity;
    it raises ``OSError`` when the path is taken meanwhile. ``report(problem)`` is called with what
    is wrong (for the person) and with None once it is fixed.
    """

    def __init__(self, path: Path, watched: FileIdentity | None, rebind: Callable[[], Awaitable[FileIdentity]],
                 report: HealthListener) -> None:
        self.path = path
        self.watched = watched
        """The file agents reach this app by: the socket it bound, or the one a service manager passed."""
        self._rebind = rebind
        self._report = report
        self.problem: str | None = None
        self._foreign: FileIdentity | None = None  # a live file of another app at the path, last we probed
        self._checks_since_probe = 0
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<SocketWatch {self.path} watched={self.watched} problem={self.problem!r}>"

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        last_failure: str | None = None
        while True:
            await asyncio.sleep(CHECK_INTERVAL)
            try:
                await self.check()
            except Exception as exc:  # a watch that fails must not end the app; it tries again next time
                failure = repr(exc)
                if failure != last_failure:  # one traceback per new failure, not one a second
                    log.exception("checking the socket %s failed", self.path)
                last_failure = failure
            else:
                last_failure = None

    async def check(self) -> None:
        """One look at the path; rebind or report as needed."""
        try:
            now = identity(self.path)
        except OSError as exc:  # its directory replaced by a file (ENOTDIR), a link loop, no search permission
            self._set_problem(f"The socket {self.path} cannot be reached ({exc.strerror or exc}): agents cannot "
                              f"reach this app until {self.path.parent} is its directory again.")
            return
        if now is not None and now == self.watched:
            self._set_problem(None)
            return
        if now is None:
            if self.problem is None:
                log.warning("the socket %s was deleted; making it again", self.path)
            await self._take_path()
            return
        if now == self._foreign and self._checks_since_probe < PROBE_EVERY:
            self._checks_since_probe += 1
            return  # still the other app's: no need to knock on its door every second
        self._checks_since_probe = 0
        who = listener(self.path)
        if who == os.getpid():  # our own listener after all (its file changed in place): keep watching it
            self.watched = now
            self._set_problem(None)
            return
        if who != NOBODY:
            if self._foreign != now:
                log.warning("another process answers on %s now; this app leaves it to it", self.path)
            self._foreign = now
            self._set_problem(f"Another desktop-approver took over the socket {self.path}: new requests go to it, "
                              "not to this app. Quit one of them.")
            return
        self._foreign = None
        try:
            kind = self.path.lstat().st_mode
        except FileNotFoundError:
            return  # gone meanwhile: the next check makes it again
        if not stat.S_ISSOCK(kind):
            self._set_problem(f"{self.path} was replaced by something that is not a socket: agents cannot reach "
                              "this app until it is removed.")
            return
        log.warning("the socket %s was replaced by a dead socket; removing it and making ours again", self.path)
        if identity(self.path) == now:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        await self._take_path()

    async def _take_path(self) -> None:
        try:
            self.watched = await self._rebind()
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return  # someone bound it since we looked: the next check sees whose it is
            self._set_problem(f"The socket {self.path} was deleted and cannot be made again ({exc.strerror or exc}): "
                              "agents cannot reach this app.")
            return
        except InsecureDirectory as exc:  # its directory was replaced by another user's, or a link
            self._set_problem(f"The socket {self.path} was deleted and is not made again: {exc}")
            return
        log.warning("made the socket %s again; agents reach this app", self.path)
        self._foreign = None
        self._set_problem(None)

    def _set_problem(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        self.problem = problem
        if problem is not None:
            log.warning("%s", problem)
        self._report(problem)
