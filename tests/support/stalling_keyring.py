"""A keyring backend that stops answering while a file exists, for the app in a child process.

``PYTHON_KEYRING_BACKEND=tests.support.stalling_keyring.StallingKeyring`` with
``STALLING_KEYRING_FILE=/some/path``: while that file exists, every read waits (as a locked
collection or a hung D-Bus keyring service does); once it is removed, the read goes on to the
plain-text keyring (keyrings.alt) the tests use, so both processes see the same entries.
"""

from __future__ import annotations

import os
import time

from keyrings.alt.file import PlaintextKeyring


class StallingKeyring(PlaintextKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        stall = os.environ.get("STALLING_KEYRING_FILE")
        while stall and os.path.exists(stall):
            time.sleep(0.05)
        return super().get_password(service, username)
