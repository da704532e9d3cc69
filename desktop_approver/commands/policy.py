"""``desktop-approver policy check | explain | docs``: validate the policy file, ask it about a call,
and print its format.

``check`` prints ``ok: N rules in FILE`` or ``FILE:LINE: reason`` (exit 1), so an editor or a
pre-commit hook can point at the line; below ``ok`` it warns, ``FILE:LINE: warning: ...``, about
allow rules whose match is broader than it looks (a whole tool, a trailing ``*`` after a program
whose options run programs or write files, ``risk = "destructive"``), without failing. ``explain``
shows which rule would decide a call and why the others do not (an allow rule withheld from a call
the app did not fully understand, or read as destructive, says so), part by part for a compound
shell command. Both read the file the app reads
(``--file``, else the global ``--policy`` when given, else the default path). ``docs`` prints
``docs/policy.md`` as the installed package carries it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="policy_command", metavar="{check,explain,docs}", required=True)

    check = commands.add_parser("check", help="validate the policy file",
                                description="Validate the policy file; print the file, line and reason of an error, "
                                            "and warn about allow rules whose match is broader than it looks.")
    check.add_argument("--file", type=Path, help="the policy file (default: the one the app reads)")

    explain = commands.add_parser("explain", help="say which rule would decide a call, and why",
                                  description="Say which policy rule would decide a tool call, and why the "
                                              "others do not, part by part for compound shell commands.")
    explain.add_argument("--tool", required=True, help="the tool name, e.g. Bash")
    explain.add_argument("--args", default="{}", metavar="JSON", help="the call's arguments as a JSON object")
    explain.add_argument("--agent", help="the agent's name")
    explain.add_argument("--cwd", help="the agent's working directory (default: the current one)")
    explain.add_argument("--risk", choices=("safe", "moderate", "destructive"),
                         help="the risk level to assume (default: as the app would assess it)")
    explain.add_argument("--file", type=Path, help="the policy file (default: the one the app reads)")
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")

    commands.add_parser("docs", help="print the policy file's format: rules, conditions, precedence",
                        description="Print the policy file's format (docs/policy.md): the keys of a rule, "
                                    "how commands and paths match, and which rule wins.")


def run(args: argparse.Namespace) -> int:
    if args.policy_command == "check":
        return _check(args)
    if args.policy_command == "docs":
        return _docs()
    return _explain(args)


def _docs() -> int:
    from ..core.policy import policy_format_md

    print(policy_format_md(), end="")
    return 0


def _policy_path(args: argparse.Namespace) -> tuple[Path, bool]:
    """The file to read, and whether the person named it (a missing named file is an error)."""
    from ..client.paths import default_policy_path

    named = args.file or getattr(args, "policy", None)
    return (Path(named).expanduser(), True) if named else (default_policy_path(), False)


def _check(args: argparse.Namespace) -> int:
    from ..core.policy import Policy, PolicyError

    path, named = _policy_path(args)
    if not named and not path.exists():
        print(f"no policy file at {path} (every call is asked)")
        return 0
    try:
        policy = Policy.load(path)
    except PolicyError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"ok: {len(policy)} rule{'' if len(policy) == 1 else 's'} in {path}")
    from ..core.policy.breadth import broad_rules

    for broad in broad_rules(policy.rules):
        print(broad.line(str(path)))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from ..core.policy import Policy, PolicyCall, PolicyError

    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"--args is not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(call_args, dict):
        print("--args must be a JSON object, such as '{\"command\": \"ls\"}'", file=sys.stderr)
        return 2
    cwd = os.path.abspath(os.path.expanduser(args.cwd or os.getcwd()))

    path, named = _policy_path(args)
    if not named and not path.exists():
        policy = Policy.empty(path)
        header = f"no policy file at {path} (every call is asked)"
    else:
        try:
            policy = Policy.load(path)
        except PolicyError as error:
            print(error, file=sys.stderr)
            return 1
        header = f"policy: {path} ({len(policy)} rule{'' if len(policy) == 1 else 's'})"

    from ..core.calls.risk import assess

    reading = assess(args.tool, call_args, cwd=cwd, hints={})  # as the app reads it: level, understood, gaps
    risk = args.risk or reading.level
    explanation = policy.explain(PolicyCall(tool=args.tool, args=call_args, agent=args.agent, cwd=cwd, risk=risk,
                                            understood=reading.understood, gaps=reading.gaps))
    if args.json:
        print(json.dumps(explanation.as_dict(), indent=2, default=str))
    else:
        print(header)
        print(f"risk: {risk}")
        print(explanation.render())
    return 0
