"""``desktop-approver``: the tray app, and the commands scripts and hooks use.

Start-up matters (a hook runs once per tool call), so this module imports only the standard
library and the thin client; each command imports what it needs when it runs.

Exit codes of ``request``, ``hook`` and ``run``: 0 allowed, 1 denied, 2 app not reachable or bad
input, 3 blocked by a policy rule (``run`` exits with the command's own code once it runs it).
"""

from __future__ import annotations

import importlib
import json
import sys

from .commands.argv import SOCKET_HELP, Option, add_socket, add_to, finite_positive, read

TYPE_CHECKING = False  # typing's own flag costs every hook an import of typing; type checkers read this one
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

APP_DEPENDENCIES = {"PySide6", "qasync", "pydantic", "pygments", "keyring", "jeepney"}
EXIT_ALLOWED, EXIT_DENIED, EXIT_UNAVAILABLE, EXIT_BLOCKED = 0, 1, 2, 3
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")  # logs.LEVELS, without importing logging
COMMANDS_WITH_MODULES = {
    "risk": "desktop_approver.commands.risk",
    "policy": "desktop_approver.commands.policy",
    "history": "desktop_approver.commands.history",
    "sessions": "desktop_approver.commands.sessions",
    "revoke": "desktop_approver.commands.sessions",
    "token": "desktop_approver.commands.token",
    "hook": "desktop_approver.commands.hook",
    "install": "desktop_approver.commands.install",
    "uninstall": "desktop_approver.commands.install",
    "run": "desktop_approver.commands.run",
    "mcp-gate": "desktop_approver.commands.mcp_gate",
    "mcp-permission": "desktop_approver.commands.mcp_permission",
    "show": "desktop_approver.commands.show",
    "relay": "desktop_approver.commands.relay",
}
COMMAND_HELP = {
    "risk": "classify a tool call as safe, moderate or destructive (no app needed)",
    "policy": "check the policy file, explain which rule decides a call, or print its format",
    "history": "search the audit log of requests and decisions",
    "sessions": "list what allow_session remembers in the running app",
    "revoke": "forget remembered session approvals in the running app",
    "token": "show or rotate the token that forwarded sockets must present",
    "hook": "answer an agent's permission hook (e.g. `hook claude-code`) from the desktop",
    "install": "add the app to this user's desktop: menu entry and icons, and with --systemd or --autostart "
               "start it with the session (XDG locations; every path is printed)",
    "uninstall": "remove what `install` added (menu entry, icons, units, autostart entry)",
    "run": "ask before running a command, then run it (`run -- CMD ARGS...`)",
    "mcp-gate": "serve an MCP server's tools over stdio, asking before every call (`mcp-gate -- CMD`)",
    "mcp-permission": "serve Claude Code's --permission-prompt-tool over MCP stdio",
    "show": "raise the most urgent waiting request, or with --inbox / --history that window, in the running app "
            "(bind it to a key)",
    "relay": "set up a NATS server for agents on other machines (`relay setup`: configuration, TLS, credentials)",
}


NATS_CREDS_HELP = ("with DESKTOP_APPROVER_URL=nats://...: the agent's NATS credentials, a .creds file or "
                   "one line user:password (default: $DESKTOP_APPROVER_NATS_CREDS)")
NATS_CA_HELP = ("with DESKTOP_APPROVER_URL=tls://...: the CA certificate the NATS server's certificate must chain to "
                "(default: $DESKTOP_APPROVER_NATS_CA, else the system's)")
REQUEST_OPTIONS = (
    Option("--tool", required=True, help="the tool's name, e.g. Bash or write_file"),
    Option("--args", required=True, metavar="JSON", help="the call's arguments, a JSON object ('-' reads stdin)"),
    Option("--session", metavar="ID", help="the agent's session id (allow_session is remembered per session)"),
    Option("--description", metavar="TEXT", help="what the call is for, shown to the person"),
    Option("--timeout", convert=float, metavar="SECONDS",
           help="deny if nobody answers in time (default: the app's, 300)"),
    Option("--preview", metavar="JSON", help='a preview object, e.g. {"kind": "command", "command": "ls"}'),
    Option("--hints", metavar="JSON", help='tool hints, e.g. {"read_only": true} (shown, never trusted)'),
    Option("--agent", metavar="NAME", help="the agent's name shown to the person"),
    Option("--socket", metavar="PATH", help=SOCKET_HELP),
    Option("--nats-creds", metavar="FILE", help=NATS_CREDS_HELP),
    Option("--nats-ca", metavar="FILE", help=NATS_CA_HELP),
)
"""``request``'s options, declared once (:mod:`.commands.argv`): it runs once per call a script guards."""


