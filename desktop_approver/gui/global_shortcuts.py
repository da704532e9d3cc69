"""Desktop-wide keys through the XDG GlobalShortcuts portal, where the desktop offers one (Qt-free).

The portal (``org.freedesktop.portal.GlobalShortcuts`` on ``org.freedesktop.portal.Desktop``, KDE
Plasma 6, GNOME 48 and others) lets the person bind keys to the app's shortcuts in the desktop's own
settings; the app only names them and suggests a key. When a bound key is pressed the portal sends
``Activated`` and the app raises what the key is for, as ``desktop-approver show`` does. Without a
session bus, a portal, or its GlobalShortcuts interface (most X11 desktops), :meth:`start` returns
False and nothing else changes: ``desktop-approver show`` bound in the desktop's settings does the same.

The portal's calls answer through a ``Request`` object whose ``Response`` signal carries the result;
its path is known in advance from our unique name and a token, so we subscribe before calling.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jeepney.io.asyncio import DBusConnection, DBusRouter

log = logging.getLogger(__name__)

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
INTERFACE = "org.freedesktop.portal.GlobalShortcuts"
REQUEST_INTERFACE = "org.freedesktop.portal.Request"

SHORTCUTS: tuple[tuple[str, str, str], ...] = (
    # (id, what the desktop's settings call it, a suggested key: the person decides)
    ("request", "desktop-approver: show the waiting request", "LOGO+a"),
    ("inbox", "desktop-approver: open the inbox", "LOGO+SHIFT+a"),
    ("history", "desktop-approver: open the history", ""),
)
"""Their ids are what ``desktop-approver show`` takes: ``request``, ``inbox``, ``history``."""

_tokens = itertools.count(1)


class PortalUnavailable(Exception):
    """No portal, no GlobalShortcuts interface, or it refused: the app runs without desktop-wide keys."""


class GlobalShortcuts:
    """One session with the portal; ``on_activated(id)`` runs for each bound key pressed."""

    def __init__(self, on_activated: Callable[[str], None], *, bus: str = "SESSION", timeout: float = 5.0) -> None:
        self.on_activated = on_activated
        self.bus = bus
        self.timeout = timeout
        self.session_handle: str | None = None
        self.bound: list[str] = []
        """The ids the portal bound (the person may bind keys to them in the desktop's settings)."""
        self._conn: DBusConnection | None = None
        self._router: DBusRouter | None = None
        self._listener: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"<GlobalShortcuts session={self.session_handle!r} bound={self.bound}>"

    async def start(self) -> bool:
        """Create the session and bind the shortcuts; False (logged at info) where there is no portal."""
        try:
            await self._start()
        except Exception as exc:  # no bus, no portal, no interface, a refusal, a hung portal
            log.info("no desktop-wide shortcuts (GlobalShortcuts portal): %r", exc)
            await self.close()
            return False
        log.debug("global shortcuts bound: %s", ", ".join(self.bound))
        return True

    async def close(self) -> None:
        router, conn, listener = self._router, self._conn, self._listener
        self._router = self._conn = self._listener = None
        if listener is not None and not listener.done():
            listener.cancel()
            try:
                await listener
            except (asyncio.CancelledError, Exception):
                pass
        if self.session_handle is not None and router is not None:
            from jeepney import DBusAddress, new_method_call

            session = DBusAddress(self.session_handle, bus_name=PORTAL_NAME, interface="org.freedesktop.portal.Session")
            try:
                await asyncio.wait_for(router.send_and_get_reply(new_method_call(session, "Close")), self.timeout)
            except Exception as exc:
                log.debug("closing the shortcuts session: %r", exc)
        self.session_handle = None
        try:
            if router is not None:
                await router.__aexit__(None, None, None)
        except Exception as exc:
            log.debug("shortcuts router ended with %r", exc)
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), self.timeout)
            except Exception as exc:
                log.debug("closing the shortcuts bus connection: %r", exc)

    # -- internals --------------------------------------------------------------------------

    async def _start(self) -> None:
        from jeepney import DBusAddress, MatchRule, Properties, message_bus, new_method_call
        from jeepney.io.asyncio import DBusRouter, open_dbus_connection
        from jeepney.wrappers import unwrap_msg

        self._conn = await asyncio.wait_for(open_dbus_connection(self.bus), self.timeout)
        router = self._router = DBusRouter(self._conn)
        portal = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=INTERFACE)
        # The interface's version property: an error here means no portal or no GlobalShortcuts.
        version = unwrap_msg(await asyncio.wait_for(
            router.send_and_get_reply(Properties(portal).get("version")), self.timeout))
        log.debug("GlobalShortcuts portal version %s", version[0][1] if version else "?")

        signals: asyncio.Queue[Any] = asyncio.Queue()
        router.filter(MatchRule(type="signal"), queue=signals)
        rule = MatchRule(type="signal", sender=PORTAL_NAME, interface=INTERFACE, member="Activated", path=PORTAL_PATH)
        unwrap_msg(await asyncio.wait_for(router.send_and_get_reply(message_bus.AddMatch(rule)), self.timeout))

        token = self._token()
        results = await self._request(signals, token, new_method_call(
            portal, "CreateSession", "a{sv}",
            ({"handle_token": ("s", token), "session_handle_token": ("s", self._token())},)))
        handle = results.get("session_handle")
        if not isinstance(handle, tuple) or not isinstance(handle[1], str):
            raise PortalUnavailable(f"CreateSession answered without a session handle: {results!r}")
        self.session_handle = handle[1]

        token = self._token()
        wanted = [(ident, {"description": ("s", description),
                           **({"preferred_trigger": ("s", trigger)} if trigger else {})})
                  for ident, description, trigger in SHORTCUTS]
        results = await self._request(signals, token, new_method_call(
            portal, "BindShortcuts", "oa(sa{sv})sa{sv}",
            (self.session_handle, wanted, "", {"handle_token": ("s", token)})))
        bound = results.get("shortcuts", ("a(sa{sv})", []))[1]
        self.bound = [ident for ident, _properties in bound]
        self._listener = asyncio.ensure_future(self._listen(signals))

    async def _request(self, signals: asyncio.Queue[Any], token: str, call: Any) -> dict[str, Any]:
        """Make a portal call and wait for its Request's Response; the results, or PortalUnavailable."""
        from jeepney import MatchRule, message_bus
        from jeepney.low_level import HeaderFields
        from jeepney.wrappers import unwrap_msg

        assert self._router is not None and self._conn is not None
        sender = (self._conn.unique_name or "").lstrip(":").replace(".", "_")
        path = f"{PORTAL_PATH}/request/{sender}/{token}"
        rule = MatchRule(type="signal", sender=PORTAL_NAME, interface=REQUEST_INTERFACE, member="Response", path=path)
        unwrap_msg(await asyncio.wait_for(self._router.send_and_get_reply(message_bus.AddMatch(rule)), self.timeout))
        unwrap_msg(await asyncio.wait_for(self._router.send_and_get_reply(call), self.timeout))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            message = await asyncio.wait_for(signals.get(), max(0.0, deadline - loop.time()))
            fields = message.header.fields
            if fields.get(HeaderFields.path) == path and fields.get(HeaderFields.member) == "Response":
                response, results = message.body
                if response != 0:
                    raise PortalUnavailable(f"the portal answered {response} (1: cancelled, 2: failed)")
                return dict(results)
            if fields.get(HeaderFields.member) == "Activated":
                self._activated(message.body)

    async def _listen(self, signals: asyncio.Queue[Any]) -> None:
        from jeepney.low_level import HeaderFields

        while True:
            message = await signals.get()
            fields = message.header.fields
            if fields.get(HeaderFields.interface) == INTERFACE and fields.get(HeaderFields.member) == "Activated":
                self._activated(message.body)

    def _activated(self, body: Any) -> None:
        session, ident = body[0], body[1]
        if session != self.session_handle or ident not in {known for known, _d, _t in SHORTCUTS}:
            return  # another session's key, or one we never named
        log.debug("global shortcut %s pressed", ident)
        try:
            self.on_activated(ident)
        except Exception:
            log.exception("global shortcut handler failed")

    @staticmethod
    def _token() -> str:
        return f"desktop_approver_{os.getpid()}_{next(_tokens)}"
