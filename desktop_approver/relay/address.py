"""Where the NATS server is and who we are on it: a URL and, optionally, a credentials file.

Three ways to say who we are (the NATS user also names our subjects and keys, :mod:`.names`):

- a NATS ``.creds`` file (a user JWT and its nkey seed, as ``nsc`` writes them): the user is the
  JWT's ``name``;
- a simple credentials file holding one line ``user:password`` (kept out of the URL, so it is not
  in the process list or the shell history);
- ``user:password@`` in the URL itself (handy in tests).

``tls://`` (or ``nats://`` to a server that requires TLS) connects with TLS, verified against the
system's trust store; set ``SSL_CERT_FILE`` to a private CA's certificate to trust that instead.
Standard library only: reading the address needs no ``nats-py``.
"""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .names import is_token

URL_ENV = "DESKTOP_APPROVER_URL"
CREDS_ENV = "DESKTOP_APPROVER_NATS_CREDS"
SCHEMES = ("nats", "tls")
JWT_MARK = "-----BEGIN NATS USER JWT-----"


class AddressError(ValueError):
    """The URL or the credentials cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class RelayAddress:
    url: str
    """The server URL as given, credentials included (never printed: see :attr:`shown`)."""
    user: str
    password: str | None = None
    creds_file: str | None = None
    """A NATS ``.creds`` file (JWT and nkey seed), when that is how we authenticate."""

    @property
    def shown(self) -> str:
        """The URL without its credentials, for messages and logs."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}"

    @property
    def servers(self) -> str:
        parts = urlsplit(self.url)
        return parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl()

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments for ``nats.connect`` (without callbacks and timeouts)."""
        options: dict[str, Any] = {"servers": [self.servers]}
        if self.creds_file is not None:
            options["user_credentials"] = self.creds_file
        else:
            options["user"], options["password"] = self.user, self.password
        if urlsplit(self.url).scheme == "tls":
            options["tls"] = ssl.create_default_context()
        return options


def is_relay_url(url: str) -> bool:
    return urlsplit(url).scheme in SCHEMES


def parse(url: str, creds: str | None = None) -> RelayAddress:
    """``url`` (``nats://host:4222`` or ``tls://host:4222``) and the credentials file ``creds``."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise AddressError(f"not a NATS URL (nats://host:port or tls://host:port): {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise AddressError(f"bad port in {url!r}: {exc}") from None
    if creds:
        user, password, creds_file = read_credentials(Path(creds))
    elif parts.username:
        user, password, creds_file = unquote(parts.username), unquote(parts.password or ""), None
    else:
        raise AddressError(f"no NATS user for {url!r}: give a credentials file ({CREDS_ENV} or --nats-creds) "
                           "or user:password@ in the URL")
    if not is_token(user):
        raise AddressError(f"the NATS user {user!r} is not 1 to 64 letters, digits, '_' or '-' "
                           "(it names the user's subjects)")
    return RelayAddress(url=url, user=user, password=password, creds_file=creds_file)


def read_credentials(path: Path) -> tuple[str, str | None, str | None]:
    """(user, password, creds file) from a ``.creds`` file or a ``user:password`` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AddressError(f"cannot read the NATS credentials {path}: {exc}") from None
    if JWT_MARK in text:
        return _jwt_name(text, path), None, str(path)
    line = text.strip()
    user, colon, password = line.partition(":")
    if not colon or not user or "\n" in line:
        raise AddressError(f"{path} is neither a NATS .creds file nor one line user:password")
    return user, password, None


def _jwt_name(text: str, path: Path) -> str:
    """The user's ``name`` claim from the JWT in a ``.creds`` file (read, not verified: the server verifies)."""
    try:
        jwt = text.split(JWT_MARK, 1)[1].strip().splitlines()[0].strip()
        payload = jwt.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        name = claims["name"]
    except (IndexError, KeyError, ValueError, TypeError) as exc:
        raise AddressError(f"cannot read the user's name from the JWT in {path}: {exc}") from None
    if not isinstance(name, str):
        raise AddressError(f"the JWT in {path} names no user")
    return name
