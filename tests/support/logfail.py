"""Fail a test when the app logs a warning or an error the test did not ask about.

The app fails closed in many ``except`` blocks: each logs, answers ``deny`` and carries on. A test
would pass while one of them fires for a reason nobody meant; this plugin makes that a failure.
A test that expects such a line says so by taking ``caplog`` (and asserting on it) or with
``@pytest.mark.logs("regex", ...)``, whose patterns each excuse the records they match.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Generator, Iterator

import pytest

WATCHED = "desktop_approver"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _unexpected(item: pytest.Item, records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    if "caplog" in getattr(item, "fixturenames", ()):
        return []
    patterns = [re.compile(p) for marker in item.iter_markers("logs") for p in marker.args]
    return [r for r in records if not any(p.search(r.getMessage()) for p in patterns)]


@contextlib.contextmanager
def _watching(item: pytest.Item) -> Iterator[None]:
    handler = _Collect()
    logger = logging.getLogger(WATCHED)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    unexpected = _unexpected(item, handler.records)
    if unexpected:
        lines = "\n".join(f"  {r.levelname} {r.name}: {r.getMessage()}" for r in unexpected[:10])
        pytest.fail(f"the app logged {len(unexpected)} unexpected warning(s)/error(s):\n{lines}\n"
                    "(expect them with caplog or @pytest.mark.logs(pattern))", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _watching(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _watching(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    with _watching(item):
        return (yield)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "logs(*patterns): the app's warnings/errors this test expects (regex)")
