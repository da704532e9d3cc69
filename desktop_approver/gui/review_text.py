"""Short, safe texts about a call for labels, menus and notifications (Qt-free).

Every short label goes through :func:`visible`, so a bidi override or a zero-width character in
an agent's name or a command cannot reorder or hide what the person reads.
"""

from __future__ import annotations

import json
from typing import Any

from ..render.reveal import reveal


def visible(text: str, multiline: bool = False) -> str:
    """``text`` with control, bidi, zero-width and look-alike characters shown as markers.

    Every short label (agent, session, summaries) goes through this, not only the preview: a bidi
    override in an agent's name or a one-line summary would otherwise reorder what the person reads.
    """
    return reveal(text, multiline=multiline).text


def summarise_args(args: dict[str, Any], limit: int = 90) -> str:
    for key in ("command", "cmd", "path", "file_path", "url", "query"):
        if isinstance(args.get(key), str):
            text = args[key]
            break
    else:
        text = json.dumps(args, ensure_ascii=False)
    text = visible(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
