"""What an automatic answer needs: a call the reader fully understood, read as safe or moderate.

Approve-all mode, a session approval of a whole tool and ``allow`` rules answer without the
person, so each needs proof rather than the absence of a finding: the reading of the call says
``understood`` (every program, option, ``NAME=value`` prefix, path, tool and argument was known to
the catalog) and its level is ``safe`` or ``moderate``. Two narrow exceptions are the person's own
words: an exact-call session approval answers the very call the person saw (never a destructive
one), and an ``allow`` rule answers a call of a tool the catalog does not know when it names that
tool exactly. An ``allow`` rule whose ``risk`` names ``destructive`` is the person's explicit
acceptance of the worst case, so it needs neither.

The broker (:mod:`..decisions.broker`) and the rules (:mod:`.match`) both decide with these
functions, so the reason the person reads is the same one line wherever the answer was withheld.
Standard library only: the broker imports this module without loading the rules file's model.
"""

from __future__ import annotations

from collections.abc import Sequence

MILD_LEVELS = ("safe", "moderate")
"""The levels an automatic answer may cover (a destructive call is always the person's)."""


def unknown_tool_gap(tool: str) -> str:
    """The reader's phrase for a tool the catalog does not know ("tool `acme_sync`")."""
    return f"tool `{tool}`"


def not_understood(gaps: Sequence[str]) -> str:
    """One line naming what was not understood: ``not understood: option `--output` of `git log```."""
    return "not understood: " + ("; ".join(gaps) if gaps else "the reader could not name every part of the call")


def unproven(level: str | None, understood: bool, gaps: Sequence[str]) -> str | None:
    """Why no automatic answer may cover a call read this way, in one line; None when one may."""
    if level is None:
        return "the call's risk was not read"
    if level not in MILD_LEVELS:
        return f"read as {level}"
    if not understood:
        return not_understood(gaps)
    return None


def only_the_tool_is_unknown(tool: str, understood: bool, gaps: Sequence[str]) -> bool:
    """The one thing not understood is the tool itself (the catalog does not know it): a rule that
    names this tool exactly may declare it, for calls read as safe or moderate."""
    return not understood and bool(gaps) and all(gap == unknown_tool_gap(tool) for gap in gaps)
