"""The token that clients on a forwarded or bind-mounted socket must present.

Peer credentials vouch for local processes only; an agent that reaches the socket through
``ssh -R`` or a container mount shows up as the forwarding process. With ``--require-token`` the
app asks every connection for a shared secret, kept in the system keyring (service
``desktop-approver``, user ``socket-token``) and created on first use. The app reads it from the
keyring; clients read it from ``DESKTOP_APPROVER_TOKEN`` (the thin client never imports keyring).
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ...client.base import KEYRING_SERVICE as SERVICE  # where clients look
from ...client.base import KEYRING_USERNAME as USERNAME

log = logging.getLogger(__name__)

TOKEN_BYTES = 32
REFRESH_SECONDS = 10.0
"""How long the app trusts its copy of the token; a rotation takes effect within this time."""
KEYRING_TIMEOUT = 5.0
"""Seconds the app waits for the keyring at start. A keyring call can block for good (a locked
collection waiting for a password prompt, a hung D-Bus service): it runs in a thread of its own,
and later reads never wait at all (the server checks tokens on its event loop)."""
T = TypeVar("T")


class TokenStoreUnavailable(RuntimeError):
    """There is no usable keyring to keep the token in (none installed, none running, locked)."""


def _keyring() -> Any:
    try:
        import keyring
    except ImportError as exc:
        raise TokenStoreUnavailable(f"the keyring package is not installed ({exc})") from None
    return keyring


class TokenStore:
    """The token in the keyring: read it, create it on first use, replace it."""

    def __init__(self, service: str = SERVICE, username: str = USERNAME) -> None:
        self.service = service
        self.username = username

    def get(self) -> str | None:
        """The stored token, or None if there is none yet."""
        keyring = _keyring()
        try:
            return keyring.get_password(self.service, self.username) or None
        except keyring.errors.KeyringError as exc:
            raise _unavailable(exc) from None

    def get_or_create(self) -> str:
        return self.get() or self._store(secrets.token_urlsafe(TOKEN_BYTES))

    def rotate(self) -> str:
        """A new token; clients holding the old one are refused from then on."""
        return self._store(secrets.token_urlsafe(TOKEN_BYTES))

    def reader(self, max_age: float = REFRESH_SECONDS,
               clock: Callable[[], float] = time.monotonic) -> Callable[[], str]:
        """A cheap "current token" for the server: re-read from the keyring at most every ``max_age`` s.

        Reads the token once now (so a missing keyring fails at start-up, not at the first
        client), waiting ``KEYRING_TIMEOUT`` at most; a later keyring failure keeps the last known
        token rather than locking everyone out. A stale token is re-read in a thread: the caller
        (the event loop) gets the last known one at once, never waits for the keyring.
        """
        token, read_at = within(KEYRING_TIMEOUT, self.get_or_create), clock()
        refreshing = threading.Lock()

        def refresh() -> None:
            nonlocal token
            try:
                token = self.get_or_create()
            except TokenStoreUnavailable as exc:
                log.warning("keeping the last known token: %s", exc)
            except Exception:  # a keyring backend's own bug: keep the token, say so
                log.exception("keeping the last known token: the keyring failed")
            finally:
                refreshing.release()

        def current() -> str:
            nonlocal read_at
            if clock() - read_at >= max_age and refreshing.acquire(blocking=False):
                read_at = clock()
                threading.Thread(target=refresh, name="keyring-token", daemon=True).start()
            return token

        return current

    def _store(self, token: str) -> str:
        keyring = _keyring()
        try:
            keyring.set_password(self.service, self.username, token)
        except keyring.errors.KeyringError as exc:
            raise _unavailable(exc) from None
        return token


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()`` in a thread of its own, waited for ``seconds`` at most (then
    :class:`TokenStoreUnavailable`; the thread is left to finish, or not, on its own)."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run, name="keyring", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TokenStoreUnavailable(f"the system keyring did not answer within {seconds:g} s")
    if failure:
        raise failure[0]
    return outcome[0]


def make_token_check(expected: str | Callable[[], str]) -> Callable[[str | None], bool]:
    """The server's ``token_check``: True only for the expected token, compared in constant time.

    ``expected`` is the token or a function returning the current one (see :meth:`TokenStore.reader`).
    """
    current = expected if callable(expected) else (lambda: expected)

    def check(presented: str | None) -> bool:
        wanted = current()
        if not presented or not wanted:
            return False
        return hmac.compare_digest(presented.encode(), wanted.encode())

    return check


def _unavailable(exc: Exception) -> TokenStoreUnavailable:
    reason = str(exc) or type(exc).__name__
    return TokenStoreUnavailable(f"cannot use the system keyring for the socket token: {reason}")
