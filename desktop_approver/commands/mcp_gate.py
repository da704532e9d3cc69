"""``desktop-approver mcp-gate [options] -- UPSTREAM CMD...``: an approving MCP server in front of another.

Point an MCP client (Claude Desktop, Cursor, an agent framework) at this command instead of the
upstream server's own; it serves the upstream's tools unchanged and asks the desktop before every
call. Needs the ``[mcp]`` extra. The work is in :mod:`desktop_approver.adapters.mcp`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..adapters.base import Approver

EXTRA_MISSING = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "desktop-approver mcp-gate [options] -- UPSTREAM_COMMAND [ARGS...]"
    add_approver_options(parser)
    parser.add_argument("--allow-read-only", action="store_true",
                        help="forward calls the app's own risk classifier calls safe without asking "
                             "(the server's annotations alone never count)")
    parser.add_argument("upstream", nargs="+", metavar="UPSTREAM", help="the MCP server to run and gate, after --")


def add_approver_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME", help="the agent's name shown to the person "
                                                        "(default: mcp:<server name>)")
    parser.add_argument("--session", metavar="ID", help="session id for allow_session (default: one per process)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="deny if nobody answers in time")
    parser.add_argument("--on-unavailable", choices=("deny", "allow"), default="deny",
                        help="what to do when the app is not reachable (default: deny)")
    parser.add_argument("--socket", metavar="PATH", help="the app's socket")


def approver_from(args: argparse.Namespace, default_agent: str | None = None) -> Approver:
    from ..adapters.base import Approver

    return Approver(agent=args.agent or default_agent, session=args.session, socket_path=args.socket,
                    timeout=args.timeout, on_unavailable=args.on_unavailable)


def run(args: argparse.Namespace) -> int:
    upstream = list(args.upstream)
    if upstream and upstream[0] == "--":
        upstream = upstream[1:]
    if not upstream:
        print("desktop-approver: mcp-gate needs the upstream server's command after --", file=sys.stderr)
        return 2
    try:
        import anyio

        from ..adapters.mcp import serve_gate
    except ModuleNotFoundError as exc:
        print(f"desktop-approver: mcp-gate needs the [mcp] extra (pip install 'desktop-approver[mcp]'): {exc}",
              file=sys.stderr)
        return EXTRA_MISSING
    try:
        anyio.run(lambda: serve_gate(upstream, approver_from(args), allow_read_only=args.allow_read_only))
    except OSError as exc:
        print(f"desktop-approver: cannot start the upstream server {upstream[0]!r}: {exc}", file=sys.stderr)
        return 1
    return 0
