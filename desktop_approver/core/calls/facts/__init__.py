"""Consequences, not commands: what a call would touch on this machine (issue 32).

The reader (:mod:`..reading`) says which paths a call names; this package looks at them on the
file system of the machine the app runs on (for local agents only: a relayed or forwarded agent's
files are elsewhere), off the event loop and within a time budget. :mod:`.model` is the data,
:mod:`.gather` the looking, :mod:`.gitview` git's view, :mod:`.secrets` the content scan; the
judgement over the facts is :mod:`..risk.consequences`. Nothing here decides anything.
"""

from __future__ import annotations

from .gather import DEFAULT_BUDGET, gather, needs_facts
from .model import Facts, Glob, Loss, Member, Secret

__all__ = ["DEFAULT_BUDGET", "Facts", "Glob", "Loss", "Member", "Secret", "gather", "needs_facts"]
