"""The append-only audit log: every request, every decision, every refusal, in SQLite.

WAL mode with ``synchronous=NORMAL``: each record is committed before the agent is answered,
so a crash of the app (even ``kill -9``) loses nothing that was committed. Rows are only ever
inserted; a decision is a row of its own that points at its request. Retention pruning is the
one deletion, and it is the person's setting.

Calls answered at once (a rule, the mode, session memory) are the app's busiest writes: those
answered in one turn of the event loop share one commit (:class:`GroupCommit`,
:meth:`AuditLog.record_answered_in_turn`), made when the turn ends, and each agent hears its answer
only after that commit. Under load that is one disk write for dozens of answers; a lone agent
waits for no other turn than its own.

A commit only appends to the write-ahead log; copying the log back into the database file (a
*checkpoint*, with the disk syncs ``synchronous=NORMAL`` makes) is done by a thread of its own
with its own connection (:class:`_Checkpointer`), every ``CHECKPOINT_AFTER`` writes, so no
answer ever waits for a sync. SQLite's own automatic checkpoint, which would run inside whichever
commit crossed the threshold, is switched off for the app's connection.

A write that fails (disk full, a locked or damaged file) still raises, so the request fails
closed; it also tells ``health_listeners`` (the tray shows the app as degraded), and the next
write that works tells them the problem is gone. A lock held by another process is waited for
``BUSY_TIMEOUT`` at most: the app's writes run on its event loop, and a frozen loop is a frozen app.

The log knows it is the record (:class:`_FileWatch`): before each transaction, and once a second
from the app (:meth:`AuditLog.watch`), it checks that the file it writes is still the database at
its path (same device and inode, still linked, still a SQLite header). When it is not (deleted,
replaced, overwritten in place) every write fails at once with :class:`LogFileLost` until the path
is healthy again: missing (a fresh log is started there) or a database (it is opened). The same
:meth:`AuditLog.recover` reopens the connection after any other failure (a read-only file made
writable again). Requests still waiting for the person when the file changed are written into the
new file, so their decisions have a row to point at; a decision that could not be written is kept
and written with the next write that works (never a row left "pending" while the app runs).

The ``-wal`` holds every committed row not yet checkpointed, so it is watched too (its device and
inode, before each transaction; the ``-shm`` once a second): one deleted or replaced fails every
write at once, and the recovery first checkpoints, through the connection that still holds the
lost ``-wal`` open, what it has into the database file, then reopens (no answered call lost).

The log knows its content too (``check_content``, :mod:`.integrity`): a thread looks at the pages
every few seconds (SQLite's quick check, and a read-back of the rows written last), and a write that
SQLite finds damaged (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``) counts the same. Damaged, the log fails
every write at once and tells the person; the next :meth:`AuditLog.recover` moves it aside (as at
start), reads what it can out of it into ``<file>.recovered``, and starts a new log where the calls
still waiting are written again (``moved_listeners`` say where everything went).

At start, a file that is not a database (or whose header SQLite refuses) is moved aside, kept
under a ``.broken-<time>`` name, and a fresh log is started (``moved_aside`` says where it went).
Never for a permission problem (EACCES, EPERM: refused with that reason until permissions return),
and never for a database that is not the app's (``APPLICATION_ID``, set on create): that one is
neither moved nor written into; requests are refused until it is gone. A directory deleted with the
log is made again (0700). Calls an earlier run left waiting are closed at start as denied
(:meth:`AuditLog.close_abandoned`); pruning refuses a clock that looks wrong (:meth:`AuditLog.prune`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import logging
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..calls.risk.findings import NOT_UNDERSTOOD
from . import integrity

if TYPE_CHECKING:
    from ..calls.risk.findings import RiskAssessment
    from ..decisions.tickets import CallInfo, Identity, Verdict

log = logging.getLogger(__name__)

PAGE_SIZE = 1024
"""Bytes per database page. A commit of an answered call changes four pages (two tables, two
indexes), each written whole to the write-ahead log: at SQLite's default of 4 KiB that is 16 KiB
per call, at 1 KiB a quarter of it, which takes about a third off the commit (BENCHMARKS.md)."""
CHECKPOINT_AFTER = 256
"""Writes between two checkpoints (a call, or any other commit: an event, decisions, a prune): an
answered call appends about 4 pages to the log, so this is about SQLite's own default of 1,000
pages (a log of 4 MiB at most, in the usual case)."""
CHECKPOINT_IDLE = 5.0
"""Seconds after which the checkpointer also copies a log that has had fewer commits."""
BUSY_TIMEOUT = 0.1
"""Seconds a write waits for a lock another process holds before it fails (closed): the writes run
on the app's event loop, and SQLite's default of 5 s per write froze the whole app."""
CLOCK_JUMP_DAYS = 1.0
"""Days by which the wall clock may move against the boot clock while the log is open before a
prune is refused (the wall clock was set: what it calls old cannot be trusted)."""
CLOCKS_DISAGREE = 1.0
"""Seconds by which the wall clock and the monotonic clock may disagree about a request's wait
before its decision row also records the monotonic wait (``monotonic_seconds``)."""
APPLICATION_ID = 0x64417070
"""``PRAGMA application_id`` of the app's audit log ("dApp"), set when the log is made: a database
at the path without it (and not an older log of the app's) is someone else's, never written into."""
OUR_COLUMNS = {"requests": {"id", "created", "tool", "args"}, "decisions": {"id", "request", "decided", "decision",
                                                                          "decided_by"},
               "events": {"id", "at", "kind"}}
"""The tables of an older log of the app's (made before ``APPLICATION_ID``: it is adopted and marked),
and the columns each has at least. A database with other tables, or fewer, is not the app's."""
STOPPED_BEFORE_AN_ANSWER = ("the app stopped before an answer (killed, or closed while the audit log failed): "
                            "the agent got ApproverUnavailable, a deny")
"""The note of a call an earlier run left waiting, closed at the next start (:meth:`AuditLog.close_abandoned`)."""
UNSETTLED = "unsettled"
"""The event code of calls whose answer was being settled with others when the app closed (the relay:
written to the NATS server, maybe stored): no decision is recorded for them until the app reads what
stands (:meth:`AuditLog.unsettled`), and :meth:`AuditLog.close_abandoned` leaves them alone."""
CONSEQUENCES = "consequences"
"""The event kind that keeps a call's facts (issue 32) beside it: ``code`` is the request row."""
SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_FULL = 13
ROOM_TO_RECOVER = 64 * 1024
"""Bytes free on the log's file system before a full disk counts as over: a small write can succeed
in space the write-ahead log already has while the disk is still full (the degraded state flickered)."""
_BROKEN_CODES = (11, 26)
"""SQLITE_CORRUPT and SQLITE_NOTADB (primary codes): the file is not a usable database."""

INSERT_REQUEST = (
    "INSERT INTO requests (created, request_id, batch_index, session, agent, pid, peer_pid, peer_uid, cwd, host,"
    " git_branch, tool, args, description, preview, hints, risk_level, risk_reasons, risk_understood, risk_gaps)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
INSERT_REQUEST_AT = INSERT_REQUEST.replace("(created,", "(id, created,").replace("VALUES (?,", "VALUES (?,?,")
"""A request row written again, under a given id, into a log that replaced the one it was in."""
INSERT_DECISION = ("INSERT INTO decisions (request, decided, decision, decided_by, note, rule, blocked, updated_args,"
                   " monotonic_seconds) VALUES (?,?,?,?,?,?,?,?,?)")
UNDELIVERED = ("UPDATE decisions SET decision = 'deny', decided_by = 'cancelled', note = ?, blocked = 0,"
               " updated_args = NULL WHERE id = ?")
"""An answer of this turn's group, not yet committed, whose agent went away before the commit: the
row says what the agent got (nothing: the call was not allowed), never the answer it did not get."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY,
    created REAL NOT NULL,
    request_id TEXT, batch_index INTEGER, session TEXT,
    agent TEXT, pid INTEGER, peer_pid INTEGER, peer_uid INTEGER, cwd TEXT, host TEXT, git_branch TEXT,
    tool TEXT NOT NULL, args TEXT NOT NULL, description TEXT, preview TEXT, hints TEXT,
    risk_level TEXT, risk_reasons TEXT, risk_understood INTEGER, risk_gaps TEXT
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY,
    request INTEGER NOT NULL REFERENCES requests(id),
    decided REAL NOT NULL,
    decision TEXT NOT NULL, decided_by TEXT NOT NULL,
    note TEXT, rule TEXT, blocked INTEGER NOT NULL DEFAULT 0, updated_args TEXT,
    monotonic_seconds REAL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL, kind TEXT NOT NULL, code TEXT, detail TEXT, peer_pid INTEGER, peer_uid INTEGER
);
CREATE INDEX IF NOT EXISTS requests_created ON requests(created);
CREATE INDEX IF NOT EXISTS decisions_request ON decisions(request);
"""
ADDED_COLUMNS = (("decisions", "monotonic_seconds", "REAL"), ("requests", "risk_understood", "INTEGER"),
                 ("requests", "risk_gaps", "TEXT"))
"""Columns newer than some logs (added when such a log is opened for writing; read as NULL before).
``risk_understood`` and ``risk_gaps`` (issue 31) say whether the reader understood the call and what
it did not: the history shows "not understood" where the dialog did; NULL is a row of an older log."""


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
    risk_understood: bool | None = None  # None: not recorded (a row of an older log)
    risk_gaps: list[str] = field(default_factory=list)

    @property
    def shown_level(self) -> str | None:
        """What the dialog's badge said (``RiskAssessment.shown``): the level, or ``"not understood"``
        for a call the reader did not understand and did not know to be destructive. A row of an
        older log, which did not record it, shows the level it recorded."""
        if self.risk_understood is False and self.risk_level != "destructive":
            return NOT_UNDERSTOOD
        return self.risk_level

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_encode = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
"""How a value is stored: key-sorted, readable (and searched) as it was always written."""


def _dumps(value: Any) -> str | None:
    return None if value is None else _encode(value)


@functools.lru_cache(maxsize=1024)
def _reasons_json(reasons: tuple[str, ...]) -> str:
    """A risk assessment's reasons as stored: the same few lists come again and again."""
    return _encode(list(reasons))


@functools.lru_cache(maxsize=1024)
def _args_json(canonical: str) -> str:
    """A call's arguments as stored, from their canonical JSON: agents repeat calls (that is what
    session memory answers), and reading the short canonical form back costs less than encoding."""
    return _encode(json.loads(canonical))


def _stored_args(call: CallInfo) -> str:
    return _encode(call.args) if call.canonical_args is None else _args_json(call.canonical_args)


def _stored_reasons(reasons: tuple[str, ...], asked_because: str | None) -> str:
    """The reasons as the history shows them: the risk's, then why an automatic answer was withheld."""
    return _reasons_json(tuple(reasons) + ((asked_because,) if asked_because else ()))


class _Checkpointer:
    """Copies the write-ahead log back into the database file, in a thread of its own.

    Started once ``CHECKPOINT_AFTER`` writes have been committed (a log that never gets that far
    never starts a thread), woken each time as many more are, and every ``CHECKPOINT_IDLE``
    seconds when anything was committed since the last one. It runs SQLite's *passive* checkpoint
    on a connection of its own: it never blocks the app's writes, and a checkpoint that cannot copy
    everything (a reader still uses an old page) copies the rest next time. Its failures are
    logged and change nothing else: until the log is copied, the rows are safe in it.
    """

    def __init__(self, path: str, intact: Callable[[], bool] = lambda: True) -> None:
        self.path = path
        self.intact = intact
        """Whether the log's ``-wal``/``-shm`` are still the app's: never checkpoint through others."""
        self.written = 0                # writes since the last checkpoint began (counted by the writer)
        self.checkpoints = 0            # done, for tests
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def committed(self, writes: int) -> None:
        self.written += writes
        if self.written >= CHECKPOINT_AFTER and not self._stopping and not self._wake.is_set():
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="audit-checkpoint", daemon=True)
                self._thread.start()
            self._wake.set()

    def stop(self, wait: bool = True) -> None:
        self._stopping = True
        self._wake.set()
        if wait and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        if not self.intact():  # the app's watch tells the person and recovers; a new -wal would hide it
            log.warning("the audit log's checkpointer does not start: its write-ahead log is not the app's")
            return
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            log.exception("the audit log's checkpointer cannot open %s; SQLite checkpoints on close", self.path)
            return
        try:
            while not self._stopping:
                self._wake.wait(CHECKPOINT_IDLE)
                self._wake.clear()
                if self._stopping or not self.written or not self.intact():
                    continue
                self.written = 0
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    log.warning("checkpointing the audit log failed; it is tried again later", exc_info=True)
                else:
                    self.checkpoints += 1
        finally:
            db.close()


def _at_turn_end(loop: Any, callback: Callable[[], object]) -> None:
    """Run ``callback`` once the loop's current turn is over: at its end where the loop offers
    ``call_at_turn_end`` (the app's, ``gui/event_loop.py``), else first thing in the next turn
    (asyncio's own loop runs it after one look at the sockets, before any callback that look adds)."""
    at_end = getattr(loop, "call_at_turn_end", None)
    if at_end is not None:
        at_end(callback)
    else:
        loop.call_soon(callback)


CommitWaiter = Callable[[BaseException | None], None]
"""Told None once a group's rows are committed, or what made the commit fail (then none are kept)."""
AgentGone = Callable[[], "str | None"]
"""Why the agent waiting for an answer can no longer receive it (its connection is closed), or None."""


class Delivery:
    """An answer of a :class:`GroupCommit` on its way to one agent: checked just before the commit
    (:func:`AgentGone`), so an agent gone by then is recorded as gone, never as given its answer."""

    __slots__ = ("gone", "rows", "verdicts", "why")

    def __init__(self, gone: AgentGone) -> None:
        self.gone = gone
        self.rows: list[int] = []
        self.verdicts: Sequence[Verdict] = ()
        self.why: str | None = None
        """Set before the commit when the agent was gone: the answer is not sent, its rows say so."""


def undelivered_note(verdict: Verdict, why: str) -> str:
    """The note of a call whose answer never reached its agent: what the answer would have been, and why not."""
    return f"agent gone ({why}): the answer {verdict.decision} by {verdict.decided_by} was never delivered"


UNDELIVERED_PER_EVENT = 100
"""Decision ids one ``undelivered`` event names (its detail is JSON of at most 2,000 characters)."""


class GroupCommit:
    """One commit shared by the calls answered in one turn of the event loop.

    Their rows go into one open transaction as they are answered; it commits when the turn ends, or
    sooner when another write needs the log (that write commits the group with its own rows). Who
    must not answer before the rows are durable (the connection holding an agent's answer) waits
    with :meth:`when_done`. A failure in the group (a full disk) fails every call in it: none of
    their rows are kept and each waiter hears the exception.
    """

    __slots__ = ("calls", "decided", "deliveries", "done", "error", "_waiters")

    def __init__(self) -> None:
        self.calls = 0
        self.done = False
        self.error: BaseException | None = None
        self._waiters: list[CommitWaiter] = []
        self.deliveries: list[Delivery] = []
        """The answers whose agents are checked for just before the commit."""
        self.decided: list[tuple[int, Verdict, float]] = []
        """Decisions of calls that waited (:meth:`AuditLog.record_decisions_in_turn`): owed if the group fails."""

    def __repr__(self) -> str:
        state = "open" if not self.done else "failed" if self.error is not None else "committed"
        return f"<GroupCommit {state} calls={self.calls} waiting={len(self._waiters)}>"

    def when_done(self, waiter: CommitWaiter) -> None:
        """Call ``waiter`` with the outcome: when the group ends, or now if it has ended."""
        if self.done:
            waiter(self.error)
        else:
            self._waiters.append(waiter)

    def _finish(self, error: BaseException | None) -> None:
        self.done, self.error = True, error
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            try:
                waiter(error)
            except Exception:  # one waiter's failure must not keep the others from their answers
                log.exception("a waiter on the audit log's commit failed")


HealthListener = Callable[[str | None], None]
"""Called with what went wrong when a write fails, and with None when writing works again."""
Write = TypeVar("Write", bound=Callable[..., Any])


class NotTheLog(sqlite3.DatabaseError):
    """The file at the path is a database, but not the app's audit log: it is neither moved aside
    nor written into (someone else's data), and every write is refused while it is there."""


def _not_ours(db: sqlite3.Connection) -> str | None:
    """Why the database ``db`` is not the app's audit log; None when it is (or is empty: a new one).
    Only reads: nothing is written into a database before it is known to be ours."""
    application_id = db.execute("PRAGMA application_id").fetchone()[0]
    if application_id == APPLICATION_ID:
        return None
    if application_id:
        return f"it is another program's database (application_id {application_id:#x})"
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                             " AND name NOT LIKE 'sqlite_%'")}
    if not tables:
        return None  # empty: a fresh log is made in it
    foreign, missing_tables = sorted(tables - set(OUR_COLUMNS)), sorted(set(OUR_COLUMNS) - tables)
    if foreign or missing_tables:  # an older log of the app's has all three tables, and only those
        return (f"it is a database of another shape (tables {', '.join(sorted(tables))}, not requests, decisions "
                "and events)")
    for table in sorted(tables):
        missing = OUR_COLUMNS[table] - {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if missing:
            return f"it is a database of another shape (its table {table} has no {', '.join(sorted(missing))})"
    return None  # an older log of the app's (made before APPLICATION_ID)


class PruneRefused(Exception):
    """Pruning would delete what it must not (the clock looks wrong): nothing was deleted; says why."""


def _boot_clock() -> float:
    """Seconds since boot, suspend included (the monotonic clock stops while the machine sleeps)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


class LogFileLost(sqlite3.DatabaseError):
    """The file the log writes is no longer the database at its path: deleted, replaced or
    overwritten. Every write fails with it until :meth:`AuditLog.recover` finds the path healthy."""


def _cannot_write(exc: BaseException) -> str:
    if isinstance(exc, LogFileLost):
        return str(exc)
    return f"The audit log cannot be written ({exc}); requests are refused until it can be."


def _why(exc: BaseException) -> str:
    """An exception in the person's words: a permission problem says so first (not a broken file)."""
    if isinstance(exc, PermissionError) or (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM)):
        return f"permission denied: {exc.filename or exc}" if isinstance(exc, OSError) else str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror.lower()}: {exc.filename}" if exc.filename else exc.strerror.lower()
    return str(exc)


