"""A closed app leaves no tray clock running: a tick after the service closed would write to a
closed audit log, in whatever runs Qt's loop next."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_closing_the_app_stops_the_tray_s_clocks(tmp_path: Path, run: Any) -> None:
    from desktop_approver.core.decisions import modes
    from desktop_approver.core.service import ServiceOptions
    from desktop_approver.gui.app import DesktopApprover

    options = ServiceOptions(socket_path=tmp_path / "s" / "approver.sock", audit_path=tmp_path / "audit.sqlite3",
                             policy_path=None, state_path=None)
    app = DesktopApprover(options, arming_delay_ms=0)

    async def scenario() -> None:
        await app.start()
        app.choose_mode(modes.APPROVE_ALL, 600)
        assert app.tray._mode_clock.isActive()
        app.tray.menu.aboutToShow.emit()
        await app.close()
        assert not app.tray._mode_clock.isActive() and not app.tray._clock.isActive()

    run(scenario())
