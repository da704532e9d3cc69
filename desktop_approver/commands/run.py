"""``desktop-approver run [--tool NAME] [--session ID] -- CMD ARGS...``: ask, then become the command.

The call goes to the app as tool ``Bash`` (or ``--tool``) with the command as an argv list and a
command preview. When it is allowed this process ``exec``s the command (the arguments the person
edited, if any), so the command keeps our pid, stdin, stdout and signals. Otherwise nothing runs:

- exit 1, the person's note on stderr, when denied;
- exit 2 when the app is not reachable (fail closed) or the input is bad;
- exit 3 when a policy rule blocked the call.

Standard library only: a wrapper like this runs once per command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

EXIT_DENIED, EXIT_UNAVAILABLE, EXIT_BLOCKED = 1, 2, 3
EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE = 127, 126  # what a shell answers for a missing / unrunnable program


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "desktop-approver run [--tool NAME] [--session ID] [options] -- CMD [ARGS...]"
    parser.add_argument("--tool", default="Bash", help="the tool name the person sees (default: Bash)")
    parser.add_argument("--session", metavar="ID",
                        help="the agent's session id (allow_session is remembered per session)")
    parser.add_argument("--description", metavar="TEXT", help="what the command is for, shown to the person")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="deny if nobody answers in time")
    parser.add_argument("--agent", metavar="NAME", help="the agent's name shown to the person")
    parser.add_argument("--socket", metavar="PATH", help="the app's socket")
    parser.add_argument("command", nargs="+", metavar="CMD", help="the command and its arguments, after --")


def run(args: argparse.Namespace) -> int:
    from .. import previews
    from ..client import Client
    from ..errors import ApproverError, ApproverUnavailable

    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        return _fail("bad input: no command given after --", EXIT_UNAVAILABLE)
    if args.timeout is not None and args.timeout <= 0:
        return _fail("bad input: --timeout must be positive", EXIT_UNAVAILABLE)
    cwd = os.getcwd()
    client = Client(args.socket, agent=args.agent, session=args.session)
    try:
        decision = client.request(args.tool, {"command": argv}, session=args.session,
                                  description=args.description, preview=previews.command(argv, cwd),
                                  timeout=args.timeout)
    except ApproverUnavailable as exc:
        return _fail(f"{exc} (not running the command)", EXIT_UNAVAILABLE)
    except ApproverError as exc:
        return _fail(f"the app refused the request: {exc}", EXIT_UNAVAILABLE)
    finally:
        client.close()
    if decision.blocked:
        return _fail("blocked by policy" + (f": {decision.note}" if decision.note else ""), EXIT_BLOCKED)
    if not decision.allowed:
        return _fail(f"denied ({decision.decided_by})" + (f": {decision.note}" if decision.note else ""),
                     EXIT_DENIED)
    try:
        final = command_to_run(decision.updated_args, argv)
    except ValueError as exc:
        return _fail(f"the edited arguments cannot be run: {exc}", EXIT_DENIED)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(final[0], final)
    except FileNotFoundError:
        return _fail(f"{final[0]}: command not found", EXIT_NOT_FOUND)
    except OSError as exc:
        return _fail(f"{final[0]}: {exc.strerror or exc}", EXIT_NOT_EXECUTABLE)
    return EXIT_NOT_EXECUTABLE  # not reached: execvp returns only by raising


def command_to_run(updated_args: dict[str, Any] | None, asked: list[str]) -> list[str]:
    """The argv to exec: the asked one, or the person's edit (a list as argv, a string through sh)."""
    if updated_args is None:
        return asked
    edited = updated_args.get("command")
    if isinstance(edited, list) and edited and all(isinstance(part, str) for part in edited):
        return list(edited)
    if isinstance(edited, str) and edited.strip():
        # The person typed a shell line: run it the way they read it, through the shell.
        return ["/bin/sh", "-c", edited]
    raise ValueError(f"'command' must be a non-empty list of strings or a string, not {edited!r}")


def _fail(message: str, code: int) -> int:
    print(f"desktop-approver: {message}", file=sys.stderr)
    return code

