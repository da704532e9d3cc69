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

from ...vocabulary import MODES as MODES
from ..store.files import read_regular_file
from ...vocabulary import Mode

log = logging.getLogger(__name__)
INTERACTIVE: Mode = "interactive"
APPROVE_ALL: Mode = "approve_all"
DENY_ALL: Mode = "deny_all"
DO_NOT_DISTURB: Mode = "do_not_disturb"
STATE_BYTES = 4096
"""The state file is a line of JSON; anything bigger is not ours (and is not read)."""


class ModeState:
    def __init__(self, path: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._mode: Mode = INTERACTIVE
        self._until: float | None = None
        self.listeners: list[Callable[[Mode, str | None], None]] = []
        self._load()

    def __repr__(self) -> str:
        until = f" until={self._until:.0f}" if self._until is not None else ""
        return f"<ModeState {self._mode}{until} path={self.path}>"

    @property
    def mode(self) -> Mode:
        """The mode in force now; an expired approve_all reads as interactive (and says so)."""
        if self._until is not None and self._clock() >= self._until:
            self.set(INTERACTIVE, reason="approve-all period ended")
        return self._mode

    @property
    def until(self) -> float | None:
        return self._until if self.mode == APPROVE_ALL else None

    def set(self, mode: Mode, *, seconds: float | None = None, reason: str | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
        if mode == APPROVE_ALL and not (seconds and seconds > 0):
            raise ValueError("approve_all needs a duration")
        log.debug("mode: %s -> %s%s%s", self._mode, mode, f" for {seconds:g} s" if mode == APPROVE_ALL and seconds
                  else "", f" ({reason})" if reason else "")
        self._mode = mode
        self._until = self._clock() + seconds if mode == APPROVE_ALL and seconds else None
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
        except (OSError, ValueError, AttributeError):
            return
        if mode not in MODES or (mode == APPROVE_ALL and not isinstance(until, (int, float))):
            return
        self._mode, self._until = mode, until if mode == APPROVE_ALL else None

    def _save(self) -> None:
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"mode": self._mode, "until": self._until}))
        os.replace(tmp, self.path)
