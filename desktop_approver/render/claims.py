"""One way to show an agent's words on every surface (issue 31): its name, session, tool name.

The app's verdict ("⚠ Destructive", "✔ Safe") is the app's voice; whatever an agent chose is its
claim, and every surface (the dialog, the inbox, the tray menu, the dialog's "Also waiting" links,
notifications, the History and Sessions windows, ``desktop-approver show``) shows it through
:func:`claimed`:

- revealed (:func:`~desktop_approver.render.reveal.reveal`): a bidi override or a zero-width
  character is shown as a marker, never obeyed; a line break is ``\\n``, never a second line;
- stripped of the verdict's look: the marks the app's verdict uses (✔ ▲ ⚠ and their kin) are
  shown as markers (``<U+2714>``), so "✔ Safe" chosen as a name never reads as a verdict;
- cut short, then quoted (“codex”), with the quotation marks inside it made straight, so a name
  cannot close its own quotation and go on in the app's voice;
- optionally marked "(as claimed)" (:func:`as_claimed`), where a line has room to say so.

Qt-free: the notifications and the ``show`` command use it as the windows do.
"""

from __future__ import annotations

from .headline import shorten
from .reveal import reveal

VERDICT_MARKS = frozenset("✔✓☑✅√🗸🗹▲△⚠✖✗✘☒❌⛔🛑🟢🟡🔴🟩🟨🟥")
"""Marks the app's verdicts and badges use (and their look-alikes): never shown as such in an agent's words."""

QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"'})

NAME_CHARS = 32
"""An agent's, session's or tool's name on one line is cut to this (the tooltip has it all)."""


def neutral(text: str) -> str:
    """``text`` revealed, the verdict's marks as markers, its quotation marks straight: one line."""
    shown = reveal(text).text.translate(QUOTES)
    return "".join(f"<U+{ord(char):04X}>" if char in VERDICT_MARKS else char for char in shown)


def claimed(text: str, limit: int = NAME_CHARS) -> str:
    """An agent's word as its claim, quoted: “codex”. Cut to ``limit`` characters inside the quotes."""
    return f"“{shorten(neutral(text), limit)}”"


def as_claimed(text: str, limit: int = NAME_CHARS) -> str:
    """“codex” (as claimed): where a line has room to say whose word it is."""
    return f"{claimed(text, limit)} (as claimed)"
