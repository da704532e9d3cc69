"""What one client, or all of them together, may cost the app; and refusals kept off the audit log's back.

Every limit ends in a typed ``error`` (never a crash, never a silent drop), documented in
``ipc/PROTOCOL.md`` under "Limits":

- connections: at most ``max_connections_per_peer`` per peer process and ``max_connections`` in
  total (``too_many_connections``, then closed); at the total, the connection idle longest with
  nothing pending is closed first to make room (``idle_timeout``). The total is kept under the
  process's file descriptor limit, so ``accept()`` never runs out of descriptors;
- unread replies: a connection whose replies the client does not read is not read from either
  once ``max_unread_reply_bytes`` wait in its send buffer (back-pressure, no error);
- idle connections: one with nothing pending and nothing received for ``idle_seconds`` is closed
  (``idle_timeout``);
- unfinished lines: all connections together may hold ``max_unfinished_bytes`` of lines not yet
  ended by a newline; the connection that would pass it is closed (``overloaded``).

:class:`RefusalBudget` rate-limits what refusals write to the audit log: a flood of bad lines
costs a bounded number of rows, and the rows it did not write are counted in one summary row.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

FD_RESERVE = 64
"""Descriptors kept free for everything but client connections (audit log, policy, Qt, D-Bus); half
the limit when the limit is low (``ulimit -n 64``: 32 connections, not one)."""


@dataclass(frozen=True)
class Limits:
    max_connections: int = 512
    max_connections_per_peer: int = 64
    max_unread_reply_bytes: int = 1024 * 1024
    """Replies the app keeps in its own write buffer, beyond what the client's socket holds, before it
    reads nothing more from that client (back-pressure; the slack lets a client write many requests
    before it reads). An answer in that buffer has not reached the agent: one still there when the
    connection ends is recorded as not delivered (``server._Link.answered``)."""
    idle_seconds: float = 600.0
    max_unfinished_bytes: int = 64 * 1024 * 1024

    def connection_cap(self) -> int:
        """``max_connections``, lowered to what the descriptor limit leaves after the reserve."""
        limit = raise_fd_limit()
        return max(1, min(self.max_connections, limit - min(FD_RESERVE, limit // 2)))


def raise_fd_limit() -> int:
    """Lift the soft descriptor limit to the hard one (the kernel's ``nr_open`` at most); the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else _nr_open()
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else _nr_open()


def _nr_open() -> int:
    """The most descriptors a process may have on this system (Linux), or a million."""
    try:
        with open("/proc/sys/fs/nr_open") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 1 << 20


class RefusalBudget:
    """A token bucket: ``burst`` audit rows at once, then ``per_second``; the rest counted."""

    def __init__(self, burst: int = 100, per_second: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.per_second = per_second
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock()
        self.suppressed = 0

    def allow(self) -> bool:
        """True: write this refusal's row. False: it is only counted in :attr:`suppressed`."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.per_second)
        self._stamp = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.suppressed += 1
        return False

    def take_suppressed(self) -> int:
        """How many refusals went unrecorded since the last call (for one summary row)."""
        count, self.suppressed = self.suppressed, 0
        return count
