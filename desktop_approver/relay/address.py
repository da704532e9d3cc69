"""Where the NATS server is and who we are on it: a URL and, optionally, a credentials file.

Three ways to say who we are (the NATS user also names our subjects and keys, :mod:`.names`):

- a NATS ``.creds`` file (a user JWT and its nkey seed, as ``nsc`` writes them): the user is the
  JWT's ``name``;
- a simple credentials file holding one line ``user:password`` (kept out of the URL, so it is not
  in the process list or the shell history);
- ``user:password@`` in the URL itself (handy in tests);
- a seed file that ``desktop-approver relay setup`` writes (``user: <name>`` and ``seed: SU...``):
  an nkey, whose secret never leaves this machine (the server checks a signature of its nonce);
  its ``approver: U...`` lines pin the approvers whose signed answers alone count (:mod:`.signing`).

TLS when asked means TLS (:attr:`RelayAddress.requires_tls`): ``tls://``, and any URL whose host is
not this machine, connect only after a TLS handshake with a verified certificate, before any
credential leaves (:mod:`.secure` enforces it on every connect and reconnect). The certificate is
verified against ``ca_file`` (``DESKTOP_APPROVER_NATS_CA``, ``--nats-ca``, ``--relay-ca``) or the
system's trust store (``SSL_CERT_FILE`` is honoured). A plain ``nats://`` URL to another host is
refused unless the person opts in with ``DESKTOP_APPROVER_NATS_PLAINTEXT=1``.
Standard library only: reading the address needs no ``nats-py``.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .names import is_token

URL_ENV = "DESKTOP_APPROVER_URL"
CREDS_ENV = "DESKTOP_APPROVER_NATS_CREDS"
CA_ENV = "DESKTOP_APPROVER_NATS_CA"
PLAINTEXT_ENV = "DESKTOP_APPROVER_NATS_PLAINTEXT"
"""``1``: the person accepts credentials in clear to a ``nats://`` URL on another host."""
SCHEMES = ("nats", "tls")
JWT_MARK = "-----BEGIN NATS USER JWT-----"
SEED_MARK = "seed:"
APPROVER_MARK = "approver"
NKEY_USER = re.compile(r"U[A-Z2-7]{55}")


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
    seed: str | None = None
    """An nkey seed (``SU...``), when that is how we authenticate (never printed)."""
    ca_file: str | None = None
    """The CA certificate(s) the server's certificate must chain to (None: the system's)."""
    plaintext: bool = False
    """The person opted in to a plain connection to another host (:data:`PLAINTEXT_ENV`)."""
    approvers: frozenset[str] = frozenset()
    """The approvers' public keys this user was paired with (``approver:`` lines of a seed file, as
    ``relay setup`` writes them): only answers one of them signed count (:mod:`.signing`); empty:
    unsigned answers count (the server and the approvers' credentials are trusted)."""

    def __repr__(self) -> str:
        return f"RelayAddress({self.shown!r}, user={self.user!r}, tls={self.requires_tls})"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def requires_tls(self) -> bool:
        """Whether a connection must be TLS before any credential is sent: ``tls://``, a CA file
        given, or a host other than this machine (unless the person opted in to plaintext)."""
        scheme = urlsplit(self.url).scheme
        return scheme == "tls" or self.ca_file is not None or not (self.plaintext or is_loopback(self.host))

    def tls_context(self) -> ssl.SSLContext:
        """Certificates verified, host names checked, TLS 1.2 at least."""
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise AddressError(f"cannot read the CA file {self.ca_file}: {exc}") from None
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    @property
    def shown(self) -> str:
        """The URL without its credentials, for messages and logs."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host  # an IPv6 address, as it is written in a URL
        port = f":{parts.port}" if parts.port is not None else ""
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
        elif self.seed is not None:
            options["nkeys_seed_str"] = self.seed
        else:
            options["user"], options["password"] = self.user, self.password
        if self.requires_tls or urlsplit(self.url).scheme == "tls":
            options["tls"] = self.tls_context()
            # TLS before anything else, INFO included (nats-server: ``tls { handshake_first: true }``):
            # nothing the client reads or writes is in clear, and a server that starts in clear (not
            # set up for it, or someone on the path) fails the handshake; there is no way down.
            options["tls_handshake_first"] = True
            # A server that sends other servers' addresses could lead a reconnect elsewhere; only
            # the address the person gave is used.
            options["dont_randomize"] = True
        return options


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine by name or address (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_relay_url(url: str) -> bool:
    """Whether ``url`` names the relay (``nats://``, ``tls://``), well formed or not."""
    return url.partition("://")[0].lower() in SCHEMES


def parse(url: str, creds: str | None = None, *, ca_file: str | None = None,
          plaintext: bool | None = None) -> RelayAddress:
    """``url`` (``nats://host:4222`` or ``tls://host:4222``), the credentials file ``creds``, the CA
    file (else ``DESKTOP_APPROVER_NATS_CA``), and whether plaintext to another host is accepted (else
    ``DESKTOP_APPROVER_NATS_PLAINTEXT``)."""
    if any(character.isspace() or not character.isprintable() for character in url.rsplit("@", 1)[-1]):
        raise AddressError("not a URL: its host or port holds a space, a line break or a control character")
    try:
        parts = urlsplit(url)
        parts.hostname  # noqa: B018 - raises on a bracket left open or a host in brackets that is no address
    except ValueError as exc:
        scheme, _, rest = url.partition("://")
        raise AddressError(f"not a URL: {scheme}://{rest.rsplit('@', 1)[-1]!s} ({exc})") from None
    shown = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]).geturl()
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise AddressError(f"not a NATS URL (nats://host:port or tls://host:port): {shown!r}")
    try:
        port = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise AddressError(f"bad port in {shown!r}: {exc}") from None
    if port == 0:
        raise AddressError(f"bad port in {shown!r}: 0 is no server's port")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise AddressError(f"a NATS URL is scheme://host:port and nothing after it: {shown!r}")
    ca_file = ca_file or os.environ.get(CA_ENV) or None
    if plaintext is None:
        plaintext = os.environ.get(PLAINTEXT_ENV, "") == "1"
    if parts.scheme == "nats" and not plaintext and ca_file is None and not is_loopback(parts.hostname):
        raise AddressError(f"refused: {shown} would send credentials in clear to another host; use "
                           f"tls://{parts.netloc.rsplit('@', 1)[-1]} (or set {PLAINTEXT_ENV}=1 on a network you trust)")
    seed, approvers = None, frozenset[str]()
    if creds:
        user, password, creds_file, seed = read_credentials(Path(creds))
        approvers = paired_approvers(Path(creds)) if seed is not None else approvers
    elif parts.username:
        user, password, creds_file = unquote(parts.username), unquote(parts.password or ""), None
    else:
        raise AddressError(f"no NATS user for {url!r}: give a credentials file ({CREDS_ENV} or --nats-creds) "
                           "or user:password@ in the URL")
    if not is_token(user):
        raise AddressError(f"the NATS user {user!r} is not 1 to 64 letters, digits, '_' or '-' "
                           "(it names the user's subjects)")
    return RelayAddress(url=url, user=user, password=password, creds_file=creds_file, seed=seed, ca_file=ca_file,
                        plaintext=plaintext, approvers=approvers)


