"""The catalog: what the reader knows about programs, tools, variables and credential files, as data.

A call is *understood* only when every part of it is found here (an allowlist: anything not
listed is not understood, and goes to the person). The data lives in the ``*.toml`` files of
this folder, one per family, shipped with the package; a person extends it with a ``[catalog]``
table in their policy file (:func:`extend_catalog`). Loading validates every file against the
shapes below and raises :class:`CatalogError` naming the file and key, so a typo in the data
fails the tests instead of silently understanding less (or more).

A program entry (``[program.NAME]``, or ``[program.NAME.sub.WORD]`` for a subcommand)::

    operands = "read"        # what its operands are: see OPERAND_ROLES
    flag = "-a -l --all"     # options without a value
    value = "-n --lines"     # options with one value that names no path and runs nothing
    optional = "--color -U"  # options that may carry a value after ``=`` or glued (-U5), never the next word
    read = "-f"              # options whose value is a path: read / list / write / delete
    cd = "-C"                # options whose value is the directory it works in
    runs = "--pre"           # options whose value is a program or code it runs (never understood)
    setting = "-c"           # options whose value must match one of ``settings`` (git -c)
    settings = ["color.*"]
    help = "--help -h"       # options that make it only print help or its version
    simulate = "-n"          # options that make it only simulate (a dry run); --dry-run is known to all
    checks = "--check"       # a dry run that still runs some code: simulates, but is never understood
    module = "-m"            # an option whose value names a module it runs as a program (python -m)
    code = "-c"              # an option whose value is a program it runs (understood only when it only prints)
    method = "-X"            # an option whose value is an HTTP method (anything but GET/HEAD/OPTIONS sends)
    url = "--url"            # options whose value is an address (a file:// address is a read of that file)
    upload = "-T"            # options whose value is a file it reads and sends
    body = "-d"              # options whose value is a request body it sends (``@FILE`` reads that file)
    deletes = "--delete"     # options that make it delete (rsync --delete*, --remove-source-files)
    elsewhere = "--context"  # options whose value picks another machine, cluster or project (never understood)
    project-code = "-c"      # options whose value is code it runs, or a config that loads code (pytest -c,
                             # eslint -c, unittest -s): the project's own only inside the working directory
    loads = "-p"             # options whose value names a module or plugin it loads (pytest -p NAME): only
                             # ``no:NAME`` (turning one off) is understood; what a name loads is not seen
    requirements = "-r"      # options whose value is a file listing what it installs (pip -r): code to
                             # install, read by no reader, so never understood
    target = "-e"            # options whose value names a project target it runs (tox -e, nox -s): what it
                             # runs is in the project's file, not in the words, so never understood
    variable = "-v"          # options whose value names a shell variable it sets (printf -v, read -a):
                             # judged like a NAME=value prefix
    inplace = "-i"           # options that make it write the files it would read (sed -i, with a glued suffix)
    effect = "deploy"        # what running it does beyond its paths: see EFFECTS
    numeric = true           # counts written as options (``head -20``)
    options_as_text = true   # words after its options are text even when they start with ``-`` (echo)
    inherit = false          # its subcommands do not take its own options (git: ``-C`` means other things)
    data = "-d --json"       # options whose value is sent, or names with ``@FILE``/``<FILE`` a file it reads
    response_files = true    # an ``@FILE`` operand is read as more options (gcc, javac): never understood
    sends_input = true       # what it is given on its input leaves the machine (nc): never understood
    output_operand = 2       # the operand at this place (from 1) is a file it writes (uniq IN OUT, zip OUT.zip)
    revision_paths = true    # a ``REV:PATH`` operand prints that file as it was (git show HEAD:.env): a read
    secret_keys = true       # an operand naming a secret-looking setting prints a credential (npm config get)
    input_operand = 1        # the operand at this place (from 1) is a file it reads (sqlite3 DB.sqlite ...)
    variable_operands = true # NAME=value operands set variables (make CC=...): read like NAME=value prefixes
    simulates = true         # this subcommand only simulates (terraform plan)
    unvouched = "why"        # read by its grammar, but never understood (it runs code no reader sees)

A tool entry (``[tool.NAME]``) gives each argument's role (``args = {path = "read"}``; ``select`` is
a file name pattern choosing the files it reads, judged by the files it may match) and the
tool's ``effect``; ``[environment]`` lists harmless variables and variables that run programs;
``[credentials]`` lists credential files by name and directory; ``[project]`` the files of a project
that run later as code, its trusted executables, the directories that are never a project and the
directories builds write (``build_outputs``: git-ignored there, a delete loses nothing a build cannot remake),
and the kinds of file proven not to run later (``inert_kinds``, ``source_kinds``, ``settings_kinds``,
``inert_names``, ``folder_makers``, ``own_output``: a write in the project is understood only on that proof, see
:mod:`..risk.inert`); ``[web]`` the hosts where a GET only reads (``read_only``: documentation, package
registries, code hosts' pages and read APIs; a GET elsewhere may act: a webhook, a bot API);
``[servers]`` the MCP servers
(and Goose extensions) whose tools act on this machine: a tool of any other server
(``mcp__prod_sftp__delete_file``) writes, deletes and runs commands elsewhere.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["ARG_ROLES", "EFFECTS", "OPERAND_ROLES", "OPTION_ROLES", "Catalog", "CatalogError", "Program", "Tool",
           "catalog", "catalog_generation", "extend_catalog", "parse_catalog", "shipped_catalog", "use_catalog",
           "validate_extension"]

OPTION_ROLES = ("flag", "value", "optional", "read", "list", "write", "delete", "cd", "runs", "setting", "help", "data",
                "simulate", "checks", "module", "method", "url", "upload", "body", "deletes", "inplace", "code",
                "elsewhere", "project-code", "loads", "requirements", "target", "variable")
OPERAND_ROLES = (
    "none",        # takes no operands
    "text",        # words that name nothing (echo, printf, package or test names)
    "any",         # revisions, names or paths it only reads (git log a..b -- src)
    "read", "list", "write", "delete",   # paths, with what it does to them
    "pattern-read",   # a pattern, then paths it reads (grep, rg, sed without -i)
    "url",         # network addresses it reads from
    "command",     # the rest is a program with its arguments, read by the catalog in turn
    "script",      # a program or script file it runs (never understood: its content is unseen)
    "project-code",   # paths of code it runs (tests, specs, packages): only inside the working directory
    "targets",     # a project script it runs by name, then its arguments (npm run NAME): what it runs is
                   # in the project's file, read by the facts (package.json), never guessed from the name
    "variables",   # names of shell variables it sets, NAME or NAME=value (read, mapfile, declare, local)
    "names",       # package names: a URL, a VCS address, an archive or a path outside the project is not
    "request",     # an HTTP method, a URL and request items (httpie, xh): sending forms are not understood
    "pids",        # process ids (kill): a group, every process (-1), a job or a variable is not understood
    "ps-words",    # ps's BSD option words and process ids: the ``e`` word (every process's environment) is not
)
EFFECTS = (
    "",            # nothing beyond its paths
    "changes",     # changes the project (build, install into the project environment)
    "network",     # reads over the network
    "remote-write",   # changes something outside the machine (push, API writes, remote repos)
    "sends",       # sends a message to people (mail, chat, comments, webhooks)
    "deploy",      # deploys, publishes or changes infrastructure
    "prints-secret",  # prints a credential into the agent's context
    "loses-data",  # drops or resets a database, or its migrations to nothing (nothing brings it back)
)
ARG_ROLES = ("read", "list", "write", "delete", "cwd", "text", "option", "pattern", "select", "url", "sql", "command",
             "code", "recipient", "patch", "edits", "content", "remote", "wrapped-tool", "wrapped-args")
_OPTION_FIELDS = {role: role for role in OPTION_ROLES}
# A program entry's true/false keys, and its keys that name an operand by its place (from 1).
_SWITCHES = ("numeric", "options_as_text", "response_files", "sends_input", "revision_paths", "secret_keys",
             "variable_operands", "simulates")
_PLACES = ("output_operand", "input_operand")


class CatalogError(ValueError):
    """A catalog file (or a policy's ``[catalog]`` table) that does not have the documented shape."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Program:
    """One program or subcommand: its options by role, what its operands are, its effect."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    operands: str = "none"
    subcommands: Mapping[str, Program] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    effect: str = ""
    numeric: bool = False
    why: str = ""
    options_as_text: bool = False
    inherit: bool = True
    response_files: bool = False
    sends_input: bool = False
    output_operand: int = 0
    revision_paths: bool = False
    secret_keys: bool = False
    input_operand: int = 0
    variable_operands: bool = False
    simulates: bool = False
    unvouched: str = ""


@dataclass(frozen=True)
class Tool:
    """One tool of an agent or MCP server: each argument's role, and the tool's effect."""

    name: str
    args: Mapping[str, str] = field(default_factory=dict)
    effect: str = ""
    family: str = ""
    why: str = ""


@dataclass(frozen=True)
class Catalog:
    programs: Mapping[str, Program]
    tools: Mapping[str, Tool]
    harmless_variables: tuple[str, ...] = ()
    program_variables: tuple[str, ...] = ()
    credential_names: tuple[str, ...] = ()
    credential_dirs: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    local_servers: tuple[str, ...] = ()
    runs_later: tuple[str, ...] = ()
    runs_later_dirs: tuple[str, ...] = ()
    trusted_programs: tuple[str, ...] = ()
    not_projects: tuple[str, ...] = ()
    build_outputs: tuple[str, ...] = ()
    inert_kinds: tuple[str, ...] = ()
    source_kinds: tuple[str, ...] = ()
    settings_kinds: tuple[str, ...] = ()
    inert_names: tuple[str, ...] = ()
    folder_makers: tuple[str, ...] = ()
    own_output: tuple[str, ...] = ()
    read_only_hosts: tuple[str, ...] = ()

    def program(self, name: str) -> Program | None:
        return self.programs.get(name)

    def tool(self, name: str) -> Tool | None:
        found = self.tools.get(name)
        if found is not None:
            return found
        return next((tool for pattern, tool in self.tools.items() if "*" in pattern
                     and fnmatch.fnmatchcase(name, pattern)), None)

    def variable_runs_programs(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in self.program_variables)

    def host_only_reads(self, host: str) -> bool:
        """Whether a GET, HEAD or OPTIONS request to ``host`` only reads (the ``[web]`` table)."""
        name = re.sub(r":\d+$", "", host.lower().rstrip("."))
        return any(fnmatch.fnmatchcase(name, p) for p in self.read_only_hosts)

    def variable_is_harmless(self, name: str) -> bool:
        return not self.variable_runs_programs(name) and any(fnmatch.fnmatchcase(name, p)
                                                             for p in self.harmless_variables)


# -- parsing ---------------------------------------------------------------------------------------

def _words(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise CatalogError(where, "expected a string of words or a list of strings")


def _program(name: str, data: Any, where: str) -> Program:
    if not isinstance(data, Mapping):
        raise CatalogError(where, "a program entry must be a table")
    known = {*OPTION_ROLES, *_SWITCHES, *_PLACES, "operands", "sub", "settings", "effect", "why", "inherit",
             "unvouched"}
    unknown = set(data) - known
    if unknown:
        raise CatalogError(where, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(known)}")
    options: dict[str, str] = {}
    for role in OPTION_ROLES:
        for option in _words(data.get(role, ""), f"{where}.{role}"):
            if not option.startswith(("-", "+")) or option in ("-", "--"):
                raise CatalogError(f"{where}.{role}", f"{option!r} is not an option")
            if option in options and options[option] != role:
                raise CatalogError(f"{where}.{role}", f"{option} is listed as {options[option]} and {role}")
            options[option] = role
    operands = data.get("operands", "none" if "sub" not in data else "none")
    if operands not in OPERAND_ROLES:
        raise CatalogError(f"{where}.operands", f"{operands!r} is not one of {OPERAND_ROLES}")
    effect = data.get("effect", "")
    if effect not in EFFECTS:
        raise CatalogError(f"{where}.effect", f"{effect!r} is not one of {EFFECTS}")
    subs_data = data.get("sub", {})
    if not isinstance(subs_data, Mapping):
        raise CatalogError(f"{where}.sub", "expected a table of subcommands")
    subs = {word: _program(f"{name} {word}", sub, f"{where}.sub.{word}") for word, sub in subs_data.items()}
    why = data.get("why", "")
    unvouched = data.get("unvouched", "")
    if not isinstance(unvouched, str):
        raise CatalogError(f"{where}.unvouched", "expected a string (why it is never understood)")
    inherit = data.get("inherit", True)
    switches = {key: data.get(key, False) for key in _SWITCHES}
    if not all(isinstance(v, bool) for v in (inherit, *switches.values())) or not isinstance(why, str):
        raise CatalogError(where, f"{', '.join(_SWITCHES)} and inherit must be true/false, why a string")
    places = {key: data.get(key, 0) for key in _PLACES}
    for key, place in places.items():
        if not isinstance(place, int) or isinstance(place, bool) or place < 0:
            raise CatalogError(f"{where}.{key}", "expected the place of an operand (1, 2, ...)")
    settings = tuple(_words(data.get("settings", []), f"{where}.settings"))
    if "setting" in data and not settings:
        raise CatalogError(where, "options of role setting need a settings list")
    if inherit:
        # a subcommand also takes its program's options (kubectl get -n x, helm upgrade --namespace)
        subs = {word: _inheriting(sub, options) for word, sub in subs.items()}
    return Program(name, options, operands, subs, settings, effect, switches["numeric"], why,
                   switches["options_as_text"], inherit, switches["response_files"], switches["sends_input"],
                   places["output_operand"], switches["revision_paths"], switches["secret_keys"],
                   places["input_operand"], switches["variable_operands"], switches["simulates"], unvouched)


def _inheriting(sub: Program, options: Mapping[str, str]) -> Program:
    merged = {**options, **sub.options}
    return replace(sub, options=merged, subcommands={word: _inheriting(inner, merged)
                                                     for word, inner in sub.subcommands.items()})


def _tool(name: str, data: Any, where: str) -> Tool:
    if not isinstance(data, Mapping):
        raise CatalogError(where, "a tool entry must be a table")
    unknown = set(data) - {"args", "effect", "family", "why"}
    if unknown:
        raise CatalogError(where, f"unknown key(s) {sorted(unknown)}")
    args = data.get("args", {})
    if not isinstance(args, Mapping):
        raise CatalogError(f"{where}.args", "expected a table of argument = role")
    for arg, role in args.items():
        if role not in ARG_ROLES:
            raise CatalogError(f"{where}.args.{arg}", f"{role!r} is not one of {ARG_ROLES}")
    effect = data.get("effect", "")
    if effect not in EFFECTS:
        raise CatalogError(f"{where}.effect", f"{effect!r} is not one of {EFFECTS}")
    family = data.get("family", "")
    if not isinstance(family, str):
        raise CatalogError(f"{where}.family", "expected a string")
    return Tool(name, dict(args), effect, family, str(data.get("why", "")))


def parse_catalog(data: Mapping[str, Any], source: str, base: Catalog | None = None) -> Catalog:
    """``base`` extended by one parsed TOML mapping (a catalog file, or a policy's ``[catalog]``)."""
    unknown = set(data) - {"program", "tool", "environment", "credentials", "servers", "project", "web"}
    if unknown:
        raise CatalogError(source, f"unknown table(s) {sorted(unknown)}")
    base = base or Catalog({}, {})
    programs = dict(base.programs)
    for name, entry in _table(data, "program", source).items():
        programs[name] = _program(name, entry, f"{source}: program.{name}")
    tools = dict(base.tools)
    for name, entry in _table(data, "tool", source).items():
        tools[name.lower()] = _tool(name.lower(), entry, f"{source}: tool.{name}")
    env = _table(data, "environment", source)
    creds = _table(data, "credentials", source)
    servers = _table(data, "servers", source)
    project = _table(data, "project", source)
    web = _table(data, "web", source)
    project_keys = ("runs_later", "runs_later_dirs", "trusted_programs", "not_projects", "build_outputs",
                    "inert_kinds", "source_kinds", "settings_kinds", "inert_names", "folder_makers",
                    "own_output")
    for table, keys, label in ((env, {"harmless", "runs_programs"}, "environment"),
                               (creds, {"names", "dirs"}, "credentials"), (servers, {"local"}, "servers"),
                               (project, set(project_keys), "project"), (web, {"read_only"}, "web")):
        if set(table) - keys:
            raise CatalogError(f"{source}: {label}", f"unknown key(s) {sorted(set(table) - keys)}")
    made = Catalog(
        programs, tools,
        base.harmless_variables + tuple(_words(env.get("harmless", []), f"{source}: environment.harmless")),
        base.program_variables + tuple(_words(env.get("runs_programs", []), f"{source}: environment.runs_programs")),
        base.credential_names + tuple(_words(creds.get("names", []), f"{source}: credentials.names")),
        base.credential_dirs + tuple(_words(creds.get("dirs", []), f"{source}: credentials.dirs")),
        (*base.sources, source),
        base.local_servers + tuple(w.lower() for w in _words(servers.get("local", []), f"{source}: servers.local")),
        *(getattr(base, key) + tuple(_words(project.get(key, []), f"{source}: project.{key}"))
          for key in project_keys))
    hosts = tuple(word.lower() for word in _words(web.get("read_only", []), f"{source}: web.read_only"))
    return replace(made, read_only_hosts=base.read_only_hosts + hosts)


def _table(data: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise CatalogError(f"{source}: {key}", "expected a table")
    return value


def data_files() -> list[str]:
    """The shipped catalog files, by name, in load order."""
    folder = resources.files(__name__)
    return sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".toml"))


@lru_cache(maxsize=1)
def shipped_catalog() -> Catalog:
    """The catalog shipped with the package (loaded once)."""
    folder = resources.files(__name__)
    found: Catalog | None = None
    for name in data_files():
        text = folder.joinpath(name).read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(name, str(exc)) from exc
        found = parse_catalog(data, name, found)
    return found or Catalog({}, {})


def extend_catalog(extra: Mapping[str, Any] | None, base: Catalog | None = None) -> Catalog:
    """The catalog extended by a person's ``[catalog]`` table (same shape as the shipped files).

    Entries added this way are the person's declaration: a program they list is understood
    with the options they list (an entry replaces the shipped one of the same name).
    """
    base = base or shipped_catalog()
    if not extra:
        return base
    return parse_catalog(extra, "policy [catalog]", base)


def validate_extension(extra: Any) -> None:
    """Raise :class:`CatalogError` when a policy's ``[catalog]`` table does not have the shape."""
    if not isinstance(extra, Mapping):
        raise CatalogError("policy [catalog]", "expected a table")
    parse_catalog(extra, "policy [catalog]", Catalog({}, {}))


class _Active:
    """The catalog in use: the shipped one, or the shipped one extended by the policy file. The
    generation changes with it, so answers cached under the old catalog are not reused."""

    catalog: Catalog | None = None
    generation = 0


def catalog() -> Catalog:
    """The catalog the reader uses now."""
    return _Active.catalog or shipped_catalog()


def catalog_generation() -> int:
    return _Active.generation


def use_catalog(extra: Mapping[str, Any] | None) -> Catalog:
    """Use the shipped catalog extended by ``extra`` (a policy's ``[catalog]`` table; None or empty:
    the shipped catalog alone). Raises :class:`CatalogError` and keeps the catalog in use when
    ``extra`` is malformed."""
    extended = extend_catalog(extra) if extra else None
    if extended is not _Active.catalog:
        _Active.catalog = extended
        _Active.generation += 1
    return catalog()

