"""``desktop-approver sessions`` and ``desktop-approver revoke``: "Allow for session" from a shell.

Both talk to the running app (session memory lives only there), as one agent: over the socket an
agent sees and revokes only its own sessions (``--agent``, default ``$DESKTOP_APPROVER_AGENT``);
the tray's "Remembered approvals" window shows every agent's. Exit code 0, or 2 with a one-line
reason when the app is not running, refuses us, or the input is bad.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..adapters.claude_code_rules import CLAUDE_CODE_AGENTS, REVOKE_NOTE, RULE_TOOL
from .argv import add_socket
from .history import print_table, table_cell

T = TypeVar("T")


AGENT_HELP = ("the agent whose remembered approvals these are (its name as it tells the app; default "
              "$DESKTOP_APPROVER_AGENT): an agent sees only its own, the tray's window shows every agent's")


def add_sessions_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME", help=AGENT_HELP)
    parser.add_argument("--json", action="store_true", help="print one JSON object per remembered approval")
    add_socket(parser)


def add_revoke_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", metavar="NAME", help=AGENT_HELP)
    parser.add_argument("--session", metavar="ID", help="forget what this session remembers")
    parser.add_argument("--tool", metavar="NAME", help="forget remembered approvals of this tool")
    parser.add_argument("--all", action="store_true", help="forget every remembered approval of the agent")
    parser.add_argument("--json", action="store_true", help='print {"count": N}')
    add_socket(parser)


def run_sessions(args: argparse.Namespace) -> int:
    agent = _agent(args, "sessions")
    if agent is None:
        return 2
    entries = _ask(args.socket, agent, lambda client: client.sessions())
    if entries is None:
        return 2
    if args.json:
        for entry in entries:
            print(json.dumps(entry, ensure_ascii=False))
        return 0
    if not entries:
        print("No remembered approvals.")
        return 0
    rows = [("SESSION", "AGENT", "TOOL", "ALLOWS", "USED", "SINCE")]
    rows += [(table_cell(entry.get("session")), table_cell(entry.get("agent") or "-"), table_cell(entry.get("tool")),
              "any arguments" if entry.get("scope") == "tool" else table_cell(entry.get("args"), 60),
              str(entry.get("hits", 0)), _ago(entry.get("created"))) for entry in entries]
    print_table(rows)
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    if args.all and (args.session or args.tool):
        print("desktop-approver revoke: bad input: --all cannot be combined with --session or --tool",
              file=sys.stderr)
        return 2
    if not (args.all or args.session or args.tool):
        print("desktop-approver revoke: bad input: say what to forget: --session, --tool or --all", file=sys.stderr)
        return 2
    agent = _agent(args, "revoke")
    if agent is None:
        return 2
    count = _ask(args.socket, agent, lambda client: client.revoke(session=args.session, tool=args.tool))
    if count is None:
        return 2
    if args.json:
        print(json.dumps({"count": count}))
    else:
        print(f"Forgot {count} remembered approval{'' if count == 1 else 's'}.")
    if count and args.tool in (None, RULE_TOOL) and agent.partition(" (")[0] in CLAUDE_CODE_AGENTS:
        print(f"desktop-approver revoke: {REVOKE_NOTE}", file=sys.stderr)
    return 0


def _agent(args: argparse.Namespace, command: str) -> str | None:
    """``--agent``, else ``$DESKTOP_APPROVER_AGENT``; None (reason on stderr) when neither says whose."""
    agent = args.agent or os.environ.get("DESKTOP_APPROVER_AGENT")
    if not agent:
        print(f"desktop-approver {command}: bad input: say whose remembered approvals: --agent NAME "
              "(the tray's \"Remembered approvals\" window shows every agent's)", file=sys.stderr)
    return agent or None


def _ask(socket_path: str | None, agent: str, action: Callable[[Any], T]) -> T | None:
    """Run ``action`` with a client of the running app; None (reason on stderr) when that fails.

    When the app requires a token and ``$DESKTOP_APPROVER_TOKEN`` is not set, the client takes the
    one in the keyring: these commands run on the desktop itself.
    """
    from ..client import Client
    from ..client.errors import ApproverError, ApproverUnavailable

    client = Client(socket_path, agent=agent)
    try:
        return action(client)
    except ApproverUnavailable as exc:
        print(f"desktop-approver: the app is not running: {exc}", file=sys.stderr)
    except ApproverError as exc:
        print(f"desktop-approver: the app refused: {exc}", file=sys.stderr)
    finally:
        client.close()
    return None


def _ago(created: Any) -> str:
    if not isinstance(created, (int, float)):
        return "?"
    seconds = max(0, int(time.time() - created))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
