"""The app keeps no copy of its modules' source text: only tracebacks need it, and they read the file.

PySide6 replaces ``__import__`` and, to decide whether a module uses its ``__feature__`` switches,
reads the whole source of every module loaded, before and after PySide6 itself, with
``inspect.getsource`` (``shibokensupport/feature.py``, ``_mod_uses_pyside``; the mechanism is
described in pyzo/pyzo#851). ``inspect`` reads through ``linecache``, which keeps every line it
has read for the life of the process: in the tray app, the source of about 330 modules, 5 MiB of an
idle app's memory that nothing reads again (issue 23). Freeing the lines later does not give the
memory back (they are spread among the modules' own objects), so the cache must never hold more
than the file just read: :func:`stop_keeping_source_lines` runs before PySide6 is imported.

A traceback or a warning still shows its source lines: ``linecache.getlines`` reads the file when
its cache does not have it. This module imports no Qt, so the tray command can call it first.
"""

from __future__ import annotations

import linecache
from typing import Any


class SourceLinesKeptNowhere(dict[str, Any]):
    """``linecache.cache`` that keeps the lines of one file only, the last one read.

    ``linecache`` reads an entry back right after it stores it (``updatecache`` returns
    ``cache[filename][2]``; a module without a source file, as in a frozen bundle, is stored as a
    one-item lazy entry first and read back to load its lines), so an entry must be there when it
    is asked for at once; the next file's lines replace it. Lazy entries (a loader's function, no
    text) are kept as they are."""

    _latest: str | None = None

    def __setitem__(self, filename: str, entry: Any) -> None:
        if len(entry) > 1:  # a file's lines: drop the previous file's
            if self._latest is not None and self._latest != filename:
                self.pop(self._latest, None)
            self._latest = filename
        super().__setitem__(filename, entry)


def stop_keeping_source_lines() -> None:
    """From now on ``linecache`` keeps one file's source lines at most (and drops those it kept)."""
    if not isinstance(linecache.cache, SourceLinesKeptNowhere):
        linecache.cache = SourceLinesKeptNowhere()
