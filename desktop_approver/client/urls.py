"""Which transport a client uses: the unix socket, or the NATS relay for a ``nats://`` URL.

``Client(url=...)``, ``AsyncClient(url=...)``, or ``DESKTOP_APPROVER_URL`` in the environment (for
every command, the hook and the adapters, which build their clients without a URL):

- ``nats://host:4222`` or ``tls://host:4222``: the relay (:mod:`desktop_approver.relay.agent`), with
  the credentials file given (``credentials=``) or in ``DESKTOP_APPROVER_NATS_CREDS`` (or
  ``user:password@`` in the URL), and the CA file (``ca_file=``, ``DESKTOP_APPROVER_NATS_CA``); the
  ``relay`` extra (``nats-py``) is imported only then. TLS is required for ``tls://`` and for any
  host but this one (:mod:`desktop_approver.relay.address`);
- ``unix:///path/to/approver.sock`` or a bare path: that socket. A path that starts like a URL with
  its colon or slashes missing (``nats//host:4222``) is refused as a malformed URL, never taken for
  a socket's name.

A URL or credentials the client cannot use make a transport whose every connect raises
:class:`~desktop_approver.client.errors.ApproverUnavailable` with the reason: every caller already treats
that as "denied" (fail closed), so a broken setting can never crash a hook into an allow.
Standard library only: an agent that uses the socket never imports the relay.
"""

from __future__ import annotations

import os

from .errors import ApproverUnavailable
from .paths import resolve_socket_path
from .transport import UnixSocketTransport

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from typing import Any

URL_ENV = "DESKTOP_APPROVER_URL"
CREDS_ENV = "DESKTOP_APPROVER_NATS_CREDS"
RELAY_SCHEMES = ("nats", "tls")


def open_transport(socket_path: str | os.PathLike[str] | None, url: str | None, *,
                   creds: str | os.PathLike[str] | None = None, ca_file: str | os.PathLike[str] | None = None) -> Any:
    """The transport for an explicit ``socket_path`` or ``url``, else ``DESKTOP_APPROVER_URL``, else
    the default socket; ``creds`` and ``ca_file`` for a relay URL (else their variables)."""
    if socket_path is not None and url is not None:
        raise TypeError("give a socket_path or a url, not both")
    if socket_path is None and url is None:
        url = os.environ.get(URL_ENV) or None
    if url is None:
        return UnixSocketTransport(resolve_socket_path(socket_path))
    from urllib.parse import unquote, urlsplit  # only with a URL: the common path (the socket) never pays for it

    try:
        scheme = urlsplit(url).scheme  # raises on a bracket left open, or a host in brackets that is no address
    except ValueError as exc:  # a setting that cannot work, said like any other: the caller denies
        return UnusableTransport(_without_password(url), f"not a URL: {exc}")
    if scheme in RELAY_SCHEMES:
        from ..relay.address import AddressError, parse
        from ..relay.agent import RelayTransport

        try:
            named = os.fspath(creds) if creds is not None else os.environ.get(CREDS_ENV) or None
            return RelayTransport(parse(url, named, ca_file=os.fspath(ca_file) if ca_file is not None else None))
        except AddressError as exc:
            return UnusableTransport(_without_password(url), str(exc))
    if scheme == "unix":
        return UnixSocketTransport(unquote(urlsplit(url).path))
    if scheme == "":
        head = url.split("/", 1)[0].rstrip(":").lower()
        if head in (*RELAY_SCHEMES, "unix") and url[len(head):].startswith((":", "/")):
            return UnusableTransport(_without_password(url), f"not a URL: expected {head}://..., with '://' after "
                                                             f"{head!r}")
        return UnixSocketTransport(resolve_socket_path(url))
    return UnusableTransport(_without_password(url), "expected a nats://, tls:// or unix:// URL")


class UnusableTransport:
    """A setting that cannot work: each connect says why, as :class:`ApproverUnavailable`."""

    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason

    def __repr__(self) -> str:
        return f"UnusableTransport({self.address!r}, {self.reason!r})"

    def connect(self, timeout: float) -> object:
        raise ApproverUnavailable(f"desktop-approver at {self.address}: {self.reason}")

    async def connect_async(self, timeout: float) -> object:
        raise ApproverUnavailable(f"desktop-approver at {self.address}: {self.reason}")


def _without_password(url: str) -> str:
    """``url`` as it may be shown: without what comes before an ``@`` (a user and password), even malformed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.rsplit("@", 1)[-1]
    where, slash, path = rest.partition("/")
    return f"{scheme}://{where.rsplit('@', 1)[-1]}{slash}{path}"
