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


@pytest.mark.logs("is gone: the last rules stay in force")
def test_a_missing_file_at_start_means_no_rules_but_a_deleted_one_keeps_its_rules(tmp_path: Path) -> None:
    """Red team (issue 20): deleting the rules file while the app ran silently dropped every rule."""
    path = tmp_path / "policy.toml"

    async def scenario() -> None:
        watcher = PolicyWatcher(path, interval=0.05)
        watcher.start()
        try:
            assert len(watcher.policy) == 0 and watcher.last_error is None  # the first run: no rules yet
            path.write_text('[tools]\ndeploy = "block"\n')
            await eventually(lambda: action(watcher, DEPLOY) == "block")
            path.unlink()
            await eventually(lambda: watcher.last_error is not None)
            assert action(watcher, DEPLOY) == "block" and not watcher.safe
            assert watcher.problem is not None and "is gone" in watcher.problem and "restart" in watcher.problem
            path.write_text('[tools]\ndeploy = "deny"\n')
            await eventually(lambda: watcher.last_error is None)
            assert action(watcher, DEPLOY) == "deny" and watcher.problem is None
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


@pytest.mark.logs("is gone: the last rules stay in force")
def test_a_deleted_file_is_looked_at_twice_before_the_person_is_told(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\ndeploy = "block"\n')
    changes: list[PolicyError | None] = []
    watcher = PolicyWatcher(path, on_change=lambda p, e: changes.append(e))
    watcher.check()
    path.unlink()
    assert watcher.check() is False and watcher.problem is None      # perhaps an editor between delete and write
    assert watcher.check() is True and action(watcher, DEPLOY) == "block"
    assert watcher.problem is not None and "gone" in watcher.problem
    assert watcher.check() is False and len(changes) == 2              # told once


@pytest.mark.logs("was emptied: the last rules stay in force")
def test_an_emptied_file_keeps_the_last_rules_but_a_commented_one_is_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\ndeploy = "block"\n')
    watcher = PolicyWatcher(path)
    watcher.check()
    path.write_text("")
    assert watcher.check() is True and action(watcher, DEPLOY) == "block"
    assert watcher.problem is not None and "emptied" in watcher.problem
    path.write_text("# no rules for now\n")
    assert watcher.check() is True and action(watcher, DEPLOY) is None and watcher.problem is None


def loop_path(tmp_path: Path) -> Path:
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    (tmp_path / "b.toml").symlink_to(tmp_path / "a.toml")
    return tmp_path / "a.toml"


def under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "plain").write_text("")
    return tmp_path / "plain" / "policy.toml"


@pytest.mark.logs("cannot be looked at")
@pytest.mark.parametrize("make", [loop_path, under_a_file], ids=["ELOOP", "ENOTDIR"])
def test_a_path_that_cannot_be_looked_at_is_the_safe_state_told_once(tmp_path: Path,
                                                                      make: Callable[[Path], Path]) -> None:
    """Red team: a symlink loop or a file as the parent crashed the start (uncaught OSError)."""
    path = make(tmp_path)
    changes: list[PolicyError | None] = []
    watcher = PolicyWatcher(path, on_change=lambda p, e: changes.append(e))
    assert watcher.check() is True and watcher.safe
    assert watcher.evaluate(DEPLOY) is not None and action(watcher, DEPLOY) == "ask"
    reason = "Too many levels of symbolic links" if make is loop_path else "Not a directory"
    assert watcher.problem is not None and reason in watcher.problem
    assert watcher.check() is False and watcher.check() is False and len(changes) == 1


@pytest.mark.logs("cannot be looked at")
def test_a_symlink_loop_while_running_asks_everything_until_fixed(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\ndeploy = "allow"\n')
    watcher = PolicyWatcher(path)
    watcher.check()
    path.unlink()
    path.symlink_to(tmp_path / "other.toml")
    (tmp_path / "other.toml").symlink_to(path)
    assert watcher.check() is True and action(watcher, DEPLOY) == "ask" and watcher.safe
    assert watcher.problem is not None and "symbolic links" in watcher.problem
    assert watcher.check() is False
    (tmp_path / "other.toml").unlink()
    (tmp_path / "other.toml").write_text('[tools]\ndeploy = "deny"\n')
    assert watcher.check() is True and action(watcher, DEPLOY) == "deny" and watcher.problem is None


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


def test_a_changed_file_is_read_in_a_thread_while_the_loop_goes_on(tmp_path: Path) -> None:
    """Issue 34: 50,000 rules took the loop for seconds at every edit (nothing else was answered)."""
    path = tmp_path / "policy.toml"
    path.write_text('version = 1\n[tools]\nsearch = "allow"\n')
    many = "version = 1\n" + "".join(f'[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "prog{n} *"\n\n'
                                     for n in range(3000)) + '[tools]\nsearch = "deny"\n'

    async def main() -> tuple[bool, int, str | None]:
        watcher = PolicyWatcher(path, interval=0.05)
        watcher.start()
        assert action(watcher, SEARCH) == "allow"
        replace_file(path, many)
        while watcher._reading is None and action(watcher, SEARCH) == "allow":
            await asyncio.sleep(0.01)
        read_in_a_thread = watcher._reading is not None
        while action(watcher, SEARCH) == "allow":  # the loop turns while the thread reads
            await asyncio.sleep(0.01)
        watcher.stop()
        return read_in_a_thread, len(watcher.policy), action(watcher, SEARCH)

    read_in_a_thread, rules, answer = asyncio.run(main())
    assert read_in_a_thread and rules == 3001 and answer == "deny"