def _is_broken_database(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _BROKEN_CODES


def _watched(write: Write) -> Write:
    """Report a failing write (and the recovery after one) to the log's health listeners."""
    @functools.wraps(write)
    def watched(self: AuditLog, *args: Any, **kwargs: Any) -> Any:
        try:
            result = write(self, *args, **kwargs)
        except sqlite3.Error as exc:
            self._failed(exc)
            raise
        if self.problem is not None and self.lost is None and self._room_again():
            self._report(None)
        return result
    return watched  # type: ignore[return-value]


def _is_full(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == SQLITE_FULL


class _FileWatch:
    """The log's own file as it was opened: device and inode, and a descriptor to read its header.

    Reading the 16-byte header through our own descriptor never blocks (a regular file, opened
    ``O_NONBLOCK``) and costs one ``stat`` and one ``pread`` per transaction (about 5 % of a commit).
    The descriptor is only closed after SQLite's connection: closing a descriptor of a file drops
    every POSIX lock the process holds on it.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        info = os.fstat(self.fd)
        self.identity = (info.st_dev, info.st_ino)
        self.companions = tuple((path + suffix, _identity(path + suffix)) for suffix in ("-wal", "-shm"))
        """The write-ahead log and its index as the connection opened them: the answered calls not yet
        checkpointed live only in the ``-wal`` the connection holds open, so one deleted or replaced
        at the path is a lost log too (a later checkpoint or restart would not find them)."""
        self.wal_lost = False
        """The last :meth:`problem` was about the ``-wal`` or ``-shm`` (the database file is still ours)."""
        self.had_header = bool(os.pread(self.fd, len(SQLITE_HEADER), 0))
        """The file has held a database header: a log in WAL mode is never emptied, so one that is now
        was cut short by someone (``: > file``, a copy-and-truncate log rotation)."""
        self.shm_size = 0
        """The largest size the ``-shm`` was seen at. SQLite maps it (its index of the ``-wal``) into the
        memory of every connection of the process; touching a page that another program cut off the
        file kills the process (SIGBUS), which Python cannot catch. SQLite never shortens it while the
        log is open, so a shorter one was cut short: :meth:`keep_shm_whole` gives it its length back."""
        self.shm_restored = 0
        """Times the ``-shm`` was found cut short and given its length back, not yet told (:meth:`AuditLog.watch`)."""
        self._shm_lock = threading.Lock()   # the checkpointer's and the content check's threads look too
        self.keep_shm_whole()
        self.wal_size = 0
        """The largest size the ``-wal`` was seen at (when the log was opened, after each commit and at
        each check): SQLite never shortens it while the log is open (it starts again from its
        beginning), so a shorter one was cut short by someone, and what it held of the answered calls
        is gone; a checkpoint of it would copy the hole into the database."""
        self.note_wal_size()

    def keep_shm_whole(self) -> bool:
        """Before each use of the log (a transaction, a checkpoint, a look at its content, once a
        second): a ``-shm`` shorter than it was is extended to its length again, with zeros, so no
        page SQLite has mapped lies past its end. SQLite reads a zeroed index as one to rebuild, and
        rebuilds it from the ``-wal``: nothing is lost. True when it was cut short (and restored).

        The window left is between this look and SQLite's next touch of the pages (microseconds, on
        the thread that looks); ``docs/reliability.md`` says never to truncate the log's files."""
        shm, identity = self.companions[1]
        if identity is None:
            return False
        with self._shm_lock:
            try:
                info = os.stat(shm)
            except OSError:
                return False  # gone: problem() tells that one
            if (info.st_dev, info.st_ino) != identity:
                return False  # another file: problem() tells that one
            if info.st_size >= self.shm_size:
                self.shm_size = info.st_size
                return False
            try:
                os.truncate(shm, self.shm_size)
            except OSError as exc:
                log.error("the audit log's -shm file was cut short and cannot be given its length back: %s", exc)
                return False
            self.shm_restored += 1
            return True

    def note_wal_size(self) -> None:
        """After a commit: the ``-wal`` holds it, so it may not be shorter than it is now."""
        wal, identity = self.companions[0]
        try:
            info = os.stat(wal)
        except OSError:
            return  # gone: the next check says so
        if (info.st_dev, info.st_ino) == identity and info.st_size > self.wal_size:
            self.wal_size = info.st_size

    def problem(self, everything: bool = False) -> str | None:
        """What is wrong with the file at the path, as the log sees it; None when it is the log.
        ``everything``: the ``-shm`` too (its loss loses no row: looked at once a second, not per write)."""
        self.wal_lost = False
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            folder = os.path.dirname(self.path) or "."
            return "was deleted" if os.path.isdir(folder) else "was deleted with its directory"
        except OSError as exc:
            return f"cannot be looked at ({_why(exc)})"
        if (info.st_dev, info.st_ino) != self.identity:
            return "was replaced by another file"
        try:  # (a deleted file is no longer at the path: the stat above says so)
            header = os.pread(self.fd, len(SQLITE_HEADER), 0)
        except OSError as exc:
            return f"cannot be read ({exc.strerror or exc})"
        if header and header != SQLITE_HEADER:
            return "was overwritten: it is no longer a database"
        if not header and self.had_header:
            return "was emptied: it is no longer a database"
        self.had_header = bool(header)
        if not everything:  # before each transaction the -wal only (it holds the rows), written out
            wal, identity = self.companions[0]
            try:
                wal_info = os.stat(wal)
            except OSError:
                if identity is None:
                    return None
            else:
                if (wal_info.st_dev, wal_info.st_ino) == identity and not self._cut_short(wal_info):
                    return None
        for companion, identity in self.companions:  # what is wrong, in words; once a second the -shm too
            if identity is None:
                continue
            try:
                info = os.stat(companion)
            except FileNotFoundError:
                self.wal_lost = True
                return f"lost its {companion[-4:]} file (it was deleted)"
            except OSError as exc:
                self.wal_lost = True
                return f"cannot look at its {companion[-4:]} file ({exc.strerror or exc})"
            if (info.st_dev, info.st_ino) != identity:
                self.wal_lost = True
                return f"lost its {companion[-4:]} file (it was replaced by another file)"
            if companion.endswith("-wal") and self._cut_short(info):
                self.wal_lost = True
                return "lost what its -wal file held (it was cut short)"
        return None

    def _cut_short(self, wal: os.stat_result) -> bool:
        """The ``-wal`` is shorter than it was (see ``wal_size``); else its size is noted."""
        if wal.st_size < self.wal_size:
            return True
        self.wal_size = wal.st_size
        return False

    def companions_intact(self) -> bool:
        """The ``-wal`` and ``-shm`` at the path are still the ones the connection opened (for the
        checkpointer's thread: a connection opened now would make a new, empty ``-wal``)."""
        return all(identity is None or _identity(companion) == identity for companion, identity in self.companions)

    def fit_to_checkpoint(self) -> bool:
        """For the checkpointer's thread, before each checkpoint: the ``-shm`` whole again if it was
        cut short (:meth:`keep_shm_whole`), and the companions still the connection's."""
        self.keep_shm_whole()
        return self.companions_intact()

    def foreign_companions(self) -> list[str]:
        """The ``-wal``/``-shm`` now at the path that are not the ones the connection opened."""
        return [companion for companion, identity in self.companions
                if identity is not None and _identity(companion) not in (None, identity)]

    def close(self) -> None:
        """Once: a descriptor number closed twice may by then be another file's."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _moved_to(fd: int) -> str:
    """Where the file open as ``fd`` is now (the kernel knows: ``/proc/self/fd``), in words."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "another name"


def _identity(path: str) -> tuple[int, int] | None:
    """Device and inode of the file at ``path``; None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _healthy_path(path: str) -> bool:
    """The path can take the log: nothing there (a fresh log starts), or a regular file that
    begins as a SQLite database. Opened without blocking: a FIFO put there must not hang the app.
    Raises ``PermissionError`` (EACCES, EPERM): whether the file is healthy cannot be known."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except PermissionError:  # a permission problem is not a broken file: never moved aside for it
        raise
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return False
        return info.st_size == 0 or os.pread(fd, len(SQLITE_HEADER), 0) == SQLITE_HEADER
    except OSError:
        return False
    finally:
        os.close(fd)


@dataclass
class _Asked:
    """A call waiting for the person: what its row says (to write it again into a log that replaced
    the one it was in), and when it was asked by both clocks (for the decision's wait)."""

    identity: Identity
    session: str
    request_id: str
    call: CallInfo
    wall: float
    monotonic: float


def move_aside(path: Path) -> Path:
    """Move a log SQLite cannot open (and its ``-wal`` and ``-shm``) out of the way; kept, never deleted."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.broken-{stamp}")
    number = 1
    while target.exists():
        number += 1
        target = path.with_name(f"{path.name}.broken-{stamp}-{number}")
    os.rename(path, target)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            os.rename(companion, target.with_name(target.name + suffix))
    return target


def _request_values(identity: Identity, session: str, request_id: str, call: CallInfo,
                    created: float) -> tuple[Any, ...]:
    """A request row's values, in ``INSERT_REQUEST``'s order."""
    risk, preview, hints = call.risk, call.preview, call.hints
    return (created, request_id, call.index, session, identity.agent, identity.pid, identity.peer_pid,
            identity.peer_uid, identity.cwd, identity.host, identity.git_branch, call.tool, _encode(call.args),
            call.description, None if preview is None else _encode(preview), _encode(hints) if hints else None,
            risk.level if risk else None, _reasons_json(tuple(risk.reasons)) if risk else None,
            *_understanding(risk))


def _understanding(risk: RiskAssessment | None) -> tuple[int | None, str | None]:
    """A request row's ``risk_understood`` and ``risk_gaps``: whether the reader understood the call,
    and what it did not."""
    if risk is None:
        return None, None
    return int(risk.understood), _encode(list(risk.gaps)) if risk.gaps else None


def _refused_instead(verdict: Verdict, exc: BaseException) -> Verdict:
    """What a call whose decision could not be written really got: the agent was refused, so an
    allow became a deny (the log never says a call was allowed when it was not)."""
    from ..decisions.tickets import Verdict

    if verdict.decision == "deny":
        return verdict
    return Verdict("deny", "cancelled", note=f"the decision ({verdict.decision} by {verdict.decided_by}) could not "
                   f"be written to the audit log ({exc}), so the agent was refused", risk=verdict.risk)


class AuditLog:
    def __init__(self, path: Path | str, *, read_only: bool = False, move_broken_aside: bool = False,
                 refuse_until_open: bool = False, check_content: float | None = None) -> None:
        """Open (and create) the log; ``read_only`` only reads an existing one, beside a running app.

        ``move_broken_aside`` (the app): a file that is not a database is moved aside (see
        :func:`move_aside`, ``moved_aside``) and a fresh log started, instead of raising.
        ``refuse_until_open`` (the app): a log that cannot be opened at all (a read-only file system,
        a directory it cannot write) does not stop the start: every write is refused (``lost``) until
        :meth:`recover` opens it, and meanwhile the log reads as empty.
        ``check_content`` (the app): seconds between looks at the content (:mod:`.integrity`); a
        damaged log is moved aside with what can be read out of it, and a new one started.
        """
        self.path = path
        self.read_only = read_only
        self.problem: str | None = None
        self.lost: str | None = None
        """Why the file at the path is no longer the log (every write fails until it is healthy)."""
        self.moved_aside: Path | None = None
        """Where the log found broken at start was moved to (the person is told)."""
        self.health_listeners: list[HealthListener] = []
        self.moved_listeners: list[Callable[[str], None]] = []
        self.notice_listeners: list[Callable[[str], None]] = []
        """Told what the person should hear although the log works (it was repaired, or reopened)."""
        """Told, in the person's words, where a log found damaged while running was moved and what was saved."""
        self.check_content = check_content
        self._content: integrity.ContentCheck | None = None
        self._damaged: str | None = None           # what the content check or SQLite found wrong with the pages
        self._moved_text: str | None = None        # where the damaged log went: the new log's first event says so
        self._checkpointer: _Checkpointer | None = None
        self._file: _FileWatch | None = None
        self._group: GroupCommit | None = None     # this turn's open transaction of answered calls
        self._asked: dict[int, _Asked] = {}        # row id as handed out -> the call waiting for the person
        self._row: dict[int, int] = {}             # row id as handed out -> its row in the file now (after a switch)
        self._owed: list[tuple[int, Verdict, float]] = []  # decisions not written yet (the write failed)
        self._file_changed = False                 # lost because another file (or none) is at the path now
        self._moved_away = False                   # lost because the file left the path whole (see _lose)
        self._stale_companions = False             # the -wal/-shm at the path are the lost file's
        self._wal_lost = False                     # lost because the -wal/-shm at the path are not ours now
        self._reopen_failure: str | None = None    # why the last reopen failed (told once per reason)
        self._full = False                         # the last failure was a full disk: over only with room again
        self._abandoned_owed = False               # close_abandoned() was asked for and is not done yet
        self._earlier_runs_last = 0                # the newest request row at open: it and older ones are earlier runs
        self._leave_relayed = False                # close_abandoned() leaves relayed calls to the relay
        self.relayed_left: dict[str, tuple[str, list[int], float]] = {}
        """Relayed calls an earlier run left waiting (request id -> agent, rows, created): what stands is
        on the NATS server, so the relay records it on these very rows (read again, they are not
        written twice: :meth:`_insert_calls` takes them up), never a guessed deny."""
        self._opened_wall, self._opened_boot = time.time(), _boot_clock()  # when, by both clocks (for prune)
        if read_only:
            if not Path(path).is_file():
                raise FileNotFoundError(f"no audit log at {path}")
            self._db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                                       isolation_level=None, check_same_thread=False)
            self._cursor = self._db.cursor()  # a write through it fails (read-only), as it must
            return
        try:
            if str(path) != ":memory:":
                Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if move_broken_aside and not _healthy_path(str(path)):
                # Before SQLite touches it: it may remove a -wal beside a file it cannot open.
                raise sqlite3.DatabaseError("the file is not a SQLite database")
            self._open()
            self._earlier_runs_last = int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM requests").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            try:
                if move_broken_aside and (_is_broken_database(exc) or not _healthy_path(str(path))):
                    self.moved_aside = move_aside(Path(path))
                    log.error("the audit log %s could not be opened (%s); it was moved to %s and a fresh log "
                              "started", path, exc, self.moved_aside)
                    self._open()
                elif refuse_until_open:
                    self._start_unopened(exc)
                else:
                    raise
            except (OSError, sqlite3.Error) as second:  # no OSError of the audit path stops the start
                if second is exc or not refuse_until_open:
                    raise
                self._start_unopened(second)
        except OSError as exc:
            if not refuse_until_open:
                raise
            self._start_unopened(exc)

    def close_abandoned(self, *, leave_relayed: bool = False) -> int:
        """Close the calls an earlier run of the app left waiting (killed, or stopped while the log
        failed): their agents got no answer but a dropped connection (ApproverUnavailable: a deny), so
        each gets a decision that says so, a deny, never an allow. Called by the app once it owns the
        socket (no other app is running then); rows of this run are never touched. Returns how many.

        ``leave_relayed`` (the app answers a relay): a relayed call (no uid on this machine) did not
        end with the app, it waits on the NATS server, so it is left open in :attr:`relayed_left`."""
        if self.read_only:
            return 0
        self._leave_relayed = self._leave_relayed or leave_relayed
        self._abandoned_owed = True  # until done: tried again when the log recovers
        if self.lost is not None:
            return 0
        if not self._earlier_runs_last:  # opened only now (it could not be at start): what it held is earlier
            self._earlier_runs_last = int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM requests").fetchone()[0])
        held = {row for entry in self.unsettled() for row in entry["rows"]}
        rows = []
        for row, uid, request_id, agent, created in self._db.execute(
                "SELECT r.id, r.peer_uid, r.request_id, r.agent, r.created FROM requests r LEFT JOIN decisions d"
                " ON d.request = r.id WHERE d.id IS NULL AND r.id <= ? ORDER BY r.id", (self._earlier_runs_last,)):
            if row in self._asked or row in held:
                continue
            if self._leave_relayed and uid is None and request_id:
                left = self.relayed_left.setdefault(str(request_id), (str(agent), [], float(created)))
                if row not in left[1]:
                    left[1].append(row)
                continue
            rows.append(row)
        if rows:
            self._write_abandoned(rows, time.time())
            log.warning("the audit log closed %d calls an earlier run of the app left waiting: %s", len(rows),
                        STOPPED_BEFORE_AN_ANSWER)
        self._abandoned_owed = False
        return len(rows)

    def close_waiting(self, note: str) -> int:
        """Record every call still waiting for the person (or whose decision is not written yet) as
        denied, ``cancelled`` with ``note``: the app is stopping without its loop. How many."""
        rows = list(self._asked)
        if not rows:
            return 0
        from ..decisions.tickets import Verdict

        try:
            self._write_decisions([(row, Verdict("deny", "cancelled", note=note), time.time()) for row in rows])
        except sqlite3.Error as exc:
            log.error("the audit log could not close %d waiting calls: %s", len(rows), exc)
            return 0
        return len(rows)

    @_watched
    def _write_abandoned(self, rows: list[int], now: float) -> None:
        with self._transaction(0):
            self._cursor.executemany(INSERT_DECISION, [(row, now, "deny", "cancelled", STOPPED_BEFORE_AN_ANSWER, None,
                                                        0, None, None) for row in rows])

    def _start_unopened(self, exc: BaseException) -> None:
        """The log cannot be opened now: refuse every write until :meth:`recover` can open it."""
        until = ("the path holds the app's log or nothing (then a fresh log is started)" if isinstance(exc, NotTheLog)
                 else "it can be (a read-only file system made writable again, or permissions given back, are "
                 "noticed within a second)")
        self.lost = f"The audit log {self.path} cannot be opened ({_why(exc)}); requests are refused until {until}."
        log.error("%s", self.lost)
        self.problem = self.lost
        self._stand_in()

    def _stand_in(self) -> None:
        """An empty log in memory while the file cannot be opened: reads (the history window) find
        nothing instead of crashing. Never written: ``lost`` is set, so every write fails first."""
        assert self.lost is not None
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._db.executescript(SCHEMA)
        self._cursor = self._db.cursor()

    def _open(self) -> None:
        """Connect to the file at the path (creating it), and watch it."""
        path = str(self.path)
        if path != ":memory:":  # its directory deleted: made again (the person's only), as a fresh log's
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        try:
            if path != ":memory:" and (why := _not_ours(db)) is not None:
                raise NotTheLog(f"the file there is a database, not the app's audit log: {why}; nothing is "
                                "written into it")
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a new log only: an existing one keeps its own
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            for table, column, kind in ADDED_COLUMNS:  # a log written by an older version
                if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if path != ":memory:" and db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")  # ours: a new log, or an older one
            if path != ":memory:":
                db.execute("PRAGMA wal_autocheckpoint=0")  # _Checkpointer's thread does it
                watch = _FileWatch(path)
        except BaseException:
            db.close()
            raise
        self._db = db
        self._cursor = db.cursor()  # one for the writes: execute() on the connection makes one each time
        if path != ":memory:":
            self._file = watch
            self._checkpointer = _Checkpointer(path, watch.fit_to_checkpoint)
            # A log that is dropped without close() still ends its thread and its descriptor.
            weakref.finalize(self, self._checkpointer.stop, False)
            weakref.finalize(self, watch.close)
            if self.check_content is not None:
                self._content = integrity.ContentCheck(path, self.check_content, watch.keep_shm_whole)
                self._content.start()
                weakref.finalize(self, self._content.stop, False)

    def _close_connection(self) -> None:
        """Close every connection to the file, the checkpointer's too (waited for): the last one to
        close copies the write-ahead log into the file it belongs to and removes it by name, so a
        file now at the path never reads another file's log."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        if self._content is not None:
            self._content.stop()
            self._content = None
        # The cursor first: a statement left open (a write that failed) keeps SQLite's connection
        # alive after close(), and with it the read-only state of the file (a read-only start).
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._cursor.close()
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        if self._file is not None:  # after SQLite's: closing a descriptor drops the process's locks on the file
            self._file.close()
            self._file = None

    # -- the log watches its own file ----------------------------------------------------------

    def watch(self) -> None:
        """Called about once a second by the app: notice a lost file without waiting for a write,
        and while a problem lasts, try to recover from it."""
        if self.read_only:
            return
        if self._file is not None:
            self._file.keep_shm_whole()
            self._tell_shm_restored()
        if self.problem is None and self.lost is None:
            if self._file is not None and (problem := self._file.problem(everything=True)) is not None:
                self._lose(problem)
                self._report(self.lost)
                return
            if self._content is not None and (damage := self._content.damage) is not None:
                self._lose_content(damage)
            return
        self.recover()

    def _tell_shm_restored(self) -> None:
        """The ``-shm`` was cut short (by another program) and given its length back: the person and
        the log hear it once per time it happened."""
        assert self._file is not None
        times, self._file.shm_restored = self._file.shm_restored, 0
        if not times:
            return
        how_often = "" if times == 1 else f" ({times} times)"
        text = (f"The audit log's {self.path}-shm file was cut short by another program{how_often}; the app "
                "gave it its length back and SQLite rebuilt it from the -wal: nothing was lost. A program "
                "that truncates the log's files (log rotation) would have crashed the app: exclude them from it.")
        log.warning("%s", text)
        with contextlib.suppress(sqlite3.Error):
            self.record_event("audit", "shm-restored", text)
        for listener in list(self.notice_listeners):
            try:
                listener(text)
            except Exception:
                log.exception("audit notice listener failed")

    def _failed(self, exc: sqlite3.Error) -> None:
        """A write failed: the person is told; SQLite finding the pages damaged means the log is lost."""
        if _is_broken_database(exc) and self.lost is None and str(self.path) != ":memory:":
            self._lose_content(str(exc))
            return
        self._report(_cannot_write(exc))
        self._full = self._full or _is_full(exc)

    def _lose_content(self, damage: str) -> None:
        """The file is still the log, but its pages are not what was written: fail closed at once, tell
        the person, and let the next :meth:`recover` move it aside and start a new log."""
        self._damaged = damage[:500]
        self.lost = (f"The audit log {self.path} is damaged ({self._damaged}); requests are refused while it is "
                     "moved aside, with what can be read out of it, and a new log is started.")
        log.error("%s", self.lost)
        self._report(self.lost)

    def _check_file(self) -> None:
        """Before a transaction: the file is still the log, or the write fails (closed) at once."""
        if self._file is not None:
            self._file.keep_shm_whole()
        if self.lost is None and self._file is not None and (problem := self._file.problem()) is not None:
            self._lose(problem)
        if self.lost is not None:
            raise LogFileLost(self.lost)

    def _lose(self, problem: str) -> None:
        self._moved_away = problem.startswith(("was deleted", "was replaced by another file"))
        """The file left the path whole (renamed, moved, its directory moved): :meth:`_follow_moved_file`."""
        self._stale_companions = True
        self._wal_lost = self._file is not None and self._file.wal_lost
        self._file_changed = not self._wal_lost and "cannot be looked at" not in problem
        if self._wal_lost:
            self.lost = (f"The audit log {self.path} {problem}; requests are refused until what the app still "
                         "holds of it is copied into the database file and the log is reopened.")
        else:
            self.lost = (f"The audit log {self.path} {problem}; requests are refused until the path holds a "
                         "database again or nothing (then a fresh log is started).")
        log.error("%s", self.lost)

    def _checkpoint_alone(self, mode: str) -> tuple[int, int, int, str | None]:
        """A ``mode`` checkpoint through the app's own connection, the checkpointer stopped first (its
        connection reads the log too: a full checkpoint needs it gone): busy, pages, copied, and the
        error that kept it from running (then ``1, -1, -1``)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        try:
            busy, pages, copied = self._db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        except sqlite3.Error as exc:
            return 1, -1, -1, str(exc)
        return int(busy), int(pages), int(copied), None

    def _save_lost_wal(self) -> None:
        """The ``-wal`` at the path is gone or another file, but the connection still holds the one it
        wrote (its descriptor): copy every committed row in it into the database file (a checkpoint
        through that connection), so nothing answered is lost when the log is reopened. A replacement
        ``-wal``/``-shm`` is moved aside first, so closing the connection does not delete it by name."""
        busy, pages, copied, error = self._checkpoint_alone("FULL")
        if error is not None:
            log.error("the audit log's lost write-ahead log could not be copied into %s: %s", self.path, error)
        if busy or copied != pages:
            log.error("the audit log %s could not copy all of its lost write-ahead log (%s of %s pages); the "
                      "calls still waiting are written again", self.path, copied, pages)
            self._file_changed = True
        else:
            log.warning("the audit log copied the %d pages its lost write-ahead log held into %s", pages, self.path)
        if self._file is not None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            for companion in self._file.foreign_companions():
                with contextlib.suppress(OSError):
                    os.rename(companion, f"{companion[:-4]}.stale-{stamp}{companion[-4:]}")

    def _follow_moved_file(self) -> None:
        """The log's file is no longer at the path but still exists elsewhere (moved, renamed): what
        its ``-wal`` holds is copied into it through the connection that still has both open (SQLite
        never checkpoints into a moved file on its own, and the ``-wal`` left at the path is moved
        aside), so the moved file holds every row; the person is told where it is."""
        if self._file is None:
            return
        try:
            linked = os.fstat(self._file.fd).st_nlink > 0
        except OSError:
            return
        if not linked or _identity(str(self.path)) == self._file.identity:
            return  # deleted (nobody can read it any more), or at the path again
        try:
            whole = os.pread(self._file.fd, len(SQLITE_HEADER), 0) == SQLITE_HEADER
        except OSError:
            whole = False
        if not whole:  # overwritten on its way: nothing is written into it
            return
        where = _moved_to(self._file.fd)
        busy, pages, copied, error = self._checkpoint_alone("TRUNCATE")
        if error is not None:
            log.error("the audit log moved to %s: its write-ahead log could not be copied into it: %s", where, error)
        whole = not busy and copied == pages
        text = (f"The audit log {self.path} was moved away while the app ran (to {where}); "
                + ("everything it recorded until then is in that file. " if whole else
                   "what its write-ahead log held could not all be copied into it: the calls still waiting are "
                   "written again, and the write-ahead log is kept beside the new log. ")
                + f"A new log was started at {self.path}.")
        log.warning("%s", text)
        self._moved_text = text
        for listener in list(self.notice_listeners):
            try:
                listener(text)
            except Exception:
                log.exception("audit notice listener failed")

    def recover(self) -> bool:
        """Try to write again after a failure: reopen the file at the path (a fresh one where there
        is none), write what is owed, and record the recovery. True when the log works again."""
        if self.read_only or str(self.path) == ":memory:" or not self._room_again():
            return False
        try:
            if self.lost is not None and self._damaged is None and not _healthy_path(str(self.path)):
                return False
        except PermissionError as exc:
            self._still_lost(exc)
            return False
        self.commit_turn()
        was = self.problem
        # Reopened only when the file changed or SQLite opened it read-only: a lock or a full disk
        # goes away on the connection there is.
        if self.lost is not None or "readonly" in (was or "") or "read-only" in (was or ""):
            if self._wal_lost:
                self._save_lost_wal()
                self._wal_lost = False
            elif self._moved_away and self._damaged is None:
                self._follow_moved_file()
            self._close_connection()
            if self._stale_companions:
                self._keep_stale_companions()
                self._stale_companions = False
            if self._damaged is not None and not self._set_damaged_aside():
                self._stand_in()
                return False
            try:
                self._open()
            except (sqlite3.Error, OSError) as exc:
                self._still_lost(exc)
                self._stand_in()
                return False
        lost, self.lost = self.lost, None
        switched = self._file_changed  # another file now (the inode number may well be the same, reused)
        try:
            with self._transaction(0):
                if switched:
                    self._write_waiting_calls_again()
                told = self._moved_text or lost or was or ""
                self._cursor.execute("INSERT INTO events (at, kind, code, detail) VALUES (?,?,?,?)",
                                     (time.time(), "audit", "recovered", told[:2000]))
        except sqlite3.Error as exc:
            self.lost = lost
            log.debug("the audit log cannot be written yet: %s", exc)
            return False
        self._file_changed = False
        self._moved_text = None
        self._reopen_failure = None
        if self._abandoned_owed and not switched:  # the start could not close them: now it can
            try:
                self.close_abandoned()
            except sqlite3.Error as exc:
                log.warning("the audit log could not close the calls an earlier run left waiting: %s", exc)
        log.warning("the audit log %s works again%s", self.path, " (a new file)" if switched else "")
        self._report(None)
        return True

    def _set_damaged_aside(self) -> bool:
        """Move the damaged file (and its ``-wal``, ``-shm``) aside, read what can be read out of it into
        ``<file>.recovered``, and tell the person; the next :meth:`_open` starts a new log at the path."""
        path = Path(self.path)
        try:
            target = move_aside(path) if path.exists() else None
        except OSError as exc:
            self._still_lost(exc)
            return False
        saved = ""
        if target is not None:
            try:
                recovered, counts = integrity.salvage(target, SCHEMA)
                saved = (f"; the {counts['requests']} calls and {counts['decisions']} decisions that could be read "
                         f"are in {recovered}")
            except (OSError, sqlite3.Error) as exc:
                log.exception("nothing could be read out of the damaged audit log %s", target)
                saved = f"; nothing could be read out of it ({exc})"
        text = (f"The audit log was damaged ({self._damaged}); it was kept as {target}{saved}, and a new log was "
                f"started at {path}.")
        self._damaged = None
        self._file_changed = True  # the calls still waiting are written into the new file
        self.moved_aside, self._moved_text = target, text
        log.error("%s", text)
        for listener in list(self.moved_listeners):
            try:
                listener(text)
            except Exception:
                log.exception("an audit log listener failed")
        return True

    def _room_again(self) -> bool:
        """After a full disk: whether its file system has room again (else a write that worked only
        used space the log already had, and the disk is still full)."""
        if not self._full:
            return True
        try:
            info = os.statvfs(os.path.dirname(os.path.abspath(str(self.path))))
        except OSError:
            return True  # cannot tell: the write that worked decides
        if info.f_bavail * info.f_frsize < ROOM_TO_RECOVER:
            return False
        self._full = False
        return True

    def _still_lost(self, exc: BaseException) -> None:
        """The log cannot be reopened yet: the person is told why, in the degraded text and at WARNING,
        once per reason (the watch tries every second)."""
        reason = _why(exc)
        if reason == self._reopen_failure:
            return
        self._reopen_failure = reason
        if self.lost is not None and reason in self.lost:  # said so already (a start it could not open)
            return
        log.warning("the audit log %s cannot be reopened yet: %s", self.path, reason)
        first = (self.lost or self.problem or "").split(" Now it cannot be opened: ")[0]
        self.lost = (f"{first} Now it cannot be opened: {reason}." if first else
                     f"The audit log {self.path} cannot be opened ({reason}); requests are refused until it can be.")
        self._report(self.lost)

    def _keep_stale_companions(self) -> None:
        """The ``-wal`` and ``-shm`` at the path belong to the file that is gone (SQLite does not
        remove them when its file was moved or deleted): a database opened there would read them
        as its own. Moved aside (kept) before the file at the path is opened."""
        base = Path(self.path)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("-wal", "-shm"):
            companion = base.with_name(base.name + suffix)
            if companion.exists():
                target = base.with_name(f"{base.name}.stale-{stamp}{suffix}")
                with contextlib.suppress(OSError):
                    os.rename(companion, target)
                    log.warning("kept %s, the write-ahead log of the file that was at %s, as %s", companion,
                                base, target)

    def _write_waiting_calls_again(self) -> None:
        """The calls still waiting for the person were in the file that is gone: write them into
        this one, under the same id where it is free, so their decisions have a row to point at."""
        marks = ",".join("?" * len(self._asked))
        taken = {row[0] for row in self._db.execute(f"SELECT id FROM requests WHERE id IN ({marks})",
                                                    list(self._asked))} if self._asked else set()
        for handed_out, asked in self._asked.items():
            call, who = asked.call, asked.identity
            values = _request_values(who, asked.session, asked.request_id, call, asked.wall)
            if handed_out in taken:
                cursor = self._cursor.execute(INSERT_REQUEST, values)
                self._row[handed_out] = cursor.lastrowid or 0
            else:
                self._cursor.execute(INSERT_REQUEST_AT, (handed_out, *values))
                self._row.pop(handed_out, None)

    def commit_turn(self) -> None:
        """Commit this turn's answered calls now, not at the turn's end (a connection closing with
        answers held, the log closing). A failure reaches the group's waiters and the health
        listeners, not the caller."""
        if self._group is not None:
            with contextlib.suppress(sqlite3.Error):
                self._commit_open_group()

    @_watched
    def _commit_open_group(self) -> None:
        """The open group is the whole transaction (written out: the hottest commit of the app)."""
        group, owed = self._begin()
        self._commit(group, owed, 0)

    def close(self) -> None:
        self.commit_turn()  # answers waiting for their commit get it (or hear why not)
        if self._owed and self.problem is not None:
            self.recover()
        if self._owed:
            log.error("the audit log closes with %d decisions it could not write: %s", len(self._owed),
                      ", ".join(f"{row}: {verdict.decision} by {verdict.decided_by}" for row, verdict, _ in self._owed))
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self._cursor.close()  # else a statement left open keeps the connection (and its file) alive
        self._db.close()  # the last connection to close checkpoints what is left, and removes the log
        if self._file is not None:  # after SQLite's: closing a descriptor drops the process's locks on the file
            self._file.close()

    def _report(self, problem: str | None) -> None:
        self.problem = problem
        for listener in list(self.health_listeners):
            try:
                listener(problem)
            except Exception:  # the tray's display of the log's health must not fail a write
                log.exception("an audit log health listener failed")

    @_watched
    def record_calls(self, identity: Identity, session: str, request_id: str,
                     calls: Sequence[CallInfo]) -> list[int]:
        """One row per call, committed together; returns their ids for the decisions.

        The calls wait for the person: until their decisions are written the log keeps them (see
        :meth:`record_decisions`), to write them again into a log that replaced this file and to
        measure their wait by the monotonic clock."""
        now, monotonic = time.time(), time.monotonic()
        with self._transaction(len(calls)):
            ids = self._insert_calls(identity, session, request_id, calls, now)
        for row, call in zip(ids, calls, strict=True):
            self._asked[row] = _Asked(identity, session, request_id, call, now, monotonic)
        return ids

    def record_decisions(self, pairs: Iterable[tuple[int, Verdict]]) -> None:
        """The decisions of calls :meth:`record_calls` wrote. If they cannot be written now (the log
        fails), this raises, so the agent is refused; what the log then owes is the truth: the call
        was not allowed. It is written with the next write that works, so no row stays "pending"."""
        now = time.time()
        decided = [(row, verdict, now) for row, verdict in pairs]
        try:
            self._write_decisions(decided)
        except sqlite3.Error as exc:
            self._owed += [(row, _refused_instead(verdict, exc), at) for row, verdict, at in decided]
            raise

    def record_decisions_in_turn(self, pairs: Iterable[tuple[int, Verdict]], *, loop: Any,
                                 delivery: Delivery | None = None) -> GroupCommit:
        """:meth:`record_decisions` in the commit this turn of ``loop`` shares (:class:`GroupCommit`):
        a thousand requests timing out together, or withdrawn together, are one commit, not a
        thousand on the event loop. Whoever answers an agent waits for the group (``when_done``). If
        the group fails, what the log owes is the truth, as with :meth:`record_decisions`. Given a
        ``delivery``, the agent is looked for again just before the commit (:class:`Delivery`)."""
        now = time.time()
        decided = [(row, verdict, now) for row, verdict in pairs]
        group = self._group
        try:
            if group is None:
                group = self._open_group(loop)
            decision_rows = self._insert_waited_decisions(decided)
        except BaseException as exc:
            if group is not None:
                self._abandon_group(group, exc)
            self._owed += [(row, _refused_instead(verdict, exc), at) for row, verdict, at in decided]
            if isinstance(exc, sqlite3.Error):
                self._failed(exc)
            raise
        group.decided += decided
        if delivery is not None:
            delivery.rows, delivery.verdicts = decision_rows, [verdict for _, verdict, _ in decided]
            group.deliveries.append(delivery)
        return group

    def _open_group(self, loop: Any) -> GroupCommit:
        """This turn's transaction, begun now and committed when the turn of ``loop`` ends."""
        self._check_file()
        self._cursor.execute("BEGIN")
        group = self._group = GroupCommit()
        _at_turn_end(loop, functools.partial(self._commit_group, group))
        return group

    @_watched
    def _write_decisions(self, decided: list[tuple[int, Verdict, float]]) -> None:
        with self._transaction(0):
            self._insert_waited_decisions(decided)
        for row, _, _ in decided:
            self._asked.pop(row, None)
            self._row.pop(row, None)

    @_watched
    def record_answered(self, identity: Identity, session: str, request_id: str,
                        calls: Sequence[CallInfo], verdicts: Sequence[Verdict]) -> list[int]:
        """Calls answered at once (rule, memory, mode) with their verdicts, in one commit: one disk
        write instead of two. On the server's path, :meth:`record_answered_in_turn` does this."""
        now = time.time()
        with self._transaction(len(calls)):
            ids = self._insert_calls(identity, session, request_id, calls, now)
            self._insert_decisions(zip(ids, verdicts, strict=True), now)
        return ids

    def record_answered_in_turn(self, identity: Identity, session: str, request_id: str,
                                calls: Sequence[CallInfo], verdicts: Sequence[Verdict], *, loop: Any,
                                delivery: Delivery | None = None) -> GroupCommit:
        """Calls answered at once, with their verdicts, in the commit this turn of ``loop`` shares.

        The rows are written now and committed when the turn ends (:class:`GroupCommit`): the caller
        answers the agent from :meth:`GroupCommit.when_done`, never before. The hottest path of the
        app (every call answered from session memory or by a rule), hence written out. A failure
        here fails the whole group (and raises): nothing of it is kept. Given a ``delivery``, the agent
        is looked for again just before the commit: gone by then, its rows say so (:class:`Delivery`).
        """
        group = self._group
        try:
            if group is None:
                group = self._open_group(loop)
            now = time.time()
            ids = self._insert_calls(identity, session, request_id, calls, now)
            decision_rows = self._insert_decisions(zip(ids, verdicts, strict=True), now)
        except BaseException as exc:
            if group is not None:
                self._abandon_group(group, exc)
            if isinstance(exc, sqlite3.Error):
                self._failed(exc)
            raise
        group.calls += len(calls)
        if delivery is not None:
            delivery.rows, delivery.verdicts = decision_rows, verdicts
            group.deliveries.append(delivery)
        return group

    def _commit_group(self, group: GroupCommit) -> None:
        """The turn is over: commit its answered calls and tell their waiters (the loop calls this)."""
        if self._group is group:  # else committed already, by a write that came before the turn ended
            self.commit_turn()

    def _abandon_group(self, group: GroupCommit, exc: BaseException) -> None:
        """Nothing of the group is kept; each of its waiters hears why (its decisions are owed)."""
        if self._group is group:
            self._group = None
        self._roll_back()
        if group.decided:
            self._owed += [(row, _refused_instead(verdict, exc), at) for row, verdict, at in group.decided]
            group.decided = []
        log.error("the audit log could not commit %d answered calls: %s", group.calls, exc)
        group._finish(exc)

    @contextlib.contextmanager
    def _transaction(self, writes: int) -> Iterator[None]:
        """BEGIN … COMMIT around one write (``writes``: the calls it records, for the checkpointer).
        An open group of answered calls is part of it and is committed (or fails) with it, and its
        waiters are told after."""
        group, owed = self._begin()
        try:
            yield
        except BaseException as exc:
            self._fail(group, exc)
            raise
        self._commit(group, owed, writes)

    def _begin(self) -> tuple[GroupCommit | None, list[tuple[int, Verdict, float]]]:
        """The transaction begun (or the open group's taken over), with the decisions owed written
        first; the group and the owed decisions it holds."""
        group, self._group = self._group, None
        owed = self._owed
        try:
            if group is None:
                self._check_file()
                self._cursor.execute("BEGIN")
            elif group.deliveries:
                self._record_undelivered(group.deliveries)
            if owed:
                self._insert_waited_decisions(owed)
        except BaseException as exc:
            self._fail(group, exc)
            raise
        return group, owed

    def _fail(self, group: GroupCommit | None, exc: BaseException) -> None:
        """Nothing of the transaction stays; the group's waiters hear why."""
        self._roll_back()
        if group is not None:
            self._abandon_group(group, exc)

    def _commit(self, group: GroupCommit | None, owed: list[tuple[int, Verdict, float]], writes: int) -> None:
        """COMMIT what :meth:`_begin` began; then the owed decisions are settled and the group's waiters told."""
        try:
            self._cursor.execute("COMMIT")
        except BaseException as exc:
            self._fail(group, exc)
            raise
        if self._file is not None:
            # Before anyone hears an answer: a -wal cut short while the answers go out (an agent
            # acting on its own) must be shorter than a size noted after this commit, or it passes.
            self._file.note_wal_size()
        if owed:
            self._owed = [entry for entry in self._owed if entry not in owed]
            for row, _, _ in owed:
                self._asked.pop(row, None)
                self._row.pop(row, None)
            log.warning("the audit log wrote %d decisions it owed", len(owed))
        if group is not None:
            for row, _, _ in group.decided:
                self._asked.pop(row, None)
                self._row.pop(row, None)
        try:
            if group is not None:  # the agents hear their answers before the checkpointer's count
                group._finish(None)
        finally:
            self._committed(max(writes + (group.calls if group is not None else 0), 1))

    def _roll_back(self) -> None:
        """After a failed statement or COMMIT (disk full): nothing of the transaction stays."""
        if self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def _committed(self, writes: int) -> None:
        if self._checkpointer is not None:
            self._checkpointer.committed(writes)

    def _insert_calls(self, identity: Identity, session: str, request_id: str,
                      calls: Iterable[CallInfo], now: float) -> list[int]:
        """The hottest write of the app, hence :func:`_request_values` written out here."""
        if identity.relay_user is not None and self.relayed_left:
            calls = list(calls)
            left = self.relayed_left.get(request_id)
            if left is not None and left[0] == identity.agent and len(left[1]) == len(calls):
                del self.relayed_left[request_id]  # the rows an earlier run wrote: its decision goes there
                return list(left[1])
        execute = self._cursor.execute
        who = (session, identity.agent, identity.pid, identity.peer_pid, identity.peer_uid, identity.cwd,
               identity.host, identity.git_branch)
        ids = []
        for call in calls:
            risk, preview, hints = call.risk, call.preview, call.hints
            cursor = execute(INSERT_REQUEST, (now, request_id, call.index, *who, call.tool, _stored_args(call),
                                              call.description, None if preview is None else _encode(preview),
                                              _encode(hints) if hints else None, risk.level if risk else None,
                                              _stored_reasons(risk.reasons, call.asked_because) if risk else None,
                                              *_understanding(risk)))
            ids.append(cursor.lastrowid or 0)
            if call.consequences is not None:  # what it would touch (issue 32), in the same commit as the call
                execute("INSERT INTO events (at, kind, code, detail) VALUES (?,?,?,?)",
                        (now, CONSEQUENCES, str(ids[-1]), _encode(call.consequences.to_json())))
        return ids

    def _insert_decisions(self, pairs: Iterable[tuple[int, Verdict]], now: float) -> list[int]:
        execute = self._cursor.execute
        rows = []
        for audit_id, v in pairs:
            updated = v.updated_args
            cursor = execute(INSERT_DECISION, (audit_id, now, v.decision, v.decided_by, v.note, v.rule, int(v.blocked),
                                               None if updated is None else _encode(updated), None))
            rows.append(cursor.lastrowid or 0)
        return rows

    def _record_undelivered(self, deliveries: list[Delivery]) -> None:
        """Just before a group's commit: the answers whose agents have gone meanwhile are recorded as
        never delivered (their rows are not committed yet, so nobody ever read the answer as given)."""
        for delivery in deliveries:
            why = delivery.gone()
            if why is None:
                continue
            delivery.why = why
            for row, verdict in zip(delivery.rows, delivery.verdicts, strict=True):
                self._cursor.execute(UNDELIVERED, (undelivered_note(verdict, why), row))
            log.debug("an answer was not delivered: %s", why)

    def _insert_waited_decisions(self, decisions: Iterable[tuple[int, Verdict, float]]) -> list[int]:
        """Decisions of calls that waited for the person: into the row the call has in this file,
        with the monotonic wait where the wall clock says otherwise (it was set, or jumped); their ids."""
        execute, now = self._cursor.execute, time.monotonic()
        ids: list[int] = []
        for handed_out, v, decided in decisions:
            asked = self._asked.get(handed_out)
            waited = None
            if asked is not None:
                by_monotonic = now - asked.monotonic
                if abs((decided - asked.wall) - by_monotonic) > CLOCKS_DISAGREE:
                    waited = by_monotonic
            updated = v.updated_args
            cursor = execute(INSERT_DECISION, (self._row.get(handed_out, handed_out), decided, v.decision, v.decided_by,
                                               v.note, v.rule, int(v.blocked), None if updated is None
                                               else _encode(updated), waited))
            ids.append(cursor.lastrowid or 0)
        return ids

    def record_undelivered(self, rows: Sequence[int], why: str, peer_pid: int | None = None,
                           peer_uid: int | None = None) -> None:
        """Answers recorded (committed) that their agent did not get: found after the write (its
        connection ended before the bytes reached its socket, or it was closed by then). Decision
        rows are never changed once committed: ``undelivered`` events name them (:meth:`undelivered`), so
        the log says what each agent got. Never raises: the log's health signal tells a failing write."""
        try:
            self._write_undelivered(list(rows), why, peer_pid, peer_uid)
        except sqlite3.Error as exc:
            log.warning("the audit log could not record that decisions %s were not delivered (%s): %s",
                        list(rows), why, exc)

    @_watched
    def _write_undelivered(self, rows: list[int], why: str, peer_pid: int | None, peer_uid: int | None) -> None:
        now = time.time()
        with self._transaction(0):
            for start in range(0, len(rows), UNDELIVERED_PER_EVENT):  # an event's detail holds 2,000 characters
                detail = json.dumps({"decisions": rows[start:start + UNDELIVERED_PER_EVENT], "why": why[:500]})
                self._cursor.execute("INSERT INTO events (at, kind, code, detail, peer_pid, peer_uid) VALUES "
                                     "(?,?,?,?,?,?)", (now, "undelivered", "not_delivered", detail, peer_pid, peer_uid))

    def undelivered(self) -> dict[int, str]:
        """Decision id -> why its answer was recorded but never reached its agent (:meth:`record_undelivered`)."""
        found: dict[int, str] = {}
        for (detail,) in self._db.execute("SELECT detail FROM events WHERE kind = 'undelivered'"):
            with contextlib.suppress(ValueError, TypeError, KeyError):
                about = json.loads(detail)
                found.update(dict.fromkeys((int(row) for row in about["decisions"]), str(about["why"])))
        return found

    @_watched
    def record_event(self, kind: str, code: str | None = None, detail: str | None = None,
                     peer_pid: int | None = None, peer_uid: int | None = None) -> None:
        """Refusals (bad input, wrong token, flood) and changes of mode: security-relevant facts."""
        with self._transaction(0):
            self._cursor.execute("INSERT INTO events (at, kind, code, detail, peer_pid, peer_uid) VALUES (?,?,?,?,?,?)",
                                 (time.time(), kind, code, (detail or "")[:2000], peer_pid, peer_uid))

    def record_unsettled(self, kind: str, rows: Sequence[int], about: dict[str, Any]) -> None:
        """Calls whose answer may still stand elsewhere (:data:`UNSETTLED`): no decision yet, never a
        guessed one; ``about`` says where to read what stands (JSON, kept in the event's detail)."""
        self.record_event(kind, UNSETTLED, json.dumps({**about, "rows": list(rows)}))

    def unsettled(self) -> list[dict[str, Any]]:
        """What :meth:`record_unsettled` noted and no decision answers yet (``kind``, ``rows``, and its ``about``)."""
        found: list[dict[str, Any]] = []
        for kind, detail in self._db.execute("SELECT kind, detail FROM events WHERE code = ?", (UNSETTLED,)):
            try:
                entry = json.loads(detail)
                rows = [int(row) for row in entry["rows"]]
            except (ValueError, TypeError, KeyError):
                continue
            decided = self._db.execute(f"SELECT COUNT(*) FROM decisions WHERE request IN ({','.join('?' * len(rows))})",
                                       rows).fetchone()[0] if rows else 0
            if rows and not decided:
                found.append({**entry, "kind": kind, "rows": rows})
        return found

    def has_request(self, request_id: str, agent_prefix: str) -> bool:
        """Whether calls of the request ``request_id`` of an agent whose name starts with ``agent_prefix``
        are in the log already (a request read again must not be recorded twice)."""
        like = agent_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return self._db.execute("SELECT 1 FROM requests WHERE request_id = ? AND agent LIKE ? ESCAPE '\\' LIMIT 1",
                                (request_id, like)).fetchone() is not None

    def consequences(self, row: int) -> dict[str, Any] | None:
        """The facts of what the call of request ``row`` would touch, as the app gathered them
        before it was decided (``Facts.to_json``), or None: it named nothing on the file system."""
        found = self._db.execute("SELECT detail FROM events WHERE kind = ? AND code = ? ORDER BY id DESC LIMIT 1",
                                 (CONSEQUENCES, str(row))).fetchone()
        return json.loads(found[0]) if found else None

    def events(self, kind: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        sql = "SELECT at, kind, code, detail, peer_pid, peer_uid FROM events"
        params: list[Any] = []
        if kind:
            sql += " WHERE kind = ?"
            params.append(kind)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(limit)
        keys = ("at", "kind", "code", "detail", "peer_pid", "peer_uid")
        return [dict(zip(keys, row, strict=True)) for row in self._db.execute(sql, params)]

    def history(self, *, agent: str | None = None, tool: str | None = None, decision: str | None = None,
                decided_by: str | None = None, risk: str | None = None, session: str | None = None,
                since: float | None = None, until: float | None = None, text: str | None = None,
                limit: int = 200) -> list[HistoryEntry]:
        """Newest first. ``decision="pending"`` finds calls that never got an answer."""
        where: list[str] = []
        params: list[Any] = []
        recorded = {row[1] for row in self._db.execute("PRAGMA table_info(requests)")}
        understood = "r.risk_understood" if "risk_understood" in recorded else "NULL"  # an older log: NULL
        gaps = "r.risk_gaps" if "risk_gaps" in recorded else "NULL"
        for column, value in (("r.agent", agent), ("r.tool", tool), ("d.decided_by", decided_by),
                              ("r.session", session)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if risk == NOT_UNDERSTOOD:  # as the dialog showed it (HistoryEntry.shown_level)
            where.append(f"{understood} = 0 AND r.risk_level IS NOT 'destructive'")
        elif risk == "destructive":
            where.append("r.risk_level = 'destructive'")
        elif risk:
            where.append(f"r.risk_level = ? AND {understood} IS NOT 0")
            params.append(risk)
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
               f" r.cwd, r.pid, r.peer_pid, r.host, d.blocked, d.updated_args, {understood}, {gaps}"
               " FROM requests r LEFT JOIN decisions d ON d.request = r.id")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.id DESC LIMIT ?"
        params.append(limit)
        return [self._entry(row) for row in self._db.execute(sql, params)]

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> HistoryEntry:
        (id_, created, agent, session, tool, args, description, preview, risk_level, risk_reasons,
         decision, decided_by, decided, note, rule, cwd, pid, peer_pid, host, blocked, updated, understood,
         gaps) = row
        return HistoryEntry(
            id=id_, created=created, agent=agent, session=session, tool=tool, args=json.loads(args),
            description=description, preview=json.loads(preview) if preview else None,
            risk_level=risk_level, risk_reasons=json.loads(risk_reasons) if risk_reasons else [],
            decision=decision, decided_by=decided_by, decided=decided, note=note, rule=rule, cwd=cwd,
            pid=pid, peer_pid=peer_pid, host=host, blocked=bool(blocked),
            updated_args=json.loads(updated) if updated else None,
            risk_understood=None if understood is None else bool(understood),
            risk_gaps=json.loads(gaps) if gaps else [])

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0])

    def prune(self, retain_days: float) -> int:
        """Delete what is older than the retention the person chose; returns rows removed.

        Raises :class:`PruneRefused`, deleting nothing, when the wall clock cannot be trusted to say
        what is old: it moved more than ``CLOCK_JUMP_DAYS`` away from the boot clock since the log was
        opened, or the prune would delete every call written before the app started while the app
        has run (by the boot clock) for less than the retention (a clock set far ahead at start; or a
        log unused for longer than it keeps, which is pruned once the app has run that long). So the
        newest rows of earlier runs are never pruned by a wrong clock, nor rows of this run.
        """
        now = time.time()
        cutoff = now - retain_days * 86400
        wall_moved = (now - self._opened_wall) - (_boot_clock() - self._opened_boot)
        if abs(wall_moved) > CLOCK_JUMP_DAYS * 86400:
            raise PruneRefused(f"nothing was pruned from the audit log: the wall clock moved {wall_moved / 86400:+.1f} "
                               "days against the time since boot while the app ran (the clock looks wrong)")
        if self._earlier_runs_last:
            newest = self._db.execute("SELECT MAX(created) FROM requests WHERE id <= ?",
                                      (self._earlier_runs_last,)).fetchone()[0]
            running_days = (_boot_clock() - self._opened_boot) / 86400
            if newest is not None and newest < cutoff and running_days < retain_days:
                raise PruneRefused(
                    f"nothing was pruned from the audit log: keeping {retain_days:g} days would delete every call "
                    f"in it, the newest of {time.strftime('%Y-%m-%d', time.localtime(newest))} too, by a clock "
                    f"that says {time.strftime('%Y-%m-%d', time.localtime(now))}; the clock looks wrong (or the "
                    "log was unused for longer than it keeps)")
        with self._transaction(0):
            self._db.execute("DELETE FROM decisions WHERE request IN (SELECT id FROM requests WHERE created < ?)",
                             (cutoff,))
            removed = self._db.execute("DELETE FROM requests WHERE created < ?", (cutoff,)).rowcount
            self._db.execute("DELETE FROM events WHERE at < ?", (cutoff,))
        return removed
