"""The append-only audit log: every request, every decision, every refusal, in SQLite.

WAL mode with ``synchronous=NORMAL``: each record is committed before the agent is answered,
so a crash of the app (even ``kill -9``) loses nothing that was committed. Rows are only ever
inserted; a decision is a row of its own that points at its request. Retention pruning is the
one deletion, and it is the person's setting.

A write that fails (disk full, a locked or damaged file) still raises, so the request fails
closed; it also tells ``health_listeners`` (the tray shows the app as degraded), and the next
write that works tells them the problem is gone.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .tickets import CallInfo, Identity, Verdict

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    request_id TEXT, batch_index INTEGER, session TEXT,
    agent TEXT, pid INTEGER, peer_pid INTEGER, peer_uid INTEGER, cwd TEXT, host TEXT, git_branch TEXT,
    tool TEXT NOT NULL, args TEXT NOT NULL, description TEXT, preview TEXT, hints TEXT,
    risk_level TEXT, risk_reasons TEXT
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,
    request INTEGER NOT NULL REFERENCES requests(id),
    decided REAL NOT NULL,
    decision TEXT NOT NULL, decided_by TEXT NOT NULL,
    note TEXT, rule TEXT, blocked INTEGER NOT NULL DEFAULT 0, updated_args TEXT
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL, kind TEXT NOT NULL, code TEXT, detail TEXT, peer_pid INTEGER, peer_uid INTEGER
);
CREATE INDEX IF NOT EXISTS requests_created ON requests(created);
CREATE INDEX IF NOT EXISTS decisions_request ON decisions(request);
"""


@dataclass(frozen=True)
class HistoryEntry:
    id: int
    created: float
    agent: str | None
    session: str | None
    tool: str
    args: dict[str, Any]
    description: str | None
    preview: dict[str, Any] | None
    risk_level: str | None
    risk_reasons: list[str]
    decision: str | None          # None while pending (or if the app died first)
    decided_by: str | None
    decided: float | None
    note: str | None
    rule: str | None
    cwd: str | None = None
    pid: int | None = None
    peer_pid: int | None = None
    host: str | None = None
    blocked: bool = False
    updated_args: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


HealthListener = Callable[[str | None], None]
"""Called with what went wrong when a write fails, and with None when writing works again."""
Write = TypeVar("Write", bound=Callable[..., Any])


def _watched(write: Write) -> Write:
    """Report a failing write (and the recovery after one) to the log's health listeners."""
    @functools.wraps(write)
    def watched(self: AuditLog, *args: Any, **kwargs: Any) -> Any:
        try:
            result = write(self, *args, **kwargs)
        except sqlite3.Error as exc:
            self._report(f"The audit log cannot be written ({exc}); requests are refused until it can be.")
            raise
        if self.problem is not None:
            self._report(None)
        return result
    return watched  # type: ignore[return-value]


