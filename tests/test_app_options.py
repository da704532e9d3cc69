"""The app's number options and its settings file refuse NaN, infinities, zero and negatives.

``float()`` reads "nan", "inf" and "-1e999": a NaN default timeout compares false with every clock
reading and an infinite one never ends, so a request would wait forever (or, with NaN, be decided
by whichever comparison the code happened to make). They are usage errors where they are given:
through the real CLI in a subprocess, exit code 2, argparse's one-line error naming the option,
and no app started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_approver.cli import build_parser
from desktop_approver.client import settings

ROOT = Path(__file__).resolve().parent.parent

NOT_A_FINITE_POSITIVE = ["nan", "NaN", "inf", "-inf", "1e999", "0", "-5"]
# (command, option): every number option of the app's commands
APP_NUMBER_OPTIONS = [("tray", "--timeout"), ("tray", "--history-days"), ("tray", "--session-idle"),
                      ("demo", "--timeout"), ("history", "--keep-days")]


def cli(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "desktop_approver", *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=tmp_path)


@pytest.mark.parametrize("value", NOT_A_FINITE_POSITIVE)
@pytest.mark.parametrize(("command", "option"), APP_NUMBER_OPTIONS)
def test_an_app_number_option_refuses_what_is_not_a_finite_number_above_zero(
        tmp_path: Path, command: str, option: str, value: str) -> None:
    result = cli(command, "--socket" if command != "history" else "--audit-db", str(tmp_path / "x"),
                 f"{option}={value}", tmp_path=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("usage: desktop-approver"), result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"desktop-approver {command}: error: argument {option}: "), last
    assert "finite number of" in last and "above 0" in last and repr(value) in last, last
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()  # nothing started: no socket, no audit log


@pytest.mark.parametrize("command", ["tray", "demo"])
def test_the_default_timeout_is_at_most_the_protocols_longest(tmp_path: Path, command: str) -> None:
    """A request may wait at most 86400 s (ipc/PROTOCOL.md); a longer default could never be sent."""
    result = cli(command, "--socket", str(tmp_path / "x"), "--timeout=86401", tmp_path=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1].endswith(
        "argument --timeout: must be at most 86400 seconds, not '86401'"), result.stderr


@pytest.mark.parametrize(("option", "value", "parsed"), [
    ("--timeout", "0.5", 0.5), ("--timeout", "86400", 86400.0), ("--timeout", "45", 45.0),
    ("--history-days", "1e3", 1000.0), ("--session-idle", "0.25", 0.25),
])
def test_finite_numbers_above_zero_are_taken(option: str, value: str, parsed: float) -> None:
    args = build_parser(with_module_commands=False).parse_args(["tray", option, value])
    assert getattr(args, option.lstrip("-").replace("-", "_")) == parsed


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "0", "0.5", "86401"])
def test_the_settings_file_refuses_a_timeout_that_is_not_a_finite_number_in_range(tmp_path: Path,
                                                                                    value: str) -> None:
    """TOML reads ``nan`` and ``inf`` as floats; the settings file keeps 1 to 86400 seconds."""
    path = tmp_path / "settings.toml"
    path.write_text(f"timeout = {value}\n", encoding="utf-8")
    with pytest.raises(settings.SettingsError, match=r"timeout must be between 1 and 86400 seconds"):
        settings.load(path)


def test_the_settings_file_takes_a_timeout_in_range(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("timeout = 86400\n", encoding="utf-8")
    assert settings.load(path).timeout == 86400
