"""What every connection shares (:class:`Context`), apart from the protocol object itself.

Kept out of ``connection.py`` so the server can listen without loading the protocol: the message
models (pydantic) load with the first connection (``core/transport/server.py``), which keeps an app
that no agent has talked to yet small.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from ..store.logsafe import Printable, printable
from .limits import RefusalBudget

if TYPE_CHECKING:
    from ..decisions.broker import Broker

log = logging.getLogger("desktop_approver.core.transport.connection")  # where these lines were always logged

DEFAULT_MAX_PENDING_PER_CLIENT = 128
"""Calls of one peer process that may wait for the person at once (``too_many_pending``); counted
in calls, like ``status.pending``, and above the largest batch (100 calls)."""

TokenCheck = Callable[[str | None], bool]


class Context:
    """What every connection shares: the broker, the token check, the calls each peer process has
    waiting, the refusals' audit budget, and what ``status`` reports about the app."""

    def __init__(self, broker: Broker, *, token_check: TokenCheck | None = None,
                 max_pending_per_client: int = DEFAULT_MAX_PENDING_PER_CLIENT, socket_path: str = "") -> None:
        self.broker = broker
        self.token_check = token_check
        self.max_pending_per_client = max_pending_per_client
        self.socket_path = socket_path
        self.started = time.monotonic()
        """When the app began listening, by the monotonic clock: ``status`` uptime must not jump with the wall clock."""
        self.refusals = RefusalBudget()
        self.pending_by_peer: Counter[Hashable] = Counter()   # calls waiting for the person, by Connection.pending_key
        self._suppressed_by: Counter[str] = Counter()
        self._summary_timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop the connections run on (the server sets it when it starts). Transport callbacks ask
        for it here, not with ``asyncio.get_running_loop()``: under qasync, Qt may run them while
        asyncio has no running loop to give (events processed before the loop runs, or in a nested one)."""

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """:attr:`loop`, or the running one (a context used without a server, as in the tests)."""
        return self.loop if self.loop is not None else asyncio.get_running_loop()

    def __repr__(self) -> str:
        return (f"<Context waiting={sum(self.pending_by_peer.values())} peers={len(self.pending_by_peer)} "
                f"token={'required' if self.token_check else 'no'}>")

    def reserve(self, pid: Hashable, calls: int) -> bool:
        """Count ``calls`` more waiting for the peer ``pid``, unless that passes its limit (False)."""
        if self.pending_by_peer[pid] + calls > self.max_pending_per_client:
            return False
        self.pending_by_peer[pid] += calls
        return True

    def release(self, pid: Hashable, calls: int) -> None:
        self.pending_by_peer[pid] -= calls
        if self.pending_by_peer[pid] <= 0:
            del self.pending_by_peer[pid]

    def audit_refusal(self, code: str, message: str, pid: int | None, uid: int | None,
                      message_id: str | None = None, who: str | None = None) -> None:
        """One audit row per refusal, within :class:`RefusalBudget`; the rest become one summary row,
        which counts them by ``who`` when a refusal names one (a relayed request's NATS user)."""
        log.debug("refused (%s) peer=%s: %s", code, pid, Printable(message))
        if not self.refusals.allow():
            if who is not None:
                self._suppressed_by[who] += 1
            if self._summary_timer is None:
                self._summary_timer = self.event_loop.call_later(1.0, self.write_refusal_summary)
            return
        self.write_refusal_summary()
        detail = f"{message} (id {message_id!r})" if message_id is not None else message
        self.broker.audit.record_event("refused", code, detail, pid, uid)

    def write_refusal_summary(self) -> None:
        self._summary_timer = None
        count = self.refusals.take_suppressed()
        named = ", ".join(f"{printable(who, 80)}: {n}" for who, n in self._suppressed_by.most_common(20))
        self._suppressed_by.clear()
        if count:
            self.broker.audit.record_event("refused", "rate_limited",
                                           f"{count} more refusals not recorded one by one (too many at once)"
                                           + (f"; of them {named}" if named else ""))

    def close(self) -> None:
        """The app is quitting: the refusals not yet summarised are written now."""
        if self._summary_timer is not None:
            self._summary_timer.cancel()
        self.write_refusal_summary()
