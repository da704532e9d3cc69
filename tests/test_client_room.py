"""The thin client is a room of its own: ``desktop_approver.client`` and everything it imports load
nothing outside the standard library and the room itself (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOM = ("desktop_approver.client.async_client", "desktop_approver.client.base", "desktop_approver.client.errors",
        "desktop_approver.client.paths", "desktop_approver.client.previews", "desktop_approver.client.server_check",
        "desktop_approver.client.settings", "desktop_approver.client.sync_client",
        "desktop_approver.client.transport", "desktop_approver.client.urls", "desktop_approver.client.vocabulary",
        "desktop_approver.client.wire", "desktop_approver.client.wording")
# What besides the room a client may load: the package itself (its version) and nothing else of ours.
ALLOWED_OF_OURS = {"desktop_approver", "desktop_approver.version", "desktop_approver.client"}


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys\nbefore = set(sys.modules)\n{code}\n"
             "import json\nprint(json.dumps(sorted(set(sys.modules) - before)))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKTOP_APPROVER_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_every_module_of_the_room_is_listed() -> None:
    found = {f"desktop_approver.client.{path.stem}" for path in (ROOT / "desktop_approver" / "client").glob("*.py")
             if path.stem != "__init__"}
    assert found == set(ROOM)


def test_the_client_room_imports_only_the_standard_library_and_itself() -> None:
    loaded = _loaded_after("\n".join(f"import {module}" for module in ROOM)
                           + "\nfrom desktop_approver.client import Client, AsyncClient")
    ours = {name for name in loaded if name.split(".")[0] == "desktop_approver"}
    assert ours <= set(ROOM) | ALLOWED_OF_OURS, sorted(ours - set(ROOM) - ALLOWED_OF_OURS)
    outside = {name.split(".")[0] for name in loaded} - set(sys.stdlib_module_names) - {"desktop_approver"}
    assert not outside, sorted(outside)


def test_the_public_names_stay_importable_from_the_package() -> None:
    loaded = _loaded_after("from desktop_approver import (Client, AsyncClient, Decision, ApproverError, "
                           "ApproverUnavailable, UntrustedServer, ProtocolError, Unauthorized, Blocked, previews)")
    assert "desktop_approver.client.sync_client" in loaded and "desktop_approver.client.previews" in loaded


def test_no_module_of_the_client_is_left_at_the_package_root() -> None:
    root = {path.stem for path in (ROOT / "desktop_approver").glob("*.py")}
    # wiring: the tray's service options, the core and the relay wired above both (tests/test_layering.py)
    assert root == {"__init__", "__main__", "cli", "demo", "logs", "testing", "version", "wiring"}