def fail(message: str, code: int = EXIT_UNAVAILABLE) -> int:
    print(f"desktop-approver: {message}", file=sys.stderr)
    return code


def json_object(text: str, what: str) -> dict[str, Any]:
    """Parse a JSON object argument; ``-`` reads it from standard input."""
    if text == "-":
        text = sys.stdin.read()
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, not {type(value).__name__}")
    return value


def add_nats_creds(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nats-creds", metavar="FILE", help=NATS_CREDS_HELP)
    parser.add_argument("--nats-ca", metavar="FILE", help=NATS_CA_HELP)


def add_app_options(parser: argparse.ArgumentParser) -> None:
    add_socket(parser)
    parser.add_argument("--policy", metavar="PATH",
                        help="policy file (default: ~/.config/desktop-approver/policy.toml)")
    parser.add_argument("--audit-db", metavar="PATH",
                        help="audit log (default: ~/.local/share/desktop-approver/audit.sqlite3)")
    parser.add_argument("--timeout", type=_timeout_seconds, metavar="SECONDS",
                        help="default time a request waits for a person before it is denied "
                             f"(default: 300; at most {MAX_TIMEOUT_SECONDS})")
    parser.add_argument("--no-notifications", action="store_true", help="do not raise desktop notifications")
    parser.add_argument("--tray-icons", choices=("color", "symbolic"), default="color",
                        help="tray icon look: color (default; reads on light and dark panels) or symbolic "
                             "(one colour like the panel's own icons: dark, or light under a dark theme)")
    parser.add_argument("--theme", choices=("light", "dark", "auto"), default=None,
                        help="colours of the windows: follow the desktop (auto, the default unless the settings "
                             "say otherwise), or always light or dark")
    parser.add_argument("--require-token", action="store_true",
                        help="refuse clients that do not present the token kept in the keyring "
                             "(for forwarded sockets; see `desktop-approver token`)")
    parser.add_argument("--relay", metavar="URL",
                        help="also answer agents on other machines through a NATS server with JetStream, "
                             "e.g. nats://host:4222 or tls://host:4222 (needs the relay extra; see README, "
                             "\"Agents on other machines\")")
    parser.add_argument("--relay-creds", metavar="FILE",
                        help="the approver's NATS credentials for --relay: a .creds file, or one line user:password")
    parser.add_argument("--relay-ca", metavar="FILE",
                        help="the CA certificate the relay's server certificate must chain to (default: "
                             "$DESKTOP_APPROVER_NATS_CA, else the system's; `desktop-approver relay setup` writes one)")
    parser.add_argument("--history-days", type=_positive_days, metavar="DAYS",
                        help="delete audit entries older than this, at start and daily (default: keep all)")
    parser.add_argument("--session-idle", type=_positive_hours, metavar="HOURS",
                        help="forget a session's remembered approvals after this long without a request "
                             "(default: 8)")
    parser.add_argument("--log-level", type=str.lower, choices=LOG_LEVELS, metavar="LEVEL",
                        help="how much the app logs, to standard error and to "
                             "$XDG_STATE_HOME/desktop-approver/app.log (rotated): debug (every request shown, "
                             "withdrawn, decided), info, warning, error or critical (default: "
                             "$DESKTOP_APPROVER_LOG_LEVEL, else warning)")


_positive_hours, _positive_days = finite_positive("hours"), finite_positive("days")
# The protocol's longest timeout (core.messages.models.MAX_TIMEOUT; the settings file's too): not
# imported from there, which would load pydantic into the thin CLI.
MAX_TIMEOUT_SECONDS = 86400
_timeout_seconds = finite_positive("seconds", most=MAX_TIMEOUT_SECONDS)


def cmd_request(args: argparse.Namespace) -> int:
    from .client import Client
    from .client.base import check_timeout
    from .client.errors import ApproverError, ApproverUnavailable

    try:
        call_args = json_object(args.args, "--args")
        preview = json_object(args.preview, "--preview") if args.preview else None
        hints = json_object(args.hints, "--hints") if args.hints else None
    except ValueError as exc:
        return fail(f"bad input: {exc}")
    try:
        check_timeout(args.timeout, "--timeout")  # NaN or inf would be sent as JSON no app reads
    except ValueError as exc:
        return fail(f"bad input: {exc}")
    client = Client(args.socket, agent=args.agent, session=args.session)
    try:
        decision = client.request(args.tool, call_args, session=args.session, description=args.description,
                                  preview=preview, timeout=args.timeout, hints=hints)
    except ApproverUnavailable as exc:
        return fail(f"{exc} (treat as denied)")
    except ApproverError as exc:
        return fail(f"the app refused the request: {exc}")
    finally:
        client.close()
    print(json.dumps(decision.to_json(), ensure_ascii=False))
    if decision.allowed:
        return EXIT_ALLOWED
    return EXIT_BLOCKED if decision.blocked else EXIT_DENIED


def cmd_status(args: argparse.Namespace) -> int:
    from .client import Client
    from .client.errors import ApproverError, Unauthorized

    client = Client(args.socket)
    try:
        status = client.status()
    except Unauthorized as exc:  # it runs, and wants a token this client does not have
        if args.json:
            print(json.dumps({"running": True, "authorized": False, "socket": str(client.socket_path),
                              "error": str(exc)}))
        else:
            print(f"desktop-approver is running (socket {client.socket_path}) but refused this client: {exc}. "
                  "Get the current token with `desktop-approver token` (DESKTOP_APPROVER_TOKEN).")
        return EXIT_UNAVAILABLE
    except ApproverError as exc:
        if args.json:
            print(json.dumps({"running": False, "socket": str(client.socket_path), "error": str(exc)}))
        else:
            print(f"desktop-approver is not running (socket {client.socket_path}): {exc}")
        return EXIT_UNAVAILABLE
    finally:
        client.close()
    if args.json:
        print(json.dumps({"running": True, **{k: v for k, v in status.items() if k not in ("v", "type", "id")}}))
        return 0
    if isinstance(status.get("relay"), str):  # answered by the NATS relay transport itself (relay.agent)
        print(f"desktop-approver's NATS relay at {status['relay']} as user {status.get('user')}: "
              f"{'connected' if status.get('connected') else 'reconnecting'}, {status.get('pending', 0)} waiting")
        return 0
    mode = status.get("mode", "?")
    if status.get("mode_until"):
        import time

        mode += f" (for {max(0, int(status['mode_until'] - time.time()))} s more)"
    print(f"desktop-approver {status.get('version')} is running (pid {status.get('pid')})\n"
          f"  socket:  {status.get('socket')}\n  pending: {status.get('pending')}\n  mode:    {mode}\n"
          f"  sessions with remembered approvals: {status.get('sessions', 0)}")
    relay = status.get("relay")
    if isinstance(relay, dict):
        print(f"  relay:   {relay.get('server')} as {relay.get('user')}, "
              f"{'connected' if relay.get('connected') else 'not connected'}, {relay.get('pending', 0)} waiting here")
    for problem in status.get("problems") or ():
        print(f"  degraded: {problem}")
    return 0


def cmd_tray(args: argparse.Namespace) -> int:
    from .gui.source_lines import stop_keeping_source_lines

    stop_keeping_source_lines()  # before PySide6 loads: it reads every module's source (see there)
    try:
        from .gui.app import run_app
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in APP_DEPENDENCIES:
            raise
        return fail(f"the tray app needs the [app] extra (pip install 'desktop-approver[app]'): {exc}", 1)
    from .gui.display import display_problem

    no_display = display_problem()  # Qt would abort the process (SIGABRT) without a word of ours
    if no_display is not None:
        return fail(no_display, 1)
    try:
        return run_app(args, demo=args.command == "demo")
    except (RuntimeError, ValueError) as exc:
        problem = _option_refused(exc)
        if problem is None:
            raise
        return fail(problem, 1)


def _option_refused(exc: Exception) -> str | None:
    """What to print when the tray cannot start with ``--require-token`` (no keyring) or ``--relay``
    (an address or credentials it cannot use); None for any other error. Their modules load only
    when the option is given (idle memory: the tokens' bring hashlib and OpenSSL's), so they are
    looked at here, after the fact."""
    if isinstance(exc, RuntimeError):
        from .core.transport.tokens import TokenStoreUnavailable

        return f"--require-token: {exc}" if isinstance(exc, TokenStoreUnavailable) else None
    from .relay.address import AddressError

    return f"--relay: {exc}" if isinstance(exc, AddressError) else None


def build_parser(with_module_commands: bool | Sequence[str] = True) -> argparse.ArgumentParser:
    """The whole CLI; ``with_module_commands`` may name the only module commands to load (fast path)."""
    import argparse

    from .version import __version__

    parser = argparse.ArgumentParser(
        prog="desktop-approver",
        description="Approve or deny AI agents' tool calls from your desktop. Without a command, starts the tray app.",
        epilog="The app's options (see `desktop-approver tray --help`) may follow the bare command, e.g. "
               "`desktop-approver --log-level debug`. Exit codes of `request`: 0 allowed, 1 denied, 2 app not "
               "reachable or bad input, 3 blocked by policy.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    tray = commands.add_parser("tray", help="start the tray app (the default)")
    add_app_options(tray)
    tray.set_defaults(handler=cmd_tray)
    demo = commands.add_parser("demo", help="start the tray app and a demo agent that sends sample requests")
    add_app_options(demo)
    demo.set_defaults(handler=cmd_tray)

    request = commands.add_parser("request", help="ask for approval of one tool call and wait for the answer",
                                  description="Blocks until decided, prints the decision as JSON. Exit 0 allowed, "
                                              "1 denied, 2 app not reachable or bad input, 3 blocked by policy.")
    add_to(request, REQUEST_OPTIONS)
    request.set_defaults(handler=cmd_request)

    status = commands.add_parser("status", help="is the app running? its socket, pending count and mode")
    status.add_argument("--json", action="store_true", help="print one JSON object")
    add_socket(status)
    add_nats_creds(status)
    status.set_defaults(handler=cmd_status)

    for name, module_name in COMMANDS_WITH_MODULES.items():
        if with_module_commands is False or (not isinstance(with_module_commands, bool)
                                             and name not in with_module_commands):
            continue
        module = importlib.import_module(module_name)  # each command's imports stay in its own module
        sub = commands.add_parser(name, help=COMMAND_HELP[name], description=COMMAND_HELP[name])
        adder: Callable[..., None] = getattr(module, f"add_{name}_arguments", None) or module.add_arguments
        adder(sub)
        runner = getattr(module, f"run_{name}", None) or module.run
        sub.set_defaults(handler=runner)
    return parser


def _read_quickly(argv: Sequence[str]) -> argparse.Namespace | None:
    """``hook`` and ``request`` as they run once per tool call, without argparse (``commands.argv``);
    None when argparse should read ``argv`` (help, an unusual form, an error to report)."""
    command = argv[0]
    options: tuple[Option, ...]
    if command == "request":
        options, handler = REQUEST_OPTIONS, cmd_request
    elif command == "hook":
        from .commands import hook

        options, handler = hook.OPTIONS, hook.run
    else:
        return None
    values = read(options, argv[1:])
    if values is None:
        return None
    from types import SimpleNamespace

    # The handlers read attributes only: a SimpleNamespace is what argparse would have given them.
    return SimpleNamespace(command=command, handler=handler, **values)  # type: ignore[return-value]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["tray", *argv]  # no command: start the tray app, with any app options given
    # `request`, `status`, `hook` and `run` run once per tool call, `show` once per key press: import only
    # the command at hand (and the MCP servers need not load every other command either); the tray app, which stays
    # resident, loads none of the other commands.
    wanted: bool | list[str] = True
    alone = ("request", "status", "hook", "run", "mcp-gate", "mcp-permission", "tray", "demo", "show")
    if argv[0] in alone and not {"-h", "--help"} & set(argv):
        wanted = [argv[0]] if argv[0] in COMMANDS_WITH_MODULES else []
    args = _read_quickly(argv) or build_parser(with_module_commands=wanted).parse_args(argv)
    if getattr(args, "nats_creds", None):  # where every client of this process looks (desktop_approver.client.urls)
        import os

        os.environ["DESKTOP_APPROVER_NATS_CREDS"] = args.nats_creds
    if getattr(args, "nats_ca", None):
        import os

        os.environ["DESKTOP_APPROVER_NATS_CA"] = args.nats_ca
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:  # a command that reads the policy or the audit log on a client-only install
        if (exc.name or "").split(".")[0] not in APP_DEPENDENCIES:
            raise
        return fail(f"`{argv[0]}` needs the [app] extra (pip install 'desktop-approver[app]'): {exc}", 2)


if __name__ == "__main__":
    sys.exit(main())
