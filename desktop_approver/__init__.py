"""desktop-approver: ask the person at the desktop before an agent runs a tool.

The thin client lives here and imports only the standard library::

    from desktop_approver import Client, AsyncClient
    decision = Client().request("write_file", {"path": "a.txt", "content": "hi"}, session="run-42")

The app itself (``desktop_approver.core`` and ``desktop_approver.gui``) needs the ``[app]`` extra.
"""

from __future__ import annotations

from .client import Client
from .errors import ApproverError, ApproverUnavailable, Blocked, ProtocolError, Unauthorized, UntrustedServer
from .wire import Decision

__version__ = "0.1.0"
__all__ = ["Client", "AsyncClient", "Decision", "ApproverError", "ApproverUnavailable",
           "UntrustedServer",
           "ProtocolError", "Unauthorized", "Blocked", "previews", "__version__"]

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from typing import Any

    from . import previews
    from .async_client import AsyncClient


def __getattr__(name: str) -> Any:
    # asyncio costs ~20 ms to import; a hook that only needs the blocking client should not pay it.
    import importlib

    if name == "AsyncClient":
        return importlib.import_module(".async_client", __name__).AsyncClient
    if name == "previews":
        return importlib.import_module(".previews", __name__)
    raise AttributeError(f"module 'desktop_approver' has no attribute {name!r}")