def read_credentials(path: Path) -> tuple[str, str | None, str | None, str | None]:
    """(user, password, creds file, nkey seed) from a ``.creds`` file, a seed file (``user:`` and
    ``seed:`` lines, as ``relay setup`` writes them) or a ``user:password`` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AddressError(f"cannot read the NATS credentials {path}: {exc}") from None
    if JWT_MARK in text:
        return _jwt_name(text, path), None, str(path), None
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if any(line.startswith(SEED_MARK) for line in lines):
        fields = dict(line.partition(":")[::2] for line in lines)
        user, seed = fields.get("user", "").strip(), fields.get("seed", "").strip()
        if not user or not seed.startswith("SU"):
            raise AddressError(f"{path} is a seed file without a 'user:' line or an 'SU...' user seed")
        return user, None, None, seed
    line = text.strip()
    user, colon, password = line.partition(":")
    if not colon or not user or "\n" in line:
        raise AddressError(f"{path} is neither a NATS .creds file, a seed file nor one line user:password")
    return user, password, None, None


def paired_approvers(path: Path) -> frozenset[str]:
    """The approvers' public keys named in a seed file (``approver: U...`` lines; none: an empty set)."""
    keys = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        name, colon, key = line.strip().partition(":")
        if colon and name.strip() == APPROVER_MARK:
            if not NKEY_USER.fullmatch(key.strip()):
                raise AddressError(f"{path}: {key.strip()[:60]!r} is not an approver's public key (U...)")
            keys.add(key.strip())
    return frozenset(keys)


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
