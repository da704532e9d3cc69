"""The reliability suite: the real app core in its own process, attacked from outside.

Every test here is ``slow`` (CI runs it once, with the rest of the suite; ``-m "not slow"`` skips
it locally). Tests record figures with the ``figures`` fixture; they are printed at the end of
the run and copied by hand into BENCHMARKS.md. No figure is asserted: speed only in benchmarks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

FIGURES: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/reliability/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def figures() -> Iterator[dict[str, str]]:
    yield FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("reliability figures (for BENCHMARKS.md)")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")
