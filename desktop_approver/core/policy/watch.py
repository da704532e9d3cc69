"""The policy in force while the person edits the file: reloaded on change, the last good one kept.

:class:`PolicyWatcher` polls the file's stat cheaply on the running asyncio loop, reloads when it
changes and, when a reload is refused, keeps the rules it had (the error goes to ``on_change``
and the log, never into the decisions).

A file that cannot be used at start (invalid TOML, a FIFO, a device, too big) leaves no good
rules to keep: the app then runs in the *safe state* (:attr:`PolicyWatcher.safe`) until the file
is fixed: one ``ask`` rule that covers every call, so no rule, no ``approve_all`` mode and no
session memory answers anything (the person does; ``deny_all`` still denies). Running with no rules
instead would turn the person's deny rules into allows.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from .explain import Explanation
from .match import Policy
from .rules import PolicyCall, PolicyError, PolicyVerdict, Rule

log = logging.getLogger(__name__)


ChangeCallback = Callable[[Policy | None, PolicyError | None], None]


class PolicyWatcher:
    """The policy in force, reloaded when the file changes; a bad edit keeps the last good policy.

    Polls ``os.stat`` every ``interval`` seconds on the running asyncio loop (cheap, and works for
    editors that replace the file as well as those that rewrite it). ``on_change(policy, None)``
    follows a successful reload, ``on_change(None, error)`` a refused one. A file that disappears
    is taken as "no rules" only when it is still missing at the next poll, so an editor that
    deletes and rewrites does not drop the block rules for a moment.
    """

    def __init__(self, path: str | os.PathLike[str], *, interval: float = 1.0,
                 on_change: ChangeCallback | None = None) -> None:
        self.path = Path(path)
        self.interval = interval
        self.on_change = on_change
        self.policy: Policy = Policy.empty(self.path)
        self.last_error: PolicyError | None = None
        self.safe = False
        """No good rules were ever read: every call is asked of the person until the file is fixed."""
        self._had_good = False                             # a good policy (or no file) has been in force
        self._signature: tuple[int, ...] | None = None    # the file as last read; None: missing
        self._gone = False                                 # the missing file has been taken as "no rules"
        self._missing_polls = 0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Load the file now and keep watching it; call from within the running loop."""
        self.check()
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def evaluate(self, call: PolicyCall) -> PolicyVerdict | None:
        return self.policy.evaluate(call)

    def explain(self, call: PolicyCall) -> Explanation:
        return self.policy.explain(call)

    def check(self) -> bool:
        """Reload if the file changed since the last look; True when the policy or error changed."""
        signature = _stat_signature(self.path)
        if signature is None:
            return self._missing()
        self._missing_polls = 0
        if signature == self._signature:
            return False
        self._signature, self._gone = signature, False
        try:
            policy = Policy.load(self.path)
        except PolicyError as error:
            self.last_error = error
            if self._had_good:
                log.warning("policy file refused, the last good rules stay in force: %s", error)
            else:
                self.policy, self.safe = ask_everything(self.path), True
                log.error("policy file refused: %s; no good rules were read, so until it is fixed every call "
                          "is asked of the person (no rule, approve-all mode or session memory answers)", error)
            self._notify(None, error)
        else:
            self.policy, self.last_error, self.safe, self._had_good = policy, None, False, True
            self._notify(policy, None)
        return True

    @property
    def problem(self) -> str | None:
        """What the person should know about the rules file, in words; None when it is in force."""
        if self.last_error is None:
            return None
        if self.safe:
            return (f"The rules file cannot be used ({self.last_error}): every call is asked of you "
                    "(no rule and no approve-all mode answers) until it is fixed.")
        return f"The rules file was refused ({self.last_error}): the last good rules stay in force."

    def _missing(self) -> bool:
        if self._gone:
            return False
        self._missing_polls += 1
        if self._signature is not None and self._missing_polls < 2:
            return False        # perhaps an editor between delete and write: look once more
        self._signature, self._gone = None, True
        self.policy, self.last_error, self.safe, self._had_good = Policy.empty(self.path), None, False, True
        self._notify(self.policy, None)
        return True

    def _notify(self, policy: Policy | None, error: PolicyError | None) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(policy, error)
        except Exception:      # a listener's bug must not stop the watching
            log.exception("policy on_change callback failed")

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle = loop.call_later(self.interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self.check()
        except Exception:      # e.g. a permission error on stat: keep the last policy, try again
            log.exception("checking the policy file failed")
        self._schedule(loop)


def ask_everything(path: Path) -> Policy:
    """The safe state's policy: one rule, ``ask``, that every call matches."""
    return Policy((Rule(action="ask", index=0, line=None, source=str(path),
                        label="the rules file cannot be used: every call is asked"),), path)


def _stat_signature(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
