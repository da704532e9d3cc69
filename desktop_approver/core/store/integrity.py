"""The audit log's content checked while the app runs, and what can be read out of a damaged one.

The file watch (``audit._FileWatch``) knows the file is still *the* log; it cannot know that its
pages are still what SQLite wrote: bytes written over a page in place leave the header, the inode
and the size as they were, and the app's own connection keeps answering from its page cache. So a
thread of its own (:class:`ContentCheck`) looks at the content on a schedule: every ``EVERY``
seconds (stretched so the checks take at most a tenth of the time on a large log) it opens a
*fresh* read-only connection (a long-lived one would trust its cache) and runs SQLite's
``PRAGMA quick_check``, then reads back the rows written last (the pages the app has just changed).
The first failure is kept in :attr:`ContentCheck.damage`; the app's once-a-second watch picks it up
on its loop (``AuditLog.watch``), refuses every write, tells the person, and starts a new log.

:func:`salvage` copies the rows SQLite can still read out of a damaged file into a new database
beside it (``<file>.recovered``): row by row past the pages it cannot read, never more than
``SALVAGE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

EVERY = 2.0
"""Seconds between two looks at the content of a small log (a corruption is found within seconds)."""
SHARE = 0.1
"""At most this share of the time goes to the checks: a log whose check takes 0.5 s is looked at every 5 s."""
READ_BACK = 64
"""Rows written last, per table, read back by each look (the pages the app has just changed)."""
SALVAGE_SECONDS = 20.0
"""How long :func:`salvage` reads at most (a huge damaged file is kept whole either way)."""
TABLES = ("requests", "decisions", "events")
STOP_WAIT = 5.0
"""Seconds :meth:`ContentCheck.stop` waits for a look under way."""


def quick_look(path: str) -> str | None:
    """What is wrong with the content of the database at ``path``, or None when SQLite finds it whole.

    Only a regular file is opened: SQLite opening a FIFO put there in the log's place would block
    this thread for good (the file watch tells the person about a log that is not a file)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None  # gone or unreadable: the file watch tells that one
    try:
        with contextlib.closing(sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                                                timeout=1.0)) as db:
            found = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
            if found != ["ok"]:
                return "; ".join(str(line) for line in found)
            for table in TABLES:
                db.execute(f"SELECT * FROM {table} ORDER BY rowid DESC LIMIT {READ_BACK}").fetchall()
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED: nothing is known, look again next time
            return None
        if code == 14 or not Path(path).exists():  # SQLITE_CANTOPEN: the file watch tells that one
            return None
        return str(exc)
    return None


class ContentCheck:
    """A thread that looks at the log's content on a schedule; :attr:`damage` holds the first failure."""

    def __init__(self, path: str, every: float = EVERY, before_look: Callable[[], object] = lambda: None) -> None:
        self.path = path
        self.every = every
        self.before_look = before_look
        """Run before each look (the log's guard of its ``-shm``: a connection maps it into memory)."""
        self.damage: str | None = None
        self.looks = 0                   # done, for tests
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="audit-content-check", daemon=True)

    def __repr__(self) -> str:
        return f"<ContentCheck {self.path} looks={self.looks} damage={self.damage!r}>"

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: bool = True) -> None:
        """Stop looking; with ``wait``, for the look under way, but never longer than a few
        seconds: a look stuck in the kernel must not hold the caller (the event loop) with it.
        The thread is a daemon, so one left behind never keeps the app from ending."""
        self._stopping.set()
        if wait and self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(STOP_WAIT)
            if self._thread.is_alive():
                log.warning("the audit log's content check did not end within %.0f s: left behind", STOP_WAIT)

    def _run(self) -> None:
        pause = self.every
        while not self._stopping.wait(pause):
            started = time.monotonic()
            try:
                self.before_look()
                damage = quick_look(self.path)
            except Exception:  # a look that fails for another reason tells nothing about the content
                log.exception("looking at the audit log's content failed")
                damage = None
            took = time.monotonic() - started
            self.looks += 1
            pause = max(self.every, took / SHARE)
            if damage is not None:
                log.debug("the audit log's content is damaged: %s", damage)
                self.damage = damage
                return  # the log is moved aside and a new one started, with a check of its own


def salvage(damaged: Path, schema: str) -> tuple[Path, dict[str, int]]:
    """Copy the rows that can be read out of ``damaged`` into ``<damaged>.recovered``; where it went
    and how many rows of each table. Ranges SQLite cannot read are skipped row by row."""
    target = damaged.with_name(damaged.name + ".recovered")
    counts = dict.fromkeys(TABLES, 0)
    deadline = time.monotonic() + SALVAGE_SECONDS
    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as out:
        out.executescript(schema)
        try:
            source = sqlite3.connect(f"{damaged.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            log.warning("nothing could be read out of the damaged audit log %s: %s", damaged, exc)
            return target, counts
        with contextlib.closing(source):
            rows_at_most = max(damaged.stat().st_size // 16, 1)  # when not even MAX(rowid) can be read
            for table in TABLES:
                counts[table] = _copy_table(source, out, table, deadline, rows_at_most)
    return target, counts


def _copy_table(source: sqlite3.Connection, out: sqlite3.Connection, table: str, deadline: float,
                rows_at_most: int) -> int:
    """The rows of ``table`` that can be read, in order of id; a range that fails is read one row at a time."""
    out_columns = {row[1] for row in out.execute(f"PRAGMA table_info({table})")}
    try:
        columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        columns = list(out_columns)  # the schema page cannot be read: the app's own columns are tried
    try:
        highest = int(source.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0)
    except sqlite3.DatabaseError:
        highest = rows_at_most
    names = [name for name in columns if name in out_columns]
    if not names:
        return 0
    select = f"SELECT {', '.join(names)} FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid"
    insert = f"INSERT OR IGNORE INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    copied, low, step = 0, 1, 500
    highest = max(highest, 1)
    out.execute("BEGIN")
    try:
        while low <= highest and time.monotonic() < deadline:
            high = low + step - 1
            try:
                rows = source.execute(select, (low, high)).fetchall()
            except sqlite3.DatabaseError:
                if step > 1:
                    step = 1  # read this range one row at a time
                    continue
                rows = []    # this row cannot be read: skipped
            out.executemany(insert, rows)
            copied += len(rows)
            low = high + 1
            if step == 1 and low % 500 == 1:
                step = 500   # past the bad range: whole ranges again
    finally:
        out.execute("COMMIT")
    return copied
