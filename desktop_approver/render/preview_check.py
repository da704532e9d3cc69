"""Does the agent's preview show the call the app read? (Qt-free)

The preview is the agent's picture of the call; the arguments are what runs. An agent can send
``Write src/app.py`` whose content pipes a download into a shell, with a harmless diff of
README.md as its preview: the person reads the picture. :func:`preview_mismatch` compares the
paths and commands a preview is about with the ones the reader found in the arguments
(:func:`~desktop_approver.core.calls.reading.read_call`) and says, in the app's words, when they
differ. It stays silent when it cannot tell (a text preview, a call whose paths the reader does
not know): a false alarm would teach the person to ignore it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.calls.reading import read_call
from .headline import one_line, shorten

SHOWN_CHARS = 60
_UNIFIED_PATH = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S[^\t\n]*)$", re.MULTILINE)


def preview_paths(preview: Mapping[str, Any]) -> list[str]:
    """The files a diff or file-write preview says it changes (``/dev/null`` is no file)."""
    paths = []
    if isinstance(preview.get("path"), str) and preview["path"]:
        paths.append(preview["path"])
    unified = preview.get("unified")
    if isinstance(unified, str):
        paths += [path.strip() for path in _UNIFIED_PATH.findall(unified) if path.strip() != "/dev/null"]
    return list(dict.fromkeys(paths))


def preview_command(preview: Mapping[str, Any]) -> str | None:
    """The command a command preview shows (an argv list joined by spaces)."""
    if isinstance(preview.get("command"), str):
        return str(preview["command"])
    argv = preview.get("argv")
    if isinstance(argv, list) and argv:
        return " ".join(str(part) for part in argv)
    return None


def _resolved(path: str, cwd: str | None) -> str:
    path = os.path.expanduser(path)
    if not os.path.isabs(path) and cwd:
        path = os.path.join(cwd, path)
    return os.path.normpath(path)


def _same_file(shown: str, read: Iterable[tuple[str, str]], cwd: str | None) -> bool:
    """``shown`` names one of the read paths: the same once resolved, or one is the other's tail
    (a diff's ``a/src/app.py`` against an absolute ``/work/src/app.py``)."""
    mine = _resolved(shown, cwd)
    for written, resolved in read:
        for other in (resolved, _resolved(written, cwd)):
            if mine == other or mine.endswith(os.sep + other.lstrip(os.sep)) or other.endswith(
                    os.sep + os.path.normpath(shown).lstrip(os.sep)):
                return True
    return False


def _squeezed(command: str) -> str:
    return " ".join(command.split())


def _quote(text: str) -> str:
    return shorten(one_line(text), SHOWN_CHARS)


def preview_mismatch(tool: str, args: Mapping[str, Any] | Any, preview: Mapping[str, Any] | None,
                     cwd: str | None = None) -> str | None:
    """A warning when the agent's preview is about another file or command than the arguments; else None."""
    if not isinstance(preview, Mapping) or not isinstance(args, Mapping):
        return None
    kind = preview.get("kind")
    reading = read_call(tool, args, cwd)
    read_paths = [(use.path, use.resolved) for use in reading.paths]
    commands = [run.text for run in reading.commands]
    runs = f"runs `{_quote(commands[0])}`" if commands else None
    touches = f"touches `{_quote(read_paths[0][0])}`" if read_paths else None
    what = runs or touches
    if kind in ("diff", "file_write"):
        shown = preview_paths(preview)
        if not shown or what is None:
            return None
        others = [path for path in shown if not _same_file(path, read_paths, cwd)
                  and not any(os.path.basename(path) in command for command in commands)]
        if not others:
            return None
        return (f"⚠ The agent's preview shows a change to `{_quote(others[0])}`, but the call {what}. "
                "What runs is the arguments: below is what they do, not the agent's picture.")
    if kind == "command":
        shown_command = preview_command(preview)
        if shown_command is None or what is None:
            return None
        if commands and any(_squeezed(shown_command) == _squeezed(command) for command in commands):
            return None
        return (f"⚠ The agent's preview shows the command `{_quote(shown_command)}`, but the call {what}. "
                "What runs is the arguments: below is what they do, not the agent's picture.")
    return None
