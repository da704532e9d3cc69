"""A GlobalShortcuts portal for tests: owns ``org.freedesktop.portal.Desktop`` on a private bus.

It does what a desktop's portal does for the app's side of the conversation: the interface's
``version`` property, ``CreateSession`` and ``BindShortcuts`` answered through a Request object's
``Response`` signal (at the path the caller can predict from its unique name and token), and
``Activated`` when a bound key is "pressed" (:meth:`FakePortal.press`).
"""

from __future__ import annotations

import asyncio
import itertools
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

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
INTERFACE = "org.freedesktop.portal.GlobalShortcuts"


class FakePortal:
    def __init__(self, bus: str) -> None:
        self.bus = bus
        self.sessions: dict[str, str] = {}            # session handle -> the caller's unique name
        self.bound: dict[str, list[str]] = {}         # session handle -> the shortcut ids bound
        self.closed: list[str] = []
        self._conn: DBusConnection | None = None
        self._router: DBusRouter | None = None
        self._serving: asyncio.Future[None] | None = None
        self._numbers = itertools.count(1)

    async def start(self) -> None:
        self._conn = await open_dbus_connection(self.bus)
        self._router = DBusRouter(self._conn)
        calls: asyncio.Queue[Any] = asyncio.Queue()
        self._router.filter(MatchRule(type="method_call"), queue=calls)
        (result,) = unwrap_msg(await self._router.send_and_get_reply(message_bus.RequestName(PORTAL_NAME, 4)))
        assert result == 1, f"{PORTAL_NAME} is taken"
        self._serving = asyncio.ensure_future(self._serve(calls))

    async def stop(self) -> None:
        serving, router, conn = self._serving, self._router, self._conn
        self._serving = self._router = self._conn = None
        if serving is not None:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        if router is not None:
            await router.__aexit__(None, None, None)
        if conn is not None:
            await conn.close()

    async def press(self, shortcut: str) -> None:
        """The person pressed the key bound to ``shortcut`` in every session that bound it."""
        assert self._router is not None
        for handle, ids in self.bound.items():
            if shortcut in ids:
                emitter = DBusAddress(PORTAL_PATH, interface=INTERFACE)
                await self._router.send(new_signal(emitter, "Activated", "osta{sv}", (handle, shortcut, 1, {})))

    async def _serve(self, calls: asyncio.Queue[Any]) -> None:
        while True:
            call = await calls.get()
            reply, then = self._answer(call)
            if reply is not None and not call.header.flags & MessageFlag.no_reply_expected:
                assert self._router is not None
                await self._router.send(reply)
            if then is not None:
                assert self._router is not None
                await self._router.send(then)

    def _answer(self, call: Any) -> tuple[Any, Any]:
        fields = call.header.fields
        member, interface = fields.get(HeaderFields.member), fields.get(HeaderFields.interface)
        sender = fields[HeaderFields.sender]
        if interface == "org.freedesktop.DBus.Properties" and member == "Get" and call.body == (INTERFACE, "version"):
            return new_method_return(call, "v", (("u", 1),)), None
        if interface == "org.freedesktop.portal.Session" and member == "Close":
            self.closed.append(fields[HeaderFields.path])
            return new_method_return(call), None
        if interface != INTERFACE:
            return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s", (f"no {interface}.{member}",)), None
        if member == "CreateSession":
            (options,) = call.body
            handle = f"{PORTAL_PATH}/session/{self._name(sender)}/{options['session_handle_token'][1]}"
            self.sessions[handle] = sender
            request = self._request_path(sender, options["handle_token"][1])
            return new_method_return(call, "o", (request,)), self._response(request, sender,
                                                                            {"session_handle": ("s", handle)})
        if member == "BindShortcuts":
            handle, shortcuts, _parent, options = call.body
            if self.sessions.get(handle) != sender:
                return new_error(call, "org.freedesktop.portal.Error.NotAllowed", "s", ("not your session",)), None
            self.bound[handle] = [ident for ident, _properties in shortcuts]
            request = self._request_path(sender, options["handle_token"][1])
            bound = [(ident, {"description": properties["description"],
                              "trigger_description": ("s", f"Super+{next(self._numbers)}")})
                     for ident, properties in shortcuts]
            return new_method_return(call, "o", (request,)), self._response(request, sender,
                                                                            {"shortcuts": ("a(sa{sv})", bound)})
        return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s", (f"no method {member}",)), None

    @staticmethod
    def _name(sender: str) -> str:
        return sender.lstrip(":").replace(".", "_")

    def _request_path(self, sender: str, token: str) -> str:
        return f"{PORTAL_PATH}/request/{self._name(sender)}/{token}"

    @staticmethod
    def _response(path: str, destination: str, results: dict[str, Any]) -> Any:
        signal = new_signal(DBusAddress(path, interface="org.freedesktop.portal.Request"), "Response", "ua{sv}",
                            (0, results))
        signal.header.fields[HeaderFields.destination] = destination
        return signal
