"""The global mode: persisted, approve_all ends by itself, listeners hear changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_approver.core.decisions import modes
from desktop_approver.core.decisions.modes import ModeState


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_default_is_interactive_and_unknown_modes_are_refused(tmp_path: Path) -> None:
    state = ModeState(tmp_path / "state.json")
    assert state.mode == modes.INTERACTIVE and state.until is None
    with pytest.raises(ValueError):
        state.set("party")
    with pytest.raises(ValueError):
        state.set(modes.APPROVE_ALL)          # needs a duration
    assert state.mode == modes.INTERACTIVE


def test_mode_survives_a_new_instance(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.json"
    ModeState(path).set(modes.DENY_ALL)
    assert ModeState(path).mode == modes.DENY_ALL
    clock = Clock()
    ModeState(path, clock=clock, monotonic=clock).set(modes.APPROVE_ALL, seconds=60)
    again = ModeState(path, clock=clock, monotonic=clock)
    assert again.mode == modes.APPROVE_ALL and again.until == clock.now + 60


def test_approve_all_expires_by_itself_and_says_so(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "state.json"
    state = ModeState(path, clock=clock, monotonic=clock)
    heard: list[tuple[str, str | None]] = []
    state.listeners.append(lambda mode, reason: heard.append((mode, reason)))
    state.set(modes.APPROVE_ALL, seconds=30)
    clock.now += 29
    assert state.mode == modes.APPROVE_ALL
    clock.now += 1
    assert state.mode == modes.INTERACTIVE and state.until is None
    assert heard == [(modes.APPROVE_ALL, None), (modes.INTERACTIVE, "approve-all period ended")]
    assert ModeState(path, clock=clock, monotonic=clock).mode == modes.INTERACTIVE


def test_an_expired_approve_all_on_disk_loads_as_interactive(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "state.json"
    ModeState(path, clock=clock, monotonic=clock).set(modes.APPROVE_ALL, seconds=10)
    clock.now += 3600
    assert ModeState(path, clock=clock, monotonic=clock).mode == modes.INTERACTIVE


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"mode": "weird"}', '{"mode": "approve_all"}'])
def test_a_bad_state_file_falls_back_to_interactive(tmp_path: Path, content: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(content)
    assert ModeState(path).mode == modes.INTERACTIVE


# -- persistence and bad input, once more ----------------------------------------------------------

def test_modes_persist_and_approve_all_ends_by_itself(tmp_path: Path) -> None:
    clock = Clock()
    clock.now = 5000.0
    heard: list[tuple[str, str | None]] = []
    state = modes.ModeState(tmp_path / "state.json", clock=clock, monotonic=clock)
    state.listeners.append(lambda mode, reason: heard.append((mode, reason)))
    assert state.mode == modes.INTERACTIVE and state.until is None
    state.set(modes.APPROVE_ALL, seconds=900, reason="tray menu")
    assert state.until == 5900.0
    restarted = modes.ModeState(tmp_path / "state.json", clock=clock, monotonic=clock)
    assert restarted.mode == modes.APPROVE_ALL   # a restart
    clock.now += 901
    assert state.mode == modes.INTERACTIVE
    assert heard == [(modes.APPROVE_ALL, "tray menu"), (modes.INTERACTIVE, "approve-all period ended")]
    assert modes.ModeState(tmp_path / "state.json", clock=clock, monotonic=clock).mode == modes.INTERACTIVE


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


def test_approve_all_ends_by_the_monotonic_clock_whatever_the_wall_clock_does(tmp_path: Path) -> None:
    """Issue 20, item 11: a clock set back an hour turned a 20-second approve-all into an hour."""
    wall, steady = Clock(), Clock()
    state = ModeState(tmp_path / "state.json", clock=wall, monotonic=steady)
    state.set(modes.APPROVE_ALL, seconds=20)
    wall.now -= 3600                                    # set back an hour
    steady.now += 19
    assert state.mode == modes.APPROVE_ALL and state.until == wall.now + 1   # the wall end follows the clock
    restarted = ModeState(tmp_path / "state.json", clock=wall, monotonic=steady)
    assert restarted.mode == modes.APPROVE_ALL                               # same boot: still a second left
    steady.now += 1
    assert state.mode == modes.INTERACTIVE and restarted.mode == modes.INTERACTIVE


def test_after_a_reboot_approve_all_never_outlasts_the_duration_chosen(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    wall, steady = Clock(), Clock()
    ModeState(tmp_path / "state.json", clock=wall, monotonic=steady).set(modes.APPROVE_ALL, seconds=20)
    monkeypatch.setattr(modes, "_boot_id", lambda: "another boot")
    wall.now -= 3600                                    # the wall clock, set back, says an hour and 20 s are left
    after_reboot, booted = ModeState(tmp_path / "state.json", clock=wall, monotonic=Clock()), Clock()
    assert after_reboot.mode == modes.APPROVE_ALL
    assert after_reboot.until is not None and after_reboot.until <= wall.now + 20
    del booted


@pytest.mark.logs("could not be saved")
def test_a_state_file_that_cannot_be_written_never_stops_a_mode_change(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state's directory should be")
    state = ModeState(blocker / "state.json")
    state.set(modes.DENY_ALL, reason="test")
    assert state.mode == modes.DENY_ALL
