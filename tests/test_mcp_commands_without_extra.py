"""``mcp-gate`` and ``mcp-permission`` without the ``[mcp]`` extra: a clear message and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WITHOUT_MCP = ("import sys; sys.modules['mcp'] = None; sys.modules['mcp_types'] = None\n"
               "from desktop_approver.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("command", [["mcp-gate", "--", "some-server"], ["mcp-permission"]])
def test_missing_extra_is_named(command: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", WITHOUT_MCP, *command], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "needs the [mcp] extra (pip install 'desktop-approver[mcp]')" in result.stderr
