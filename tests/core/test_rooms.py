"""The core's rooms: every module that lived flat in ``core/`` still imports by its old name."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import desktop_approver.core as core

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", sorted(core.MOVED))
def test_an_old_module_path_is_the_same_module_as_its_room(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(core.MOVED[old])


def test_patching_the_old_name_patches_the_module_in_its_room(monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_approver.core.calls import risk

    monkeypatch.setattr("desktop_approver.core.risk.LEVELS", ("patched",))
    assert risk.LEVELS == ("patched",)


def test_from_imports_of_old_names_work_in_a_fresh_interpreter() -> None:
    code = ("from desktop_approver.core.risk import assess\n"
            "from desktop_approver.core import broker, models\n"
            "import desktop_approver.core.server as server\n"
            "print(assess.__module__, broker.__name__, models.__name__, server.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["desktop_approver.core.calls.risk.assessment",
                                   "desktop_approver.core.decisions.broker", "desktop_approver.core.messages.models",
                                   "desktop_approver.core.transport.server"]


def test_the_documented_schema_command_still_runs_by_its_old_name() -> None:
    done = subprocess.run([sys.executable, "-m", "desktop_approver.core.schema", "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr


def test_no_module_is_left_flat_in_core_but_the_service() -> None:
    flat = sorted(path.name for path in (ROOT / "desktop_approver" / "core").glob("*.py"))
    assert flat == ["__init__.py", "service.py"]


def test_every_public_name_of_the_policy_package_comes_from_the_submodule_it_names() -> None:
    """``core.policy`` loads its submodules lazily from one table: every name in ``__all__`` resolves,
    from the module the table names, and the table names nothing that is not there."""
    import importlib

    from desktop_approver.core import policy

    for name in policy.__all__:
        assert getattr(policy, name) is not None
    for name, home in policy._HOME.items():
        module = importlib.import_module(f"desktop_approver.core.policy.{home}")
        assert getattr(policy, name) is getattr(module, name)
    assert set(policy.__all__) - {"POLICY_FORMAT_MD"} <= set(policy._HOME)
