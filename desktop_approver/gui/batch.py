"""What the approve buttons of a batch say, and may do (Qt-free, so it is tested as a table).

The rule: no button allows a destructive call it does not name. Destructive calls start
unticked; ticking one makes the allow button say so ("Allow 4 once, incl. ⚠ rm -rf build/"),
and a button that leaves calls out says which ("Allow 3 once (not rm -rf build/)"). Destructive
calls are never allowed for the session, so that button is off while one is ticked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.decisions.queue import riskiest_first
from ..core.decisions.tickets import CallInfo
from .review_text import summarise_args

NAME_CHARS = 28      # each call named on a button is cut to this
NAMED_LEFT_OUT = 2   # more left-out calls than this are counted, not named


def is_destructive(call: CallInfo) -> bool:
    return call.risk is not None and call.risk.level == "destructive"


def riskiest(calls: Sequence[CallInfo]) -> CallInfo:
    """The most dangerous call of a batch (the first of them in the agent's order)."""
    return riskiest_first(calls)[0]


def initial_ticks(calls: Sequence[CallInfo]) -> list[bool]:
    """Every call ticked except destructive ones in a batch (a single call is the dialog's subject)."""
    if len(calls) == 1:
        return [True]
    return [not is_destructive(call) for call in calls]


def call_name(call: CallInfo) -> str:
    return summarise_args(call.args, NAME_CHARS).replace("&", "&&")  # a button reads & as a mnemonic


@dataclass(frozen=True)
class Choice:
    """A button's label (with its mnemonic), whether it may be pressed, and why not."""

    label: str
    enabled: bool
    why_not: str = ""
    short: str = ""  # the label for a narrow button: counts instead of names ("Allow 6 &once (not 4)")


def allow_once_choice(calls: Sequence[CallInfo], ticked: Sequence[bool]) -> Choice:
    if len(calls) == 1:
        return Choice("Allow &once", True)
    return _allow_choice(calls, ticked, "&once")


def allow_session_choice(calls: Sequence[CallInfo], ticked: Sequence[bool]) -> Choice:
    chosen = [call for call, on in zip(calls, ticked, strict=True) if on]
    if len(calls) == 1:
        if is_destructive(calls[0]):
            return Choice("Allow for &session", False, "not offered for destructive calls")
        return Choice("Allow for &session", True)
    if any(is_destructive(call) for call in chosen):
        return Choice(f"Allow {len(chosen)} for &session", False,
                      "a ticked call is destructive: destructive calls are allowed once, never for the session")
    return _allow_choice(calls, ticked, "for &session")


def _allow_choice(calls: Sequence[CallInfo], ticked: Sequence[bool], how: str) -> Choice:
    chosen = [call for call, on in zip(calls, ticked, strict=True) if on]
    left_out = [call for call, on in zip(calls, ticked, strict=True) if not on]
    if not chosen:
        return Choice(f"Allow {how} (none ticked)", False, "tick the calls to allow; Deny refuses them all")
    count = f"all {len(chosen)}" if not left_out else str(len(chosen))
    label = f"Allow {count} {how}"
    dangerous = [call for call in chosen if is_destructive(call)]
    if dangerous:  # every destructive call this button allows is named on it
        label += ", incl. " + ", ".join(f"⚠ {call_name(call)}" for call in dangerous)
    short = f"Allow {count} {how}" + (f", incl. ⚠ {len(dangerous)}" if dangerous else "")
    if left_out:
        if len(left_out) <= NAMED_LEFT_OUT:
            label += " (not " + ", ".join(call_name(call) for call in left_out) + ")"
        else:
            label += f" (not the {len(left_out)} unticked)"
        short += f" (not {len(left_out)})"
    return Choice(label, True, short=short)
