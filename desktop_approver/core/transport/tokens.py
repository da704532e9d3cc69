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
"""Seconds the app waits for one keyring read. A keyring call can block for good (a locked
collection waiting for a password prompt, a hung D-Bus service): it runs in a thread of its own
with this deadline; at start the app fails after it, later the read is given up on, reported
and tried again (the server checks tokens on its event loop, which never waits)."""
MAX_STUCK_READS = 8
"""Keyring reads given up on but still waiting, beyond which no new one is started (each is a thread
of its own: a keyring that never answers must not grow the app by one thread every refresh)."""
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
               clock: Callable[[], float] = time.monotonic) -> TokenReader:
        """A cheap "current token" for the server (see :class:`TokenReader`)."""
        return TokenReader(self, max_age, clock)

    def _store(self, token: str) -> str:
        keyring = _keyring()
        try:
            keyring.set_password(self.service, self.username, token)
        except keyring.errors.KeyringError as exc:
            raise _unavailable(exc) from None
        return token


MISSING = ("the socket token was missing from the keyring; a new one was made: clients need "
           "`desktop-approver token` (or DESKTOP_APPROVER_TOKEN set to it)")
"""The problem while a token the app made because its keyring entry was emptied is not yet used by any client."""


class TokenReader:
    """The current token, re-read from the keyring at most every ``max_age`` s; call it for the token.

    It reads the token once at start (so a missing keyring fails the start, not the first client),
    waiting ``KEYRING_TIMEOUT`` at most. A stale token is re-read in a thread of its own: the caller
    (the event loop) always gets the last known token at once. Each read has a deadline
    (``KEYRING_TIMEOUT``): a keyring that does not answer in time is given up on (its thread left to
    end on its own), reported as :attr:`problem` and tried again ``max_age`` s later, so a rotation
    takes effect within ``max_age`` s of the keyring answering again.

    While the keyring fails or does not answer, the last known token stays accepted: refusing
    every client would lock the person's own agents out, and the last known token is one the
    person's own keyring gave out (nothing new is accepted). The person is told (``problem``,
    to ``health_listeners``, from the reader's thread: marshal it to your loop).
    """

    def __init__(self, store: TokenStore, max_age: float = REFRESH_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.max_age = max_age
        self.clock = clock
        self.token: str = within(KEYRING_TIMEOUT, store.get_or_create)
        self.read_at = clock()
        self.problem: str | None = None
        """Why the token in use may not be the keyring's (or clients lack it), in words; None when all is well."""
        self.health_listeners: list[Callable[[str | None], None]] = []
        self._refreshing = threading.Lock()  # held by the one refresh under way, for its deadline at most

    def __call__(self) -> str:
        if (self.clock() - self.read_at >= self.max_age and _stuck_reads() < MAX_STUCK_READS
                and self._refreshing.acquire(blocking=False)):
            self.read_at = self.clock()
            threading.Thread(target=self._refresh, name="keyring-token", daemon=True).start()
        return self.token

    def confirmed(self, token: str) -> None:
        """A client presented ``token`` and was accepted: a newly made token has reached its clients."""
        if self.problem == MISSING and token == self.token:
            self._set_problem(None)

    def _refresh(self) -> None:
        try:
            stored = within(KEYRING_TIMEOUT, self.store.get)
            if stored is None:  # the entry was emptied or deleted: make a new one, loudly
                stored = within(KEYRING_TIMEOUT, self.store.rotate)
                log.warning("%s", MISSING)
                self.token = stored
                self._set_problem(MISSING)
                return
        except TokenStoreUnavailable as exc:
            self._set_problem(_keeping(exc))
        except Exception as exc:  # a keyring backend's own bug: keep the token, say so
            log.exception("keeping the last known token: the keyring failed")
            self._set_problem(_keeping(exc))
        else:
            changed, self.token = stored != self.token, stored
            if changed or self.problem != MISSING:
                self._set_problem(None)
        finally:
            self._refreshing.release()

    def _set_problem(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        self.problem = problem
        if problem is None:
            log.info("the keyring answers again; the socket token is read from it")
        elif problem != MISSING:
            log.warning("keeping the last known token: %s", problem)
        for listener in list(self.health_listeners):
            try:
                listener(problem)
            except Exception:  # a listener's failure must not stop the refreshes
                log.exception("a token health listener failed")


def _stuck_reads() -> int:
    return sum(thread.name == "keyring" and thread.is_alive() for thread in threading.enumerate())


def _keeping(exc: Exception) -> str:
    reason = "the keyring does not answer" if "did not answer" in str(exc) else f"the keyring failed ({exc})"
    return (f"The socket token cannot be read: {reason}. Clients holding the last known token are still "
            "accepted; a `token rotate` takes effect once the keyring answers.")


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
        accepted = hmac.compare_digest(presented.encode(), wanted.encode())
        if accepted and isinstance(expected, TokenReader):
            expected.confirmed(presented)
        return accepted

    return check


def _unavailable(exc: Exception) -> TokenStoreUnavailable:
    reason = str(exc) or type(exc).__name__
    return TokenStoreUnavailable(f"cannot use the system keyring for the socket token: {reason}")
