"""The app's operational log: a rotated file in the XDG state directory, and standard error.

``desktop-approver --log-level debug`` (or ``DESKTOP_APPROVER_LOG_LEVEL=debug``; the option wins)
records every state change of the ``desktop_approver`` logger hierarchy: connections, tickets
queued, shown, withdrawn and decided, notifications. The file is
``$XDG_STATE_HOME/desktop-approver/app.log`` (``~/.local/state/...`` by default), 0600 in a
0700 directory, rotated at :data:`MAX_BYTES` with :data:`BACKUPS` old files kept. Both outputs
format through :class:`~desktop_approver.core.store.logsafe.EscapingFormatter`: client text never
reaches a terminal or the file raw. The default level, ``warning``, keeps standard error as
quiet as it always was. Other libraries (qasync, asyncio) log at warning and above whatever the
level, so ``debug`` shows our own story, not the event loop's.

Standard library only, no Qt: the app's entry point calls :func:`setup` before anything else.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import IO

from .client import paths
from .core.store.logsafe import EscapingFormatter

LEVEL_ENV = "DESKTOP_APPROVER_LOG_LEVEL"
LEVELS = ("debug", "info", "warning", "error", "critical")
DEFAULT_LEVEL = "warning"
LOG_NAME = "app.log"
MAX_BYTES = 2 * 1024 * 1024
BACKUPS = 3
LOGGER = "desktop_approver"
STDERR_FORMAT = "desktop-approver: %(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


class LogLevelError(ValueError):
    """A log level that is not one of :data:`LEVELS`."""


def parse_level(text: str) -> int:
    """``"debug"`` (any case) → ``logging.DEBUG``; :class:`LogLevelError` for anything else."""
    name = text.strip().lower()
    if name not in LEVELS:
        raise LogLevelError(f"log level must be one of {', '.join(LEVELS)}, not {text!r}")
    return int(getattr(logging, name.upper()))


def default_path() -> Path:
    return paths.state_dir() / LOG_NAME


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating file that only its owner can read: 0600 when created, when reopened, after rotation."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.fchmod(fd, 0o600)  # an older file may have been made with the umask's mode
        except OSError:
            pass
        return open(fd, "a", encoding=self.encoding, errors=self.errors)


@dataclass
class LogSetup:
    """What :func:`setup` installed; :meth:`close` takes it out again (tests)."""

    level: int
    path: Path | None
    handlers: list[logging.Handler] = field(default_factory=list)
    problem: str | None = None  # why there is no log file, when there is none

    def close(self) -> None:
        root = logging.getLogger()
        for handler in self.handlers:
            root.removeHandler(handler)
            handler.close()
        self.handlers.clear()


def setup(level: str | None = None, *, path: Path | None = None, stream: IO[str] | None = None) -> LogSetup:
    """Log ``desktop_approver.*`` at ``level`` (else ``$DESKTOP_APPROVER_LOG_LEVEL``, else warning)
    to standard error and to the rotated file (``path``, default :func:`default_path`).

    A bad ``level`` raises :class:`LogLevelError` (the option is checked before this runs); a bad
    environment value is reported and the default used. A log file that cannot be opened costs
    only the file: the app logs to standard error and says why.
    """
    warnings: list[str] = []
    if level is None:
        level = os.environ.get(LEVEL_ENV) or DEFAULT_LEVEL
        try:
            number = parse_level(level)
        except LogLevelError as error:
            warnings.append(f"${LEVEL_ENV}: {error}; using {DEFAULT_LEVEL}")
            number = parse_level(DEFAULT_LEVEL)
    else:
        number = parse_level(level)
    result = LogSetup(number, None)
    root = logging.getLogger()
    console = logging.StreamHandler(stream if stream is not None else sys.stderr)
    console.setFormatter(EscapingFormatter(STDERR_FORMAT))
    result.handlers.append(console)
    target = path if path is not None else default_path()
    try:
        paths.ensure_private_dir(target.parent)
        handler = PrivateRotatingFileHandler(target, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except (OSError, paths.InsecureDirectory) as error:
        result.problem = f"no log file ({error})"
        warnings.append(f"{result.problem}; logging to standard error only")
    else:
        handler.setFormatter(EscapingFormatter(FILE_FORMAT))
        result.handlers.append(handler)
        result.path = target
    for installed in result.handlers:
        root.addHandler(installed)
    # Our loggers at the chosen level; everyone else's (qasync, asyncio) at warning and above.
    logging.getLogger(LOGGER).setLevel(number)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    log = logging.getLogger(__name__)
    for warning in warnings:
        log.warning("%s", warning)
    log.info("log level %s, log file %s", logging.getLevelName(number).lower(), result.path or "none")
    return result
