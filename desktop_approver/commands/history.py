"""``desktop-approver history``: search the audit log of requests and decisions.

Reads the SQLite log directly, opened read-only, so it works whether or not the app runs and
can never disturb it. Prints a table, or with ``--json`` one object per call with its decision.
``--prune`` is the one writing action: it deletes entries older than ``--keep-days`` (90), never
by a clock that looks wrong (one that would delete every call: nothing is deleted, exit code 2).
Exit code 0, or 2 for bad input, an unreadable log or a refused prune.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .argv import finite_positive

DECISIONS = ("allow_once", "allow_session", "deny", "allow", "pending")
DECIDERS = ("user", "policy", "session", "mode", "timeout", "cancelled")
RISKS = ("safe", "moderate", "destructive", "not-understood")
DEFAULT_KEEP_DAYS = 90.0
RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object per call, newest first")
    parser.add_argument("--agent", metavar="NAME", help="only this agent's calls")
    parser.add_argument("--tool", metavar="NAME", help="only calls of this tool")
    parser.add_argument("--decision", choices=DECISIONS,
                        help="only calls with this outcome (allow: either allow; pending: never answered)")
    parser.add_argument("--decided-by", choices=DECIDERS, help="only calls decided by this")
    parser.add_argument("--risk", choices=RISKS, help="only calls of this risk level, as the dialog showed it "
                        "(not-understood: the reader did not understand the call)")
    parser.add_argument("--session", metavar="ID", help="only calls of this agent session")
    parser.add_argument("--since", metavar="WHEN", type=when_since,
                        help="only calls from then on: 2026-11-02, 2026-11-02T14:30, or 30m / 2h / 7d ago")
    parser.add_argument("--until", metavar="WHEN", type=when_until,
                        help="only calls up to then (a date alone includes that whole day)")
    parser.add_argument("--search", metavar="TEXT", help="text in the arguments, tool, description, agent or note")
    parser.add_argument("--limit", type=int, default=50, metavar="N",
                        help="show the newest N matching calls (default: 50; 0: all), oldest first in the table")
    parser.add_argument("--prune", action="store_true",
                        help="delete entries older than --keep-days instead of listing")
    parser.add_argument("--keep-days", type=finite_positive("days"), default=DEFAULT_KEEP_DAYS, metavar="N",
                        help=f"with --prune: keep this many days (default: {DEFAULT_KEEP_DAYS:g})")
    parser.add_argument("--audit-db", metavar="PATH",
                        help="the audit log (default: ~/.local/share/desktop-approver/audit.sqlite3)")


def run(args: argparse.Namespace) -> int:
    from ..client.paths import default_audit_path
    from ..core.store.audit import AuditLog

    path = Path(args.audit_db).expanduser() if args.audit_db else default_audit_path()
    if args.prune:
        return _prune(path, args.keep_days)
    if args.limit < 0:
        return _fail("bad input: --limit must be 0 or more")
    try:
        audit = AuditLog(path, read_only=True)
    except FileNotFoundError:
        print(f"desktop-approver history: no audit log yet at {path}", file=sys.stderr)
        return 0
    except sqlite3.Error as exc:
        return _fail(f"cannot open the audit log {path}: {exc}")
    try:
        entries = audit.history(agent=args.agent, tool=args.tool, decision=args.decision,
                                decided_by=args.decided_by, risk=args.risk and args.risk.replace("-", " "),
                                session=args.session,
                                since=args.since, until=args.until, text=args.search,
                                limit=args.limit or -1)
    except sqlite3.Error as exc:
        return _fail(f"cannot read the audit log {path}: {exc}")
    finally:
        audit.close()
    if args.json:
        for entry in entries:
            print(json.dumps({**entry.as_dict(), "created_at": _iso(entry.created),
                              "decided_at": _iso(entry.decided)}, ensure_ascii=False))
        return 0
    if not entries:
        print("No matching calls.")
        return 0
    rows = [("TIME", "AGENT", "TOOL", "CALL", "RISK", "DECISION", "DECIDED BY")]
    rows += [(_local_time(entry.created), table_cell(entry.agent or "-", 20), table_cell(entry.tool, 24),
              table_cell(summary(entry.args), 60), entry.shown_level or "-",
              entry.decision or "pending", entry.decided_by or "-") for entry in reversed(entries)]
    print_table(rows)
    return 0


def _prune(path: Path, keep_days: float) -> int:
    from ..core.store.audit import AuditLog, PruneRefused

    if not keep_days > 0:
        return _fail("bad input: --keep-days must be more than 0")
    if not path.is_file():
        print(f"desktop-approver history: no audit log yet at {path}", file=sys.stderr)
        return 0
    try:
        audit = AuditLog(path)
        try:
            removed = audit.prune(keep_days)
        finally:
            audit.close()
    except PruneRefused as exc:
        return _fail(str(exc))
    except sqlite3.Error as exc:
        return _fail(f"cannot prune the audit log {path}: {exc}")
    print(f"Deleted {removed} call{'' if removed == 1 else 's'} older than {keep_days:g} days from {path}.")
    return 0


# -- times ------------------------------------------------------------------------------------------

def parse_when(text: str, *, end_of_day: bool = False, now: float | None = None) -> float:
    """``30m`` / ``2h`` / ``7d`` / ``1w`` ago, or an ISO date or date-time (local time unless it says).

    With ``end_of_day``, a date without a time means the end of that day (for ``--until``).
    """
    relative = RELATIVE.match(text)
    if relative:
        return (time.time() if now is None else now) - float(relative.group(1)) * UNIT_SECONDS[relative.group(2)]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use e.g. 2026-11-02, 2026-11-02T14:30, 30m, 2h or 7d)") from None
    if end_of_day and len(text.strip()) == 10:  # YYYY-MM-DD alone
        moment += timedelta(days=1) - timedelta(microseconds=1)
    return moment.timestamp()  # naive: local time, as the person reads their clock


def when_since(text: str) -> float:
    try:
        return parse_when(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def when_until(text: str) -> float:
    try:
        return parse_when(text, end_of_day=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="seconds")


def _local_time(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


# -- table ------------------------------------------------------------------------------------------

def summary(args: dict[str, Any]) -> str:
    """One line for a call: its command or path when it has one, else its arguments as JSON."""
    from ..core.calls.reading import summary_of

    return summary_of(args)


def table_cell(value: Any, width: int = 40) -> str:
    """One table cell: hidden characters (escape sequences, line breaks, bidi) made visible, long text cut."""
    from ..render.reveal import reveal

    text = reveal("" if value is None else str(value)).text
    return text if len(text) <= width else text[:width - 1] + "…"


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _fail(message: str) -> int:
    print(f"desktop-approver history: {message}", file=sys.stderr)
    return 2
