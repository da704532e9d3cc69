"""The core's health signal reaches the tray (issue 20): a rules file that cannot be used at start,
an audit log that was deleted. The app's own wiring, through ``ServiceEvents.trouble``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gui.conftest import wait_for


@pytest.fixture
def broken_rules_app(tmp_path: Path, run: Callable[..., Any]) -> Iterator[Any]:
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    policy = tmp_path / "policy.toml"
    policy.write_text('[tools]\nBash = "deny"\n[[rule]\n')
    options = ServiceOptions(socket_path=tmp_path / "sock" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=policy, state_path=tmp_path / "state.json")
    app = DesktopApprover(options, arming_delay_ms=0)
    run(app.start())
    yield app
    run(app.close())


@pytest.mark.logs("policy file refused", "degraded", "works again")
def test_a_rules_file_unusable_at_start_shows_degraded_until_it_is_fixed(broken_rules_app: Any,
                                                                        run: Callable[..., Any]) -> None:
    app = broken_rules_app
    assert app.tray.state.value == "degraded" and "every call is asked" in app.tray.toolTip()
    app.service.options.policy_path.write_text('[tools]\nBash = "deny"\n')
    watcher = app.service.policy_watcher
    watcher.check()
    assert app.tray.state.value == "idle" and "rules" not in app.tray.toolTip()
    assert not watcher.safe and app.troubles == {}


@pytest.mark.logs("was deleted", "degraded", "works again", "write-ahead log")
def test_a_deleted_audit_log_shows_degraded_then_a_fresh_log_clears_it(approver: Any,
                                                                        run: Callable[..., Any]) -> None:
    audit = approver.service.audit
    Path(audit.path).unlink()

    async def watch() -> None:
        await wait_for(lambda: approver.tray.state.value == "degraded", what="the tray to show the lost log")
        assert "was deleted" in approver.tray.toolTip()
        await wait_for(lambda: approver.tray.state.value == "idle", what="a fresh log")
        await asyncio.sleep(0)

    run(watch())
    assert Path(audit.path).exists() and approver.troubles == {}
