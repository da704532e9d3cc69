"""``desktop-approver mcp-gate [options] -- UPSTREAM CMD...``: an approving MCP server in front of another.

Point an MCP client (Claude Desktop, Cursor, an agent framework) at this command instead of the
upstream server's own; it serves the upstream's tools unchanged and asks the desktop before every
call. Needs the ``[mcp]`` extra. The work is in :mod:`desktop_approver.adapters.mcp`.

When either side goes away (the client closes our stdio, the upstream server exits, also while it
starts) the gate ends with one line on stderr, never a traceback: exit 0 when the client left, 1
when the upstream did, 128 + the signal's number after SIGTERM, SIGINT or SIGHUP. The upstream
server is stopped whichever way the gate ends, and a pending question is withdrawn from the
desktop (the app logs it as cancelled).
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
    parser.add_argument("--timeout", type=seconds, metavar="SECONDS", help="deny if nobody answers in time")
    parser.add_argument("--on-unavailable", choices=("deny", "allow"), default="deny",
                        help="what to do when the app is not reachable (default: deny)")
    parser.add_argument("--socket", metavar="PATH", help="the app's socket")


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (NaN or 0 would make every wait end at
    once, which reads as "the app is not reachable": an allow with --on-unavailable allow)."""
    from ..client.base import check_timeout

    try:
        value = check_timeout(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a finite number of seconds above 0: {text!r}") from None
    assert value is not None
    return value


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
    from ..adapters.mcp import ClientGone, StoppedBySignal, UpstreamGone

    try:
        anyio.run(lambda: serve_gate(upstream, approver_from(args), allow_read_only=args.allow_read_only))
    except BaseException as exc:  # noqa: BLE001 - every ending is one line, never a traceback
        return ended(exc, upstream[0], ClientGone, StoppedBySignal, UpstreamGone)
    return client_left("mcp-gate")


def ended(exc: BaseException, program: str, client_gone_type: type[BaseException],
          signal_type: type[BaseException], upstream_gone_type: type[BaseException]) -> int:
    """The one line (and exit code) for however the gate ended."""
    leaves = list(_leaves(exc))
    if all(isinstance(leaf, client_gone_type) or client_gone(leaf) for leaf in leaves):
        return client_left("mcp-gate")
    stop = next((leaf for leaf in leaves if isinstance(leaf, signal_type)), None)
    if stop is not None:
        print(f"desktop-approver: mcp-gate {stop}", file=sys.stderr)
        return 128 + int(getattr(stop, "signum", 15))
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        print("desktop-approver: mcp-gate stopped by SIGINT", file=sys.stderr)
        return 130
    gone = next((leaf for leaf in leaves if isinstance(leaf, upstream_gone_type)), None)
    if gone is not None:
        print(f"desktop-approver: mcp-gate stopped: {gone}", file=sys.stderr)
        return 1
    oserror = next((leaf for leaf in leaves if isinstance(leaf, OSError)), None)
    if oserror is not None:
        print(f"desktop-approver: cannot start the upstream server {program!r}: {oserror}", file=sys.stderr)
        return 1
    first = leaves[0] if leaves else exc
    print(f"desktop-approver: mcp-gate stopped: {type(first).__name__}: {first}", file=sys.stderr)
    return 1


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or every error in a group) is the MCP client closing our stdio."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(inner) for inner in exc.exceptions)
    return isinstance(exc, (BrokenPipeError, ConnectionResetError))


def client_left(command: str) -> int:
    """One line instead of a traceback; stdout points nowhere, so exiting flushes into no broken pipe."""
    import os

    print(f"desktop-approver: {command} stopped: the MCP client went away", file=sys.stderr)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0
