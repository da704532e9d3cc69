"""The app's operational log: ``--log-level``, ``$DESKTOP_APPROVER_LOG_LEVEL``, a private rotated file."""

from __future__ import annotations

import io
import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path

import pytest

from desktop_approver import logs
from desktop_approver.cli import LOG_LEVELS, build_parser
from desktop_approver.client import paths

ROOT = Path(__file__).resolve().parent.parent


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def installed() -> Iterator[list[logs.LogSetup]]:
    """Set-ups made by a test, taken out again after it (with the levels they changed)."""
    made: list[logs.LogSetup] = []
    ours, root = logging.getLogger(logs.LOGGER), logging.getLogger()
    levels = ours.level, root.level
    yield made
    for setup in made:
        setup.close()
    ours.setLevel(levels[0])
    root.setLevel(levels[1])


def test_the_option_is_on_the_app_commands_and_names_the_levels_logs_knows() -> None:
    assert LOG_LEVELS == logs.LEVELS
    parser = build_parser(with_module_commands=False)
    for command in ("tray", "demo"):
        assert parser.parse_args([command, "--log-level", "DEBUG"]).log_level == "debug"
        assert parser.parse_args([command]).log_level is None
    with pytest.raises(SystemExit):
        parser.parse_args(["tray", "--log-level", "chatty"])


@pytest.mark.logs("bad .* client")
def test_the_level_goes_to_our_loggers_and_the_file_is_private(installed: list[logs.LogSetup]) -> None:
    stream = io.StringIO()
    setup = logs.setup("debug", stream=stream)
    installed.append(setup)
    assert setup.level == logging.DEBUG and setup.problem is None
    state = Path(os.environ["XDG_STATE_HOME"])  # the test's own (tests/conftest.py)
    assert setup.path == paths.state_dir() / "app.log" == state / "desktop-approver" / "app.log"
    assert mode_of(setup.path.parent) == 0o700 and mode_of(setup.path) == 0o600
    logging.getLogger("desktop_approver.gui.decider").debug("ticket %s presented", "t1")
    logging.getLogger("qasync").debug("the event loop's chatter")  # others stay at warning
    logging.getLogger("desktop_approver.core.transport.server").warning("bad \x1b[2J client")
    for handler in setup.handlers:
        handler.flush()
    written = setup.path.read_text()
    assert "DEBUG desktop_approver.gui.decider: ticket t1 presented" in written
    assert "desktop-approver: DEBUG desktop_approver.gui.decider: ticket t1 presented" in stream.getvalue()
    assert "chatter" not in written and "chatter" not in stream.getvalue()
    assert "bad \\x1b[2J client" in written and "\x1b" not in written  # escaped, as on the terminal


def test_the_file_rotates_and_every_file_stays_private(installed: list[logs.LogSetup]) -> None:
    setup = logs.setup("info", stream=io.StringIO())
    installed.append(setup)
    assert setup.path is not None
    rotating = [handler for handler in setup.handlers if isinstance(handler, RotatingFileHandler)]
    assert len(rotating) == 1
    assert (rotating[0].maxBytes, rotating[0].backupCount) == (logs.MAX_BYTES, logs.BACKUPS)
    assert 1024 * 1024 <= logs.MAX_BYTES <= 10 * 1024 * 1024 and 2 <= logs.BACKUPS <= 5
    rotating[0].doRollover()
    logging.getLogger("desktop_approver.test").info("after the rollover")
    rotating[0].flush()
    old = setup.path.with_name("app.log.1")
    assert old.is_file() and mode_of(old) == 0o600 and mode_of(setup.path) == 0o600
    assert "after the rollover" in setup.path.read_text()


@pytest.mark.logs("log level must be one of")
def test_the_environment_is_the_fallback_and_a_bad_value_is_reported(installed: list[logs.LogSetup],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(logs.LEVEL_ENV, "info")
    installed.append(logs.setup(None, stream=io.StringIO()))
    assert installed[-1].level == logging.INFO and logging.getLogger("desktop_approver").level == logging.INFO
    installed.pop().close()
    installed.append(logs.setup("error", stream=io.StringIO()))  # the option wins
    assert installed[-1].level == logging.ERROR
    installed.pop().close()
    monkeypatch.setenv(logs.LEVEL_ENV, "loud")
    stream = io.StringIO()
    installed.append(logs.setup(None, stream=stream))
    assert installed[-1].level == logging.WARNING
    assert "DESKTOP_APPROVER_LOG_LEVEL" in stream.getvalue() and "'loud'" in stream.getvalue()


@pytest.mark.logs("no log file")
def test_a_log_file_that_cannot_be_made_costs_only_the_file(installed: list[logs.LogSetup], tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    stream = io.StringIO()
    setup = logs.setup("info", path=blocker / "app.log", stream=stream)
    installed.append(setup)
    assert setup.path is None and setup.problem and len(setup.handlers) == 1
    assert "standard error only" in stream.getvalue()


@pytest.mark.gui
def test_the_running_app_logs_each_ticket_at_debug(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runtime = home / "run"
    runtime.mkdir(parents=True, mode=0o700)
    state = home / "state"
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               XDG_STATE_HOME=str(state), XDG_RUNTIME_DIR=str(runtime), QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=str(ROOT))
    env.pop(logs.LEVEL_ENV, None)
    socket = runtime / "approver.sock"
    app = subprocess.Popen([sys.executable, "-m", "desktop_approver", "--log-level", "debug", "--no-notifications",
                            "--socket", str(socket)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        assert app.stderr is not None
        deadline = time.monotonic() + 60
        while "is listening on" not in app.stderr.readline():
            assert time.monotonic() < deadline and app.poll() is None, "the app did not start"
        asked = subprocess.run([sys.executable, "-m", "desktop_approver", "request", "--socket", str(socket),
                                "--tool", "Bash", "--args", '{"command": "ls"}', "--agent", "codex", "--timeout", "1"],
                               env=env, capture_output=True, text=True, timeout=60)
        assert asked.returncode == 1, asked.stderr  # nobody answered: denied
    finally:
        app.terminate()
        app.wait(30)
        if app.stderr is not None:
            app.stderr.close()
    log = state / "desktop-approver" / "app.log"
    assert mode_of(log.parent) == 0o700 and mode_of(log) == 0o600
    written = log.read_text()
    assert "from codex queued" in written and "dialog shows ticket" in written and "left the queue" in written
