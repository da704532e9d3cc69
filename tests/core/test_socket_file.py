"""The socket file: bound without replacing anything, watched, removed only while it is ours."""

from __future__ import annotations

import asyncio
import errno
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_approver.core.transport import socket_file
from desktop_approver.core.transport.socket_file import (
    Anchor,
    SocketWatch,
    bind_listening,
    identity,
    remove_if_ours,
)


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="da-sock-", dir="/tmp"))  # short: unix socket paths are limited
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_bind_never_replaces_a_file_at_the_path(folder: Path) -> None:
    path = folder / "a.sock"
    first, mine = bind_listening(path)
    try:
        assert identity(path) == mine and stat.S_IMODE(path.lstat().st_mode) == 0o600
        with pytest.raises(OSError) as raised:
            bind_listening(path)
        assert raised.value.errno == errno.EADDRINUSE
        assert identity(path) == mine
    finally:
        first.close()


def other_app(path: Path) -> subprocess.Popen[str]:
    """Another process listening at ``path`` until its stdin closes (then its socket file stays, dead)."""
    child = subprocess.Popen([sys.executable, "-c", OTHER_APP, str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def end(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    child.wait(30)
    child.stdout.close()


OTHER_APP = """import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen()
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.mark.logs("no longer the socket this app made")
def test_only_the_socket_we_made_is_removed(folder: Path) -> None:
    path = folder / "a.sock"
    ours, mine = bind_listening(path)
    anchor = Anchor(path)  # as the server holds it: the inode cannot go to the next file
    ours.close()
    path.unlink()
    theirs = other_app(path)  # another app's, at the same path
    try:
        assert identity(path) != mine
        assert remove_if_ours(path, mine) is False and path.exists()
        assert remove_if_ours(path, None) is False and path.exists()
        # Same file, but a live listener that is not us: still not ours to remove.
        assert remove_if_ours(path, identity(path)) is False and path.exists()
    finally:
        end(theirs)
        anchor.release()
    assert remove_if_ours(path, identity(path)) is True and not path.exists()  # dead now: a stale file


@pytest.mark.logs("was deleted", "made the socket", "another process answers", "Another desktop-approver",
                  "dead socket")
def test_the_watch_makes_a_deleted_socket_again_and_leaves_a_live_one_to_its_owner(folder: Path) -> None:
    path = folder / "a.sock"
    problems: list[str | None] = []
    sockets: list[socket.socket] = []

    anchors: list[Anchor] = []

    async def rebind() -> socket_file.FileIdentity:
        sock, bound = bind_listening(path)
        sockets.append(sock)
        anchors.append(Anchor(path))
        return bound

    async def scenario() -> None:
        watch = SocketWatch(path, await rebind(), rebind, problems.append)
        await watch.check()
        assert problems == [] and len(sockets) == 1
        path.unlink()
        await watch.check()  # deleted: made again, at once
        assert len(sockets) == 2 and identity(path) == watch.watched and problems == []

        path.unlink()
        other = other_app(path)  # another live app took the free path
        try:
            await watch.check()
            assert len(sockets) == 2, "the watch took a live app's socket"
            assert problems and problems[-1] is not None and "took over the socket" in problems[-1]
        finally:
            end(other)
        watch._checks_since_probe = socket_file.PROBE_EVERY  # its next look asks again at once
        await watch.check()  # its owner is gone, its file is left dead: ours again
        assert len(sockets) == 3 and identity(path) == watch.watched and problems[-1] is None

    try:
        asyncio.run(scenario())
    finally:
        for sock in sockets:
            sock.close()
        for anchor in anchors:
            anchor.release()


@pytest.mark.logs("cannot be reached", "was deleted", "made the socket")
def test_a_directory_replaced_by_a_file_is_told_once_and_recovered(folder: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Red team: a NotADirectoryError traceback every second, the tray not degraded."""
    run = folder / "run"
    path = run / "a.sock"
    problems: list[str | None] = []
    sockets: list[socket.socket] = []

    async def rebind() -> socket_file.FileIdentity:
        run.mkdir(exist_ok=True)
        sock, bound = bind_listening(path)
        sockets.append(sock)
        return bound

    async def scenario() -> None:
        watch = SocketWatch(path, await rebind(), rebind, problems.append)
        shutil.rmtree(run)
        run.write_text("not a directory")
        for _ in range(3):
            await watch.check()
        assert len(problems) == 1 and problems[0] is not None and "Not a directory" in problems[0]
        run.unlink()
        await watch.check()
        assert problems[-1] is None and identity(path) == watch.watched and len(sockets) == 2

    try:
        asyncio.run(scenario())
    finally:
        for sock in sockets:
            sock.close()
    assert not [record for record in caplog.records if record.exc_info]
    assert sum("cannot be reached" in record.getMessage() for record in caplog.records) == 1
