"""Session memory: what the person allowed "for this session", and nothing broader.

An entry is tied to one agent session and one tool, and by default to the exact arguments
(canonical JSON); the person may widen it to the whole tool for that session. Sessions are
forgotten when the agent ends them or after an idle time. Memory lives only in the running app:
a restart forgets it, like the agent's own session would.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..wire import canonical_json

EXACT = "exact"
WHOLE_TOOL = "tool"
DEFAULT_IDLE_SECONDS = 8 * 3600.0


@dataclass
class MemoryEntry:
    session: str
    tool: str
    scope: str                       # EXACT or WHOLE_TOOL
    args_json: str | None            # canonical args for EXACT; None for WHOLE_TOOL
    agent: str | None = None
    created: float = field(default_factory=time.time)
    hits: int = 0

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.session, self.tool, self.args_json)

    def describe(self) -> str:
        what = "any arguments" if self.scope == WHOLE_TOOL else (self.args_json or "")
        if len(what) > 80:
            what = what[:77] + "..."
        return f"{self.tool}({what})"

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "tool": self.tool, "scope": self.scope, "args": self.args_json,
                "agent": self.agent, "created": self.created, "hits": self.hits}


class SessionMemory:
    """A dict keyed by (session, tool, canonical args); O(1) lookups on the hot path."""

    def __init__(self, idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._entries: dict[tuple[str, str, str | None], MemoryEntry] = {}
        self._last_seen: dict[str, float] = {}
        self.listeners: list[Callable[[], None]] = []

    def remember(self, session: str, tool: str, args: dict[str, Any], *, scope: str = EXACT,
                 agent: str | None = None) -> MemoryEntry:
        if scope not in (EXACT, WHOLE_TOOL):
            raise ValueError(f"unknown memory scope {scope!r}")
        entry = MemoryEntry(session, tool, scope, canonical_json(args) if scope == EXACT else None, agent)
        self._entries[entry.key] = entry
        self._touch(session)
        self._changed()
        return entry

    def lookup(self, session: str, tool: str, args: dict[str, Any]) -> MemoryEntry | None:
        """The entry that covers this call, if the session is still alive."""
        if self._expired(session):
            self.forget_session(session)
            return None
        entry = self._entries.get((session, tool, None))
        if entry is None:
            entry = self._entries.get((session, tool, canonical_json(args)))
        if entry is not None:
            entry.hits += 1
            self._touch(session)
        return entry

    def seen(self, session: str) -> None:
        """Any request in the session keeps it alive."""
        if session in self._last_seen:
            self._touch(session)

    def entries(self) -> list[MemoryEntry]:
        self.expire_idle()
        return sorted(self._entries.values(), key=lambda e: (e.session, e.tool, e.created))

    def sessions(self) -> list[str]:
        self.expire_idle()  # `status` must not count sessions that have already lapsed
        return sorted({entry.session for entry in self._entries.values()})

    def revoke(self, session: str | None = None, tool: str | None = None) -> int:
        """Forget entries of a session and/or tool; both None forgets everything."""
        doomed = [key for key, entry in self._entries.items()
                  if (session is None or entry.session == session) and (tool is None or entry.tool == tool)]
        for key in doomed:
            del self._entries[key]
        if doomed:
            self._changed()
        return len(doomed)

    def revoke_entry(self, entry: MemoryEntry) -> bool:
        removed = self._entries.pop(entry.key, None) is not None
        if removed:
            self._changed()
        return removed

    def forget_session(self, session: str) -> int:
        self._last_seen.pop(session, None)
        return self.revoke(session=session)

    def expire_idle(self) -> int:
        stale = [s for s in list(self._last_seen) if self._expired(s)]
        return sum(self.forget_session(session) for session in stale)

    def _expired(self, session: str) -> bool:
        last = self._last_seen.get(session)
        return last is not None and self._clock() - last > self.idle_seconds

    def _touch(self, session: str) -> None:
        self._last_seen[session] = self._clock()

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener()
