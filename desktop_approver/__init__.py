"""desktop-approver: ask the person at the desktop before an agent runs a tool.

The thin client (:mod:`desktop_approver.client`, standard library only) is what an agent imports;
its public names are here too::

    from desktop_approver import Client, AsyncClient
    decision = Client().request("write_file", {"path": "a.txt", "content": "hi"}, session="run-42")

The app itself (``desktop_approver.core`` and ``desktop_approver.gui``) needs the ``[app]`` extra.
"""

from __future__ import annotations

from .version import __version__ as __version__

__all__ = ["Client", "AsyncClient", "Decision", "ApproverError", "ApproverUnavailable",
           "UntrustedServer", "QuotaExceeded",
           "ProtocolError", "Unauthorized", "Blocked", "previews", "__version__"]

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from typing import Any

    from .client import previews
    from .client.async_client import AsyncClient
    from .client.errors import (
        ApproverError,
        ApproverUnavailable,
        Blocked,
        ProtocolError,
        QuotaExceeded,
        Unauthorized,
        UntrustedServer,
    )
    from .client.sync_client import Client
    from .client.wire import Decision

# Each public name is loaded when first used: importing the package (which every submodule does
# first) loads nothing else, so no module of the package is in a circle through it, and a hook
# pays only for what it uses (asyncio alone costs an AsyncClient's user ~20 ms).
_HOME = {"Client": ".client.sync_client", "AsyncClient": ".client.async_client", "Decision": ".client.wire",
         **dict.fromkeys(("ApproverError", "ApproverUnavailable", "Blocked", "ProtocolError", "Unauthorized",
                          "UntrustedServer", "QuotaExceeded"), ".client.errors")}


def __getattr__(name: str) -> Any:
    import importlib

    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    if name == "previews":
        return importlib.import_module(".client.previews", __name__)
    raise AttributeError(f"module 'desktop_approver' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
