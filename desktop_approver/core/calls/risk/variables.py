"""Variables in expansions and prints, judged by what is known harmless, never by names that look
secret (issue 32, item 3): ``echo $DATABASE_URL`` prints a password though no word of the name says
so, and ``${!X}`` prints whatever variable ``X`` names.

A call is understood only where every variable it expands is one it set itself (``for f in *``,
``NAME=value``, ``read NAME``: the values come from the call's own words, each judged in turn), one
the catalog lists as harmless (``[environment] harmless``), or one of the shell's and the session's
own harmless ones below (``HOME``, ``PATH``, ``PWD``...). Indirection (``${!X}``, a ``declare -n``
name reference) names a variable the reader cannot see: never understood. Text in single quotes is
not expanded by the shell (``awk '{print $NF}'``) and is not read as an expansion.
"""

from __future__ import annotations

import fnmatch
import re

from ..catalog import catalog
from ..reading import CallReading

__all__ = ["HARMLESS_EXPANSIONS", "variable_gaps"]

HARMLESS_EXPANSIONS = (
    "HOME", "PATH", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "HOSTNAME", "HOST", "TERM", "TMPDIR", "TMP", "TEMP",
    "RANDOM", "SECONDS", "LINENO", "UID", "EUID", "PPID", "BASHPID", "SHLVL", "IFS", "COLUMNS", "LINES", "EDITOR",
    "VISUAL", "PAGER", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "GOPATH", "GOROOT", "GOBIN", "CARGO_HOME",
    "RUSTUP_HOME", "JAVA_HOME", "NVM_DIR", "PYENV_ROOT", "XDG_*_HOME", "XDG_RUNTIME_DIR", "BASH_SOURCE", "FUNCNAME",
    "BASH_VERSION", "BASH_VERSINFO", "OSTYPE", "MACHTYPE", "HOSTTYPE", "DISPLAY", "WAYLAND_DISPLAY", "PIPESTATUS",
    "GROUPS", "DIRSTACK", "PWD",
)
"""The shell's and the session's own variables, harmless to print or expand (no credential lives there)."""

_SINGLE_QUOTED = re.compile(r"'[^']*'")
_EXPANSION = re.compile(r"\$\{(!)?#?([A-Za-z_]\w*)|\$([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"(?:^|[\s;&|(`])(?:for|select)\s+([A-Za-z_]\w*)\s+in\b"
                       r"|(?:^|[\s;&|(`])([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?="
                       r"|\bprintf\s+-v\s+([A-Za-z_]\w*)"
                       r"|\b(?:read|mapfile|readarray)\b((?:\s+-[A-Za-z]+(?:\s+\S+)?)*(?:\s+[A-Za-z_]\w*)+)")
_NAME_REFERENCE = re.compile(r"\b(?:declare|typeset|local)\s+-\w*n")


def variable_gaps(reading: CallReading) -> tuple[str, ...]:
    """Why the variables a shell call expands are not understood (nothing: every one is known)."""
    gaps: list[str] = []
    for run in reading.commands:
        # the text as written, here-documents included (a quoted one's body is read too: not proof either way)
        text = _SINGLE_QUOTED.sub("''", run.text)
        assigned = _assigned(text)
        if _NAME_REFERENCE.search(text):
            gaps.append("a name reference (declare -n) expands a variable the reader cannot see")
        for indirect, braced, plain in _EXPANSION.findall(text):
            name = braced or plain
            if indirect:
                gaps.append(f"`${{!{name}}}` expands the variable `{name}` names: which one is not known")
            elif name not in assigned and not harmless(name):
                gaps.append(f"expands `${name}`, a variable not known harmless: what it holds is not known")
    return tuple(dict.fromkeys(gaps))


def harmless(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in HARMLESS_EXPANSIONS) or \
        catalog().variable_is_harmless(name)


def _assigned(text: str) -> set[str]:
    names: set[str] = set()
    for loop, assignment, printf_v, read_names in _ASSIGNED.findall(text):
        names.update(n for n in (loop, assignment, printf_v) if n)
        if read_names:
            words = read_names.split()
            names.update(w for i, w in enumerate(words) if re.fullmatch(r"[A-Za-z_]\w*", w)
                         and not (i and words[i - 1].startswith("-") and words[i - 1][-1] in "adnNptu"))
    return names
