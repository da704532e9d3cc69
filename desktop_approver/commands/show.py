"""``desktop-approver show [--inbox | --history]``: the waiting request, or a window, for a key binding.

The desktop's own shortcut settings run it (``desktop-approver show`` on Super+A, say), so the person
reaches the most urgent waiting request, the inbox or the history without the mouse. It talks to the
running app over its socket, with the same checks as any client: the socket must be this user's
(the client refuses another uid's app) and the app refuses a peer of another uid. It raises a window
and decides nothing. Exit code 0 when shown, 2 with a one-line reason when the app is not running,
refuses us, or shows no windows.
"""

from __future__ import annotations

import argparse
import sys

from .argv import add_socket


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--inbox", action="store_const", const="inbox", dest="what",
                       help="raise the inbox (every waiting request)")
    which.add_argument("--history", action="store_const", const="history", dest="what",
                       help="raise the history window")
    parser.set_defaults(what="request")
    add_socket(parser)


def run(args: argparse.Namespace) -> int:
    from ..client import Client
    from ..client.errors import ApproverError

    try:
        with Client(args.socket, agent="desktop-approver show") as client:
            shown = client.show(args.what)
    except ApproverError as exc:
        print(f"desktop-approver show: {exc}", file=sys.stderr)
        return 2
    if not shown:
        print("desktop-approver show: the app shows no windows (it runs without its GUI)", file=sys.stderr)
        return 2
    return 0
