"""Decisions signed by the approver that made them, checked by the agent before it acts.

The decision bucket is written by whoever the NATS server lets write it: every approver user, and
the server's operator (or anyone with its store). So the bucket alone cannot tell the agent that a
person at a desk it was paired with made an answer. With ``relay setup`` each approver's nkey (the
seed in its credentials file, never on the network) signs every answer it writes, and every user's
credentials file names the approvers' public keys (``approver: U...`` lines): an agent, and an
approver reading another's answer, takes a value on a key only when one of those keys signed that
very value for that very key. Anything else (unsigned, another key, a value moved from another key,
a single byte changed) is no decision: the agent keeps waiting and is denied at its deadline; an
approver records it as refused and writes its own answer over it.

What is signed: :data:`DOMAIN`, the key (``<user>.<request id>``), a newline, and the value as
:func:`.names.encode` writes it without its ``sig`` field; ``sig`` holds the signer's public key and
the Ed25519 signature (base64url). A decision is signed once and read back by the same JSON rules,
so the bytes re-encoded from what was read are the bytes that were signed.

An allow also names the request it answers: ``request`` holds :func:`request_digest` of the
envelope's bytes as the approver read them (and showed them to the person). The agent compares it
with the bytes it published, so an allow signed for a request whose content was changed on the way
(the server's operator swapping the arguments under the same id) is no decision either. A deny
needs no such proof: acting on it can only refuse.

A credentials file without ``approver:`` lines (a password, a ``.creds`` JWT) pins nothing: its
agent takes unsigned answers, and trusts the server and the approvers' credentials (docs/relay.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from . import names

DOMAIN = b"desktop-approver decision v1\n"
"""Put before what is signed, so a signature made for anything else is never a decision's."""
SIG = "sig"
USER_PREFIX = 20 << 3
"""The first byte of a decoded nkey user public key (``U...``)."""


class SignatureError(ValueError):
    """A value is not signed by a pinned approver for its key (the message says why)."""


REQUEST = "request"
"""The field of a decision holding :func:`request_digest` of the request it answers."""


def request_digest(envelope: bytes) -> str:
    """What names one request's bytes exactly (the envelope as published and as read)."""
    return hashlib.sha256(envelope).hexdigest()


def check_request(value: dict[str, Any], digest: str) -> None:
    """Raise :class:`SignatureError` when ``value`` allows a call but names a request other than the
    one with ``digest`` (what the agent published)."""
    reply = value.get("reply")
    decisions = [reply] if isinstance(reply, dict) and reply.get("type") == "decision" else \
        [d for d in (reply.get("decisions") or []) if isinstance(d, dict)] if isinstance(reply, dict) else []
    allows = any(str(decision.get("decision", "")).startswith("allow") for decision in decisions)
    if allows and value.get(REQUEST) != digest:
        raise SignatureError("it allows a request other than the one this agent sent (its content differs)")


def signed_bytes(key: str, value: dict[str, Any]) -> bytes:
    unsigned = {name: field for name, field in value.items() if name != SIG}
    return DOMAIN + key.encode("utf-8") + b"\n" + names.encode(unsigned)


def public_key(seed: str) -> str:
    """The public key (``U...``) of an nkey user seed."""
    import nkeys

    return str(nkeys.from_seed(bytearray(seed.encode("ascii"))).public_key.decode("ascii"))


def sign(seed: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with its ``sig``: signed by the nkey ``seed`` for ``key``."""
    import nkeys

    pair = nkeys.from_seed(bytearray(seed.encode("ascii")))
    signature = pair.sign(signed_bytes(key, value))
    return {**{name: field for name, field in value.items() if name != SIG},
            SIG: {"by": pair.public_key.decode("ascii"), "ed25519": base64.urlsafe_b64encode(signature).decode()}}


def check(key: str, value: dict[str, Any], signers: frozenset[str]) -> None:
    """Raise :class:`SignatureError` unless one of ``signers`` signed ``value`` for ``key``."""
    sig = value.get(SIG)
    if not isinstance(sig, dict):
        raise SignatureError("it is not signed by an approver this user was paired with")
    by, signature = sig.get("by"), sig.get("ed25519")
    if not isinstance(by, str) or by not in signers:
        raise SignatureError(f"it is signed by {str(by)[:60]!r}, not by an approver this user was paired with")
    try:
        raw = base64.urlsafe_b64decode(str(signature).encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SignatureError("its signature is not base64") from None
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    try:
        VerifyKey(_raw_public_key(by)).verify(signed_bytes(key, value), raw)
    except (BadSignatureError, ValueError, TypeError):
        raise SignatureError(f"its signature by {by[:12]}... does not match it") from None


def is_public_key(text: str) -> bool:
    try:
        _raw_public_key(text)
    except ValueError:
        return False
    return True


def _raw_public_key(text: str) -> bytes:
    """The 32 bytes of an nkey user public key (``U...``: base32 of a prefix byte, the key, a CRC16)."""
    import nkeys

    try:
        data = base64.b32decode(text.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ValueError(f"{text[:60]!r} is not an nkey public key") from None
    if len(data) != 35 or data[0] != USER_PREFIX:
        raise ValueError(f"{text[:60]!r} is not an nkey user public key")
    if nkeys.crc16(bytearray(data[:33])) != int.from_bytes(data[33:], "little"):
        raise ValueError(f"{text[:60]!r} fails its checksum")
    return data[1:33]
