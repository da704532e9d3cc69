"""The reliability suite: the real app core in its own process, attacked from outside.

Every test here is ``slow`` (CI runs it once, with the rest of the suite; ``-m "not slow"`` skips
it locally). Tests record figures with the ``figures`` fixture; they are printed at the end of
the run and copied by hand into BENCHMARKS.md. No figure is asserted: speed only in benchmarks.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.session_bus import Session
from tests.support.tray_process import TrayApp

FIGURES: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/reliability/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def child_pipes_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests start floods of child processes (flooders, holders, sshd, the app) and read one
    line from each; every child's pipes are closed when the test ends, whatever path it took."""
    started: list[subprocess.Popen[Any]] = []
    original = subprocess.Popen.__init__

    def tracked(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(subprocess.Popen, "__init__", tracked)
    yield
    for child in started:
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


@pytest.fixture
def apps() -> Iterator[list[TrayApp]]:
    """The tray apps a test starts (it appends them): each closed when the test ends."""
    started: list[TrayApp] = []
    yield started
    for app in started:
        app.close()


@pytest.fixture
def session() -> Iterator[Session]:
    """A display with a session bus and dunst the test can kill (tests/support/session_bus.py)."""
    from tests.support.desktop import Desktop, Missing

    for program in ("dbus-daemon", "dunst", "dunstctl"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed")
    try:
        desktop = Desktop.start(1280, 800, notifications=False)
    except Missing as exc:
        pytest.skip(str(exc))
    started = Session(desktop)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def figures() -> Iterator[dict[str, str]]:
    yield FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("reliability figures (for BENCHMARKS.md)")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")
