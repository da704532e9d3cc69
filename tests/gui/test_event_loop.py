"""The app's loop: qasync's, with the ready callbacks run in one Qt timer event per turn."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from PySide6.QtCore import QTimer

from desktop_approver.gui.event_loop import AppEventLoop


def test_callbacks_run_in_the_order_they_were_queued_and_a_cancelled_one_never(qloop: AppEventLoop) -> None:
    ran: list[object] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for number in range(5):
            loop.call_soon(ran.append, number)
        loop.call_soon(ran.append, "never").cancel()
        loop.call_later(0, ran.append, "due now")
        loop.call_at(loop.time() - 1, ran.append, "overdue")
        loop.call_later(0.01, ran.append, "later")
        await asyncio.sleep(0.05)

    qloop.run_until_complete(main())
    assert ran == [0, 1, 2, 3, 4, "due now", "overdue", "later"]


def test_a_chain_of_callbacks_leaves_qt_its_turn(qloop: AppEventLoop) -> None:
    """What a callback queues runs at the next turn, after Qt's own events: a chain never starves the windows."""
    seen: list[str] = []
    qt_ran = asyncio.Event()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        hops = 0

        def hop() -> None:
            nonlocal hops
            hops += 1
            if not qt_ran.is_set():
                loop.call_soon(hop)

        QTimer.singleShot(0, lambda: (seen.append("qt"), qt_ran.set()))
        loop.call_soon(hop)
        await qt_ran.wait()
        return hops

    hops = qloop.run_until_complete(main())
    assert seen == ["qt"] and hops < 1000


def test_a_failing_callback_goes_to_the_exception_handler_and_the_rest_still_run(
        qloop: AppEventLoop, caplog: pytest.LogCaptureFixture) -> None:
    caught: list[Any] = []
    ran: list[int] = []
    qloop.set_exception_handler(lambda loop, context: caught.append(context["exception"]))

    def boom() -> None:
        raise RuntimeError("boom")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(ran.append, 1)
        loop.call_soon(boom)
        loop.call_soon(ran.append, 2)
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    with caplog.at_level(logging.ERROR):
        qloop.run_until_complete(main())
    assert ran == [1, 2] and [str(error) for error in caught] == ["boom"]


def test_tasks_and_futures_from_other_threads_complete(qloop: AppEventLoop) -> None:
    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        threaded = await loop.run_in_executor(None, lambda: 41)
        gathered = await asyncio.gather(*(asyncio.sleep(0, result=n) for n in range(3)))
        return [threaded + 1, *gathered]

    assert qloop.run_until_complete(main()) == [42, 0, 1, 2]


def test_a_closed_loop_drops_what_was_queued(qapp: Any) -> None:
    loop = AppEventLoop(qapp)
    ran: list[int] = []
    loop.call_soon(ran.append, 1)
    assert "ready=1" in repr(loop)
    loop.close()
    assert "ready=0" in repr(loop) and ran == []
    with pytest.raises(RuntimeError):
        loop.call_soon(ran.append, 2)


def test_a_nested_qt_loop_inside_a_callback_runs_what_was_queued_once(qloop: AppEventLoop) -> None:
    """A callback that spins Qt's loop (a modal dialog, processEvents) re-enters the ready queue safely."""
    from PySide6.QtCore import QCoreApplication

    ran: list[str] = []
    caught: list[Any] = []
    qloop.set_exception_handler(lambda loop, context: caught.append(context.get("exception")))

    def nested() -> None:
        ran.append("nested")
        qloop.call_soon(ran.append, "queued-by-nested")
        QCoreApplication.processEvents()
        ran.append("nested-done")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(nested)
        loop.call_soon(ran.append, "second")
        await asyncio.sleep(0.05)

    qloop.run_until_complete(main())
    assert sorted(ran) == sorted(["nested", "queued-by-nested", "nested-done", "second"]) and caught == []


# -- the turn's end and readable sockets -----------------------------------------------------------

def test_what_runs_at_the_turn_end_runs_after_the_turns_callbacks_and_before_the_next_turn(qloop: AppEventLoop) -> None:
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def first() -> None:
            order.append("first")
            qloop.call_at_turn_end(order.append, "end")
            loop.call_soon(order.append, "next turn")

        loop.call_soon(first)
        loop.call_soon(order.append, "second")
        qloop.call_at_turn_end(order.append, "cancelled").cancel()
        await asyncio.sleep(0.02)
        # From Qt's own event (as a socket read is): no turn is running, so one is started for it.
        QTimer.singleShot(0, lambda: qloop.call_at_turn_end(order.append, "outside a turn"))
        await asyncio.sleep(0.02)

    qloop.run_until_complete(main())
    assert order == ["first", "second", "end", "next turn", "outside a turn"]


