"""Desktop notifications through the freedesktop ``org.freedesktop.Notifications`` D-Bus service.

Pure asyncio (jeepney), no Qt: the app runs it on its qasync loop, tests on a plain loop. Every
call is bounded by a timeout and every failure is logged, never raised: a missing bus, a missing
or slow notification server must not cost the person their dialog.

It is also a health signal (issue 20): no bus, the bus gone, no server, the server gone, a server
that leaves a ``Notify`` unanswered for :data:`NOT_ANSWERING_AFTER` seconds are each a ``problem``
reported to :attr:`DesktopNotifier.health_listeners` (the tray shows it as degraded), and cleared
when a server is there (or answers) again. A lost bus is reconnected every
:data:`RECONNECT_INTERVAL` seconds; a new server (or bus) tells :attr:`DesktopNotifier.ready_listeners`,
so what still waits is shown again.

One notification per key, whatever the timing: each key has one sender task, so a key's next
``Notify`` waits for the previous one's id (its ``replaces_id``) instead of racing it, and a slow
server's answer is still awaited (for :data:`NOTIFY_REPLY_WAIT` seconds) after :meth:`show` has
stopped waiting for it: its id is what replaces or closes that notification later.

A notification closed by us (withdrawn, or replaced by a new one for another key) is remembered
for a while (:data:`CLOSED_KEPT` of them): a click the server sends for it afterwards, a person
who picked a button while it was going, still reaches ``on_action`` with its own key, never
another's, so the app can tell it was late (issue 31).

Signals are trusted only from the connection that owns ``org.freedesktop.Notifications``: any
other process on the session bus can emit an ``ActionInvoked`` too, and must not be able to
answer a request by doing so.

jeepney is imported by the methods that talk to the bus, from :meth:`DesktopNotifier.start` on:
an app started without notifications never loads it.
"""

from __future__ import annotations

import asyncio
import functools
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

RECONNECT_INTERVAL = 2.0
"""Seconds between attempts to reach a session bus that is not there (or went away)."""
NOTIFY_REPLY_WAIT = 60.0
"""Seconds a ``Notify`` reply is awaited in the background: an id given up on is a notification
that can never be replaced or closed, so the next one would be a second (issue 21)."""

CLOSED_KEPT = 64
"""Notifications closed by us whose late clicks are still told, with their own key."""

NOT_ANSWERING_AFTER = 5.0
"""Seconds a ``Notify`` may go unanswered before the server is reported as not answering (a
stopped or hung server: longer than a busy one takes, far shorter than :data:`NOTIFY_REPLY_WAIT`)."""

NO_BUS = ("No D-Bus session bus: no desktop notifications (requests show as dialogs and in the tray); "
          "the app keeps trying.")
BUS_GONE = ("The D-Bus session bus went away: no desktop notifications until it is back "
            "(requests show as dialogs and in the tray).")
NO_SERVER = "No notification server on the session bus: requests show only as dialogs and in the tray."
NOT_ANSWERING = ("The notification server does not answer: requests show only as dialogs and in the tray "
                 "until it does.")
SERVER_GONE = ("The notification server{name} went away: requests show only as dialogs and in the tray "
               "until one is back.")

ActionCallback = Callable[[str, str], None]
HealthListener = Callable[[str | None], None]
Content = tuple[str, str, tuple[tuple[str, str], ...], int]
"""What one key should show: title, body, actions, urgency."""


