"""Connecting to the NATS server so that no credential leaves without the TLS the address asks for.

By default nats-py upgrades a connection to TLS only when the server's first line (``INFO``, sent
in clear) says ``tls_required``: anyone on the path reads and may rewrite that line, and a server
without TLS, or one whose offer was removed on the way, would get the ``CONNECT`` line,
credentials included, in clear. So for an address that requires TLS
(:attr:`.address.RelayAddress.requires_tls`) the client starts TLS first (nats-py's
``tls_handshake_first``; the server's ``tls { handshake_first: true }``): its hello is the first
byte on the connection, and a server that said anything in clear before it, or answers it in clear,
is refused (:class:`TLSRequired`), never tried again without TLS. And the client's ``CONNECT`` is
built only on a connection whose TLS handshake is done, with the certificate verified against the
address's CA and the host name checked; otherwise nothing is sent.
The check sits on every connect and reconnect (nats-py builds ``CONNECT`` once per connection),
and the server's list of other servers is not followed (``dont_randomize``; a discovered address
is checked the same way all the same).

A plain connection is kept for a server on this machine (loopback), or where the person opted in
(``DESKTOP_APPROVER_NATS_PLAINTEXT=1``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .address import RelayAddress, is_loopback


def import_nats() -> ModuleType:
    """nats-py, without the aiohttp it would bring along.

    nats-py imports aiohttp, when installed, for its WebSocket transport alone (``ws://``; added
    in nats-io/nats.py#356 with aiohttp optional), which the relay never uses. In an agent that has
    not imported aiohttp itself that doubles the import (0.9 s against 0.4 s on the test machine,
    paid by every hook call), so nats-py is imported with aiohttp hidden, and unhidden after: the
    agent can still import aiohttp. Only nats-py's WebSocket transport goes without it.
    """
    if "nats" in sys.modules or "aiohttp" in sys.modules:
        import nats

        return nats
    sys.modules["aiohttp"] = None  # type: ignore[assignment]  # None: "import aiohttp" raises ImportError
    try:
        import nats
        import nats.js
    finally:
        if "aiohttp" in sys.modules and sys.modules["aiohttp"] is None:
            del sys.modules["aiohttp"]
    return nats


class TLSRequired(Exception):
    """The connection was about to send credentials without a verified TLS session (nothing was sent).

    Made a ``nats.errors.Error`` at run time by :func:`connect` (so nats-py's connect loop reports
    it through ``error_cb`` and gives up as on any failed connect)."""


def speaks_tls(client: Any) -> bool:
    """Whether ``client``'s current connection went through a TLS handshake (unknown: no)."""
    transport = getattr(client, "_transport", None)
    writer = getattr(transport, "_io_writer", None)
    get_extra_info = getattr(writer, "get_extra_info", None)
    if get_extra_info is None:
        return False
    return get_extra_info("ssl_object") is not None


async def connect(address: RelayAddress, **options: Any) -> Any:
    """``nats.connect`` to ``address`` with ``options`` (callbacks, timeouts), TLS enforced before
    credentials whenever the address requires it (see the module docstring)."""
    nats = import_nats()
    from nats.aio.client import Client

    refused = type("TLSRequired", (TLSRequired, nats.errors.Error), {})
    client = Client()
    build_connect = client._connect_command
    refusals: list[TLSRequired] = []

    def must_tls() -> bool:
        server = getattr(client, "_current_server", None)
        host = getattr(getattr(server, "uri", None), "hostname", None) or ""
        return address.requires_tls or not (address.plaintext or is_loopback(host))

    def in_clear(what: str) -> Exception:
        refusals.append(refused(f"refused to send credentials without TLS: the server at {address.shown} answered "
                                f"in clear instead of starting TLS first ({what}): it needs "
                                "handshake_first: true in its tls block (relay setup writes it), or someone on "
                                "the way removed its TLS"))
        return refusals[-1]

    client._transport = _guarded_transport(must_tls, in_clear)

    def connect_command() -> bytes:
        server = getattr(client, "_current_server", None)
        host = getattr(getattr(server, "uri", None), "hostname", None) or ""
        if must_tls() and not speaks_tls(client):
            if client._transport is not None:
                client._transport.close()  # type: ignore[no-untyped-call]  # nothing was written to it, nor will be
            if host != address.host and not is_loopback(host):
                why = f"the server sent us on to {host}, another host, without TLS"
            else:
                why = f"the server at {address.shown} did not start TLS (not set up for it, or removed on the way)"
            refusals.append(refused(f"refused to send credentials without TLS: {why}"))
            raise refusals[-1]
        return build_connect()

    client._connect_command = connect_command  # type: ignore[method-assign]
    if "tls" in address.connect_options():
        _quiet_tls_close()
    options = {**address.connect_options(), **options}
    try:
        await client.connect(**options)
    except BaseException as exc:
        if not client.is_closed:
            try:
                await asyncio.wait_for(client.close(), 2)
            except Exception:  # noqa: BLE001, S110 - closing a connection that never opened: nothing to say
                pass
        if refusals and isinstance(exc, Exception):  # nats-py tried again and said "no servers": say why
            raise refusals[-1] from None
        raise
    return client


def _guarded_transport(must_tls: Callable[[], bool], in_clear: Callable[[str], Exception]) -> Any:
    """nats-py's TCP transport, writing nothing to a connection that must be TLS and is not.

    Refusing the ``CONNECT`` line is not enough: what the agent published while disconnected waits
    in nats-py's pending buffer, and closing the client flushes it onto the current connection,
    even one whose login was refused because the TLS was stripped on the way (a request in clear,
    its arguments and all). So every write goes through here: on a connection that needs TLS and
    has not finished a verified handshake, it is dropped and the connection closed. nats-py keeps
    this one transport for every reconnect (it makes a new one only when it has none).

    A TLS handshake that fails for any reason but the certificate (a server that sends its ``INFO``
    in clear: ``WRONG_VERSION_NUMBER``) is raised as ``in_clear`` says: the connection is refused as
    one without TLS, never retried without it."""
    from nats.aio.transport import TcpTransport

    class GuardedTransport(TcpTransport):
        orphaned: asyncio.StreamWriter | None = None
        """The plain stream of a connection whose TLS handshake failed (its socket is TLS's now)."""

        def _cleared(self) -> bool:
            writer = self._io_writer
            return writer is not None and (writer.get_extra_info("ssl_object") is not None or not must_tls())

        def _refuse(self) -> None:
            if self._io_writer is not None:
                self._io_writer.close()  # the stripped connection gets no byte from us

        async def connect_tls(self, uri: Any, ssl_context: ssl.SSLContext, buffer_size: int,
                              connect_timeout: int) -> None:
            """nats-py's upgrade, with no step between the check and the handshake: whatever the
            server says from the moment our hello leaves goes to TLS (and fails it when in clear)."""
            assert self._io_writer is not None, "connect first"
            clear = self._io_reader
            said = len(getattr(clear, "_buffer", b"")) if clear is not None else 0
            if said:  # it spoke before our hello: a server that starts in clear
                self._refuse()
                raise in_clear(f"{said} bytes in clear before the handshake")
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=buffer_size)
            protocol = asyncio.StreamReaderProtocol(reader)
            try:
                async with asyncio.timeout(connect_timeout):
                    transport = await loop.start_tls(
                        self._io_writer.transport, protocol, ssl_context,
                        server_hostname=uri if isinstance(uri, str) else uri.hostname)
            except ssl.SSLError as exc:
                self.orphaned = self._io_writer
                if isinstance(exc, ssl.SSLCertVerificationError):
                    raise
                self._refuse()  # what came was no TLS (a server's INFO in clear)
                raise in_clear(exc.reason or str(exc)) from None
            except BaseException:  # no answer in time, or cancelled
                self.orphaned = self._io_writer
                raise
            if transport is None:
                raise ConnectionError("the connection closed during the TLS handshake")
            self._io_reader = reader
            self._io_writer = asyncio.StreamWriter(transport, protocol, reader, loop)

        async def wait_closed(self) -> None:
            if self._io_writer is not None and self._io_writer is self.orphaned:
                return  # TLS took its socket over and failed: that stream never hears of the close
            await super().wait_closed()  # type: ignore[no-untyped-call]

        def write(self, payload: bytes) -> None:
            if self._cleared():
                super().write(payload)  # type: ignore[no-untyped-call]
            else:
                self._refuse()

        def writelines(self, payload: list[bytes]) -> None:
            if self._cleared():
                super().writelines(payload)  # type: ignore[no-untyped-call]
            else:
                self._refuse()

        async def drain(self) -> None:  # nothing was written where it is not cleared
            if self._cleared():
                await super().drain()  # type: ignore[no-untyped-call]

        def __bool__(self) -> bool:  # kept from the first connect on, so the guard is never replaced
            return True

    return GuardedTransport()  # type: ignore[no-untyped-call]


EOF_ON_SSL = "returning true from eof_received() has no effect when using ssl"


def _drop_eof_on_ssl(record: logging.LogRecord) -> bool:
    return record.msg != EOF_ON_SSL


def _quiet_tls_close() -> None:
    """Keep asyncio's warning about nats-py's TLS streams out of the agent's stderr.

    nats-py upgrades its connection with a fresh ``StreamReaderProtocol`` that never learns it is
    over TLS, so when the server closes it asyncio warns that ``eof_received`` returning True has no
    effect: once per closed connection, harmless (the TLS layer closes the socket itself), and noise
    in a hook's or a script's output. Only that message of the ``asyncio`` logger is dropped.
    """
    logger = logging.getLogger("asyncio")
    if _drop_eof_on_ssl not in logger.filters:
        logger.addFilter(_drop_eof_on_ssl)
