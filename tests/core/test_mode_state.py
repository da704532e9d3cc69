"""The global mode and its persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_approver.core import modes


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def test_modes_persist_and_approve_all_ends_by_itself(tmp_path: Path) -> None:
    clock = Clock()
    heard: list[tuple[str, str | None]] = []
    state = modes.ModeState(tmp_path / "state.json", clock=clock)
    state.listeners.append(lambda mode, reason: heard.append((mode, reason)))
    assert state.mode == modes.INTERACTIVE and state.until is None
    state.set(modes.APPROVE_ALL, seconds=900, reason="tray menu")
    assert state.until == 5900.0
    assert modes.ModeState(tmp_path / "state.json", clock=clock).mode == modes.APPROVE_ALL   # a restart
    clock.now += 901
    assert state.mode == modes.INTERACTIVE
    assert heard == [(modes.APPROVE_ALL, "tray menu"), (modes.INTERACTIVE, "approve-all period ended")]
    assert modes.ModeState(tmp_path / "state.json", clock=clock).mode == modes.INTERACTIVE


@pytest.mark.parametrize("mode", [modes.DENY_ALL, modes.DO_NOT_DISTURB])
def test_other_modes_last_until_changed(tmp_path: Path, mode: str) -> None:
    modes.ModeState(tmp_path / "state.json").set(mode)
    again = modes.ModeState(tmp_path / "state.json")
    assert again.mode == mode and again.as_dict() == {"mode": mode, "until": None}


def test_bad_modes_and_bad_state_files(tmp_path: Path) -> None:
    state = modes.ModeState(tmp_path / "state.json")
    with pytest.raises(ValueError):
        state.set("yolo")
    with pytest.raises(ValueError):
        state.set(modes.APPROVE_ALL)          # approve-all always has an end
    (tmp_path / "broken.json").write_text("{not json")
    assert modes.ModeState(tmp_path / "broken.json").mode == modes.INTERACTIVE
    (tmp_path / "odd.json").write_text('{"mode": "approve_all"}')        # no end time: ignored
    assert modes.ModeState(tmp_path / "odd.json").mode == modes.INTERACTIVE
