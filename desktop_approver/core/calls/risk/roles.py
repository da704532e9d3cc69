"""What role each argument of a call has, which role a call gives twice, and which values no reader reads.

The engine (:mod:`.understanding`) turns these into gaps, and :mod:`.unread` looks at what nobody
reads for destructive findings; both ask here, so they cannot disagree about an argument.

- **Roles.** A tool the catalog knows gives each argument's role in its entry; a shell tool's
  command may come under any of the vocabulary's names for one (``command``, ``cmd``, ``argv``,
  ...), spelled any way (``CommandLine``, ``comm\\u200band``). A tool the catalog does not know
  has the roles the reading's vocabulary gives (``path``, ``url``, ``body``, ...).
- **One role, twice.** An agent's tool runs one command, writes one file, works in one directory:
  when a call gives such a role under two names with different values (``command`` and ``cmd``;
  ``content`` and ``contents``; ``path`` and ``file_path``), which one runs depends on the tool's
  own code. The reader reads every one, and the call is not understood.
- **Unread values.** An argument without a role, a value nested (an object, or a list holding
  objects or lists) under a role that takes one plain value, and a command argument that is not a
  command line: no reader reads them, so the call is not understood.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..catalog import Catalog, Tool
from ..reading import (
    BLOCK_EXECUTORS,
    BODY_ARGS,
    CONTENT_ARGS,
    CWD_ARGS,
    DESTINATION_ARGS,
    HEADER_ARGS,
    LIST_PATH_ARGS,
    NEW_ARGS,
    OLD_ARGS,
    PATCH_ARGS,
    PATH_ARGS,
    RECIPIENT_ARGS,
    RECURSIVE_ARGS,
    SHELL_ARGS,
    SOURCE_ARGS,
    SQL_ARGS,
    URL_ARGS,
    CallReading,
    hidden_in,
    known_name,
    normalise_tool,
    resolve_path,
    shell_text,
)

__all__ = ["argument_role", "disagreements", "shown_name", "tool_entry", "unread_arguments"]

# Roles whose value the readers read in any shape: edits lists, a patch operation, a request
# body or headers, recipients, a remote repository's names, a wrapped call's arguments, and
# `text`: data the catalog says has no effect of its own (a to-do list, a plan, a description).
_STRUCTURED_ROLES = frozenset({"edits", "patch", "content", "recipient", "remote", "wrapped-tool", "wrapped-args",
                               "text"})
# Roles a call gives once: two names with different values leave what happens to the tool's code.
_ONE_VALUE_ROLES = {"command": "commands", "cwd": "working directories", "read": "paths", "list": "paths",
                    "write": "paths", "delete": "paths", "sql": "SQL statements", "patch": "patches",
                    "url": "addresses", "code": "pieces of code"}
# Of the ``content`` role, the texts a call gives once each (old and new text of an edit are two).
_ONE_TEXT_GROUPS = (("contents", CONTENT_ARGS), ("old texts", OLD_ARGS), ("new texts", NEW_ARGS))
# A tool the catalog does not know: the roles of the names the reading reads, and the groups of
# names for one value. Not paths: such a tool may well take a folder and a file, and the reader
# reads and judges every path it is given.
_VOCABULARY_ROLES: dict[str, str] = {}
for _names, _role in ((SHELL_ARGS, "command"), (("action",), "command"), (CWD_ARGS, "cwd"), (PATH_ARGS, "read"),
                      (LIST_PATH_ARGS, "read"), (SOURCE_ARGS, "read"), (DESTINATION_ARGS, "write"),
                      (CONTENT_ARGS, "content"), (OLD_ARGS, "content"), (NEW_ARGS, "content"), (PATCH_ARGS, "patch"),
                      (URL_ARGS, "url"), (BODY_ARGS, "content"), (HEADER_ARGS, "content"), (SQL_ARGS, "sql"),
                      (RECIPIENT_ARGS, "recipient"), (RECURSIVE_ARGS, "option"), (("edits",), "edits"),
                      (("replace_all", "method"), "option")):
    for _name in _names:
        _VOCABULARY_ROLES.setdefault(_name, _role)
_VOCABULARY_GROUPS = (("commands", (*SHELL_ARGS, "action")), ("working directories", CWD_ARGS),
                      *_ONE_TEXT_GROUPS, ("patches", PATCH_ARGS), ("SQL statements", SQL_ARGS),
                      ("addresses", URL_ARGS), ("sources", SOURCE_ARGS), ("destinations", DESTINATION_ARGS))


def tool_entry(cat: Catalog, tool: str, args: Mapping[str, Any]) -> Tool | None:
    """The catalog's entry for a tool: a remote repository's tool when the call names one
    (``owner`` and ``repo``), else by its full name, else by its name without the MCP prefix."""
    full = tool.lower() if isinstance(tool, str) else ""
    name = normalise_tool(tool)
    if isinstance(args, Mapping) and ("owner" in args and ("repo" in args or "repository" in args)
                                      or "repo" in args and isinstance(args.get("repo"), str)
                                      and "/" in str(args.get("repo")) and "://" not in str(args.get("repo"))):
        remote = cat.tools.get(f"github.{name}")
        if remote is not None:
            return remote
    return cat.tool(full) or cat.tool(name)


def argument_role(entry: Tool | None, family: str, key: Any, value: Any) -> str | None:
    """The role of argument ``key`` (None: no reader knows what it is for)."""
    if not isinstance(key, str):
        return None
    known = known_name(key)
    if entry is None:
        return _VOCABULARY_ROLES.get(known) if known is not None else None
    role = entry.args.get(key)
    if role == "code" and family == "shell" and entry.name in BLOCK_EXECUTORS:
        role = "command"              # a code-block executor's block in a shell's language: read as a command line
    if role is None and key.startswith("-") and isinstance(value, (bool, int)):
        role = entry.args.get("-*")   # ripgrep-style flags given as arguments (Claude Code's Grep)
    if role is None and family == "shell" and known in SHELL_ARGS:
        role = "command"              # every shell tool's command, under any of its names
    elif role is None and known in CWD_ARGS and (family == "shell" or any(r == "cwd" for r in entry.args.values())):
        role = "cwd"                  # the reading reads a shell call's directory under any of its names
    elif role is None and known is not None and known != key:
        role = entry.args.get(known)  # a listed argument spelled otherwise (hidden characters in it)
    return role


def shown_name(key: str) -> str:
    """An argument's name for a gap, with characters that cannot be seen written out (``\\u200b``)."""
    if not hidden_in(key):
        return key
    return "".join(ch if ch.isprintable() and not hidden_in(ch) else f"\\u{ord(ch):04x}" for ch in key)


