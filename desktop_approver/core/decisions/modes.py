"""The global mode: interactive, approve everything for a while, deny everything, do not disturb.

The mode survives a restart (a small JSON state file). ``approve_all`` always has an end time
and switches back by itself; it never approves what a policy blocks, nor destructive calls
(those still reach the person): a trusted stretch is not a blank cheque.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from ...client.vocabulary import MODES as MODES
from ...client.vocabulary import Mode
from ..store.files import read_regular_file

log = logging.getLogger(__name__)
INTERACTIVE: Mode = "interactive"
APPROVE_ALL: Mode = "approve_all"
DENY_ALL: Mode = "deny_all"
DO_NOT_DISTURB: Mode = "do_not_disturb"
STATE_BYTES = 4096
"""The state file is a line of JSON; anything bigger is not ours (and is not read)."""


class ModeState:
    """The mode in force, saved in the state file.

    ``approve_all`` ends by the *monotonic* clock: a wall clock set back an hour must not turn 20
    seconds of approving everything into an hour (nor one set forward end it early). The wall clock
    (``clock``) only says when that is, for people (``until``, ``status``). Across a restart, the
    state file's monotonic deadline holds while the machine has not rebooted (same boot id); after a
    reboot the wall clock's end is used, and never more than the duration the person chose.
    """

    def __init__(self, path: Path | None = None, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._monotonic = monotonic
        self._mode: Mode = INTERACTIVE
        self._deadline: float | None = None   # approve_all ends at this monotonic time
        self._seconds: float | None = None    # the duration the person chose
        self.listeners: list[Callable[[Mode, str | None], None]] = []
        self._load()

    def __repr__(self) -> str:
        left = f" for {self._deadline - self._monotonic():.0f}s more" if self._deadline is not None else ""
        return f"<ModeState {self._mode}{left} path={self.path}>"

    @property
    def mode(self) -> Mode:
        """The mode in force now; an expired approve_all reads as interactive (and says so)."""
        if self._deadline is not None and self._monotonic() >= self._deadline:
            self.set(INTERACTIVE, reason="approve-all period ended")
        return self._mode

    @property
    def until(self) -> float | None:
        """When approve_all ends, by the wall clock as it reads now (None in any other mode)."""
        if self.mode != APPROVE_ALL or self._deadline is None:
            return None
        return self._clock() + (self._deadline - self._monotonic())

    @property
    def left(self) -> float | None:
        """Seconds of approve_all left, by the monotonic clock (None in any other mode)."""
        if self.mode != APPROVE_ALL or self._deadline is None:
            return None
        return max(0.0, self._deadline - self._monotonic())

    def set(self, mode: Mode, *, seconds: float | None = None, reason: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        if mode == APPROVE_ALL and not (seconds and seconds > 0):
            raise ValueError("approve_all needs a duration")
        log.debug("mode: %s -> %s%s%s", self._mode, mode, f" for {seconds:g} s" if mode == APPROVE_ALL and seconds
                  else "", f" ({reason})" if reason else "")
        self._mode = mode
        timed = mode == APPROVE_ALL and seconds
        self._deadline = self._monotonic() + seconds if timed and seconds else None
        self._seconds = seconds if timed else None
        self._save()
        for listener in list(self.listeners):
            listener(mode, reason)

    def as_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "until": self.until}

    def _load(self) -> None:
        if not self.path:
            return
        try:
            data = json.loads(read_regular_file(self.path, STATE_BYTES))
            mode, until = data.get("mode", INTERACTIVE), data.get("until")
            seconds, deadline, boot = data.get("seconds"), data.get("deadline"), data.get("boot")
        except (OSError, ValueError, AttributeError):
            return
        if mode not in MODES or (mode == APPROVE_ALL and not _number(until)):
            return
        if mode != APPROVE_ALL:
            self._mode = mode
            return
        if _number(deadline) and boot is not None and boot == _boot_id():
            left = deadline - self._monotonic()           # the same boot: the monotonic clock still counts
        else:
            left = until - self._clock()                  # after a reboot: the wall clock, at most the duration
        if _number(seconds) and seconds > 0:
            left = min(left, seconds)
        if left > 0:
            self._mode, self._deadline, self._seconds = mode, self._monotonic() + left, seconds
        else:
            self._mode = INTERACTIVE

    def _save(self) -> None:
        if not self.path:
            return
        state: dict[str, object] = {"mode": self._mode, "until": None}
        if self._deadline is not None:
            left = self._deadline - self._monotonic()
            state.update(until=self._clock() + left, seconds=self._seconds, deadline=self._deadline, boot=_boot_id())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.path)
        except OSError as exc:  # a read-only or full disk: the mode holds in this run, and the person is told
            log.warning("the mode %s holds, but it could not be saved for the next start: %s", self._mode, exc)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _boot_id() -> str | None:
    """This boot of the machine (Linux): the monotonic clock counts from it."""
    try:
        return read_regular_file("/proc/sys/kernel/random/boot_id", 64).decode().strip() or None
    except OSError:
        return None
