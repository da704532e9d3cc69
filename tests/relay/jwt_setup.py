"""A decentralised NATS setup (operator, account, users) made with the nkeys package, as ``nsc``
would make it: a server configuration trusting the operator, and a ``.creds`` file per user.

Only what the relay tests need: one account with JetStream, users without limits of their own.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


@dataclass
class Key:
    seed: bytes
    public: str

    @classmethod
    def new(cls, prefix: int) -> Key:
        import nkeys

        seed = nkeys.encode_seed(os.urandom(32), prefix)
        return cls(seed, nkeys.from_seed(bytearray(seed)).public_key.decode("ascii"))

    def sign(self, data: bytes) -> bytes:
        import nkeys

        return bytes(nkeys.from_seed(bytearray(self.seed)).sign(data))


def jwt(issuer: Key, subject: str, name: str, nats: dict[str, Any]) -> str:
    claims: dict[str, Any] = {"iat": int(time.time()), "iss": issuer.public, "name": name, "sub": subject,
                              "nats": {**nats, "version": 2}}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()).decode()
    head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = _b64(json.dumps(claims).encode())
    return f"{head}.{body}.{_b64(issuer.sign(f'{head}.{body}'.encode()))}"


UNLIMITED = {"subs": -1, "data": -1, "payload": -1}


def decentralised(folder: Path, users: list[str]) -> tuple[Path, dict[str, Path]]:
    """The server configuration (JetStream in ``folder``) and a ``.creds`` file for each of ``users``."""
    import nkeys

    operator = Key.new(nkeys.PREFIX_BYTE_OPERATOR)
    account = Key.new(nkeys.PREFIX_BYTE_ACCOUNT)
    system = Key.new(nkeys.PREFIX_BYTE_ACCOUNT)  # JetStream needs the server's own account
    operator_jwt = jwt(operator, operator.public, "operator", {"type": "operator", "system_account": system.public})
    system_jwt = jwt(operator, system.public, "SYS", {"type": "account", "limits": {**UNLIMITED, "conn": -1}})
    account_jwt = jwt(operator, account.public, "APPROVALS", {"type": "account", "limits": {
        **UNLIMITED, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1,
        "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}})
    creds = {}
    for name in users:
        user = Key.new(nkeys.PREFIX_BYTE_USER)
        user_jwt = jwt(account, user.public, name, {"type": "user", "pub": {}, "sub": {}, **UNLIMITED})
        path = folder / f"{name}.creds"
        path.write_text(f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
                        f"-----BEGIN USER NKEY SEED-----\n{user.seed.decode()}\n------END USER NKEY SEED------\n")
        path.chmod(0o600)
        creds[name] = path
    config = folder / "operator.conf"
    config.write_text(f'operator: "{operator_jwt}"\nsystem_account: {system.public}\nresolver: MEMORY\n'
                      f'resolver_preload: {{ {account.public}: "{account_jwt}", {system.public}: "{system_jwt}" }}\n'
                      'jetstream { store_dir: "jetstream" }\n')
    return config, creds
