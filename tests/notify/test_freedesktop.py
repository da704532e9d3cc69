"""DesktopNotifier against the test notification server on a private D-Bus session bus."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from jeepney import DBusAddress, HeaderFields, new_signal
from jeepney.io.asyncio import open_dbus_connection

from desktop_approver.gui.notifications import ACTIONS, DESTRUCTIVE_ACTIONS
from desktop_approver.notify import freedesktop
from desktop_approver.notify.freedesktop import DesktopNotifier, escape_markup
from tests.support.dbus import BUS_CONFIG

T = TypeVar("T")
SLOW_MACHINE = 10.0  # the per-call bound, generous where a test is not about timeouts


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(asyncio.wait_for(coro, 30))


async def until(predicate: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := predicate()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
    return value


class Recorder:
    def __init__(self) -> None:
        self.actions: list[tuple[str, str]] = []

    def __call__(self, key: str, action: str) -> None:
        self.actions.append((key, action))


def test_request_shows_buttons_and_a_click_reaches_on_action(notification_server: Any) -> None:
    server = notification_server.server
    clicks = Recorder()

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
        assert await notifier.start()
        assert notifier.server == server.unique_name
        assert {"actions", "body-markup"} <= notifier.capabilities
        assert notifier.server_info is not None and notifier.server_info[0] == "desktop-approver-testserver"
        nid = await notifier.show("t1", "agent wants to run write_file", "path: <a&b>.txt", ACTIONS, urgency=1)
        assert nid is not None and nid in server.open
        shown = server.open[nid]
        assert shown.app_name == "desktop-approver"
        assert shown.labels == ["Open", "Allow once", "Allow for session", "Deny"]
        assert shown.action_keys == ["default", "allow_once", "allow_session", "deny"]
        assert shown.body == "path: &lt;a&amp;b&gt;.txt"  # the server reads markup; arguments are text
        assert shown.hints == {"urgency": 1, "category": "x-desktop-approver.request",
                               "desktop-entry": "desktop-approver"}
        assert shown.expire_timeout == 0  # stays until decided
        notification_server.invoke_action(nid, "allow_session")
        await until(lambda: clicks.actions, "the click")
        assert clicks.actions == [("t1", "allow_session")]
        await until(lambda: (nid, 2) in server.closed, "the closed notification")
        await notifier.close()

    run(scenario())
    assert not server.rejected


def test_destructive_offers_review_and_deny_and_body_click_is_default(notification_server: Any) -> None:
    server = notification_server.server
    clicks = Recorder()

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
        await notifier.start()
        nid = await notifier.show("t2", "agent wants to run Bash", "rm -rf /", DESTRUCTIVE_ACTIONS, urgency=2)
        assert nid is not None
        assert server.open[nid].labels == ["Open", "Review", "Deny"]
        assert server.open[nid].action_keys == ["default", "review", "deny"]
        assert server.open[nid].hints["urgency"] == 2
        notification_server.invoke_action(nid, "default")
        await until(lambda: clicks.actions, "the body click")
        assert clicks.actions == [("t2", "default")]
        await notifier.close()

    run(scenario())


def test_withdraw_closes_and_showing_again_replaces(notification_server: Any) -> None:
    server = notification_server.server

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=SLOW_MACHINE)
        await notifier.start()
        first = await notifier.show("t3", "one", "body", ACTIONS)
        again = await notifier.show("t3", "one, updated", "body", ACTIONS)
        assert first is not None and again == first
        assert server.shown[-1].replaced == first and server.open[first].summary == "one, updated"
        await notifier.withdraw("t3")
        assert first not in server.open and (first, 3) in server.closed
        await notifier.withdraw("t3")  # twice, or for a key never shown: nothing happens
        await notifier.withdraw("never-shown")
        other = await notifier.show("t4", "two", "body", ACTIONS)
        await notifier.close()  # close withdraws what is still up
        assert other not in server.open

    run(scenario())


def test_a_late_click_on_a_withdrawn_notification_names_its_own_key(notification_server: Any) -> None:
    """The person picked a button while it was being closed: the click arrives with that
    notification's key, never another's, even when a new one for another key is up (issue 31)."""
    server = notification_server.server
    clicks = Recorder()

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
        await notifier.start()
        await notifier.show("request:t1", "first", "body", ACTIONS)
        old = server.shown[-1]
        await notifier.withdraw("request:t1")
        assert old.id not in server.open
        new = await notifier.show("request:t2", "second", "body", ACTIONS)
        assert new is not None and new != old.id
        notification_server.invoke_late_action(old, "allow_once")
        await until(lambda: clicks.actions, "the late click")
        assert clicks.actions == [("request:t1", "allow_once")]
        await notifier.close()

    run(scenario())


def test_action_signal_from_another_connection_is_ignored(notification_server: Any,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    clicks = Recorder()
    caplog.set_level(logging.WARNING, logger="desktop_approver.notify.freedesktop")

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
        await notifier.start()
        nid = await notifier.show("t5", "title", "body", ACTIONS)
        imposter = await open_dbus_connection("SESSION")
        emitter = DBusAddress("/org/freedesktop/Notifications", interface="org.freedesktop.Notifications")
        unicast = new_signal(emitter, "ActionInvoked", "us", (nid, "allow_session"))
        unicast.header.fields[HeaderFields.destination] = notifier.unique_name
        await imposter.send(unicast)
        await imposter.send(new_signal(emitter, "ActionInvoked", "us", (nid, "allow_once")))
        await imposter.send(new_signal(emitter, "NotificationClosed", "uu", (nid, 2)))
        # The real server's click comes after the forgeries on the same bus; only it may count.
        notification_server.invoke_action(nid, "deny")
        await until(lambda: clicks.actions, "the real click")
        await until(lambda: "ignored ActionInvoked from" in caplog.text, "the forgery to arrive and be ignored")
        assert clicks.actions == [("t5", "deny")]
        await imposter.close()
        await notifier.close()

    run(scenario())


def test_server_without_actions_gets_a_plain_notification(start_notification_server: Callable[..., Any]) -> None:
    thread = start_notification_server(with_actions=False, body_markup=False)

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=SLOW_MACHINE)
        assert await notifier.start()
        assert not notifier.supports_actions
        nid = await notifier.show("t6", "title", "a <b> & c", ACTIONS)
        shown = thread.server.open[nid]
        assert shown.actions == [] and shown.body == "a <b> & c"
        await notifier.close()

    run(scenario())
    assert thread.server.shown and not thread.server.rejected


@pytest.mark.logs("No notification server on the session bus")
def test_no_server_on_the_bus_is_reported_then_one_that_appears_is_used(
        private_bus: Any, start_notification_server: Callable[..., Any]) -> None:
    health: list[str | None] = []

    async def scenario() -> DesktopNotifier:
        notifier = DesktopNotifier(timeout=SLOW_MACHINE)
        notifier.health_listeners.append(health.append)
        assert await notifier.start()  # the bus is there, the server is not
        assert notifier.server is None
        assert notifier.problem is not None and "No notification server" in notifier.problem
        assert await notifier.show("t7", "title", "body", ACTIONS) is None
        await notifier.withdraw("t7")
        return notifier

    async def later(notifier: DesktopNotifier, thread: Any) -> None:
        await until(lambda: notifier.server == thread.server.unique_name, "the new server to be noticed")
        nid = await notifier.show("t8", "title", "body", ACTIONS)
        assert nid in thread.server.open
        assert notifier.problem is None and health[-1] is None
        await notifier.close()

    async def both() -> None:
        notifier = await scenario()
        thread = await asyncio.get_running_loop().run_in_executor(None, start_notification_server)
        await later(notifier, thread)

    run(both())


@pytest.mark.logs("No D-Bus session bus")
def test_no_bus_at_all_never_raises_and_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    clicks = Recorder()

    async def scenario() -> None:
        for address in (None, f"unix:path={tmp_path}/nothing-listens-here", "tcp:host=localhost,port=1"):
            if address is None:
                monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
            else:
                monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
            notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
            assert await notifier.start() is False
            assert notifier.problem is not None and "No D-Bus session bus" in notifier.problem
            assert await notifier.show("k", "title", "body", ACTIONS) is None
            await notifier.withdraw("k")
            await notifier.close()

    run(scenario())
    assert clicks.actions == []


@pytest.mark.logs("No notification server on the session bus")
def test_a_server_that_never_answers_costs_one_short_timeout(private_bus: Any) -> None:
    async def scenario() -> None:
        silent = await open_dbus_connection("SESSION")  # owns the name but never replies
        from jeepney import message_bus
        from jeepney.io.asyncio import DBusRouter

        async with DBusRouter(silent) as router:
            await router.send_and_get_reply(message_bus.RequestName("org.freedesktop.Notifications"))
            notifier = DesktopNotifier(timeout=0.5)
            assert await notifier.start()
            assert notifier.server is None
            assert await notifier.show("k", "title", "body", ACTIONS) is None
            await notifier.close()
        await silent.close()

    run(scenario())


def test_escape_markup() -> None:
    assert escape_markup("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"


def test_a_click_that_races_the_notify_reply_is_not_lost(notification_server: Any) -> None:
    """The reply to Notify and an instant click can reach the notifier in either order of tasks."""
    clicks = Recorder()
    server = notification_server.server
    server.on_notify = lambda shown: asyncio.ensure_future(server.invoke_action(shown.id, "allow_once"))

    async def scenario() -> None:
        notifier = DesktopNotifier(on_action=clicks, timeout=SLOW_MACHINE)
        assert await notifier.start()
        for number in range(5):
            await notifier.show(f"t{number}", "agent wants to run Bash", "ls", ACTIONS)
        await until(lambda: len(clicks.actions) == 5, "every instant click")
        assert clicks.actions == [(f"t{n}", "allow_once") for n in range(5)]
        await notifier.close()

    run(scenario())


def test_a_second_show_for_a_key_waits_for_the_first_ones_id_on_a_slow_server(notification_server: Any) -> None:
    """Issue 21: a server slower than the call timeout must not get a second notification for one key."""
    server = notification_server.server

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=0.3)
        assert await notifier.start()
        await until(lambda: notifier.server is not None, "the server")
        # The server's loop is busy for a while: longer than the notifier's call timeout.
        notification_server.loop.call_soon_threadsafe(time.sleep, 1.5)
        assert await notifier.show("agent:codex", "codex: 1 waiting", "one", ACTIONS) is None
        assert await notifier.show("agent:codex", "codex: 2 waiting", "two", ACTIONS) is None
        await until(lambda: len(server.shown) == 2, "both texts shown")
        assert [shown.summary for shown in server.shown] == ["codex: 1 waiting", "codex: 2 waiting"]
        assert len(server.open) == 1 and server.shown[1].replaced == server.shown[0].id
        await notifier.withdraw("agent:codex")
        await until(lambda: not server.open, "the notification withdrawn")
        await notifier.close()

    run(scenario())


def test_a_key_withdrawn_while_its_first_notify_is_unanswered_is_closed_once_the_id_arrives(
        notification_server: Any) -> None:
    server = notification_server.server

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=0.3)
        assert await notifier.start()
        await until(lambda: notifier.server is not None, "the server")
        notification_server.loop.call_soon_threadsafe(time.sleep, 1.0)
        assert await notifier.show("agent:codex", "codex: 1 waiting", "one", ACTIONS) is None
        await notifier.withdraw("agent:codex")
        await until(lambda: server.shown and not server.open, "the late notification closed")
        await notifier.close()

    run(scenario())


@pytest.mark.logs("The notification server .* went away", "No notification server")
def test_the_server_gone_is_reported_and_a_new_one_is_announced_ready(
        start_notification_server: Callable[..., Any]) -> None:
    health: list[str | None] = []
    ready: list[str | None] = []
    first = start_notification_server()

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=SLOW_MACHINE)
        notifier.health_listeners.append(health.append)
        notifier.ready_listeners.append(lambda: ready.append(notifier.server))
        assert await notifier.start()
        assert notifier.problem is None and ready == [first.server.unique_name]
        assert await notifier.show("agent:codex", "title", "body", ACTIONS) is not None
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, first.stop)
        await until(lambda: notifier.problem is not None, "the server's loss reported")
        assert "The notification server (desktop-approver-testserver) went away" in (notifier.problem or "")
        second = await loop.run_in_executor(None, start_notification_server)
        await until(lambda: len(ready) == 2, "the new server announced")
        assert ready[1] == second.server.unique_name and notifier.problem is None and health[-1] is None
        # Its ids start afresh: the key gets a new notification there, not a replacement of a stranger's.
        assert await notifier.show("agent:codex", "title", "body", ACTIONS) in second.server.open
        assert second.server.shown[0].replaced == 0
        await notifier.close()

    run(scenario())


@pytest.mark.logs("D-Bus session bus went away", "No notification server", "could not")
def test_the_bus_gone_is_reported_and_reached_again_when_it_is_back(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, start_notification_server: Callable[..., Any]) -> None:
    """A bus daemon killed and started again at the same address (a fixed path here)."""
    daemon = shutil.which("dbus-daemon")
    if daemon is None:
        pytest.skip("dbus-daemon is not installed")
    path = f"/tmp/approver-bus-{tmp_path.name[-20:]}-{id(tmp_path)}"
    config = tmp_path / "bus.conf"
    config.write_text(BUS_CONFIG.replace("unix:tmpdir={tmpdir}", f"unix:path={path}"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={path}")
    monkeypatch.setattr(freedesktop, "RECONNECT_INTERVAL", 0.1)

    def start_bus() -> subprocess.Popen[bytes]:
        process = subprocess.Popen([daemon, f"--config-file={config}", "--nofork", "--nopidfile"])
        deadline = time.monotonic() + 20
        while not os.path.exists(path):
            assert time.monotonic() < deadline, "the bus did not start"
            time.sleep(0.02)
        return process

    bus = start_bus()
    health: list[str | None] = []

    async def scenario() -> None:
        nonlocal bus
        notifier = DesktopNotifier(timeout=SLOW_MACHINE)
        notifier.health_listeners.append(health.append)
        assert await notifier.start()
        bus.kill()
        bus.wait(20)
        os.unlink(path)
        await until(lambda: notifier.problem is not None and "went away" in notifier.problem, "the loss reported")
        bus = start_bus()
        await until(lambda: notifier.connected and "No notification server" in (notifier.problem or ""),
                    "the bus reached again")
        await notifier.close()

    try:
        run(scenario())
    finally:
        bus.kill()
        bus.wait(20)
        if os.path.exists(path):
            os.unlink(path)
    assert any(problem is not None and "D-Bus session bus went away" in problem for problem in health), health


@pytest.mark.logs("The notification server does not answer", "could not show a desktop notification")
def test_a_server_that_stops_answering_is_reported_and_cleared_when_it_answers(
        notification_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team: dunst SIGSTOPped for 50 s was an INFO line and a late warning; the tray never knew."""
    monkeypatch.setattr(freedesktop, "NOT_ANSWERING_AFTER", 0.3)
    server = notification_server.server
    health: list[str | None] = []
    resume = threading.Event()

    async def scenario() -> None:
        notifier = DesktopNotifier(timeout=0.2)
        notifier.health_listeners.append(health.append)
        assert await notifier.start()
        await until(lambda: notifier.server is not None, "the server")
        notification_server.loop.call_soon_threadsafe(resume.wait, 30)  # the server's loop stops
        try:
            assert await notifier.show("agent:codex", "codex: 1 waiting", "one", ACTIONS) is None
            await until(lambda: health, "the server reported as not answering")
            assert health == [freedesktop.NOT_ANSWERING] and notifier.problem == freedesktop.NOT_ANSWERING
        finally:
            resume.set()                                                # it answers again
        await until(lambda: health[-1] is None, "the problem cleared")
        await until(lambda: server.shown, "the notification shown")
        assert health == [freedesktop.NOT_ANSWERING, None]
        await notifier.close()

    run(scenario())
