"""Desktop notifications through the freedesktop ``org.freedesktop.Notifications`` D-Bus service.

Pure asyncio (jeepney), no Qt: the app runs it on its qasync loop, tests on a plain loop. Every
call is bounded by a short timeout and every failure is logged, never raised: a missing bus, a
missing or slow notification server must not cost the person their dialog.

Signals are trusted only from the connection that owns ``org.freedesktop.Notifications``: any
other process on the session bus can emit an ``ActionInvoked`` too, and must not be able to
answer a request by doing so.

jeepney is imported by the methods that talk to the bus, from :meth:`DesktopNotifier.start` on:
an app started without notifications never loads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jeepney import DBusAddress, MatchRule
    from jeepney.io.asyncio import DBusConnection, DBusRouter

log = logging.getLogger(__name__)

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
INTERFACE = "org.freedesktop.Notifications"
NOTIFY_SIGNATURE = "susssasa{sv}i"
DEFAULT_ACTION = "default"  # the spec's key for a click on the notification's body
CATEGORY = "x-desktop-approver.request"

ActionCallback = Callable[[str, str], None]


def escape_markup(text: str) -> str:
    """Servers with "body-markup" read the body as a small HTML subset; tool arguments are not markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class DesktopNotifier:
    """Shows one notification per key, with action buttons where the server has them.

    ``on_action(key, action_key)`` is called when the person clicks a button (its key) or the
    body (``"default"``). ``start()`` answers whether a session bus was reached; while no server
    owns the notifications name, ``show()`` does nothing, and a server that appears later is used.
    """

    def __init__(self, *, app_name: str = "desktop-approver", desktop_entry: str = "desktop-approver",
                 default_label: str = "Open", timeout: float = 2.0, bus: str = "SESSION",
                 on_action: ActionCallback | None = None) -> None:
        self.app_name = app_name
        self.desktop_entry = desktop_entry
        self.default_label = default_label
        self.timeout = timeout
        self.bus = bus
        self.on_action = on_action
        self.capabilities: frozenset[str] = frozenset()
        self.server_info: tuple[str, str, str, str] | None = None
        self.server: str | None = None  # the unique bus name we accept signals from
        self._address: DBusAddress | None = None  # made by start()
        self._conn: DBusConnection | None = None
        self._router: DBusRouter | None = None
        self._listener: asyncio.Task[None] | None = None
        self._ids: dict[str, int] = {}
        self._keys: dict[int, str] = {}
        self._early: dict[int, str] = {}  # actions on ids whose Notify reply show() has not seen yet
        self._wanted: set[str] = set()  # keys shown and not withdrawn, including a Notify in flight
        self._stale = True  # capabilities to (re)read before the next notification
        self._rediscovery: asyncio.Future[None] | None = None

    @property
    def connected(self) -> bool:
        return self._router is not None

    @property
    def supports_actions(self) -> bool:
        return "actions" in self.capabilities

    @property
    def unique_name(self) -> str | None:
        return self._conn.unique_name if self._conn is not None else None

    async def start(self) -> bool:
        """Connect and look for a server; False (logged) when there is no session bus at all."""
        from jeepney import DBusAddress, MatchRule, message_bus
        from jeepney.io.asyncio import DBusRouter, open_dbus_connection

        self._address = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=INTERFACE)
        try:
            self._conn = await asyncio.wait_for(open_dbus_connection(self.bus), self.timeout)
        except Exception as exc:  # no address, no socket, refused authentication, a hung bus
            log.info("no D-Bus session bus, desktop notifications are off: %r", exc)
            self._conn = None
            return False
        self._router = DBusRouter(self._conn)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._router.filter(MatchRule(type="signal"), queue=queue)
        self._listener = asyncio.ensure_future(self._listen(queue))
        try:
            for rule in (MatchRule(type="signal", sender=BUS_NAME, interface=INTERFACE, path=OBJECT_PATH),
                         self._owner_rule()):
                await self._call(message_bus.AddMatch(rule))
        except Exception as exc:
            log.warning("cannot subscribe to notification signals: %r", exc)
            await self.close()
            return False
        await self._discover()
        return True

    async def show(self, key: str, title: str, body: str, actions: Sequence[tuple[str, str]],
                   urgency: int = 1) -> int | None:
        """Show (or update) the notification for ``key``; returns the server's id, None if not shown."""
        if self._router is None:
            return None
        from jeepney import new_method_call

        self._wanted.add(key)
        try:
            if self._stale:
                await self._discover()
            if self.server is None:
                return None
            pairs = [(DEFAULT_ACTION, self.default_label), *actions] if self.supports_actions else []
            flat = [part for pair in pairs for part in pair]
            text = escape_markup(body) if "body-markup" in self.capabilities else body
            hints = {"urgency": ("y", max(0, min(2, urgency))), "category": ("s", CATEGORY),
                     "desktop-entry": ("s", self.desktop_entry)}
            message = new_method_call(self._address, "Notify", NOTIFY_SIGNATURE,
                                      (self.app_name, self._ids.get(key, 0), "dialog-question", title, text,
                                       flat, hints, 0))
            notification_id: int  # Notify's reply is one "u"
            (notification_id,) = await self._call(message)
        except Exception as exc:
            log.warning("could not show a desktop notification: %r", exc)
            return None
        self._ids[key] = notification_id
        self._keys[notification_id] = key
        if key not in self._wanted:  # withdrawn while the server was answering
            await self.withdraw(key)
            return None
        early = self._early.pop(notification_id, None)
        if early is not None and self.on_action is not None:
            self.on_action(key, early)  # clicked before our task saw the id (see _handle)
        return notification_id

    async def withdraw(self, key: str) -> None:
        """Close the notification for ``key`` if it is still up (the ticket was decided elsewhere)."""
        self._wanted.discard(key)
        notification_id = self._ids.pop(key, None)
        if notification_id is None or self._router is None:
            return
        self._keys.pop(notification_id, None)
        from jeepney import new_method_call

        try:
            await self._call(new_method_call(self._address, "CloseNotification", "u", (notification_id,)))
        except Exception as exc:
            log.warning("could not withdraw a desktop notification: %r", exc)

    async def close(self) -> None:
        """Withdraw what is still shown, then disconnect."""
        for key in list(self._ids):
            await self.withdraw(key)
        router, conn = self._router, self._conn
        self._router = self._conn = None
        for task in (self._listener, self._rediscovery):
            if task is not None and not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
        self._listener = self._rediscovery = None
        try:
            if router is not None:
                await router.__aexit__(None, None, None)
        except Exception as exc:
            log.debug("notification router ended with %r", exc)
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), self.timeout)
            except Exception as exc:
                log.debug("closing the notification bus connection: %r", exc)

    # -- internals --------------------------------------------------------------------------

    async def _call(self, message: Any) -> Any:
        from jeepney.wrappers import unwrap_msg

        assert self._router is not None
        reply = await asyncio.wait_for(self._router.send_and_get_reply(message), self.timeout)
        return unwrap_msg(reply)

    async def _discover(self) -> None:
        """Find the server's unique name and what it can do (asking also starts an activatable one)."""
        from jeepney import message_bus, new_method_call
        from jeepney.wrappers import DBusErrorResponse

        self._stale = False
        try:
            (caps,) = await self._call(new_method_call(self._address, "GetCapabilities"))
            self.server_info = tuple(await self._call(new_method_call(self._address, "GetServerInformation")))
            (self.server,) = await self._call(message_bus.GetNameOwner(BUS_NAME))
            self.capabilities = frozenset(caps)
        except Exception as exc:
            log.info("no desktop notification server: %r", exc)
            self.server, self.capabilities, self.server_info = None, frozenset(), None
            # "Nobody owns the name" waits for NameOwnerChanged; a slow answer is asked again next time.
            self._stale = not isinstance(exc, DBusErrorResponse)
            return
        log.info("notification server %s (%s), capabilities %s", self.server_info[0] if self.server_info else "?",
                 self.server, sorted(self.capabilities))
        if not self.supports_actions:
            log.info("the notification server has no action buttons: notifications will only inform")

    @staticmethod
    def _owner_rule() -> MatchRule:
        from jeepney import MatchRule

        rule = MatchRule(type="signal", sender="org.freedesktop.DBus", interface="org.freedesktop.DBus",
                         member="NameOwnerChanged")
        rule.add_arg_condition(0, BUS_NAME)
        return rule

    async def _listen(self, queue: asyncio.Queue[Any]) -> None:
        while True:
            message = await queue.get()
            try:
                self._handle(message)
            except Exception:
                log.exception("handling a notification signal failed")

    def _handle(self, message: Any) -> None:
        from jeepney import HeaderFields, MessageType

        fields = message.header.fields
        if message.header.message_type is not MessageType.signal:
            return
        sender = fields.get(HeaderFields.sender)
        member = fields.get(HeaderFields.member)
        if fields.get(HeaderFields.interface) == "org.freedesktop.DBus" and member == "NameOwnerChanged":
            if sender == "org.freedesktop.DBus" and message.body[0] == BUS_NAME:
                self._server_changed(message.body[2] or None)
            return
        if fields.get(HeaderFields.interface) != INTERFACE:
            return
        if self.server is None or sender != self.server:
            log.warning("ignored %s from %s, which is not the notification server", member, sender)
            return
        if member == "ActionInvoked" and fields.get(HeaderFields.signature) == "us":
            notification_id, action = message.body
            key = self._keys.get(notification_id)
            if key is None:
                # The reply to Notify came first on the wire, but show() may not have run since:
                # keep the click for it (a few, so a stranger id cannot grow this).
                if len(self._early) < 64:
                    self._early[notification_id] = action
            elif self.on_action is not None:
                self.on_action(key, action)
        elif member == "NotificationClosed" and fields.get(HeaderFields.signature) == "uu":
            key = self._keys.pop(message.body[0], None)
            if key is not None:
                self._ids.pop(key, None)

    def _server_changed(self, owner: str | None) -> None:
        """A new (or no) server: our ids meant nothing to it, and it may do different things."""
        log.info("notification server is now %s", owner or "gone")
        self._ids.clear()
        self._keys.clear()
        self._early.clear()
        self.server = owner
        self.capabilities = frozenset()
        self._stale = True
        if owner is not None:  # learn what it can do now, not in the middle of the next show()
            self._rediscovery = asyncio.ensure_future(self._discover())

