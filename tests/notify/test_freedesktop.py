"""DesktopNotifier against the test notification server on a private D-Bus session bus."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from jeepney import DBusAddress, HeaderFields, new_signal
from jeepney.io.asyncio import open_dbus_connection

from desktop_approver.gui.notifications import ACTIONS, DESTRUCTIVE_ACTIONS
from desktop_approver.notify.freedesktop import DesktopNotifier, escape_markup

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
