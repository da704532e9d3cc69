"""Who the agent is: our own per-call commands name the program that started them, and what it went through."""

from __future__ import annotations

from pathlib import Path

from desktop_approver.gui.processes import agent_command
from tests.gui.test_dialog_fits import fake_proc


def test_request_is_named_as_itself_not_as_the_hook(tmp_path: Path) -> None:
    fake_proc(tmp_path, 30, ["bash", "deploy.sh"], 1)
    fake_proc(tmp_path, 31, ["/venv/bin/python", "/venv/bin/desktop-approver", "request", "--tool", "deploy"], 30)
    assert agent_command(31, tmp_path) == ("bash deploy.sh", "desktop-approver request")
    fake_proc(tmp_path, 32, ["python3", "-m", "desktop_approver", "request", "--tool", "x"], 30)
    assert agent_command(32, tmp_path) == ("bash deploy.sh", "desktop-approver request")


def test_the_demo_is_the_agent_itself_not_something_through_the_hook(tmp_path: Path) -> None:
    fake_proc(tmp_path, 40, ["/venv/bin/desktop-approver", "demo"], 1)
    fake_proc(tmp_path, 41, ["/venv/bin/python", "-m", "desktop_approver.demo"], 40)
    assert agent_command(41, tmp_path) == ("/venv/bin/python -m desktop_approver.demo", None)
