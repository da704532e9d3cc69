"""Session memory: what the person allowed "for this session", and nothing broader.

An entry belongs to one *agent's* session (the pair of the agent's name and its session id: two
agents that pick the same session id share nothing), one tool, and by default the exact
arguments (canonical JSON); the person may widen it to the whole tool for that session. Only the
same agent sees, uses or ends its sessions over the socket; the tray's window sees them all.
A whole-tool entry answers only a call the reader fully understood and read as safe or moderate,
an exact one only the identical call not read as destructive (the broker passes the ``scopes``
that may answer). Sessions are forgotten when the agent ends them or after an idle time. Memory lives only in the
running app: a restart forgets it, like the agent's own session would.

Tool names are compared exactly as the agent sent them, case included: "allow ``Bash`` for this
session" never answers a call of ``bash``, which goes to the person (fail closed; the policy's
``allow`` rules do the same, its restricting rules match any case: ``core/policy/match.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ...client.vocabulary import SCOPES, Scope
from ...client.wire import canonical_json
from ..store.logsafe import printable

log = logging.getLogger(__name__)
EXACT: Scope = "exact"
WHOLE_TOOL: Scope = "tool"
DEFAULT_IDLE_SECONDS = 8 * 3600.0

SessionKey = tuple[str | None, str]
"""(agent, session): whose session it is. The agent's name is what its connection said in hello."""


@dataclass
class MemoryEntry:
    session: str
    tool: str
    scope: Scope                     # EXACT or WHOLE_TOOL
    args_json: str | None            # canonical args for EXACT; None for WHOLE_TOOL
    agent: str | None = None
    created: float = field(default_factory=time.time)
    hits: int = 0
    risk: str | None = None          # the app's verdict on the call approved, as the dialog showed it

    @property
    def owner(self) -> SessionKey:
        return (self.agent, self.session)

    @property
    def key(self) -> tuple[str | None, str, str, str | None]:
        return (self.agent, self.session, self.tool, self.args_json)

    def describe(self) -> str:
        what = "any arguments" if self.scope == WHOLE_TOOL else (self.args_json or "")
        if len(what) > 80:
            what = what[:77] + "..."
        return f"{self.tool}({what})"

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "tool": self.tool, "scope": self.scope, "args": self.args_json,
                "agent": self.agent, "created": self.created, "hits": self.hits}


class _Everyone:
    """The ``agent`` of the tray's own calls: every agent's entries, not one agent's."""

    def __repr__(self) -> str:
        return "EVERY_AGENT"


EVERY_AGENT: Any = _Everyone()


