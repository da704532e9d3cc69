"""A small, strict ``org.freedesktop.Notifications`` server for tests and manual trials.

It records what it is asked to show and lets a test "click" an action. Like a real server it
sends ``ActionInvoked`` only to the connection that created the notification (unicast), then
``NotificationClosed`` with reason 2 (dismissed). ``Notify`` calls whose signature is not exactly
``susssasa{sv}i`` are refused with ``org.freedesktop.DBus.Error.InvalidArgs``, the way GNOME
Shell or dunst would refuse them, so a client that builds the call wrongly fails here too.

Manual use, on the current session bus (or ``--bus ADDRESS``)::

    python -m tests.support.notification_server [--no-actions] [--answer allow_once]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jeepney import (
    DBusAddress,
    HeaderFields,
    MatchRule,
    MessageFlag,
    message_bus,
    new_error,
    new_method_return,
    new_signal,
)
from jeepney.io.asyncio import DBusConnection, DBusRouter, open_dbus_connection
from jeepney.wrappers import unwrap_msg

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
INTERFACE = "org.freedesktop.Notifications"
NOTIFY_SIGNATURE = "susssasa{sv}i"
INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
UNKNOWN_METHOD = "org.freedesktop.DBus.Error.UnknownMethod"
EXPIRED, DISMISSED, CLOSED_BY_CALL = 1, 2, 3  # NotificationClosed reasons from the spec


@dataclass
class Shown:
    """One Notify call as the server understood it."""

    id: int
    app_name: str
    summary: str
    body: str
    actions: list[tuple[str, str]]
    hints: dict[str, Any]
    expire_timeout: int
    sender: str
    replaced: int = 0

    @property
    def labels(self) -> list[str]:
        return [label for _key, label in self.actions]

    @property
    def action_keys(self) -> list[str]:
        return [key for key, _label in self.actions]


@dataclass
class NotificationServer:
    """The server on one bus connection; ``open`` holds what is currently on screen."""

    with_actions: bool = True
    body_markup: bool = True
    on_notify: Callable[[Shown], None] | None = None
    shown: list[Shown] = field(default_factory=list)  # every Notify, in order
    open: dict[int, Shown] = field(default_factory=dict)
    closed: list[tuple[int, int]] = field(default_factory=list)  # (id, reason)
    rejected: list[str] = field(default_factory=list)  # signatures of refused Notify calls

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._conn: DBusConnection | None = None
        self._router: DBusRouter | None = None
        self._serving: asyncio.Task[None] | None = None
        self._emitter = DBusAddress(OBJECT_PATH, interface=INTERFACE)

    @property
    def capabilities(self) -> list[str]:
        caps = ["body", "persistence"]
        if self.with_actions:
            caps.append("actions")
        if self.body_markup:
            caps.append("body-markup")
        return caps

    @property
    def unique_name(self) -> str | None:
        return self._conn.unique_name if self._conn is not None else None

    async def start(self, bus: str = "SESSION") -> None:
        """Connect, take the notifications name (failing if another server has it) and serve."""
        self._conn = await open_dbus_connection(bus)
        self._router = DBusRouter(self._conn)
        calls: asyncio.Queue[Any] = asyncio.Queue()
        self._router.filter(MatchRule(type="method_call"), queue=calls)
        (result,) = unwrap_msg(await self._router.send_and_get_reply(message_bus.RequestName(BUS_NAME, 4)))
        if result != 1:  # 1 = primary owner; 4 = do not queue behind another server
            await self.stop()
            raise RuntimeError(f"{BUS_NAME} already has an owner (RequestName answered {result})")
        self._serving = asyncio.ensure_future(self._serve(calls))

    async def stop(self) -> None:
        serving, router, conn = self._serving, self._router, self._conn
        self._serving = self._router = self._conn = None
        if serving is not None:
            serving.cancel()
            try:
                await serving
            except asyncio.CancelledError:
                pass
        if router is not None:
            await router.__aexit__(None, None, None)
        if conn is not None:
            await conn.close()

    async def invoke_action(self, notification_id: int, action: str) -> None:
        """What a click does: ActionInvoked to the notification's owner only, then it closes."""
        shown = self.open.get(notification_id)
        if shown is None:
            raise KeyError(f"notification {notification_id} is not open")
        if action not in shown.action_keys:
            raise ValueError(f"notification {notification_id} has no action {action!r}: {shown.action_keys}")
        signal = new_signal(self._emitter, "ActionInvoked", "us", (notification_id, action))
        signal.header.fields[HeaderFields.destination] = shown.sender
        await self._send(signal)
        await self.dismiss(notification_id, DISMISSED)

    async def invoke_late_action(self, shown: Shown, action: str) -> None:
        """A click on what was on screen that reaches the app after the notification went: the
        person picked a button while it was being closed or replaced (a real server's race)."""
        if action not in shown.action_keys:
            raise ValueError(f"notification {shown.id} had no action {action!r}: {shown.action_keys}")
        signal = new_signal(self._emitter, "ActionInvoked", "us", (shown.id, action))
        signal.header.fields[HeaderFields.destination] = shown.sender
        await self._send(signal)

    async def dismiss(self, notification_id: int, reason: int = DISMISSED) -> None:
        """Take a notification off the screen, telling everyone (NotificationClosed is broadcast)."""
        if self.open.pop(notification_id, None) is None:
            return
        self.closed.append((notification_id, reason))
        await self._send(new_signal(self._emitter, "NotificationClosed", "uu", (notification_id, reason)))

    # -- serving ----------------------------------------------------------------------------

    async def _send(self, message: Any) -> None:
        assert self._router is not None
        await self._router.send(message)

    async def _serve(self, calls: asyncio.Queue[Any]) -> None:
        while True:
            call = await calls.get()
            reply = await self._answer(call)
            if reply is not None and not call.header.flags & MessageFlag.no_reply_expected:
                await self._send(reply)

    async def _answer(self, call: Any) -> Any:
        fields = call.header.fields
        if fields.get(HeaderFields.path) != OBJECT_PATH or fields.get(HeaderFields.interface, INTERFACE) != INTERFACE:
            return new_error(call, UNKNOWN_METHOD, "s", ("no such object or interface",))
        member = fields.get(HeaderFields.member)
        signature = fields.get(HeaderFields.signature, "")
        if member == "GetCapabilities":
            return new_method_return(call, "as", (self.capabilities,))
        if member == "GetServerInformation":
            return new_method_return(call, "ssss", ("desktop-approver-testserver", "desktop-approver", "1", "1.2"))
        if member == "Notify":
            if signature != NOTIFY_SIGNATURE:
                self.rejected.append(signature)
                return new_error(call, INVALID_ARGS, "s", (f"Notify takes {NOTIFY_SIGNATURE}, not {signature!r}",))
            return new_method_return(call, "u", (self._notify(call),))
        if member == "CloseNotification":
            if signature != "u":
                return new_error(call, INVALID_ARGS, "s", ("CloseNotification takes u",))
            await self.dismiss(call.body[0], CLOSED_BY_CALL)
            return new_method_return(call)
        return new_error(call, UNKNOWN_METHOD, "s", (f"no method {member}",))

    def _notify(self, call: Any) -> int:
        app_name, replaces_id, _icon, summary, body, flat, hints, expire_timeout = call.body
        notification_id = replaces_id if replaces_id in self.open else next(self._ids)
        actions = list(zip(flat[::2], flat[1::2], strict=True)) if self.with_actions else []
        shown = Shown(notification_id, app_name, summary, body, actions,
                      {name: value for name, (_sig, value) in hints.items()}, expire_timeout,
                      call.header.fields[HeaderFields.sender], replaced=replaces_id)
        self.shown.append(shown)
        self.open[notification_id] = shown
        if self.on_notify is not None:
            self.on_notify(shown)
        return notification_id