def disagreements(reading: CallReading, entry: Tool | None) -> list[str]:
    """One phrase per role the call gives under two or more names with different values:
    "two commands given (`command` and `cmd`)"."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key, value in reading.args.items():
        if not isinstance(key, str) or value in (None, "", [], {}):
            continue
        if reading.family == "shell" and known_name(key) == "action" and isinstance(value, Mapping):
            for inner, command in _action_commands(value):    # each command the action gives
                groups.setdefault(("command", "commands"), []).append(
                    (f"{key}.{inner}", _comparable(command, "commands", reading)))
            continue
        group = _group_of(entry, reading.family, key, value)
        if group is not None:
            groups.setdefault(group, []).append((key, _comparable(value, group[1], reading)))
    phrases = []
    for (_, noun), given in groups.items():
        given.sort(key=lambda item: tuple(_VOCABULARY_ORDER.get(known_name(part) or "", len(_VOCABULARY_ORDER))
                                          for part in item[0].split(".")))
        if len(given) > 1 and len({value for _, value in given}) > 1:
            names = [f"`{shown_name(key)}`" for key, _ in given]
            listed = ", ".join(names[:-1]) + f" and {names[-1]}"
            phrases.append(f"{_COUNTS.get(len(given), 'several')} {noun} given ({listed})")
    return phrases


_COUNTS = {2: "two", 3: "three", 4: "four"}
# Names in a gap come in the vocabulary's order (``command`` before ``cmd``), whatever the call's order.
_VOCABULARY_ORDER = {name: at for at, name in enumerate(
    (*SHELL_ARGS, "action", *CWD_ARGS, *PATH_ARGS, *LIST_PATH_ARGS, *SOURCE_ARGS, *DESTINATION_ARGS, *CONTENT_ARGS,
     *OLD_ARGS, *NEW_ARGS, *PATCH_ARGS, *URL_ARGS, *SQL_ARGS))}


def _group_of(entry: Tool | None, family: str, key: str, value: Any) -> tuple[str, str] | None:
    """``(group, noun)``: the one value an argument gives, and what it is called in a gap."""
    known = known_name(key)
    if entry is None:
        if family == "shell" and known in SHELL_ARGS:
            return "commands", "commands"
        return next(((noun, noun) for noun, names in _VOCABULARY_GROUPS if known in names), None)
    role = argument_role(entry, family, key, value)
    if role == "content":
        return next(((noun, noun) for noun, names in _ONE_TEXT_GROUPS if known in names), None)
    noun = _ONE_VALUE_ROLES.get(role or "")
    return (role or "", noun) if noun is not None else None


def _comparable(value: Any, group: str, reading: CallReading) -> str:
    """What two values of one role are compared by: the command line a command value runs, the
    place a path or directory names, else the value itself."""
    if group == "commands":
        if isinstance(value, Mapping):    # OpenAI's {"action": {"type": "exec", "command": [...]}}
            value = value.get("command", value)
        shown = shell_text(value)
        if shown is not None:
            return shown[0]
    if isinstance(value, str) and group in ("paths", "working directories", "sources", "destinations"):
        return resolve_path(value, reading.extra_cwd if group != "working directories" else None)
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def unread_arguments(reading: CallReading, entry: Tool | None) -> Iterator[tuple[str, Any, str]]:
    """``(key, value, why)`` for every argument no reader reads; ``why`` is ``"no role"``,
    ``"nested"`` (an object or a list of objects or lists where one plain value is read) or
    ``"not a command line"`` (a command argument no shell parser can read)."""
    shell_keys = {run.key.split(".")[0].split("[")[0] for run in reading.commands}
    run_keys = {run.key.split("[")[0] for run in reading.commands}
    for key, value in reading.args.items():
        role = argument_role(entry, reading.family, key, value)
        if role is None:
            yield str(key), value, "no role"
        elif role == "command" and reading.family == "shell" and known_name(key) == "action" \
                and isinstance(value, Mapping):
            # OpenAI's action: its command is read; any other field (``env``, ``working_directory``,
            # ``user``) changes what runs, and no reader reads it
            for inner, inner_value in value.items():
                where = f"{key}.{inner}"
                if known_name(inner) in SHELL_ARGS:
                    if inner_value not in (None, "", [], {}) and where not in run_keys:
                        yield where, inner_value, "not a command line"
                elif inner not in _ACTION_PLAIN_FIELDS and inner not in _ACTION_VOUCHED_FIELDS:
                    yield where, inner_value, "no role"
        elif role == "command" and reading.family == "shell":
            if value not in (None, "", [], {}) and key not in shell_keys:
                yield key, value, "not a command line"
        elif role not in _STRUCTURED_ROLES and _nested(value) or role in _PLAIN_ROLES and _listed_words(value):
            yield key, value, "nested"


# The fields of an action beside its command that change nothing about what runs.
_ACTION_PLAIN_FIELDS = frozenset({"type", "timeout_ms", "timeout"})
# The fields :func:`.vouching.shell_action` reads itself (its directory against the agent's, its
# variables as prefixes) and says when it cannot vouch for them.
_ACTION_VOUCHED_FIELDS = frozenset({"env", "working_directory", "workdir"})


def _action_commands(action: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [(str(key), value) for key, value in action.items()
            if known_name(key) in SHELL_ARGS and value not in (None, "", [], {})]


# Roles of one plain value: a list of words under one (``{"timeout": ["rm -rf ~"]}``) is not read;
# a list of numbers is (an editor's ``view_range``).
_PLAIN_ROLES = frozenset({"option", "cwd", "url"})


def _listed_words(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(item, str) for item in value)


def _nested(value: Any) -> bool:
    """An object, or a list holding an object or a list: more than one plain value or a list of them."""
    if isinstance(value, Mapping):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(item, (Mapping, list, tuple)) for item in value)