def escape_markup(text: str) -> str:
    """Servers with "body-markup" read the body as a small HTML subset; tool arguments are not markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class DesktopNotifier:
    """Shows one notification per key, with action buttons where the server has them.

    ``on_action(key, action_key)`` is called when the person clicks a button (its key) or the
    body (``"default"``). ``start()`` answers whether a session bus was reached now (it keeps
    trying when not); while no server owns the notifications name, ``show()`` does nothing, and a
    server that appears later is used.
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
        self.problem: str | None = None
        """Why notifications cannot be shown now (for the person), or None."""
        self.health_listeners: list[HealthListener] = []
        self.ready_listeners: list[Callable[[], None]] = []
        """Called when a server (a new one, or on a new bus) can show: what it showed before is gone."""
        self._address: DBusAddress | None = None  # made by start()
        self._conn: DBusConnection | None = None
        self._router: DBusRouter | None = None
        self._listener: asyncio.Task[None] | None = None
        self._ids: dict[str, int] = {}
        self._keys: dict[int, str] = {}
        self._early: dict[int, str] = {}  # actions on ids whose Notify reply show() has not seen yet
        self._closed: dict[int, str] = {}  # ids we closed -> their key, for a click that arrives late
        self._wanted: set[str] = set()  # keys shown and not withdrawn, including a Notify in flight
        self._latest: dict[str, Content] = {}  # what a key should show next, not yet sent
        self._senders: dict[str, asyncio.Task[None]] = {}  # one per key: its Notify calls one at a time
        self._generation = 0  # counts servers and connections: an id from an earlier one means nothing
        self._stale = True  # capabilities to (re)read before the next notification
        self._rediscovery: asyncio.Future[None] | None = None
        self._reconnect: asyncio.Task[None] | None = None
        self._probe: asyncio.Task[None] | None = None  # asks a server that does not answer until it does
        self._closing = False

    def __repr__(self) -> str:
        return (f"<DesktopNotifier server={self.server} shown={len(self._ids)} sending={len(self._senders)} "
                f"problem={self.problem!r}>")

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
        """Connect and look for a server; False (logged, reported, retried) when there is no session bus."""
        self._closing = False
        if await self._connect():
            return True
        self._set_problem(NO_BUS)
        self._reconnect_later()
        return False

    async def show(self, key: str, title: str, body: str, actions: Sequence[tuple[str, str]],
                   urgency: int = 1) -> int | None:
        """Show (or update) the notification for ``key``; returns the server's id, None if not shown (yet).

        A key's notifications go out one at a time: while one is unanswered, this one waits for its
        id and replaces it. A server slower than ``timeout`` gets the newest text once it answers.
        """
        if self._router is None:
            return None
        self._wanted.add(key)
        self._latest[key] = (title, body, tuple((action, label) for action, label in actions), urgency)
        sender = self._senders.get(key)
        if sender is None:
            sender = self._senders[key] = asyncio.ensure_future(self._send(key))
        try:
            await asyncio.wait_for(asyncio.shield(sender), self.timeout)
        except TimeoutError:
            log.info("the notification server has not answered in %g s; the notification follows its answer",
                     self.timeout)
            return None
        return self._ids.get(key)

    async def withdraw(self, key: str) -> None:
        """Close the notification for ``key`` if it is still up (the ticket was decided elsewhere)."""
        self._wanted.discard(key)
        self._latest.pop(key, None)
        if key in self._senders:
            return  # its sender closes it once the server has said which one it is
        await self._close(key)

    async def close(self) -> None:
        """Withdraw what is still shown, then disconnect."""
        self._closing = True
        for key in list(self._ids) + list(self._senders):
            await self.withdraw(key)
        if self._senders:
            await asyncio.wait(list(self._senders.values()), timeout=self.timeout)
        for task in (*self._senders.values(), self._reconnect, self._probe):
            if task is not None and not task.done():
                task.cancel()
        self._senders.clear()
        self._reconnect = self._probe = None
        await self._disconnect()

    # -- internals --------------------------------------------------------------------------

    async def _connect(self) -> bool:
        """Open the bus, follow the server's signals, find the server; False when there is no bus."""
        from jeepney import DBusAddress, MatchRule, message_bus
        from jeepney.io.asyncio import DBusRouter, open_dbus_connection

        self._address = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=INTERFACE)
        try:
            conn = await asyncio.wait_for(open_dbus_connection(self.bus), self.timeout)
        except Exception as exc:  # no address, no socket, refused authentication, a hung bus
            log.info("no D-Bus session bus, desktop notifications are off: %r", exc)
            return False
        self._generation += 1
        self._conn, self._router = conn, DBusRouter(conn)
        # jeepney has no public "connection lost" hook: its router's receiver task ends when the bus goes.
        receiver: asyncio.Task[None] = self._router._rcv_task
        receiver.add_done_callback(functools.partial(self._bus_lost, self._router))
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._router.filter(MatchRule(type="signal"), queue=queue)
        self._listener = asyncio.ensure_future(self._listen(queue))
        try:
            for rule in (MatchRule(type="signal", sender=BUS_NAME, interface=INTERFACE, path=OBJECT_PATH),
                         self._owner_rule()):
                await self._call(message_bus.AddMatch(rule))
        except Exception as exc:
            log.warning("cannot subscribe to notification signals: %r", exc)
            await self._disconnect()
            return False
        await self._discover(fresh=True)
        return True

    async def _disconnect(self) -> None:
        router, conn = self._router, self._conn
        self._router = self._conn = None
        self._forget_shown()
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

    def _bus_lost(self, router: DBusRouter, _receiver: asyncio.Task[None]) -> None:
        """The bus connection ended under us (the daemon died): say so, and reconnect until it is back."""
        if router is not self._router or self._closing:
            return
        log.warning("the D-Bus session bus went away")
        self._set_problem(BUS_GONE)
        self.server, self.capabilities, self.server_info = None, frozenset(), None
        self._reconnect = asyncio.ensure_future(self._reconnect_after_loss())

    async def _reconnect_after_loss(self) -> None:
        await self._disconnect()
        await self._keep_connecting()

    def _reconnect_later(self) -> None:
        if self._reconnect is None or self._reconnect.done():
            self._reconnect = asyncio.ensure_future(self._keep_connecting())

    async def _keep_connecting(self) -> None:
        while not self._closing and self._router is None:
            await asyncio.sleep(RECONNECT_INTERVAL)
            if not self._closing and await self._connect():
                log.info("reached the D-Bus session bus again")

    def _forget_shown(self) -> None:
        """Our ids meant something to one server on one connection only."""
        self._generation += 1
        self._ids.clear()
        self._keys.clear()
        self._early.clear()
        self._closed.clear()

    def _set_problem(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        self.problem = problem
        if problem is None:
            log.info("desktop notifications work again")
        else:
            log.warning("%s", problem)
        for listener in list(self.health_listeners):
            try:
                listener(problem)
            except Exception:
                log.exception("a notification health listener failed")

    def _ready(self) -> None:
        for listener in list(self.ready_listeners):
            try:
                listener()
            except Exception:
                log.exception("a notification ready listener failed")

    async def _send(self, key: str) -> None:
        """The one sender of ``key``: its newest text, replacing what the server shows, until nothing is left."""
        try:
            while self._router is not None:
                if key not in self._wanted:
                    if key in self._ids:
                        await self._close(key)
                        continue
                    break
                content = self._latest.pop(key, None)
                if content is None:
                    break
                await self._notify(key, content)
        finally:
            self._senders.pop(key, None)

    async def _notify(self, key: str, content: Content) -> None:
        from jeepney import new_method_call

        title, body, actions, urgency = content
        try:
            if self._rediscovery is not None and not self._rediscovery.done():
                await asyncio.shield(self._rediscovery)  # a new server: learn what it can do first
            if self._stale:
                await self._discover()
            if self.server is None:
                return  # shown again when one appears (ready_listeners)
            pairs = [(DEFAULT_ACTION, self.default_label), *actions] if self.supports_actions else []
            flat = [part for pair in pairs for part in pair]
            text = escape_markup(body) if "body-markup" in self.capabilities else body
            hints = {"urgency": ("y", max(0, min(2, urgency))), "category": ("s", CATEGORY),
                     "desktop-entry": ("s", self.desktop_entry)}
            generation = self._generation
            message = new_method_call(self._address, "Notify", NOTIFY_SIGNATURE,
                                      (self.app_name, self._ids.get(key, 0), "dialog-question", title, text,
                                       flat, hints, 0))
            notification_id: int  # Notify's reply is one "u"
            watchdog = asyncio.get_running_loop().call_later(NOT_ANSWERING_AFTER, self._not_answering, generation)
            try:
                (notification_id,) = await self._call(message, NOTIFY_REPLY_WAIT)
            finally:
                watchdog.cancel()
        except Exception as exc:
            log.warning("could not show a desktop notification: %r", exc)
            return
        if self.problem == NOT_ANSWERING:
            self._set_problem(None)
        if generation != self._generation:
            return  # answered by a server (or connection) since replaced: ready_listeners show it again
        self._ids[key] = notification_id
        self._keys[notification_id] = key
        early = self._early.pop(notification_id, None)
        if early is not None and self.on_action is not None and key in self._wanted:
            self.on_action(key, early)  # clicked before our task saw the id (see _handle)

    def _not_answering(self, generation: int) -> None:
        """A ``Notify`` has waited :data:`NOT_ANSWERING_AFTER` s: tell the person, ask until it answers."""
        if generation != self._generation or self._router is None or self._closing or self.problem is not None:
            return  # another server or connection since, or already told why notifications are missing
        self._set_problem(NOT_ANSWERING)
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._until_answered())

    async def _until_answered(self) -> None:
        """One question at a time (a stopped server's queue must not grow), until one is answered."""
        from jeepney import new_method_call

        while self.problem == NOT_ANSWERING and self._router is not None and not self._closing:
            try:
                await self._call(new_method_call(self._address, "GetServerInformation"), NOTIFY_REPLY_WAIT)
            except TimeoutError:
                continue
            except Exception as exc:  # gone, or the bus gone: those have problems of their own
                log.debug("asking the silent notification server: %r", exc)
                await asyncio.sleep(RECONNECT_INTERVAL)
                continue
            if self.problem == NOT_ANSWERING:
                self._set_problem(None)
            return

    async def _close(self, key: str) -> None:
        notification_id = self._ids.pop(key, None)
        if notification_id is None or self._router is None:
            return
        self._keys.pop(notification_id, None)
        self._closed[notification_id] = key
        while len(self._closed) > CLOSED_KEPT:
            del self._closed[next(iter(self._closed))]
        from jeepney import new_method_call

        try:
            await self._call(new_method_call(self._address, "CloseNotification", "u", (notification_id,)))
        except Exception as exc:
            log.warning("could not withdraw a desktop notification: %r", exc)

    async def _call(self, message: Any, timeout: float | None = None) -> Any:
        from jeepney.wrappers import unwrap_msg

        router = self._router
        if router is None:
            raise ConnectionError("not connected to the session bus")
        reply = await asyncio.wait_for(router.send_and_get_reply(message), timeout or self.timeout)
        return unwrap_msg(reply)

    async def _discover(self, fresh: bool = False) -> None:
        """Find the server's unique name and what it can do (asking also starts an activatable one).

        ``fresh``: a new server or connection, which shows nothing of ours yet (ready_listeners).
        """
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
            if self._router is not None and self.problem in (None, NO_BUS, BUS_GONE):
                self._set_problem(NO_SERVER)
            return
        self._set_problem(None)
        if fresh:
            self._ready()
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
            late = self._closed.get(notification_id)
            if key is None and late is not None:
                if self.on_action is not None:
                    self.on_action(late, action)  # its own key: the app sees it names what is gone
            elif key is None:
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
        name = self.server_info[0] if self.server_info else None
        self._forget_shown()
        self.server = None  # set by _discover once it knows what the new one can do
        self.capabilities = frozenset()
        self._stale = True
        if owner is None:
            self.server_info = None
            self._set_problem(SERVER_GONE.format(name=f" ({name})" if name else ""))
        else:  # learn what it can do now, not in the middle of the next show()
            self._rediscovery = asyncio.ensure_future(self._discover(fresh=True))

