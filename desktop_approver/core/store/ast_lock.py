"""One thread at a time builds Python ASTs: the way around CPython's gh-106905.

CPython before 3.13 keeps the depth counter of its AST constructor in state shared by every thread,
so two threads building ASTs at once can raise ``SystemError: AST constructor recursion depth
mismatch``. The app builds an AST in one place, and from several threads: Python 3.11 and 3.12's
:mod:`traceback` parses the failing line (``_extract_caret_anchors_from_line_segment``) to draw its
``^^^`` markers, whenever a traceback is formatted, and the app formats them from its threads (the
audit log's checkpointer and content check, the keyring reader, the rules file read in the
executor, the relay) as well as from the event loop. :func:`serialise_ast_construction` puts that
function (and, for the test suite, :func:`ast.parse`) under one lock. Nothing is imported for it:
the traceback module already is, and :mod:`ast` is wrapped only if something loaded it.
"""

from __future__ import annotations

import functools
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

AST_LOCK = threading.RLock()
"""Held while an AST is built (gh-106905)."""
_GUARDED = "__desktop_approver_ast_lock__"


def under_ast_lock(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` run while holding :data:`AST_LOCK` (it builds ASTs, or turns them into code)."""
    if getattr(function, _GUARDED, False):
        return function

    @functools.wraps(function)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with AST_LOCK:
            return function(*args, **kwargs)

    setattr(locked, _GUARDED, True)
    return locked


def serialise_ast_construction() -> None:
    """Put the AST building the process does from threads under :data:`AST_LOCK` (once; idempotent)."""
    if sys.version_info >= (3, 13):  # fixed there: the counter is per thread
        return
    anchors = getattr(traceback, "_extract_caret_anchors_from_line_segment", None)
    if anchors is not None:
        traceback._extract_caret_anchors_from_line_segment = under_ast_lock(anchors)  # type: ignore[attr-defined]
    ast = sys.modules.get("ast")
    if ast is not None:
        setattr(ast, "parse", under_ast_lock(ast.parse))  # noqa: B010 - the module's attribute, found by name
