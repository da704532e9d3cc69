"""The thin client: what an agent imports. Standard library only (a test checks it).

``Client`` (blocking) and ``AsyncClient`` talk to the app through a ``transport`` (the unix
socket by default); ``wire`` holds the protocol's words as the client needs them, ``errors`` the
exception tree, ``previews`` the helpers that build a call's preview, ``paths`` and ``settings``
where the app's socket and files are. The app's core imports ``vocabulary`` and ``wire`` from here
too: the words are the client's, the app depends on them, never the other way round.

The two clients load when first named, so ``import desktop_approver.client.vocabulary`` (the
app's core does) costs no socket or asyncio import.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's own flag would import typing, which a hook (once per tool call) does not need
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Client", "AsyncClient"]

if TYPE_CHECKING:
    from .async_client import AsyncClient
    from .sync_client import Client

_HOME = {"Client": ".sync_client", "AsyncClient": ".async_client"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
