"""What a hook or ``request`` loads when it runs once per tool call: nothing that the standard
library's ``json`` and ``socket`` do not load already, but our own modules (BENCHMARKS.md has the
time; this holds the cause). Each check runs the real command in a fresh interpreter against a
real app socket (the Qt-free core with a scripted person)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deciders import every
from tests.support.service import ScriptedPerson, ServiceThread

ROOT = Path(__file__).resolve().parent.parent
# What the per-call commands must not pay for: argparse (with gettext, locale and shutil), typing,
# threading, weakref, dataclasses (with inspect), asyncio, pathlib's helpers, logging; ``signal``, whose
# enums cost about 1 ms to build (the hook's alarm uses ``_signal``), and ``struct`` with its extension.
HEAVY = ("argparse", "gettext", "locale", "shutil", "typing", "threading", "weakref", "dataclasses", "inspect",
         "asyncio", "logging", "subprocess", "tempfile", "urllib", "signal", "struct", "_struct")

PROBE = """
import json, runpy, socket, sys
before = set(sys.modules)
sys.argv = ["desktop-approver", *json.loads(sys.argv[1])]
try:
    runpy.run_module("desktop_approver", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "loaded": sorted(set(sys.modules) - before)}), file=sys.stderr)
"""


@pytest.fixture
def app(tmp_path: Path) -> Iterator[str]:
    person = ScriptedPerson(every("deny"))
    with ServiceThread(tmp_path, person) as service:
        yield str(service.socket_path)


def _loaded(argv: list[str], stdin: str = "") -> tuple[int, list[str]]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DESKTOP_APPROVER_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], input=stdin, capture_output=True,
                          text=True, timeout=60, env=env)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"]


def _heavy(loaded: list[str]) -> list[str]:
    return [name for name in loaded if name.split(".")[0] in HEAVY]


def test_the_claude_code_hook_loads_nothing_heavy(app: str) -> None:
    event = {"session_id": "s1", "cwd": str(ROOT), "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "ls"}}
    code, loaded = _loaded(["hook", "claude-code", "--socket", app], json.dumps(event))
    assert code == 0
    assert "desktop_approver.commands.hook" in loaded  # it really ran
    assert _heavy(loaded) == []


def test_request_loads_nothing_heavy(app: str) -> None:
    code, loaded = _loaded(["request", "--socket", app, "--tool", "Bash", "--args", '{"command": "ls"}'])
    assert code == 1  # the scripted person denies
    assert "desktop_approver.client" in loaded
    assert _heavy(loaded) == []


def test_help_still_comes_from_argparse() -> None:
    code, loaded = _loaded(["hook", "--help"])
    assert code == 0
    assert "argparse" in loaded
