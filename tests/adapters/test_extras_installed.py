"""CI installs every adapter's extra (``.ci/run`` sets DESKTOP_APPROVER_ALL_ADAPTERS): there, a
missing framework is a failure, not a quietly skipped adapter test."""

from __future__ import annotations

import importlib.util
import os

import pytest

FRAMEWORKS = {"pydantic-ai": "pydantic_ai", "openai-agents": "agents", "langchain": "langchain",
              "agent-framework": "agent_framework", "claude-agent-sdk": "claude_agent_sdk", "crewai": "crewai",
              "mcp": "mcp"}


@pytest.mark.skipif(not os.environ.get("DESKTOP_APPROVER_ALL_ADAPTERS"),
                    reason="only where every extra is meant to be installed (CI sets DESKTOP_APPROVER_ALL_ADAPTERS)")
def test_every_adapter_extra_is_installed() -> None:
    missing = [extra for extra, module in FRAMEWORKS.items() if importlib.util.find_spec(module) is None]
    assert not missing, f"extras not installed: {missing}"
