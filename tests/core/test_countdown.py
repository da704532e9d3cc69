"""The request countdown: pausable by the person, but never past a hard limit the agent knows."""

from __future__ import annotations

import asyncio

from desktop_approver.client.base import REPLY_GRACE, ClientProtocol
from desktop_approver.core.decisions.tickets import PAUSE_ALLOWANCE, Countdown


def test_pause_freezes_the_countdown_and_resume_continues() -> None:
    async def scenario() -> None:
        countdown = Countdown(0.3)
        countdown.pause()
        frozen = countdown.remaining()
        await asyncio.sleep(0.4)
        assert not countdown.expired.done() and countdown.remaining() == frozen and countdown.paused
        countdown.resume()
        await asyncio.wait_for(countdown.expired, 2)
        assert countdown.remaining() == 0.0

    asyncio.run(scenario())


def test_a_pause_cannot_outlast_the_hard_limit() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        countdown = Countdown(0.2)
        countdown.pause()
        assert 0.2 < countdown.latest() <= 0.2 * (1 + PAUSE_ALLOWANCE)
        await asyncio.wait_for(countdown.expired, 5)
        assert loop.time() - start >= 0.2 * (1 + PAUSE_ALLOWANCE) - 0.02
        assert not countdown.paused

    asyncio.run(scenario())


def test_cancel_stops_both_timers() -> None:
    async def scenario() -> None:
        countdown = Countdown(0.05)
        countdown.cancel()
        await asyncio.sleep(0.2)
        assert not countdown.expired.done()

    asyncio.run(scenario())


def test_clients_wait_longer_than_any_paused_request() -> None:
    protocol = ClientProtocol(session="s")
    assert protocol.reply_wait(60) >= 60 * (1 + PAUSE_ALLOWANCE) + REPLY_GRACE


def test_a_touched_request_is_never_kept_twice_its_timeout() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        countdown = Countdown(60)
        countdown.pause()
        assert countdown.hard_deadline - loop.time() < 2 * 60
        countdown.cancel()

    assert PAUSE_ALLOWANCE < 1
    asyncio.run(scenario())


def test_only_the_first_pause_stops_the_clock() -> None:
    async def scenario() -> None:
        countdown = Countdown(60)
        assert countdown.can_pause
        countdown.pause()
        assert countdown.paused and not countdown.can_pause
        countdown.resume()  # left for another request: the clock runs again
        assert not countdown.can_pause
        countdown.pause()   # touched again: no second pause
        assert not countdown.paused
        countdown.cancel()

    asyncio.run(scenario())


class EarlyTimers(asyncio.SelectorEventLoop):
    """A loop whose timers fire 5 % early, as Qt's coarse timers (which run asyncio's under qasync) may."""

    def call_at(self, when, callback, *args, context=None):  # type: ignore[no-untyped-def,override]
        return super().call_at(when - max(0.0, when - self.time()) * 0.05, callback, *args, context=context)


def test_a_countdown_never_expires_early_even_on_early_timers() -> None:
    loop = EarlyTimers()
    try:
        async def scenario() -> tuple[float, float, float]:
            start = loop.time()
            plain = Countdown(0.4)
            await plain.expired
            plain_at = loop.time()
            paused = Countdown(0.2)
            paused.pause()                 # only the hard limit (twice the timeout) is left to fire
            paused_start = loop.time()
            await paused.expired
            return plain_at - start, loop.time() - paused_start, paused.hard_deadline - paused_start

        plain, paused, hard = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert plain >= 0.4
    assert paused >= hard - 1e-3