class AuditLog:
    def __init__(self, path: Path | str, *, read_only: bool = False) -> None:
        """Open (and create) the log; ``read_only`` only reads an existing one, beside a running app."""
        self.path = path
        self.read_only = read_only
        self.problem: str | None = None
        self.health_listeners: list[HealthListener] = []
        if read_only:
            if not Path(path).is_file():
                raise FileNotFoundError(f"no audit log at {path}")
            self._db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False)
            return
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def _report(self, problem: str | None) -> None:
        self.problem = problem
        for listener in list(self.health_listeners):
            listener(problem)

    @_watched
    def record_calls(self, identity: Identity, session: str, request_id: str,
                     calls: Iterable[CallInfo]) -> list[int]:
        """One row per call, committed together; returns their ids for the decisions."""
        with self._db:
            self._db.execute("BEGIN")
            return self._insert_calls(identity, session, request_id, calls)

    @_watched
    def record_decisions(self, pairs: Iterable[tuple[int, Verdict]]) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._insert_decisions(pairs)

    @_watched
    def record_answered(self, identity: Identity, session: str, request_id: str,
                        calls: Sequence[CallInfo], verdicts: Sequence[Verdict]) -> list[int]:
        """Calls answered at once (rule, memory, mode) with their verdicts, in one commit: one disk
        write instead of two on the path agents hit most."""
        with self._db:
            self._db.execute("BEGIN")
            ids = self._insert_calls(identity, session, request_id, calls)
            self._insert_decisions(zip(ids, verdicts))
        return ids

    def _insert_calls(self, identity: Identity, session: str, request_id: str,
                      calls: Iterable[CallInfo]) -> list[int]:
        now = time.time()
        ids = []
        for call in calls:
            cursor = self._db.execute(
                "INSERT INTO requests (created, request_id, batch_index, session, agent, pid, peer_pid,"
                " peer_uid, cwd, host, git_branch, tool, args, description, preview, hints, risk_level,"
                " risk_reasons) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (now, request_id, call.index, session, identity.agent, identity.pid, identity.peer_pid,
                 identity.peer_uid, identity.cwd, identity.host, identity.git_branch, call.tool,
                 _dumps(call.args), call.description, _dumps(call.preview), _dumps(call.hints or None),
                 call.risk.level if call.risk else None,
                 _dumps(list(call.risk.reasons)) if call.risk else None))
            ids.append(int(cursor.lastrowid or 0))
        return ids

    def _insert_decisions(self, pairs: Iterable[tuple[int, Verdict]]) -> None:
        now = time.time()
        self._db.executemany(
            "INSERT INTO decisions (request, decided, decision, decided_by, note, rule, blocked, updated_args)"
            " VALUES (?,?,?,?,?,?,?,?)",
            [(audit_id, now, v.decision, v.decided_by, v.note, v.rule, int(v.blocked), _dumps(v.updated_args))
             for audit_id, v in pairs])

    @_watched
    def record_event(self, kind: str, code: str | None = None, detail: str | None = None,
                     peer_pid: int | None = None, peer_uid: int | None = None) -> None:
        """Refusals (bad input, wrong token, flood) and changes of mode: security-relevant facts."""
        self._db.execute("INSERT INTO events (at, kind, code, detail, peer_pid, peer_uid) VALUES (?,?,?,?,?,?)",
                         (time.time(), kind, code, (detail or "")[:2000], peer_pid, peer_uid))

    def events(self, kind: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        sql = "SELECT at, kind, code, detail, peer_pid, peer_uid FROM events"
        params: list[Any] = []
        if kind:
            sql += " WHERE kind = ?"
            params.append(kind)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(limit)
        keys = ("at", "kind", "code", "detail", "peer_pid", "peer_uid")
        return [dict(zip(keys, row)) for row in self._db.execute(sql, params)]

    def history(self, *, agent: str | None = None, tool: str | None = None, decision: str | None = None,
                decided_by: str | None = None, risk: str | None = None, session: str | None = None,
                since: float | None = None, until: float | None = None, text: str | None = None,
                limit: int = 200) -> list[HistoryEntry]:
        """Newest first. ``decision="pending"`` finds calls that never got an answer."""
        where, params = [], []
        for column, value in (("r.agent", agent), ("r.tool", tool), ("d.decided_by", decided_by),
                              ("r.risk_level", risk), ("r.session", session)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if decision == "pending":
            where.append("d.id IS NULL")
        elif decision == "allow":
            where.append("d.decision IN ('allow_once', 'allow_session')")
        elif decision:
            where.append("d.decision = ?")
            params.append(decision)
        if since is not None:
            where.append("r.created >= ?")
            params.append(since)
        if until is not None:
            where.append("r.created <= ?")
            params.append(until)
        if text:
            # Escaped, so "%" and "_" in the search are found as themselves, not as wildcards.
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("(" + " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for column in
                                           ("r.args", "r.tool", "r.description", "r.agent", "d.note")) + ")")
            params += [pattern] * 5
        sql = ("SELECT r.id, r.created, r.agent, r.session, r.tool, r.args, r.description, r.preview,"
               " r.risk_level, r.risk_reasons, d.decision, d.decided_by, d.decided, d.note, d.rule,"
               " r.cwd, r.pid, r.peer_pid, r.host, d.blocked, d.updated_args"
               " FROM requests r LEFT JOIN decisions d ON d.request = r.id")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id DESC LIMIT ?"
        params.append(limit)
        return [self._entry(row) for row in self._db.execute(sql, params)]

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> HistoryEntry:
        (id_, created, agent, session, tool, args, description, preview, risk_level, risk_reasons,
         decision, decided_by, decided, note, rule, cwd, pid, peer_pid, host, blocked, updated) = row
        return HistoryEntry(
            id=id_, created=created, agent=agent, session=session, tool=tool, args=json.loads(args),
            description=description, preview=json.loads(preview) if preview else None,
            risk_level=risk_level, risk_reasons=json.loads(risk_reasons) if risk_reasons else [],
            decision=decision, decided_by=decided_by, decided=decided, note=note, rule=rule, cwd=cwd,
            pid=pid, peer_pid=peer_pid, host=host, blocked=bool(blocked),
            updated_args=json.loads(updated) if updated else None)

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0])

    def prune(self, retain_days: float) -> int:
        """Delete what is older than the retention the person chose; returns rows removed."""
        cutoff = time.time() - retain_days * 86400
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM decisions WHERE request IN (SELECT id FROM requests WHERE created < ?)",
                             (cutoff,))
            removed = self._db.execute("DELETE FROM requests WHERE created < ?", (cutoff,)).rowcount
            self._db.execute("DELETE FROM events WHERE at < ?", (cutoff,))
        return removed
