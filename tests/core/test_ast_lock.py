"""One thread at a time builds ASTs (CPython gh-106905: "AST constructor recursion depth mismatch")."""

from __future__ import annotations

import ast
import sys
import threading
import traceback

import pytest

from desktop_approver.core.store.ast_lock import AST_LOCK, serialise_ast_construction


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="fixed in CPython 3.13: nothing is wrapped")
def test_tracebacks_and_parses_wait_for_each_other() -> None:
    serialise_ast_construction()
    serialise_ast_construction()  # idempotent: wrapped once
    building: list[str] = []

    def parse() -> None:
        ast.parse("a + b")
        building.append("parse")

    def caret_anchors() -> None:
        traceback._extract_caret_anchors_from_line_segment("a + b")  # type: ignore[attr-defined]
        building.append("traceback")

    with AST_LOCK:  # another thread is building an AST
        threads = [threading.Thread(target=parse), threading.Thread(target=caret_anchors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(0.2)
        assert building == []  # both wait for it
    for thread in threads:
        thread.join(60)
    assert sorted(building) == ["parse", "traceback"]