class SessionMemory:
    """A dict keyed by (agent, session, tool, canonical args); O(1) lookups on the hot path."""

    def __init__(self, idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._entries: dict[tuple[str | None, str, str, str | None], MemoryEntry] = {}
        self._last_seen: dict[SessionKey, float] = {}
        self.listeners: list[Callable[[], None]] = []

    def __repr__(self) -> str:
        return (f"<SessionMemory entries={len(self._entries)} sessions={len(self._last_seen)} "
                f"idle={self.idle_seconds:g}s>")

    def remember(self, session: str, tool: str, args: dict[str, Any], *, scope: Scope = EXACT,
                 agent: str | None = None, risk: str | None = None) -> MemoryEntry:
        """Remember an approval; ``risk`` is the verdict the person saw on the call approved
        (``RiskAssessment.shown``), listed beside it in "Remembered approvals"."""
        if scope not in SCOPES:
            raise ValueError(f"unknown memory scope {scope!r}")
        entry = MemoryEntry(session, tool, scope, canonical_json(args) if scope == EXACT else None, agent,
                            risk=risk)
        self._entries[entry.key] = entry
        self._touch((agent, session))
        log.debug("remembered %s for agent %s, session %s", printable(entry.describe()), printable(agent),
                  printable(session))
        self._changed()
        return entry

    def lookup(self, session: str, tool: str, args: dict[str, Any], *, agent: str | None = None,
               canonical: str | None = None, scopes: Collection[Scope] = SCOPES) -> MemoryEntry | None:
        """The entry of this agent's session that covers this call, if the session is still alive
        (``canonical``: the arguments' :func:`canonical_json`, when the caller has it already).

        ``scopes``: the kinds of entry that may answer it. The broker lets a whole-tool entry answer
        only a fully understood call (:mod:`..policy.automatic`); the exact call is looked up first.
        """
        owner = (agent, session)
        if self._expired(owner):
            self._forget(owner)
            return None
        entry = None
        if EXACT in scopes:
            entry = self._entries.get((agent, session, tool, canonical_json(args) if canonical is None else canonical))
        if entry is None and WHOLE_TOOL in scopes:
            entry = self._entries.get((agent, session, tool, None))
        if entry is not None:
            entry.hits += 1
            self._touch(owner)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("session memory: %s covers the call of agent %s, session %s (hit %d)",
                          printable(entry.describe()), printable(agent), printable(session), entry.hits)
        return entry

    def covering(self, session: str, tool: str, args: dict[str, Any], *, agent: str | None = None,
                 canonical: str | None = None) -> MemoryEntry | None:
        """The entry that would cover the call if it were allowed to, without using it (no hit counted):
        the broker names it when it was withheld from a call it may not answer."""
        if self._expired((agent, session)):
            return None
        whole = self._entries.get((agent, session, tool, None))
        return whole or self._entries.get((agent, session, tool,
                                           canonical_json(args) if canonical is None else canonical))

    def seen(self, session: str, *, agent: str | None = None) -> None:
        """Any request in the session keeps it alive."""
        if (agent, session) in self._last_seen:
            self._touch((agent, session))

    def entries(self, *, agent: str | None = EVERY_AGENT) -> list[MemoryEntry]:
        """What is remembered: of one agent, or (the default, for the tray) of every agent."""
        self.expire_idle()
        return sorted((e for e in self._entries.values() if agent is EVERY_AGENT or e.agent == agent),
                      key=lambda e: (e.session, e.agent or "", e.tool, e.created))

    def sessions(self) -> list[SessionKey]:
        """Every (agent, session) with something remembered; lapsed ones are left out."""
        self.expire_idle()  # `status` must not count sessions that have already lapsed
        return sorted({entry.owner for entry in self._entries.values()}, key=lambda k: (k[1], k[0] or ""))

    def revoke(self, session: str | None = None, tool: str | None = None, *,
               agent: str | None = EVERY_AGENT) -> int:
        """Forget entries of a session and/or tool, of one agent or (the default) any; no filter forgets all."""
        doomed = [key for key, entry in self._entries.items()
                  if (agent is EVERY_AGENT or entry.agent == agent)
                  and (session is None or entry.session == session) and (tool is None or entry.tool == tool)]
        for key in doomed:
            del self._entries[key]
        if doomed:
            log.debug("forgot %d remembered approvals (agent %s, session %s, tool %s)", len(doomed),
                      printable(agent), printable(session), printable(tool))
            self._changed()
        return len(doomed)

    def revoke_entry(self, entry: MemoryEntry) -> bool:
        removed = self._entries.pop(entry.key, None) is not None
        if removed:
            self._changed()
        return removed

    def forget_session(self, session: str, *, agent: str | None = EVERY_AGENT) -> int:
        """The session is over: of one agent (an agent ending its own), or of every agent (the tray)."""
        owners = [key for key in self._last_seen if key[1] == session and (agent is EVERY_AGENT or key[0] == agent)]
        for owner in owners:
            self._last_seen.pop(owner, None)
        return self.revoke(session=session, agent=agent)

    def expire_idle(self) -> int:
        stale = [owner for owner in list(self._last_seen) if self._expired(owner)]
        return sum(self._forget(owner) for owner in stale)

    def _forget(self, owner: SessionKey) -> int:
        return self.forget_session(owner[1], agent=owner[0])

    def _expired(self, owner: SessionKey) -> bool:
        last = self._last_seen.get(owner)
        return last is not None and self._clock() - last > self.idle_seconds

    def _touch(self, owner: SessionKey) -> None:
        self._last_seen[owner] = self._clock()

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener()
