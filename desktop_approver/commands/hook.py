"""``desktop-approver hook claude-code``: answer Claude Code's PreToolUse hook from the desktop.

Claude Code runs the hook once per tool call with a JSON object on stdin (``session_id``,
``cwd``, ``tool_name``, ``tool_input``, ...) and reads a JSON object on stdout::

    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow" | "deny",
                            "permissionDecisionReason": "...", "updatedInput": {...}}}

Settings (``~/.claude/settings.json``)::

    {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "desktop-approver hook claude-code", "timeout": 600}]}]}}

When the app is unreachable the call is denied (fail closed); ``--when-unavailable ask`` hands
the question back to Claude Code's own terminal prompt instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

AGENTS = ("claude-code",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("agent", choices=AGENTS, help="which agent's hook format to speak")
    parser.add_argument("--when-unavailable", choices=("deny", "ask"), default="deny",
                        help="what to answer when the app is not reachable (default: deny)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="deny if nobody answers in time")
    parser.add_argument("--socket", metavar="PATH", help="the app's socket")


def run(args: argparse.Namespace) -> int:
    from ..client import Client
    from ..errors import ApproverError, ApproverUnavailable

    try:
        event = json.loads(sys.stdin.read() or "{}")
        if not isinstance(event, dict) or not isinstance(event.get("tool_name"), str):
            raise ValueError("expected a PreToolUse event with tool_name")
        tool_input = event.get("tool_input") or {}
        if not isinstance(tool_input, dict):
            raise ValueError("tool_input must be an object")
    except ValueError as exc:
        print(f"desktop-approver: bad hook input: {exc}", file=sys.stderr)
        return 2  # Claude Code treats exit 2 as "block", with stderr shown to the model
    client = Client(args.socket, agent="claude-code", session=event.get("session_id") or None)
    client.protocol.cwd = event.get("cwd") or client.protocol.cwd
    try:
        decision = client.request(event["tool_name"], tool_input, session=event.get("session_id") or None,
                                  timeout=args.timeout)
    except ApproverUnavailable as exc:
        choice = "ask" if args.when_unavailable == "ask" else "deny"
        _answer(choice, str(exc) or "desktop-approver is not reachable")
        return 0
    except ApproverError as exc:
        _answer("deny", f"desktop-approver refused the request: {exc}")
        return 0
    finally:
        client.close()
    if decision.allowed:
        reason = f"approved on the desktop ({decision.decided_by})"
        _answer("allow", reason + (f": {decision.note}" if decision.note else ""), decision.updated_args)
    else:
        who = "blocked by policy" if decision.blocked else f"denied on the desktop ({decision.decided_by})"
        _answer("deny", who + (f": {decision.note}" if decision.note else ""))
    return 0


def _answer(choice: str, reason: str, updated: dict[str, Any] | None = None) -> None:
    output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": choice,
                              "permissionDecisionReason": reason}
    if updated is not None:
        output["updatedInput"] = updated
    print(json.dumps({"hookSpecificOutput": output}, ensure_ascii=False))
