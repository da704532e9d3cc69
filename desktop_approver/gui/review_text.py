"""Short, safe texts about a call for labels, menus and notifications (Qt-free).

Every short label goes through :func:`visible`, so a bidi override or a zero-width character in
an agent's name or a command cannot reorder or hide what the person reads.
"""

from __future__ import annotations

from typing import Any

from ..core.calls.reading import summary_of
from ..render.reveal import reveal


def visible(text: str, multiline: bool = False) -> str:
    """``text`` with control, bidi, zero-width and look-alike characters shown as markers.

    Every short label (agent, session, summaries) goes through this, not only the preview: a bidi
    override in an agent's name or a one-line summary would otherwise reorder what the person reads.
    """
    return reveal(text, multiline=multiline).text


def summarise_args(args: dict[str, Any], limit: int = 90) -> str:
    """One line for a call, as the reading module sees it (its command, path, URL...)."""
    text = visible(summary_of(args))
    return text if len(text) <= limit else text[: limit - 1] + "…"
