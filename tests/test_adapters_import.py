"""The adapters stay out of the way: ``import desktop_approver`` loads no adapter and no framework,
the client and the per-call commands import only the standard library, and each adapter module
imports its own framework only (checked in a fresh interpreter each time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORK_MODULES = ("pydantic_ai", "agents", "langchain", "langgraph", "agent_framework", "claude_agent_sdk",
                     "crewai", "mcp", "PySide6", "pydantic")
ADAPTERS = {"pydantic_ai": "pydantic_ai", "openai_agents": "agents", "langchain": "langchain",
            "agent_framework": "agent_framework", "claude_agent_sdk": "claude_agent_sdk", "crewai": "crewai",
            "mcp": "mcp"}


def loaded_after(code: str) -> set[str]:
    """The top-level module names a fresh interpreter has loaded after running ``code``."""
    probe = code + "\nimport sys, json; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_import_desktop_approver_loads_no_adapter_and_no_framework() -> None:
    code = "import desktop_approver; from desktop_approver import Client, AsyncClient, previews"
    loaded = loaded_after(code + "\nimport sys\n"
                          "assert not [m for m in sys.modules if m.startswith('desktop_approver.adapters')]\n"
                          "assert 'desktop_approver.testing' not in sys.modules")
    assert not loaded & set(FRAMEWORK_MODULES)


def test_no_adapter_module_is_loaded_by_the_client_or_the_hook_command() -> None:
    code = ("import sys, desktop_approver.cli as cli\n"
            "cli.build_parser(with_module_commands=['hook', 'run'])\n"
            "bad = [m for m in sys.modules if m.startswith('desktop_approver.adapters')]\n"
            "bad += [m for m in sys.modules if m == 'desktop_approver.testing']\n"
            "assert not bad, bad")
    assert not loaded_after(code) & set(FRAMEWORK_MODULES)


def test_the_client_and_adapter_base_use_only_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names) | {"desktop_approver"} | loaded_after("pass")  # site's own hooks
    loaded = loaded_after("import desktop_approver.adapters.base, desktop_approver.client.async_client")
    assert loaded <= stdlib, sorted(loaded - stdlib)


def test_the_fake_approver_for_agents_tests_uses_only_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names) | {"desktop_approver"} | loaded_after("pass")
    loaded = loaded_after("import desktop_approver.testing")
    assert loaded <= stdlib, sorted(loaded - stdlib)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_each_adapter_imports_its_own_framework_and_never_qt(adapter: str) -> None:
    framework = ADAPTERS[adapter]
    pytest.importorskip(framework, reason=f"the framework of the {adapter} adapter is not installed")
    loaded = loaded_after(f"import desktop_approver.adapters.{adapter}")
    assert framework in loaded and "PySide6" not in loaded
