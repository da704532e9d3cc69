"""Errors the thin client raises.

One small tree, so an agent can catch exactly what it means to handle::

    ApproverError                  anything that went wrong talking to the approver
    ├── ApproverUnavailable        no app on the socket, it died, or it stopped answering
    │   ├── UntrustedServer        the socket, its directory or its server is not our user's
    │   └── QuotaExceeded          over NATS: this agent user's requests fill its quota on the server
    ├── ProtocolError              the app answered with an ``error`` message, or sent garbage
    │   └── Unauthorized           the app refused our token / peer credentials
    └── Blocked                    a policy rule blocked the call (not a person's deny)

A person's deny is *not* an exception: it is a :class:`~desktop_approver.client.wire.Decision` with
``decision == "deny"``. ``Blocked`` is only raised when the caller asks for it
(``raise_on_block=True``), because a policy violation is a different thing from a "no".
"""

from __future__ import annotations


class ApproverError(Exception):
    """Base class of every error the client raises."""


class ApproverUnavailable(ApproverError):
    """The approver app is not reachable; the call must be treated as denied (fail closed)."""


class UntrustedServer(ApproverUnavailable):
    """Whatever listens on the socket may not be our app: it or its directory belongs to another
    user, is open to others, or the server process runs as another uid. Nothing was sent."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"refusing the socket at {path}: {reason}")
        self.path = path
        self.reason = reason


class QuotaExceeded(ApproverUnavailable):
    """Over the NATS relay: the server refused to store the request because this agent user's own
    stream is at its limits (its requests waiting, in number or bytes). Nothing was stored; the call
    is denied. Other users are not affected; this one's room comes back as its requests are answered
    or expire, and the approvers are told which user is at its quota."""

    def __init__(self, user: str, reason: str) -> None:
        super().__init__(f"NATS user {user} is at its quota on the relay's server: {reason}")
        self.user = user
        self.reason = reason


class ProtocolError(ApproverError):
    """The app replied with an error message, or with something that is not our protocol."""

    def __init__(self, message: str, code: str = "protocol_error") -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Unauthorized(ProtocolError):
    """The app refused this client (wrong or missing token)."""


class Blocked(ApproverError):
    """A policy rule blocked the call outright; no person was asked."""

    def __init__(self, decision: object) -> None:
        rule = getattr(decision, "rule", None)
        note = getattr(decision, "note", None)
        super().__init__(f"blocked by policy{f' ({rule})' if rule else ''}{f': {note}' if note else ''}")
        self.decision = decision
