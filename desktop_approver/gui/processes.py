"""The agent's own command line, and `~` in paths, for the review (Qt-free, Linux's /proc).

The kernel vouches for the peer's pid; its executable is usually an interpreter (``python3.11``,
``node``), which says little. The command line says which agent it is. When the peer is our own
hook or one of its per-call commands (``hook``, ``request``, ``run``...), the process that started it
(Claude Code, a script) is the agent, so that one is named, with the command it went through. Our own
demo, or any other of our programs, is the agent itself: nothing came "through" it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.calls.reading import CWD_ARGS, PATH_ARGS

OWN_TOOLS = ("desktop-approver", "desktop_approver")
RELAYS = ("hook", "request", "run", "mcp-gate", "mcp-permission")
"""Our commands that ask on another program's behalf: the program that started them is the agent."""
PATH_KEYS = (*PATH_ARGS, *CWD_ARGS)  # the reading module's names: one vocabulary for every view


def command_line(pid: int | None, proc: Path = Path("/proc")) -> list[str] | None:
    """The process's argv, or None when it is gone or not readable."""
    if pid is None:
        return None
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    argv = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    return argv or None


def parent_pid(pid: int, proc: Path = Path("/proc")) -> int | None:
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the name in brackets may hold spaces
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def agent_command(pid: int | None, proc: Path = Path("/proc")) -> tuple[str, str | None] | None:
    """(the agent's command line for display, the command of ours it asked through, e.g.
    ``"desktop-approver hook"``, or None when the peer is the agent itself)."""
    argv = command_line(pid, proc)
    if argv is None or pid is None:
        return None
    relay = relay_command(argv)
    if relay is not None:
        parent = parent_pid(pid, proc)
        parent_argv = command_line(parent, proc) if parent and parent > 1 else None
        if parent_argv:
            return display_command(parent_argv), f"desktop-approver {relay}"
    return display_command(argv), None


def relay_command(argv: list[str]) -> str | None:
    """The per-call command ``argv`` runs (``desktop-approver hook ...``, ``python -m desktop_approver
    request ...``), or None when it is not one of ours that asks on another program's behalf."""
    for at, part in enumerate(argv[:3]):
        if os.path.basename(part) in OWN_TOOLS and at + 1 < len(argv):
            return argv[at + 1] if argv[at + 1] in RELAYS else None
    return None


def display_command(argv: list[str], limit: int = 160) -> str:
    home = os.path.expanduser("~")
    text = " ".join(_quoted(part, home) for part in argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(part: str, home: str) -> str:
    """Shell-quoted, with the home directory as an unquoted ``~`` where that reads the same."""
    short = tilde(part, home)
    if short != part and shlex.quote(short[1:]) == short[1:]:
        return short
    return shlex.quote(part)


def tilde(path: str, home: str) -> str:
    """The home directory as ``~`` (shorter, and what the person would type)."""
    if home and home != "/" and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def tilde_paths(args: Any, commands: Iterable[str] = ()) -> list[tuple[str, str]]:
    """Every ``~`` path in a call's path arguments and shell words, with what it stands for."""
    found: list[str] = []
    if isinstance(args, dict):
        for key in PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.startswith("~"):
                found.append(value)
    for command in commands:
        try:
            words = shlex.split(command, comments=False)
        except ValueError:
            words = command.split()
        found.extend(word for word in words if word.startswith("~"))
    out = []
    for path in dict.fromkeys(found):
        resolved = os.path.expanduser(path)
        if resolved != path:
            out.append((path, resolved))
    return out
