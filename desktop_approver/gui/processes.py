"""The agent's own command line, and `~` in paths, for the review (Qt-free, Linux's /proc).

The kernel vouches for the peer's pid; its executable is usually an interpreter (``python3.11``,
``node``), which says little. The command line says which agent it is. When the peer is our own
hook or CLI, the process that started it (Claude Code, a script) is the agent, so that one is named.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.calls.reading import CWD_ARGS, PATH_ARGS

OWN_TOOLS = ("desktop-approver", "desktop_approver")
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


def agent_command(pid: int | None, proc: Path = Path("/proc")) -> tuple[str, bool] | None:
    """(the agent's command line for display, whether it is the parent of our own hook or CLI)."""
    argv = command_line(pid, proc)
    if argv is None or pid is None:
        return None
    if any(tool in part for part in argv[:3] for tool in OWN_TOOLS):
        parent = parent_pid(pid, proc)
        parent_argv = command_line(parent, proc) if parent and parent > 1 else None
        if parent_argv:
            return display_command(parent_argv), True
    return display_command(argv), False


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
