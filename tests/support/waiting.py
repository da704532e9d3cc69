"""Waiting for a condition instead of sleeping: the one polling loop of the process tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

WAIT = 60.0
"""Seconds any one condition may take to come true on two loaded cores (a failure says which)."""


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """``condition()``'s first true value; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value
