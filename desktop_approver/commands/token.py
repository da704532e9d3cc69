"""``desktop-approver token [show|rotate]``: the secret that forwarded sockets must present.

``show`` prints the token (creating it on first use) and how a remote agent passes it on;
``rotate`` replaces it, and a running app started with ``--require-token`` refuses the old one
within seconds. Exit code 0, or 2 when there is no keyring to keep the token in.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("show", "rotate"), default="show",
                        help="show the token (created on first use; the default) or replace it")
    parser.add_argument("--json", action="store_true", help='print {"token": ..., "env": ...} as one JSON object')


def run(args: argparse.Namespace) -> int:
    from ..core.transport.tokens import TokenStore, TokenStoreUnavailable

    store = TokenStore()
    try:
        token = store.rotate() if args.action == "rotate" else store.get_or_create()
    except TokenStoreUnavailable as exc:
        print(f"desktop-approver token: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"token": token, "env": "DESKTOP_APPROVER_TOKEN", "rotated": args.action == "rotate"}))
        return 0
    if args.action == "rotate":
        print("desktop-approver token: a new token replaces the old one; clients still using the old one "
              "are refused.", file=sys.stderr)
    print(token)
    print("\nThe app checks it when started with `desktop-approver --require-token`. On the agent's side\n"
          "(e.g. a remote dev box reaching the desktop through a forwarded socket):\n\n"
          f"    export DESKTOP_APPROVER_TOKEN={token}")
    return 0
