"""The app's asyncio loop on Qt's: qasync's, with ``call_soon`` batched as asyncio's own loop does it.

qasync gives every ``call_soon`` a Qt timer of its own (``startTimer(0)``, a timer event, then
``killTimer``), and every readable socket costs one of them. Here the callbacks wait in one FIFO
queue and a single zero-interval ``QTimer`` runs everything queued when it fires, the way asyncio's
loop runs its ready queue once per iteration: what is queued meanwhile runs at the next firing,
after Qt has had its turn (painting, input, socket notifiers), so a chain of callbacks never starves
the windows. Timers with a delay stay qasync's. On the request path this takes about 35 µs off a
round trip and 10% off the cost of a request under load (BENCHMARKS.md).

A readable socket's callback runs straight from Qt's notifier, as asyncio's own loop runs it right
after select(): qasync instead switches the notifier off, queues the callback and switches it on
again afterwards, two calls into Qt's event dispatcher for every read.

A turn can also end with work of its own (:meth:`AppEventLoop.call_at_turn_end`): the audit log
commits the calls answered in the turn once, after every socket read in it
(``core/store/audit.py``), and their agents are answered then, not a Qt turn later. The turn's end
is Qt's own: the event dispatcher's ``awake`` signal, which it emits once per pass of its loop
(glib's after the pass, the Unix one before the next), so the commit costs no timer and no extra
pass of Qt's loop (about 30 µs of a round trip answered from session memory, BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Callable
from contextvars import Context
from typing import Any

import qasync
from PySide6.QtCore import QAbstractEventDispatcher, QSocketNotifier, QTimer


def _fileno(fd: Any) -> int:
    """A descriptor as asyncio's reader methods take it: the number, or an object with ``fileno()``."""
    return fd if isinstance(fd, int) else int(fd.fileno())


