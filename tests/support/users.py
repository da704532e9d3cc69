"""A real second local user, for impersonation tests (another uid on the same machine).

``useradd -M barsuser`` (no home) once; its processes run through ``runuser -u barsuser -- ...``.
Tests skip, with the reason, only when we are not root (then we can neither create the user nor
switch to it); anything else that goes wrong fails the test.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

SECOND_USER = "barsuser"
SYSTEM_PYTHON = "/usr/bin/python3"  # not our venv: the second user needs nothing of ours but this script


def second_user_uid() -> int:
    """The second user's uid, creating the user when missing; skips when we are not root."""
    if os.geteuid() != 0:
        pytest.skip("impersonation by a second local user needs root (to create it and run as it)")
    try:
        return pwd.getpwnam(SECOND_USER).pw_uid
    except KeyError:
        subprocess.run(["useradd", "-M", SECOND_USER], check=True, capture_output=True, timeout=30)
        return pwd.getpwnam(SECOND_USER).pw_uid


def as_second_user(*argv: str) -> list[str]:
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    return [runuser, "-u", SECOND_USER, "--", *argv]


@pytest.fixture
def second_uid() -> int:
    return second_user_uid()


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A short, world-writable sticky directory like /tmp itself (pytest's tmp dirs are 0700, so the
    second user could not reach them); it stands in for the shared temp dir via ``TMPDIR``."""
    path = Path(tempfile.mkdtemp(prefix="da-", dir="/tmp"))
    os.chmod(path, 0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
