"""``desktop-approver mcp-permission``: Claude Code's ``--permission-prompt-tool``, served over MCP stdio.

::

    claude -p "..." --mcp-config '{"mcpServers": {"desktop-approver": {"command": "desktop-approver",
        "args": ["mcp-permission"]}}}' --permission-prompt-tool mcp__desktop-approver__approve

Needs the ``[mcp]`` extra. The work is in :mod:`desktop_approver.adapters.mcp`.
"""

from __future__ import annotations

import argparse
import sys

from .mcp_gate import EXTRA_MISSING, add_approver_options, approver_from, client_gone, client_left


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_approver_options(parser)


def run(args: argparse.Namespace) -> int:
    try:
        import anyio

        from ..adapters.mcp import serve_permission_tool
    except ModuleNotFoundError as exc:
        print("desktop-approver: mcp-permission needs the [mcp] extra "
              f"(pip install 'desktop-approver[mcp]'): {exc}", file=sys.stderr)
        return EXTRA_MISSING
    try:
        anyio.run(lambda: serve_permission_tool(approver_from(args, default_agent="claude-code")))
    except (OSError, BaseExceptionGroup) as exc:
        if not client_gone(exc):
            raise
        return client_left("mcp-permission")
    return 0