class ServerThread:
    """A NotificationServer on its own thread and loop, so any test (asyncio, qasync) can use it."""

    def __init__(self, bus: str = "SESSION", **options: Any) -> None:
        self.server = NotificationServer(**options)
        self.bus = bus
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="notification-server", daemon=True)

    def start(self, timeout: float = 10.0) -> ServerThread:
        self._thread.start()
        self.call(self.server.start(self.bus), timeout)
        return self

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def invoke_action(self, notification_id: int, action: str) -> None:
        self.call(self.server.invoke_action(notification_id, action))

    def invoke_late_action(self, shown: Shown, action: str) -> None:
        self.call(self.server.invoke_late_action(shown, action))

    def dismiss(self, notification_id: int, reason: int = DISMISSED) -> None:
        self.call(self.server.dismiss(notification_id, reason))

    def stop(self) -> None:
        if self._thread.is_alive():
            try:
                self.call(self.server.stop())
            finally:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(10)
        self.loop.close()


async def _main(args: argparse.Namespace) -> None:
    server = NotificationServer(with_actions=not args.no_actions)

    def report(shown: Shown) -> None:
        print(f"#{shown.id} from {shown.sender} [{shown.app_name}] {shown.summary}\n  {shown.body}\n"
              f"  actions: {shown.actions}\n  hints: {shown.hints}", flush=True)
        if args.answer and args.answer in shown.action_keys:
            asyncio.get_running_loop().call_later(args.delay, lambda: asyncio.ensure_future(
                server.invoke_action(shown.id, args.answer)))

    server.on_notify = report
    await server.start(args.bus)
    print(f"serving {BUS_NAME} as {server.unique_name}; capabilities {server.capabilities}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.notification_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bus", default="SESSION", help="a D-Bus address (default: the session bus)")
    parser.add_argument("--no-actions", action="store_true", help="advertise no action buttons")
    parser.add_argument("--answer", metavar="ACTION", help="click this action on each notification")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds before --answer clicks")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_main(args))
    except KeyboardInterrupt:
        pass
    except (RuntimeError, OSError, KeyError) as exc:
        print(f"testserver: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