def test_a_readable_socket_is_read_when_qt_reports_it_and_a_reader_may_pause_itself(qloop: AppEventLoop) -> None:
    """Reads run straight from Qt's notifier; removing the reader inside its own callback (a transport
    that pauses reading) stops it cleanly, and adding it again resumes."""
    import socket

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    got: list[bytes] = []
    caught: list[Any] = []
    qloop.set_exception_handler(lambda loop, context: caught.append(context["exception"]))

    def readable() -> None:
        data = ours.recv(1024)
        got.append(data)
        if data == b"pause":
            qloop.remove_reader(ours.fileno())
        if data == b"boom":
            raise RuntimeError("a reader failed")

    async def main() -> None:
        qloop.add_reader(ours.fileno(), readable)
        theirs.send(b"one")
        await _until(lambda: got == [b"one"])
        theirs.send(b"pause")
        await _until(lambda: got == [b"one", b"pause"])
        theirs.send(b"unread")
        await asyncio.sleep(0.05)
        assert got == [b"one", b"pause"]                   # paused: nothing read
        qloop.add_reader(ours.fileno(), readable)
        await _until(lambda: got[-1:] == [b"unread"])
        theirs.send(b"boom")
        await _until(lambda: caught)
        theirs.send(b"after")
        await _until(lambda: got[-1:] == [b"after"])       # a failing read left the reader in place
        assert qloop.remove_reader(ours.fileno()) and not qloop.remove_reader(ours.fileno())

    try:
        qloop.run_until_complete(asyncio.wait_for(main(), 10))
    finally:
        ours.close()
        theirs.close()
    assert [str(exc) for exc in caught] == ["a reader failed"]


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.002)


def test_a_turn_end_asked_for_inside_a_nested_qt_loop_runs_there(qloop: AppEventLoop) -> None:
    """A callback spins a nested Qt loop (a modal dialog); a read inside it asks for the turn's end
    (the audit commit its agent's answer waits for): it runs in the nested loop, not after it."""
    from PySide6.QtCore import QEventLoop

    seen: list[str] = []

    def modal() -> None:
        nested = QEventLoop()
        QTimer.singleShot(10, lambda: qloop.call_at_turn_end(seen.append, "turn end"))
        QTimer.singleShot(300, lambda: (seen.append("modal closed"), nested.quit()))
        nested.exec()

    async def main() -> None:
        asyncio.get_running_loop().call_soon(modal)
        await asyncio.sleep(0.5)

    qloop.run_until_complete(main())
    assert seen == ["turn end", "modal closed"]


def test_the_turn_end_is_qt_s_own_pass_so_it_costs_no_pass_of_its_own(qloop: AppEventLoop) -> None:
    """The turn's end comes with the pass that asked for it (glib's dispatcher says ``awake`` after
    the pass; the Unix one runs the ready timer within it): the audit commit an agent's answer
    waits for takes no second pass of Qt's loop, and the ready timer started as a guarantee is
    stopped, so no empty pass follows."""
    from PySide6.QtCore import QAbstractEventDispatcher

    dispatcher = QAbstractEventDispatcher.instance()
    assert dispatcher is not None
    passes = [0]

    def count() -> None:
        passes[0] += 1

    seen: list[tuple[str, int, bool]] = []

    def turn_end() -> None:
        seen.append(("turn end", passes[0], False))
        QTimer.singleShot(0, lambda: seen.append(("next pass", passes[0], qloop._ready_timer.isActive())))

    def from_a_qt_event() -> None:  # as a socket read is: straight from Qt's dispatch
        qloop.call_at_turn_end(turn_end)
        seen.append(("asked", passes[0], qloop._ready_timer.isActive()))

    async def main() -> None:
        QTimer.singleShot(0, from_a_qt_event)
        await asyncio.sleep(0.05)

    dispatcher.awake.connect(count)
    try:
        qloop.run_until_complete(main())
    finally:
        dispatcher.awake.disconnect(count)
    (_, asked_in, timer_started), (_, ended_in, _), (_, _, timer_left_running) = seen
    assert ended_in - asked_in <= 1 and not timer_left_running
    assert not (timer_started and qloop._awake_after_pass)  # glib's: not even started


def test_a_turn_end_asked_for_by_a_turn_end_runs_without_waiting_for_another_event(qloop: AppEventLoop) -> None:
    """Red team: the second one waited for whatever woke Qt next (2 s of nothing, or for ever)."""
    ran: list[float] = []

    async def main() -> None:
        start = time.monotonic()
        QTimer.singleShot(0, lambda: qloop.call_at_turn_end(
            lambda: qloop.call_at_turn_end(lambda: ran.append(time.monotonic() - start))))
        for _ in range(200):
            if ran:
                return
            await asyncio.sleep(0.005)

    qloop.run_until_complete(main())
    assert ran and ran[0] < 0.5


def test_without_a_dispatcher_the_ready_timer_ends_the_turn(qloop: AppEventLoop) -> None:
    seen: list[str] = []
    assert qloop._dispatcher is not None
    qloop._dispatcher.awake.disconnect(qloop._end_turn)
    qloop._dispatcher = None

    async def main() -> None:
        QTimer.singleShot(0, lambda: qloop.call_at_turn_end(seen.append, "turn end"))
        await asyncio.sleep(0.05)

    qloop.run_until_complete(main())
    assert seen == ["turn end"]
