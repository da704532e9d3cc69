"""``desktop-approver risk``: run the risk classifier on its own, no app needed.

One call: ``risk --tool Bash --args '{"command": "rm -rf build"}'`` prints
``{"level": "destructive", "reasons": [...], "understood": true, "gaps": [], "shown": "destructive"}``:
``shown`` is what the person's badge says (the level, or ``"not understood"`` for a call that was
not understood and is not known to be destructive: its level would be a guess); ``understood`` says
whether every part of the call was known to the catalog (only such a call, at safe or moderate, may
be answered without the person), ``gaps`` what was not, one phrase each. With ``--jsonl`` it reads one
``{"tool", "args", "cwd", "hints"}`` object per line on stdin and prints one result per line
(a line that cannot be read gets ``{"error": ...}``), so a reviewer can check a whole table.
``--explain`` shows how the call was read (its family, the commands and programs it runs, the
paths it touches and how, URLs, SQL, hidden characters) above the level and its reasons, and
below them ``understood`` or ``not understood:`` with the parts the reader did not know, so a
person can see why; with ``--jsonl`` each result gets the reading as a ``"reading"`` object.
When the working directory (``--cwd``, default the current one) is a directory on this machine,
the call is judged as the app judges a local agent's, with the facts of what it would touch
(issue 32: globs expanded, links resolved, what a delete or git command would lose and whether git
or a build can bring it back, secrets in what it reads): they are in ``"consequences"``, and
``--explain`` prints them as "touches" lines.
Exit code: 0, or 2 for bad input on the command line (or any bad line with ``--jsonl``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tool", help="the tool name, e.g. Bash or write_file")
    parser.add_argument("--args", default="{}", metavar="JSON", help="the call's arguments as a JSON object")
    parser.add_argument("--cwd", help="the agent's working directory (default: the current one)")
    parser.add_argument("--hints", metavar="JSON", help='the agent\'s hints, e.g. {"read_only": true}')
    parser.add_argument("--jsonl", action="store_true",
                        help='read {"tool", "args", "cwd", "hints"} objects from stdin, one per line')
    parser.add_argument("--explain", action="store_true",
                        help="show how the call was read (family, commands, programs, paths, URLs, findings), "
                             "why it got its level, and whether it was fully understood (and if not, which parts)")


def run(args: argparse.Namespace) -> int:
    if args.jsonl:
        return _run_lines(args)
    if not args.tool:
        print("desktop-approver risk: --tool is required (or --jsonl)", file=sys.stderr)
        return 2
    try:
        call_args = _object(args.args, "--args")
        hints = _object(args.hints, "--hints") if args.hints else {}
    except ValueError as exc:
        print(f"desktop-approver risk: {exc}", file=sys.stderr)
        return 2
    try:
        result = _assess(args.tool, call_args, args.cwd or os.getcwd(), hints, explain=args.explain)
    except ValueError as exc:
        print(f"desktop-approver risk: {exc}", file=sys.stderr)
        return 2
    if args.explain:
        print(_explanation(result))
    else:
        print(json.dumps(result, ensure_ascii=False))
    return 0


def _run_lines(args: argparse.Namespace) -> int:
    default_cwd = args.cwd or os.getcwd()
    code = 0
    for number, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
                raise ValueError('each line must be an object with a "tool" string')
            call_args = item.get("args", {})
            hints = item.get("hints") or {}
            if not isinstance(call_args, dict) or not isinstance(hints, dict):
                raise ValueError('"args" and "hints" must be objects')
            result = _assess(item["tool"], call_args, item.get("cwd") or default_cwd, hints, explain=args.explain)
        except ValueError as exc:
            result = {"error": f"line {number}: {exc}"}
            code = 2
        print(json.dumps(result, ensure_ascii=False), flush=True)
    return code


def _assess(tool: str, call_args: dict[str, Any], cwd: str, hints: dict[str, Any],
            explain: bool = False) -> dict[str, Any]:
    """As the app assesses a request: hints read by the wire model (MCP's camelCase names or ours)."""
    from pydantic import ValidationError

    from ..core.calls.reading import read_call
    from ..core.calls.risk import assess
    from ..core.messages.models import Hints
    from ..core.messages.protocol import describe_errors

    try:
        known = Hints.model_validate(hints).as_dict()
    except ValidationError as exc:
        raise ValueError(f"bad hints: {describe_errors(exc)}") from None
    facts = None
    if os.path.isdir(cwd):   # on this machine: as the app judges a local agent's call (issue 32)
        from ..core.calls.risk.touching import assess_touching
        found, facts = assess_touching(tool, call_args, cwd=os.path.abspath(cwd), hints=known)
    else:
        found = assess(tool, call_args, cwd=cwd, hints=known)
    result = {**found.to_json(), "understood": found.understood, "gaps": list(found.gaps), "shown": found.shown}
    if facts is not None:
        result["consequences"] = {**facts.to_json(), "summary": facts.summary(), "lines": facts.lines()}
    if explain:
        result["reading"] = read_call(tool, call_args, cwd).to_json()
    return result


def _explanation(result: dict[str, Any]) -> str:
    """The reading and the verdict as lines a person reads top to bottom."""
    from ..core.policy.automatic import not_understood
    from ..render.reveal import reveal

    def shown(text: str) -> str:
        return reveal(text).text

    reading = result["reading"]
    lines = [f"tool      {shown(reading['tool'])} ({reading['family']})"]
    if reading.get("cwd"):
        lines.append(f"cwd       {shown(reading['cwd'])}")
    for run in reading.get("commands", []):
        lines.append(f"command   {shown(run['text'])}   [from {run['from']}]")
        for program in run["programs"]:
            lines.append(f"  runs    {shown(program)}")
    for use in reading.get("paths", []):
        how = use["operation"] + (" (recursive)" if use.get("recursive") else "") + (" (names only)" if use.get(
            "listing") else "")
        lines.append(f"path      {how:<22} {shown(use['resolved'])}" + (
            f"   as written: {shown(use['path'])}" if use["path"] != use["resolved"] else ""))
    for key, label in (("urls", "url"), ("sql", "sql"), ("payloads", "sends")):
        for item in reading.get(key, []):
            lines.append(f"{label:<9} {shown(item)[:200]}")
    for item in reading.get("hidden", []):
        lines.append(f"hidden    {item}")
    touches = result.get("consequences")
    if touches:
        lines.append(f"touches   {shown(touches['summary'])}")
        for line in touches["lines"]:
            lines.append(f"  touches {shown(line)}")
    shown_as = result.get("shown", result["level"])
    lines.append(f"shown     {shown_as}" + (f"   (the reader's guess: {result['level']})"
                                       if shown_as != result["level"] else ""))
    lines.append(f"level     {result['level']}")
    for reason in result["reasons"]:
        lines.append(f"  because {reason}")
    for note in result.get("hint_notes", []):
        lines.append(f"  hint    {note}")
    if result["understood"]:
        lines.append("understood: every program, option, path, tool and argument is in the catalog")
    else:
        lines.append("not understood:" if result["gaps"] else f"{not_understood(())}")
        for gap in result["gaps"]:
            lines.append(f"  part    {shown(gap)}")
    lines.append(f"automatic answers: {_automatic(reading['tool'], result)}")
    return "\n".join(lines)


def _automatic(tool: str, result: dict[str, Any]) -> str:
    """What may answer the call without the person, as the broker decides it (core/policy/automatic.py)."""
    from ..core.policy.automatic import MILD_LEVELS, only_the_tool_is_unknown

    if result["level"] not in MILD_LEVELS:
        return 'none; the person decides (or an allow rule that says risk = "destructive")'
    if result["understood"]:
        return "approve-all, a session approval and allow rules may answer it"
    if only_the_tool_is_unknown(tool, False, result["gaps"]):
        return ("only an allow rule naming the tool exactly (your declaration), an exact session approval, "
                'or a rule that says risk = "destructive"')
    return 'only an exact session approval, or an allow rule that says risk = "destructive"'


def _object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object")
    return value
