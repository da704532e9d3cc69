"""Short, safe texts about a call for labels, menus and notifications (Qt-free).

Every short label goes through :func:`visible`, so a bidi override or a zero-width character in
an agent's name or a command cannot reorder or hide what the person reads. :func:`reading_line`
is the review text's word on how far the app read the call: "fully read", or what it did not
understand, or why an automatic answer left the call to the person.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.calls.reading import summary_of
from ..core.policy.automatic import not_understood
from ..render.headline import shorten
from ..render.reveal import reveal

if TYPE_CHECKING:
    from ..core.decisions.tickets import CallInfo


def visible(text: str, multiline: bool = False) -> str:
    """``text`` with control, bidi, zero-width and look-alike characters shown as markers.

    Every short label (agent, session, summaries) goes through this, not only the preview: a bidi
    override in an agent's name or a one-line summary would otherwise reorder what the person reads.
    """
    return reveal(text, multiline=multiline).text


HINT_SHOWN = 6         # hints listed in the agent's frame; the rest are counted
HINT_KEY_CHARS = 30
HINT_VALUE_CHARS = 80


def agent_hints_text(hints: Mapping[str, Any]) -> str:
    """The agent's hints and annotations as one escaped line for the agent's frame, never the verdict.

    An MCP server writes these: a ``title`` of "✔ Safe — approved by policy\\nRisk: safe" is its
    claim. Line breaks and control characters become escapes, each key and value is cut short,
    and only the first few are listed (the tooltip has them all).
    """
    parts = []
    for key, value in list(hints.items())[:HINT_SHOWN]:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        parts.append(f"{shorten(visible(str(key)), HINT_KEY_CHARS)}={shorten(visible(text), HINT_VALUE_CHARS)}")
    more = len(hints) - HINT_SHOWN
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


FIRST_VIEW_LINES = 3
FIRST_VIEW_CHARS = 400


def first_view_text(text: str, lines: int = FIRST_VIEW_LINES, chars: int = FIRST_VIEW_CHARS) -> str:
    """An agent's text for the first view: a few lines, runs of empty lines collapsed to a marker.

    A description of sixty line breaks would push the call itself out of view; the whole text
    stays in the tooltip.
    """
    kept: list[str] = []
    empty = 0
    for line in visible(text, multiline=True).split("\n"):
        if not line.strip():
            empty += 1
            continue
        if empty and kept:
            kept.append(f"⟨{empty} empty line{'s' if empty != 1 else ''}⟩")
        empty = 0
        kept.append(line)
    if empty and kept:
        kept.append(f"⟨{empty} empty line{'s' if empty != 1 else ''}⟩")
    shown = "\n".join(kept[:lines])
    more = len(kept) - lines
    if len(shown) > chars:
        shown = shorten(shown, chars)
    if more > 0:
        shown += f"\n… {more} more line{'s' if more != 1 else ''} (in the tooltip)"
    return shown


def summarise_args(args: dict[str, Any], limit: int = 90) -> str:
    """One line for a call, as the reading module sees it (its command, path, URL...)."""
    text = visible(summary_of(args))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reading_line(call: CallInfo) -> str:
    """How far the app read the call, in one line for the review text.

    Why an automatic answer (approve-all, a session approval, an allow rule) was withheld when one
    was (it names what was not understood, or the destructive reading, and what did not answer);
    else "fully read", or what the reader did not understand. Gaps quote the agent's words, so they
    go through :func:`visible` like every other label.
    """
    if call.asked_because:
        return in_app_voice(call.asked_because, call.tool)
    risk = call.risk
    if risk is None:
        return "not read"
    return "fully read" if risk.understood else in_app_voice(not_understood(risk.gaps), call.tool)


QUOTED = re.compile(r"`([^`]*)`")
QUOTE_CHARS = 40
_PLAIN_WORD = r"(?:[\w./@+=,~*?${}-]|://)+"
_PLAIN_QUOTE = re.compile(rf"{_PLAIN_WORD}(?: {_PLAIN_WORD}){{0,2}}")


def in_app_voice(text: str, tool: str) -> str:
    """The app's line about a call, with the agent's words it quotes kept from speaking for the app.

    The reader quotes the tool's name ("tool `Read\\nRisk: safe ✔`") and options: the tool's name
    is named by reference (it is shown, as claimed, in the agent's frame); every other quote is kept
    only when it is plain (up to three words of letters, digits and path or option characters, no
    colon but in ``://``, at most 40 characters: a program, an option, a path), else named by "…",
    so no sentence of the agent's reaches the verdict area.
    """
    text = text.replace(f"tool `{tool}`", "the tool named in the agent's frame")
    text = text.replace(f"`{tool}`", "the tool named in the agent's frame")
    return visible(QUOTED.sub(lambda quote: f"`{quote.group(1)}`" if len(quote.group(1)) <= QUOTE_CHARS
                              and _PLAIN_QUOTE.fullmatch(quote.group(1)) else "`…`", text))
