"""Where an address points: this machine, or another one (an effect there is outside the machine)."""

from __future__ import annotations

import re

__all__ = ["host_of", "is_local"]

_LOCAL_HOST = re.compile(r"(localhost|[\w.-]+\.localhost|127(?:\.\d{1,3}){3}|\[::1\]|::1)(:\d+)?", re.I)


def host_of(address: str) -> str:
    """The host (and port) of ``address``, with or without a scheme; a user before ``@`` is dropped
    (``http://localhost@evil.example/`` goes to ``evil.example``)."""
    rest = re.sub(r"^[a-z][a-z0-9+.-]*://", "", address.strip(), flags=re.I)
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return authority.rsplit("@", 1)[-1]


def is_local(address: str) -> bool:
    """Whether ``address`` is this machine's, written out (``localhost``, ``127.x.y.z``, ``[::1]``);
    a name that only resolves here (``127.0.0.1.nip.io``) is not."""
    return _LOCAL_HOST.fullmatch(host_of(address)) is not None
