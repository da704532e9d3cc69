"""Short, safe texts about a call for labels, menus and notifications (Qt-free).

Every short label goes through :func:`visible`, so a bidi override or a zero-width character in
an agent's name or a command cannot reorder or hide what the person reads. :func:`reading_line`
is the review text's word on how far the app read the call: "fully read", or what it did not
understand, or why an automatic answer left the call to the person.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.calls.reading import summary_of
from ..core.policy.automatic import not_understood
from ..render.reveal import reveal

if TYPE_CHECKING:
    from ..core.decisions.tickets import CallInfo


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


def reading_line(call: CallInfo) -> str:
    """How far the app read the call, in one line for the review text.

    Why an automatic answer (approve-all, a session approval, an allow rule) was withheld when one
    was (it names what was not understood, or the destructive reading, and what did not answer);
    else "fully read", or what the reader did not understand. Gaps quote the agent's words, so they
    go through :func:`visible` like every other label.
    """
    if call.asked_because:
        return in_app_voice(call.asked_because)
    risk = call.risk
    if risk is None:
        return "not read"
    return "fully read" if risk.understood else in_app_voice(not_understood(risk.gaps))


_QUOTED = re.compile(r"`([^`]*)`")
_PLAIN_WORD = r"(?:[\w./@+=,~*?${}-]|://)+"
_PLAIN_TOKEN = re.compile(rf"{_PLAIN_WORD}(?: {_PLAIN_WORD}){{0,2}}")


def in_app_voice(text: str) -> str:
    """A line of the app's own verdict that quotes the agent's words (a gap names the option, tool
    or path it could not read): each quoted part is kept only when it is plain (up to three words of
    letters, digits and path or option characters, no colon but in ``://``, at most 40 characters:
    a program, an option, a path), else named by "…". The verdict area
    is where agent text must never speak: a tool named "Read\\nRisk: safe ✔" is shown, marked as
    claimed, in the agent's frame, not quoted here."""
    return visible(_QUOTED.sub(lambda found: f"`{found.group(1)}`" if len(found.group(1)) <= 40
                               and _PLAIN_TOKEN.fullmatch(found.group(1)) else "`…`", text))
