"""What a rule is checked against: a call cut into parts, and the files each part touches.

A shell call gives one part per simple command (through the reading module's parser, with
``sudo``, ``sh -c`` and the like unwrapped); any other call is one part. Each part carries its
touches: every path as written, normalised against every directory it may be relative to (the
agent's working directory, and where a ``cd`` in the same command may lead), resolved through
symlinks when it can be, and the doubt that keeps an ``allow`` rule from relying on it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..calls.reading import FAMILIES, ShellRun, command_paths, read_call
from .globs import _has_glob, _squeeze
from .rules import PolicyCall

_CD_COMMANDS = frozenset({"cd", "pushd", "popd"})
_EXPANSION_CHARS = ("$", "`", "{")
_UNKNOWN_CWD = "/<unknown working directory>"


@dataclass(frozen=True)
class _Touch:
    """One file a part reads, writes or deletes, seen every way a rule may need."""

    path: str | None                   # as written; None when the tool names no path
    operation: str | None              # None: unknown
    lexical: tuple[tuple[str, ...], ...] = ()   # normalised absolute components, per possible base
    real: tuple[str, ...] | None = None         # after resolving symlinks, when it could be
    doubt: str = ""                    # why an allow rule cannot rely on this path ("" = it can)


@dataclass(frozen=True)
class _Part:
    text: str
    command: str | None = None         # normalised words of a shell part; None for other calls
    parsed: bool = True
    touches: tuple[_Touch, ...] = ()


class _Context:
    """A call cut into parts, plus a cache of the zones resolved against its working directory."""

    def __init__(self, call: PolicyCall) -> None:
        self.call = call
        self.base = _absolute_base(call.cwd)
        self._zones: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.parts = _parts_of(call, self.base)

    def zone(self, pattern: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The zone's components as written, and with the symlinks of its literal prefix resolved."""
        if pattern not in self._zones:
            lexical = _components(_normalise(pattern, self.base or _UNKNOWN_CWD))
            literal = 0
            while literal < len(lexical) and not _has_glob(lexical[literal]):
                literal += 1
            real = lexical
            if self.base is not None or os.path.isabs(os.path.expanduser(pattern)):
                real = _components(os.path.realpath("/" + "/".join(lexical[:literal]))) + lexical[literal:]
            self._zones[pattern] = (lexical, real)
        return self._zones[pattern]


def _absolute_base(cwd: str | None) -> str | None:
    if not cwd:
        return None
    cwd = os.path.expanduser(cwd)
    return os.path.normpath(cwd) if os.path.isabs(cwd) else None


def _normalise(path: str, base: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path))


def _components(path: str) -> tuple[str, ...]:
    return tuple(c for c in path.split("/") if c)


def _parts_of(call: PolicyCall, base: str | None) -> tuple[_Part, ...]:
    reading = read_call(call.tool, call.args, base)
    if reading.commands:
        return tuple(part for run in reading.commands for part in _shell_parts(run, base))
    operation = _FAMILY_OPERATION.get(reading.family)
    touches: list[tuple[str | None, str | None]] = [
        (use.path, use.operation if operation is not None else None) for use in reading.paths]
    if not touches and reading.family in _FAMILY_OPERATION and reading.family != "unknown":
        touches.append((None, operation))
    text = call.tool
    if touches:
        text += " " + ", ".join(f"{t[1] or 'touch'} {t[0] or '(no path)'}" for t in touches)
    return (_Part(text, touches=tuple(_touch(path, op, base) for path, op in touches)),)


# What a rule's ``operation`` sees for each family of tool; None: not known (allow rules cannot
# rely on it, ask / deny / block rules take it as possibly theirs).
_FAMILY_OPERATION: dict[str, str | None] = {
    "read": "read", "write": "write", "edit": "write", "patch": "write", "move": "write", "delete": "delete",
    "network": None, "database": None, "message": None, "unknown": None,
}
assert set(_FAMILY_OPERATION) == set(FAMILIES) - {"shell"}


def shell_command(tool: str, args: dict[str, Any]) -> str | None:
    """The shell command line a call runs, or ``None`` when it is not a shell call."""
    reading = read_call(tool, args)
    return reading.commands[0].text if reading.commands else None


def _shell_parts(run: ShellRun, base: str | None) -> tuple[_Part, ...]:
    if run.parse_error:  # an open quote: never allowed by a command pattern
        return (_Part(_squeeze(run.text), _squeeze(run.text), parsed=False),)
    simple = [c for c in run.programs if c.argv]
    if not simple:
        return (_Part(_squeeze(run.text), ""),)
    moves = [c.argv for c in simple if os.path.basename(c.argv[0]) in _CD_COMMANDS]
    bases = _cd_bases(moves, base)
    doubt = "the command also changes directory (cd)" if moves else ""
    parts = []
    for simple_command in run.programs:
        if not simple_command.argv:
            continue
        words = _squeeze(" ".join(simple_command.argv))
        touches = tuple(_touch(use.path, use.operation, base, bases, doubt, shell=True)
                        for use in command_paths(simple_command, None))  # relative: _touch resolves per base
        parts.append(_Part(words, words, touches=touches))
    return tuple(parts)


def _cd_bases(moves: list[tuple[str, ...]], base: str | None) -> tuple[str, ...]:
    """Where a ``cd`` in the command may take relative paths: checked by ask/deny/block zones."""
    bases = []
    for argv in moves:
        target = argv[1] if len(argv) > 1 and argv[0] != "popd" else "~"
        if not any(c in target for c in _EXPANSION_CHARS) and target != "-":
            bases.append(_normalise(target, base or _UNKNOWN_CWD))
    return tuple(bases)


def _touch(path: str | None, operation: str | None, base: str | None, other_bases: tuple[str, ...] = (),
           doubt: str = "", *, shell: bool = False) -> _Touch:
    """``doubt`` comes from the command around the path (a ``cd``); the path may add its own."""
    if path is None:
        return _Touch(None, operation, doubt="the call names no path")
    expanded = os.path.expanduser(path)
    relative = not os.path.isabs(expanded)
    if shell and any(c in path for c in _EXPANSION_CHARS):
        doubt = f"the shell would expand {path!r}"
    elif shell and any(fnmatchcase("..", part) and _has_glob(part) for part in path.split("/")):
        doubt = f"the glob in {path!r} could match '..'"
    elif relative and base is None:
        doubt = "the agent's working directory is unknown"
    elif not relative:
        doubt = ""
    bases = (base or _UNKNOWN_CWD,) + (other_bases if relative else ())
    lexical = tuple(dict.fromkeys(_components(_normalise(expanded, b)) for b in bases))
    real = None
    if not relative or base is not None:
        real = _components(os.path.realpath(_normalise(expanded, base or "/")))
    return _Touch(path, operation, lexical, real, doubt)

