"""Reading the app's own small files (the rules, the mode's state) without ever blocking.

A FIFO or a device put where a file belongs would hang a plain ``open()`` (a FIFO waits for a
writer) or feed it without end (``/dev/zero``), on the app's event loop. So the file is opened
``O_NONBLOCK``, checked with ``fstat`` to be a regular file, and read up to a limit.
"""

from __future__ import annotations

import os
import stat


class NotARegularFile(OSError):
    """The path is a FIFO, a device, a directory or a socket, not a file."""


class FileTooLarge(OSError):
    """The file is over the limit its reader set; ``size`` is how big it is."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the file is {size:,} bytes, more than {limit:,}")
        self.size = size
        self.limit = limit


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them (else :class:`FileTooLarge`).

    Raises ``FileNotFoundError`` and the other ``OSError`` of opening, and :class:`NotARegularFile`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(f"not a regular file ({kind_of(info.st_mode)})")
        if info.st_size > limit:
            raise FileTooLarge(info.st_size, limit)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while we read
            raise FileTooLarge(max(size, os.fstat(fd).st_size), limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "a special file"
