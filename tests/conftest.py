"""Test-wide setup: offscreen Qt, a private HOME, and markers by folder.

Every test runs with its own HOME and XDG directories, so nothing touches the real desktop's
socket, policy, audit log or keyring.
"""

from __future__ import annotations

import ast  # noqa: F401 - loaded before the lock below wraps ast.parse
import asyncio
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import _pytest.assertion.rewrite
import pytest

from desktop_approver.core.store.ast_lock import serialise_ast_construction, under_ast_lock

ROOT = Path(__file__).resolve().parent.parent
# CPython gh-106905: ASTs built from several threads at once (the app's threads formatting
# tracebacks while a test parses source) raise "AST constructor recursion depth mismatch".
serialise_ast_construction()
# pytest turns each test module's rewritten AST into code (compile of an AST object: the same
# shared counter), also when a thread imports one (a support module loaded lazily in a ServiceThread).
_pytest.assertion.rewrite.compile = under_ast_lock(compile)  # type: ignore[attr-defined]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")

# shared fixtures: serve, private_bus, second_uid, shared_tmp, ...
# logfail: a warning or error the app logs fails the test unless the test expects it.
pytest_plugins = ["tests.support.service", "tests.support.dbus", "tests.support.users", "tests.support.logfail"]


@pytest.fixture(autouse=True)
def private_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                      ("XDG_STATE_HOME", ".local/state")):
        monkeypatch.setenv(name, str(home / sub))
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    for name in ("DESKTOP_APPROVER_SOCKET", "DESKTOP_APPROVER_TOKEN", "DESKTOP_APPROVER_SESSION",
                 "DESKTOP_APPROVER_AGENT", "DESKTOP_APPROVER_URL", "DESKTOP_APPROVER_NATS_CREDS"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(autouse=True)
def no_default_loop_left_behind() -> Iterator[None]:
    """Frameworks' ``run_sync`` helpers (openai-agents, pydantic-ai) leave an event loop set as the
    main thread's default; dropped later, it would warn in whichever test happened to be running.
    Each test ends with no default loop: one left behind is closed here."""
    yield
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def no_window_left_behind() -> Iterator[None]:
    """Windows a test made (dialogs, inboxes, tray menus) are deleted when it ends. Left alive they
    pile up over the session (500 top-level windows and 13,000 widgets by the end of tests/gui):
    every later palette change restyles all of them, and each test runs slower than the last."""
    widgets = sys.modules.get("PySide6.QtWidgets")
    before = {id(window) for window in widgets.QApplication.topLevelWidgets()} \
        if widgets is not None and widgets.QApplication.instance() is not None else set()
    yield
    widgets = sys.modules.get("PySide6.QtWidgets")
    if widgets is None or widgets.QApplication.instance() is None:
        return
    from PySide6.QtCore import QCoreApplication, QEvent

    for window in widgets.QApplication.topLevelWidgets():
        # A menu is left alone: a tray icon the test kept holds its menu by a bare pointer (deleting
        # one under a live icon crashed the next test's event processing).
        if id(window) not in before and not isinstance(window, widgets.QMenu):
            window.close()
            window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture(autouse=True)
def light_render_palette() -> Iterator[None]:
    """The renderers' palette is process-wide (``highlight.set_dark``, which the GUI's theme calls):
    a test that turns the dark theme on must not leave the next test's colours dark."""
    yield
    highlight = sys.modules.get("desktop_approver.render.highlight")
    if highlight is not None:
        highlight.set_dark(False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/gui/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.gui)
