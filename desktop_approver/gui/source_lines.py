"""The app keeps no copy of its modules' source text: only tracebacks need it, and they read the file.

PySide6 replaces ``__import__`` and, to decide whether a module uses its ``__feature__`` switches,
reads the whole source of every module loaded, before and after PySide6 itself, with
``inspect.getsource`` (``shibokensupport/feature.py``, ``_mod_uses_pyside``; the mechanism is
described in pyzo/pyzo#851). ``inspect`` reads through ``linecache``, which keeps every line it
has read for the life of the process: in the tray app, the source of about 330 modules, 5 MiB of an
idle app's memory that nothing reads again (issue 23). Freeing the lines later does not give the
memory back (they are spread among the modules' own objects), so the cache must never hold them:
:func:`stop_keeping_source_lines` runs before PySide6 is imported.

A traceback or a warning still shows its source lines: ``linecache.getlines`` reads the file when
its cache does not have it. This module imports no Qt, so the tray command can call it first.
"""

from __future__ import annotations

import linecache
from typing import Any


class SourceLinesKeptNowhere(dict[str, Any]):
    """``linecache.cache`` that stores nothing: each lookup reads the file again (tracebacks are rare)."""

    def __setitem__(self, filename: str, entry: Any) -> None:
        """Forget ``entry``: ``linecache.updatecache`` returns the lines it read either way."""


def stop_keeping_source_lines() -> None:
    """From now on ``linecache`` keeps no source lines (and drops those it kept), for this process."""
    if not isinstance(linecache.cache, SourceLinesKeptNowhere):
        linecache.cache = SourceLinesKeptNowhere()
