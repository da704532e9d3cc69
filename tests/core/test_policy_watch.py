"""Hot reload: edits take effect, a broken file keeps the last good policy, fixing it recovers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from desktop_approver.core.policy import Policy, PolicyCall, PolicyError, PolicyWatcher

DEADLINE = 20.0
# Read as the app reads them once the catalog knows the tools: fully understood, moderate.
SEARCH = PolicyCall("search", {"q": "x"}, risk="moderate", understood=True)
DEPLOY = PolicyCall("deploy", {"env": "prod"}, risk="moderate", understood=True)



async def eventually(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` holds; a generous deadline, no assumption on how soon."""
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not condition():
        assert loop.time() < end, "the watcher did not pick up the change"
        await asyncio.sleep(0.02)


def action(watcher: PolicyWatcher, call: PolicyCall) -> str | None:
    verdict = watcher.evaluate(call)
    return verdict.action if verdict else None


def replace_file(path: Path, text: str) -> None:
    """Write the way most editors save: a new file renamed over the old one."""
    temp = path.with_suffix(".tmp")
    temp.write_text(text)
    os.replace(temp, path)


@pytest.mark.logs("policy file refused, the last good rules stay in force")
def test_edits_take_effect_and_a_broken_file_keeps_the_last_good_policy(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\nsearch = "allow"\n')
    changes: list[tuple[Policy | None, PolicyError | None]] = []

    async def scenario() -> None:
        watcher = PolicyWatcher(path, interval=0.05, on_change=lambda p, e: changes.append((p, e)))
        watcher.start()
        try:
            assert action(watcher, SEARCH) == "allow" and watcher.last_error is None

            replace_file(path, '[tools]\nsearch = "allow"\ndeploy = "block"\n')
            await eventually(lambda: action(watcher, DEPLOY) == "block")

            with path.open("a") as handle:                 # rewritten in place, now broken
                handle.write('\n[[rule]]\naction = "alow"\n')
            await eventually(lambda: watcher.last_error is not None)
            assert watcher.last_error.line == 6 and "unknown action" in watcher.last_error.reason
            assert action(watcher, DEPLOY) == "block"         # the last good policy stays in force
            assert action(watcher, SEARCH) == "allow"

            replace_file(path, '[tools]\ndeploy = "deny"\n')
            await eventually(lambda: watcher.last_error is None)
            assert action(watcher, DEPLOY) == "deny"
            assert action(watcher, SEARCH) is None
        finally:
            watcher.stop()

    asyncio.run(scenario())
    kinds = [("policy" if p is not None else "error") for p, _ in changes]
    assert kinds == ["policy", "policy", "error", "policy"]
    assert isinstance(changes[2][1], PolicyError)


def test_a_missing_file_means_no_rules_until_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"

    async def scenario() -> None:
        watcher = PolicyWatcher(path, interval=0.05)
        watcher.start()
        try:
            assert len(watcher.policy) == 0 and watcher.last_error is None
            path.write_text('[tools]\ndeploy = "block"\n')
            await eventually(lambda: action(watcher, DEPLOY) == "block")
            path.unlink()
            await eventually(lambda: len(watcher.policy) == 0)
            assert watcher.last_error is None
        finally:
            watcher.stop()

    asyncio.run(scenario())


@pytest.mark.logs("policy file refused")
def test_a_file_broken_from_the_start_reports_and_asks_everything(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[[rule]\n")
    watcher = PolicyWatcher(path)
    assert watcher.check() is True
    assert watcher.last_error is not None and watcher.last_error.line == 1
    verdict = watcher.evaluate(DEPLOY)                    # an ask rule: no mode or memory answers either
    assert verdict is not None and verdict.action == "ask" and watcher.safe
    assert watcher.problem is not None and "every call is asked" in watcher.problem
    assert watcher.check() is False                       # unchanged file: not read again


def test_a_deleted_file_is_looked_at_twice_before_dropping_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\ndeploy = "block"\n')
    watcher = PolicyWatcher(path)
    watcher.check()
    path.unlink()
    assert watcher.check() is False and action(watcher, DEPLOY) == "block"
    assert watcher.check() is True and action(watcher, DEPLOY) is None


@pytest.mark.timeout(30)
@pytest.mark.logs("policy file refused")
@pytest.mark.parametrize("kind", ["FIFO", "device", "directory"])
def test_only_a_regular_file_is_read_and_never_with_a_wait(tmp_path: Path, kind: str) -> None:
    """Issue 20, item 7: a FIFO as the rules file hung the event loop in open() for good."""
    path = tmp_path / "policy.toml"
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    watcher = PolicyWatcher(path)
    assert watcher.check() is True
    assert watcher.last_error is not None and "not a regular file" in str(watcher.last_error)
    assert watcher.safe and watcher.evaluate(DEPLOY) is not None