class AppEventLoop(qasync.QEventLoop):  # type: ignore[misc]  # qasync has no types
    """qasync's loop with one Qt timer for all callbacks that are ready, not one per callback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready_handles: collections.deque[asyncio.Handle] = collections.deque()
        self._ready_timer = QTimer()
        self._ready_timer.setSingleShot(True)
        self._ready_timer.setInterval(0)
        self._ready_timer.timeout.connect(self._run_ready)
        self._turn_end: collections.deque[asyncio.Handle] = collections.deque()
        self._dispatcher: QAbstractEventDispatcher | None = QAbstractEventDispatcher.instance()
        """Qt's event dispatcher of this thread, whose ``awake`` ends a turn; None before there is one
        (then the ready timer does)."""
        if self._dispatcher is not None:
            self._dispatcher.awake.connect(self._end_turn)
        self._awake_after_pass = self._dispatcher is not None and "Glib" in self._dispatcher.metaObject().className()
        """glib's dispatcher says ``awake`` after every pass of its loop. Others (the Unix one) say it
        before a pass, and a turn end asked for while they deliver posted events would wait for the
        next event: for them, the ready timer brings the pass."""
        self._reading: set[int] = set()             # descriptors whose read callback is running
        self._retired: list[QSocketNotifier] = []   # removed while Qt may still be delivering their signal

    def __repr__(self) -> str:
        return f"<AppEventLoop ready={len(self._ready_handles)} running={self.is_running()} closed={self.is_closed()}>"

    def call_soon(self, callback: Callable[..., object], *args: Any, context: Context | None = None) -> asyncio.Handle:
        """Queue ``callback(*args)`` to run at the next turn, after everything queued before it."""
        self._check_closed()
        handle = asyncio.Handle(callback, args, self, context=context)
        self._ready_handles.append(handle)
        if not self._ready_timer.isActive():
            self._ready_timer.start()
        return handle

    def call_at_turn_end(self, callback: Callable[..., object], *args: Any,
                         context: Context | None = None) -> asyncio.Handle:
        """Run ``callback(*args)`` when this turn's callbacks have run (outside a turn: at the next one's end;
        in a nested Qt loop a callback spun: at the end of that loop's next turn)."""
        self._check_closed()
        handle = asyncio.Handle(callback, args, self, context=context)
        self._turn_end.append(handle)
        if not self._awake_after_pass and not self._ready_timer.isActive():
            self._ready_timer.start()  # a pass of Qt's loop is due (see _awake_after_pass); _end_turn stops it
        return handle

    def _end_turn(self) -> None:
        """A pass of Qt's loop is over (its dispatcher is ``awake``): run what waits for the turn's end.

        One asked for by these (a turn end asked for by a turn end) needs another pass: the ready
        timer brings it. A timer started only to bring this pass is stopped, so it costs no pass of its own.
        """
        if self._turn_end:
            ending, self._turn_end = self._turn_end, collections.deque()
            for handle in ending:
                if not handle.cancelled():
                    handle._run()
            if self._turn_end:
                if not self._ready_timer.isActive():
                    self._ready_timer.start()
            elif not self._awake_after_pass and not (self._ready_handles or self._retired):
                self._ready_timer.stop()

    # -- readable sockets ---------------------------------------------------------------------------

    def _add_reader(self, fd: Any, callback: Callable[..., object], *args: Any) -> None:
        """Call ``callback(*args)`` whenever ``fd`` is readable, when Qt reports it (module docstring)."""
        self._check_closed()
        fileno = _fileno(fd)
        self._remove_reader(fileno)
        notifier = QSocketNotifier(fileno, QSocketNotifier.Type.Read)
        handle = asyncio.Handle(callback, args, self)  # one for every read, as asyncio's loop keeps one
        # The signal's "int" overload, the one qasync's own close() disconnects (PySide6's stubs know none).
        notifier.activated["int"].connect(  # type: ignore[index]
            functools.partial(self._readable, fileno, notifier, handle))
        notifier.setEnabled(True)
        self._read_notifiers[fileno] = notifier

    def _remove_reader(self, fd: Any) -> bool:
        """Stop watching ``fd``; the notifier is kept until the next turn, since this may run inside
        its own signal (a read callback that pauses reading), where Qt must not lose it."""
        if self.is_closed():
            return False
        fileno = _fileno(fd)
        notifier = self._read_notifiers.pop(fileno, None)
        if notifier is None:
            return False
        notifier.setEnabled(False)
        notifier.activated["int"].disconnect()
        self._retired.append(notifier)
        if not self._ready_timer.isActive():
            self._ready_timer.start()
        return True

    def _readable(self, fileno: int, notifier: QSocketNotifier, handle: asyncio.Handle, *_signal: Any) -> None:
        if self._read_notifiers.get(fileno) is not notifier or fileno in self._reading:
            return  # replaced or removed meanwhile; or a nested Qt loop inside this very callback
        self._reading.add(fileno)
        try:
            handle._run()  # an exception goes to the loop's exception handler, as for any callback
        finally:
            self._reading.discard(fileno)

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any,
                   context: Context | None = None) -> asyncio.Handle:
        """A callback due now joins the ready queue (qasync's call_soon is call_later(0)); others get a timer."""
        if delay <= 0:
            return self.call_soon(callback, *args, context=context)
        handle: asyncio.Handle = super().call_later(delay, callback, *args, context=context)
        return handle

    def close(self) -> None:
        super().close()  # refuses while running: nothing queued is dropped then
        if self._dispatcher is not None:
            self._dispatcher.awake.disconnect(self._end_turn)
            self._dispatcher = None
        self._ready_timer.stop()
        self._ready_handles.clear()
        self._turn_end.clear()

    def _run_ready(self) -> None:
        """Run the callbacks queued before this turn, in order; later ones wait for the next turn.

        The queue is taken whole first: a callback that spins a nested Qt loop (a modal dialog) may
        run this again, which then finds only what was queued after the turn began. What is to run
        at the turn's end runs last, and what it queues waits for the next turn.
        """
        batch, self._ready_handles = self._ready_handles, collections.deque()
        self._retired.clear()  # Qt has finished delivering their signals
        for handle in batch:
            if not handle.cancelled():
                handle._run()  # asyncio's Handle: an exception goes to the loop's exception handler
        self._end_turn()
        if (self._ready_handles or self._turn_end) and not self.is_closed():
            self._ready_timer.start()
        else:
            self._ready_timer.stop()  # started for what this turn's end has just run
