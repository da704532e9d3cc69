"""What the catalog can vouch for in words whose role depends on their shape (issue 19, red team).

A value of ``curl -d`` is data unless it starts with ``@`` (a file it reads and sends, ``@-`` its
input); an ``@FILE`` operand of a compiler is more options read from a file; a package "name" may
be a URL or a VCS address that is downloaded and run; an httpie operand may be a method, a URL, a
field it sends or a file it uploads; whatever ``nc`` is given on its input leaves the machine.
Each function returns a :class:`Vouch`: what was not understood, the files it reads or writes
(the engine judges them like any other path) and what surely makes the call destructive. An
operand that is an output (``uniq IN OUT``, ``xxd -r IN OUT``, ``zip OUT.zip ...``) is named by
the entry's ``output_operand``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..catalog import Program
from ..facts.requirements import PACKAGE_ARCHIVE
from ..shellparse import SimpleCommand

__all__ = ["SHAPED_ROLES", "Vouch", "data_value", "fed_input", "http_request", "shell_action", "shaped_operands"]

# Operand roles read here only (the engine gives their words no other meaning).
SHAPED_ROLES = frozenset({"names", "request", "pids", "ps-words"})


@dataclass(frozen=True)
class Vouch:
    gaps: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    destructive: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    variables: tuple[str, ...] = ()


# curl -d @FILE, -F name=@FILE / name=<FILE, -H @FILE; httpie name=@FILE, name:=@FILE, name@FILE
_ATTACHED = re.compile(r"^(?:[^=@<:\s]*(?::=|=))?[@<](?P<path>.*)$", re.S)
_HTTPIE_FILE = re.compile(r"^[^=@:/\s]+@(?P<path>.+)$", re.S)
_HTTPIE_FIELD = re.compile(r"^[^=:\s/]*(:=|==|=|:)")
_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "TRACE"})
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# A package given as a URL, a VCS address, an archive or a path: downloaded (or taken from
# anywhere) and its build or install scripts run; an archive is told by its extension in any case
# (``PACKAGE_ARCHIVE``).
_NOT_A_NAME = re.compile(r"://|^(git|hg|svn|bzr)\+|^git@|^(github|gitlab|bitbucket|file|git|http|https|link|portal):"
                         r"|^[~/]|^\.\./|^\$", re.I)
# git show HEAD:.env, git cat-file -p main:config/secrets.yml, git show :.env (the index)
_REVISION_PATH = re.compile(r"^[^:\s/][^:\s]*:(?P<path>[^:\s].*)$|^:(?:[0-3]:)?(?P<staged>[^:\s].*)$")
# Settings that hold a credential: npm's //registry/:_authToken, git's http.*.extraheader, ...
_SECRET_KEY = re.compile(r"_?auth(token)?\b|_authtoken|token|password|passwd|secret|api_?key|credential|extraheader"
                         r"|private_?key|_auth$", re.I)
_GITHUB_SHORTHAND = re.compile(r"^[\w.-]+/[\w.-]+(#.*)?$")


def data_value(value: str, option: str, label: str) -> Vouch:
    """A value of a ``data`` option: plain data, or ``@FILE``/``<FILE`` it reads and sends."""
    found = _ATTACHED.match(value.strip())
    if found is None:
        return Vouch()
    path = found.group("path").strip()
    if path in ("-", ""):
        return Vouch(gaps=(f"data `{option}` of `{label}` read from its input",))
    return Vouch(reads=(path,))


def fed_input(entry: Program, label: str, cmd: SimpleCommand) -> Vouch:
    """A program that sends what it is given on its input (``nc host 80 <<< "$SECRET"``)."""
    fed = cmd.piped_from or any(r.op.lstrip("0123456789") in ("<", "<<", "<<-", "<<<") for r in cmd.redirects)
    if entry.sends_input and fed:
        return Vouch(gaps=(f"what `{label}` is given on its input (sent over the network)",))
    return Vouch()


def shaped_operands(entry: Program, label: str, operands: list[str]) -> Vouch:
    """Operands whose role depends on their shape: response files, package names, httpie requests."""
    gaps: list[str] = []
    reads: list[str] = []
    destructive: list[str] = []
    writes = [operands[entry.output_operand - 1]] if 0 < entry.output_operand <= len(operands) else []
    if 0 < entry.input_operand <= len(operands):
        reads.append(operands[entry.input_operand - 1])
    if entry.revision_paths:
        for found in map(_REVISION_PATH.match, operands):
            if found is not None:
                reads.append(found.group("path") or found.group("staged"))
    variables = [word.split("=", 1)[0] for word in operands
                 if entry.variable_operands and re.match(r"^[A-Za-z_]\w*\+?=", word)]
    if entry.secret_keys and any(_SECRET_KEY.search(word) for word in operands):
        destructive.append(f"prints a credential setting into the agent's context ({label})")
    if entry.response_files:
        gaps += [f"options read from the file `{word}` (of `{label}`)" for word in operands if word.startswith("@")]
    if entry.operands == "names":
        for word in operands:
            if _NOT_A_NAME.search(word) or PACKAGE_ARCHIVE.search(word) or not word.startswith("@") \
                    and _GITHUB_SHORTHAND.match(word):
                gaps.append(f"package `{word[:60]}` of `{label}` (an address or a path, not a name)")
    elif entry.operands == "pids":
        gaps += [f"process `{word}` of `{label}` (not one process id)" for word in operands
                 if not re.fullmatch(r"[1-9]\d*", word)]
    elif entry.operands == "ps-words":
        gaps += [f"operand `{word}` of `{label}`" for word in operands
                 if not re.fullmatch(r"[1-9]\d*|[auxwfjlrsvmcHhTtSnOoZ]+", word)]
    elif entry.operands == "request":
        method, _url, sends, files = http_request(operands)
        reads += files
        if sends:
            gaps.append(f"a request that sends data ({method}, `{label}`)")
        if method == "DELETE":
            destructive.append("deletes a remote resource (HTTP DELETE)")
    return Vouch(tuple(gaps), tuple(reads), tuple(destructive), tuple(writes), tuple(v.rstrip("+") for v in variables))


def http_request(operands: list[str]) -> tuple[str, str, bool, list[str]]:
    """An httpie/xh request: ``(method, url, whether it sends data, the files it reads to send)``."""
    words = list(operands)
    # httpie takes a first word of letters only, with more after it, as the method (PURGE, MOVE)
    method = words.pop(0).upper() if words and (words[0].upper() in _METHODS or len(words) > 1 and re.fullmatch(
        r"[A-Za-z]+", words[0])) else "GET"
    url = words.pop(0) if words else ""
    sends = method not in _READ_METHODS
    files: list[str] = []
    for word in words:
        attached = _ATTACHED.match(word) or _HTTPIE_FILE.match(word)
        if attached is not None:
            files.append(attached.group("path").strip())
            sends = True
        elif _HTTPIE_FIELD.match(word) and not re.match(r"^[^=:\s/]*==", word) and not re.match(r"^[\w-]+:[^=]", word):
            sends = True     # a field (name=value, name:=json): a body; headers and ==query are not
    return method, url, sends, files


_ACTION_KEYS = frozenset({"type", "command", "timeout_ms", "timeout"})


def shell_action(tool: str, args: Mapping[str, Any], cwd: str | None) -> Vouch:
    """OpenAI's ``local_shell`` ``{"action": {...}}``: a working directory other than the agent's,
    a user or any other key inside ``action`` is not understood; ``env`` is read as prefixes."""
    action = args.get("action") if isinstance(args, Mapping) else None
    if not isinstance(action, Mapping):
        return Vouch()
    gaps: list[str] = []
    variables: list[str] = []
    for key, value in action.items():
        if key in _ACTION_KEYS or value in (None, "", {}, []):
            continue
        if key in ("working_directory", "workdir") and isinstance(value, str) and cwd is not None \
                and os.path.normpath(value) == os.path.normpath(cwd):
            continue
        if key == "env" and isinstance(value, Mapping):
            variables += [str(name) for name in value]
            continue
        gaps.append(f"argument `action.{key}` of `{tool}`")
    return Vouch(gaps=tuple(gaps), variables=tuple(variables))
