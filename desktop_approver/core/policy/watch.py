"""The policy in force while the person edits the file: reloaded on change, the last good one kept.

:class:`PolicyWatcher` polls the file's stat cheaply on the running asyncio loop, reloads when it
changes and, when a reload is refused, keeps the rules it had (the error goes to ``on_change``
and the log, never into the decisions).

A file that cannot be used at start (invalid TOML, a FIFO, a device, too big) leaves no good
rules to keep: the app then runs in the *safe state* (:attr:`PolicyWatcher.safe`) until the file
is fixed: one ``ask`` rule that covers every call, so no rule, no ``approve_all`` mode and no
session memory answers anything (the person does; ``deny_all`` still denies). Running with no rules
instead would turn the person's deny rules into allows. The same safe state, with the true reason,
follows a path that cannot even be looked at (a symlink loop, a regular file as its parent, a
directory the app may not search), at start or later, until it can be again.

A rules file that disappears or is emptied while the app runs is never taken as "no rules": the
last rules read stay in force and the person is told, until the file is back (or has rules again)
or the app restarts (a missing file at start is the first run: no rules). A rule-less file kept
deliberately, with only comments in it, is read as it is.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .explain import Explanation
from .match import Policy
from .rules import PolicyCall, PolicyError, PolicyVerdict, Rule

log = logging.getLogger(__name__)


ChangeCallback = Callable[[Policy | None, PolicyError | None], None]


class PolicyWatcher:
    """The policy in force, reloaded when the file changes; a bad edit keeps the last good policy.

    Polls ``os.stat`` every ``interval`` seconds on the running asyncio loop (cheap, and works for
    editors that replace the file as well as those that rewrite it). ``on_change(policy, None)``
    follows a successful reload, ``on_change(None, error)`` a refused one (a file gone or emptied,
    a path that cannot be looked at). A file that disappears is reported only when it is still
    missing at the next poll (an editor between delete and write); its rules stay in force.
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
        self._good: Policy | None = None                   # the last good policy (no file at start: no rules)
        self._signature: tuple[int, ...] | None = None    # the file as last read; None: missing
        self._looked_at = False                            # the path has been looked at once (start)
        self._gone = False                                 # the missing file has been dealt with
        self._missing_polls = 0
        self._state = "rules"  # "rules", "refused", "gone", "empty" or "unusable": what problem says
        self._handle: asyncio.TimerHandle | None = None
        self._reading: asyncio.Future[tuple[Policy, Any] | PolicyError] | None = None  # a read in a thread
        self._stopped = False

    def start(self) -> None:
        """Load the file now and keep watching it; call from within the running loop."""
        self._stopped = False
        self.check()
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def evaluate(self, call: PolicyCall) -> PolicyVerdict | None:
        return self.policy.evaluate(call)

    def explain(self, call: PolicyCall, *, candidates_only: bool = False) -> Explanation:
        return self.policy.explain(call, candidates_only=candidates_only)

    def check(self) -> bool:
        """Reload if the file changed since the last look; True when the policy or error changed.
        Reads the file in the caller's thread (the start, before the socket listens)."""
        changed, to_read = self._look()
        return self._take(_read(self.path)) if to_read else changed

    def _look(self) -> tuple[bool, bool]:
        """Look at the file's stat: (whether that changed what is in force, whether it must be read)."""
        first, self._looked_at = not self._looked_at, True
        try:
            signature = _stat_signature(self.path)
        except OSError as exc:  # ELOOP, ENOTDIR, EACCES on a parent...: nothing can be known of the rules
            return self._cannot_look(exc), False
        if signature is None:
            return self._missing(first), False
        self._missing_polls = 0
        if signature == self._signature:
            return False, False
        self._signature, self._gone = signature, False
        return True, True

    def _take(self, read: tuple[Policy, Any] | PolicyError) -> bool:
        """Put what :func:`_read` found in force (on the loop: the catalog and the rules change together)."""
        if isinstance(read, PolicyError):
            self._refuse(read)
            return True
        policy, catalog = read
        from ..calls.catalog import use_catalog

        use_catalog(catalog)
        if len(policy) == 0 and self._good is not None and len(self._good) > 0 and _blank(self.path):
            self._keep_last("empty", PolicyError(self.path, None, "the file is empty"))
            return True
        self._good, self._state = policy, "rules"
        self.policy, self.last_error, self.safe = policy, None, False
        self._notify(policy, None)
        return True

    def _refuse(self, error: PolicyError) -> None:
        if self._good is not None:
            log.warning("policy file refused, the last good rules stay in force: %s", error)
            self._keep_last("refused", error, logged=True)
            return
        self.last_error, self._state = error, "refused"
        self.policy, self.safe = ask_everything(self.path), True
        log.error("policy file refused: %s; no good rules were read, so until it is fixed every call "
                  "is asked of the person (no rule, approve-all mode or session memory answers)", error)
        self._notify(None, error)

    def _keep_last(self, state: str, error: PolicyError, *, logged: bool = False) -> None:
        """The last good rules stay in force; the person is told why the file's are not."""
        assert self._good is not None
        self.policy, self.safe, self.last_error, self._state = self._good, False, error, state
        if not logged:
            log.warning("%s", self.problem)
        self._notify(None, error)

    def _cannot_look(self, exc: OSError) -> bool:
        """The path cannot be looked at: the safe state with the true reason, told once per reason."""
        signature = (-1, exc.errno or 0)
        if signature == self._signature:
            return False
        self._signature, self._gone, self._missing_polls = signature, False, 0
        reason = exc.strerror or str(exc)
        error = PolicyError(self.path, None, f"cannot be looked at: {reason}")
        self.policy, self.safe, self.last_error, self._state = ask_everything(self.path), True, error, "unusable"
        log.error("%s", self.problem)
        self._notify(None, error)
        return True

    @property
    def problem(self) -> str | None:
        """What the person should know about the rules file, in words; None when it is in force."""
        if self.last_error is None:
            return None
        if self._state == "gone":
            return (f"The rules file {self.path} is gone: the last rules stay in force until it is back "
                    "or you restart.")
        if self._state == "empty":
            return (f"The rules file {self.path} was emptied: the last rules stay in force until it has "
                    "rules again or you restart.")
        if self.safe:
            return (f"The rules file cannot be used ({self.last_error}): every call is asked of you "
                    "(no rule and no approve-all mode answers) until it is fixed.")
        return f"The rules file was refused ({self.last_error}): the last good rules stay in force."

    def _missing(self, first: bool) -> bool:
        if self._gone:
            return False
        self._missing_polls += 1
        if not first and self._missing_polls < 2:
            return False        # perhaps an editor between delete and write: look once more
        self._signature, self._gone = None, True
        if first:               # no file at start: the first run, no rules
            self._good = self.policy = Policy.empty(self.path)
            self.last_error, self.safe, self._state = None, False, "rules"
            self._notify(self.policy, None)
            return True
        error = PolicyError(self.path, None, "the file is gone")
        if self._good is None:  # never a good one (broken, or not to be looked at): stay safe, say why
            self.policy, self.safe, self.last_error, self._state = ask_everything(self.path), True, error, "refused"
            log.error("%s", self.problem)
            self._notify(None, error)
            return True
        self._keep_last("gone", error)
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
        """Look at the file on the loop; read a changed one in a thread (50,000 rules take seconds to
        read, and the app must go on answering meanwhile), and put it in force back on the loop."""
        self._handle = None
        try:
            _changed, to_read = self._look()
        except Exception:      # e.g. a permission error on stat: keep the last policy, try again
            log.exception("checking the policy file failed")
            to_read = False
        if not to_read:
            self._schedule(loop)
            return
        self._reading = loop.run_in_executor(None, _read, self.path)
        self._reading.add_done_callback(functools.partial(self._read_done, loop))

    def _read_done(self, loop: asyncio.AbstractEventLoop, reading: asyncio.Future[tuple[Policy, Any] | PolicyError]
                   ) -> None:
        self._reading = None
        if self._stopped:
            return
        try:
            self._take(reading.result())
        except Exception:      # the last policy stays; the next change is read again
            log.exception("reading the policy file failed")
            self._signature = None
        self._schedule(loop)


def _read(path: Path) -> tuple[Policy, Any] | PolicyError:
    """The rules file read and indexed (in any thread), or why it was refused."""
    try:
        return Policy.read(path)
    except PolicyError as error:
        return error


def ask_everything(path: Path) -> Policy:
    """The safe state's policy: one rule, ``ask``, that every call matches."""
    return Policy((Rule(action="ask", index=0, line=None, source=str(path),
                        label="the rules file cannot be used: every call is asked"),), path)


def _blank(path: Path) -> bool:
    """The file has nothing in it but white space (emptied, not a deliberate rule-less file)."""
    try:
        from .load import read_policy_file  # the file model (pydantic) loads with the first rules file

        return not read_policy_file(path).strip()
    except PolicyError:
        return False


def _stat_signature(path: Path) -> tuple[int, ...] | None:
    """The file as it is now; None when there is none. Raises ``OSError`` when the path cannot be
    looked at (a symlink loop, a regular file as a parent directory, no search permission)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
