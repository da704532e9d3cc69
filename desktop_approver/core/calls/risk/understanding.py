"""Whether a call was fully understood: the small engine that reads a call against the catalog.

An allowlist, never the other way round: a call is understood only when every program in it is
in the catalog, every option and operand is known to the program's entry (bundled short flags
are read by the entry's arities, ``--opt=value`` too), every ``NAME=value`` prefix is a harmless
variable, every path is literal and resolved (``cd``/``pushd``/``-C`` tracked), and every tool
and each of its arguments has a known role (:mod:`.roles`: no role given twice with different
values, nothing nested where one plain value is read, no name that reads as another only once
unseen characters are dropped). What is not understood is named in ``gaps``, one short phrase
each, for the person's dialog. Roles the catalog gives to options and effects also
raise the level (an option that runs a program, a variable that does, a deploy).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..catalog import Catalog, Program, Tool, catalog
from ..grammar import VALUE_ROLES, OptionUse, Parse, interpreter_of, parse
from ..reading import (
    EDITOR_FAMILIES,
    EDITOR_TOOLS,
    EDITOR_VERB_ARG,
    CallReading,
    Operation,
    PathUse,
    ShellRun,
    command_paths,
    known_name,
    literal_path,
    read_command,
    resolve_path,
    working_dirs,
)
from ..shellparse import SHELLS, SimpleCommand
from .addresses import host_of, is_local
from .findings import DESTRUCTIVE, MODERATE, SAFE, Findings
from .forms import only_reads
from .inert import UNKNOWN_KIND, unproven_write
from .inline import only_prints
from .places import Place, judge_use
from .roles import argument_role, disagreements, shown_name, tool_entry, unread_arguments
from .vouching import SHAPED_ROLES, Vouch, data_value, fed_input, shaped_operands, shell_action

__all__ = ["CommandJudge", "catalog_effect", "understand"]

CommandJudge = Callable[[ShellRun, str | None, str | None, Findings], None]
"""What judges the findings of a command line a program runs (``uv run CMD``, ``xargs CMD``):
``(run, cwd, workspace, findings)``. Given by the caller (:mod:`.assessment` gives
:func:`.programs.command_findings`), because the findings of shell lines are the programs
reader's concern, and that reader itself asks this engine what the catalog knows."""

_PATH_ROLES = frozenset({"read", "list", "write", "delete"})
# Wrappers shellparse unwraps that change nothing about what runs, and the options of theirs that
# name no file and run nothing. Any other option of a wrapper is a gap (``time -o FILE`` writes
# FILE). ``watch -c`` is watch running its words joined as one ``sh -c`` line (shellparse reads
# them as that line); ``watch -x`` runs them as words, like ``exec``.
_PLAIN_WRAPPERS = frozenset({"timeout", "nice", "time", "nohup", "command", "builtin", "exec", "stdbuf", "ionice",
                             "setsid", "bash -c", "sh -c", "zsh -c", "dash -c", "env",
                             "timeout -s", "timeout -k", "timeout --signal", "timeout --kill-after",
                             "timeout --preserve-status", "timeout --foreground", "timeout -v", "timeout --verbose",
                             "nice -n", "nice --adjustment", "ionice -c", "ionice -n", "ionice --class",
                             "ionice --classdata", "stdbuf -i", "stdbuf -o", "stdbuf -e", "stdbuf --input",
                             "stdbuf --output", "stdbuf --error", "time -p", "time --portability", "time -v",
                             "time --verbose", "watch -c", "watch -n", "watch --interval", "watch -t", "watch -d",
                             "watch --no-title", "watch --differences"})
_ENV_WITH_OPTIONS = re.compile(r"(^|[\s;&|(])env\s+-")
MAX_PREFIX_NAMES = 100
"""Different ``NAME=value`` names one command line's reading looks up (each against every pattern of
the catalog); more are a gap: not understood."""
_PREFIXES = re.compile(r"(?:^|[;&|(\n]|\benv\s)\s*((?:[A-Za-z_]\w*\+?=(?:'[^']*'|\"[^\"]*\"|\S)*\s+)+)")
_EXPANSION_ASSIGNS = re.compile(r"\$\{([A-Za-z_]\w*):?=")
_ARITHMETIC = re.compile(r"\(\(([^()]*(?:\([^()]*\)[^()]*)*)\)\)")  # one level of (...) inside: linear
_ARITHMETIC_ASSIGNS = re.compile(r"([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
                                 r"|(?:\+\+|--)\s*([A-Za-z_]\w*)")
_EXTENSION_GLOB = re.compile(r"^[\w.-]*\*[\w-]*\.[A-Za-z0-9]+$")
_EFFECT_REASONS = {
    "remote-write": (DESTRUCTIVE, "changes something outside the machine ({})"),
    "sends": (DESTRUCTIVE, "sends a message to other people ({})"),
    "deploy": (DESTRUCTIVE, "deploys, publishes or changes infrastructure ({})"),
    "prints-secret": (DESTRUCTIVE, "prints a credential into the agent's context ({})"),
    "loses-data": (DESTRUCTIVE, "drops or resets a database: nothing brings its data back ({})"),
    "network": (MODERATE, "network access ({})"),
    "changes": (MODERATE, "changes the project ({})"),
}


@dataclass
class _Reading:
    """What one pass over a call learned: the gaps (in order, once each), the findings and the
    effects of the entries it went through."""

    findings: Findings
    workspace: str | None
    cat: Catalog
    gaps: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    judged: frozenset[str] = frozenset()     # paths the reading already gave the risk reader
    read_only: frozenset[str] = frozenset()  # of those, the ones it found only read (cp's sources)
    cwd_of: dict[str, str | None] = field(default_factory=dict)   # where each of those is relative to
    judge_command: CommandJudge | None = None  # None: inner command lines add no findings
    simulated: bool = False                  # a dry run or a read-only form: operands are not written

    def gap(self, phrase: str) -> None:
        if phrase not in self.gaps:
            self.gaps.append(phrase)


def understand(reading: CallReading, workspace: str | None, findings: Findings,
               cat: Catalog | None = None, *, judge_command: CommandJudge) -> tuple[str, ...]:
    """The gaps of ``reading`` (empty when fully understood); adds the catalog's findings, and
    those ``judge_command`` finds in the command lines programs of the call run."""
    state = _Reading(findings, workspace, cat or catalog(), judge_command=judge_command)
    if reading.family == "shell":
        entry = tool_entry(state.cat, reading.tool, reading.args)
        if entry is None:
            state.gap(f"tool `{reading.tool}`")
        else:
            _tool_args(reading, entry, state)
            _vouched(shell_action(reading.name, reading.args, reading.cwd), reading.cwd, state, reading.name)
        if not reading.commands:
            state.gap(f"the command of `{reading.tool}`")
        for run in reading.commands:
            _command_line(run, reading.cwd, state)
    else:
        _tool_call(reading, state)
    entry = tool_entry(state.cat, reading.tool, reading.args)
    for phrase in disagreements(reading, entry):
        state.gap(phrase)
    if entry is None:
        # a tool the catalog does not know: a rule naming it declares the tool, not values in the
        # vocabulary's arguments (a command, a path, a directory) that no reader could read
        for key, _value, why in unread_arguments(reading, None):
            if why != "no role":
                what = "nested values" if why == "nested" else why
                state.gap(f"argument `{shown_name(key)}` of `{reading.name}` ({what})")
    for name in reading.respelled:
        state.gap(f"argument name `{shown_name(name)}` (read as `{known_name(name)}`)")
    if reading.hidden:
        state.gap("hidden characters")
    return tuple(state.gaps)


def catalog_effect(cmd: SimpleCommand, cwd: str | None) -> str | None:
    """The catalog's effect for one program (``""`` for none), or None when it is not fully
    understood: the risk reader stays quiet only about programs known to do nothing more. Only
    gaps and effects count here, so inner command lines are read for their gaps, not judged."""
    state = _Reading(Findings(), None, catalog())
    _simple(cmd, cwd, state)
    if state.gaps:
        return None
    return next((e for e in state.effects if e), "")


# -- shell command lines ---------------------------------------------------------------------------

def _command_line(run: ShellRun, cwd: str | None, state: _Reading) -> None:
    if run.unread:
        state.gap(f"a command line {run.parse_error}")
    elif run.parse_error:
        state.gap("a command line that does not parse cleanly")
    if run.unread:  # past the reading's budget: nothing in it is read, not even by a pattern
        return
    names: dict[str, None] = {}
    for prefix in _PREFIXES.finditer(run.text):
        # NAME=value in front of a command whose own assignments the parser does not keep
        # (``BASH_ENV=x bash -c '...'`` gives the inner commands without it)
        names.update(dict.fromkeys(re.findall(r"([A-Za-z_]\w*)\+?=", prefix.group(1))))
    # ${NAME:=word} and ${NAME=word} set NAME when it is unset or empty
    names.update(dict.fromkeys(_EXPANSION_ASSIGNS.findall(run.text)))
    for arithmetic in _ARITHMETIC.findall(run.text):
        # (( NAME = 1 )), $(( NAME += 2 )), (( NAME++ )): arithmetic sets variables too
        names.update(dict.fromkeys(found.group(1) or found.group(2)
                                   for found in _ARITHMETIC_ASSIGNS.finditer(arithmetic)))
    if len(names) > MAX_PREFIX_NAMES:  # each is looked up in the catalog's patterns: bounded, never guessed
        state.gap(f"more than {MAX_PREFIX_NAMES} different names set by NAME=value, ${{NAME:=word}} or arithmetic")
    for name in itertools.islice(names, MAX_PREFIX_NAMES):
        _variable(name, state)
    for program, here in zip(run.programs, working_dirs(run.programs, cwd), strict=True):
        _simple(program, here, state)


def _simple(cmd: SimpleCommand, cwd: str | None, state: _Reading) -> None:
    state.read_only = frozenset()
    for wrapper in cmd.wrappers:
        if wrapper not in _PLAIN_WRAPPERS:
            state.gap(f"wrapper `{wrapper}`")
        elif wrapper == "env" and _ENV_WITH_OPTIONS.search(cmd.text or ""):
            state.gap("options of `env`")
    for assignment in cmd.assignments:
        _variable(assignment.split("=", 1)[0].rstrip("+"), state)
    for redirect in cmd.redirects:
        op = redirect.op.lstrip("0123456789")
        if op in ("<<", "<<-", "<<<") or redirect.op.endswith("&") and (redirect.target.isdigit()
                                                                         or redirect.target == "-"):
            continue
        if redirect.target.startswith(("<(", ">(")):
            continue
        _path(redirect.target, "write" if redirect.writes else "read", cwd, state, f"redirect `{redirect.op}`",
              judge=False)
    if not cmd.argv:
        return
    word = cmd.argv[0]
    if "/" in word and not trusted_program(word, state.cat):
        state.gap(f"program `{word}` (a file it runs)")
        return
    name = cmd.name
    if name == "git":
        _repository_at(cwd, state, "git")
    base = interpreter_of(name)
    found = parse(cmd.argv)
    if not found.known:
        state.gap(f"program `{name}`")
        return
    entry = found.levels[0].entry
    paths = command_paths(cmd, cwd)
    state.judged = frozenset(use.path for use in paths)
    state.read_only = state.judged - {use.path for use in paths if use.operation != "read"}
    state.cwd_of = {word: cwd for word in state.read_only}
    maker = found.levels[-1].entry.name if found.levels else name
    for use in paths:
        # a file the reader found written that the parse does not name (gunzip Makefile.gz writes Makefile)
        if use.operation == "write":
            _written(use.path, use.resolved, state, f"written by `{name}`", maker=maker)
        elif use.operation == "delete" and runs_later(use.path):
            state.gap(f"a file that runs later (`{use.path}`, written by `{name}`)")
    state.simulated = found.simulated or only_reads(cmd)
    if name == "export":
        for operand in found.operands:
            if "=" in operand:
                _variable(operand.split("=", 1)[0], state)
    fed = cmd.piped_from or any(r.op.lstrip("0123456789") in ("<", "<<", "<<-", "<<<") for r in cmd.redirects)
    if (name in _CODE_ON_STDIN or base is not None or name in SHELLS) and fed and not state.simulated:
        # An interpreter or a shell fed on its input runs whatever the input says (a here-doc, a
        # here-string, a file, a pipe): code the catalog cannot vouch for, like ``python3 -c``.
        state.gap(f"statements given to `{name}` on its input")
    if name == "ln" and found.has("-s", "--symbolic") or name == "cp" and found.has("-s", "--symbolic-link"):
        _link_targets(list(found.operands), cwd, state)
    if name in _SQL_OPERANDS and len(found.operands) > 1:
        # sqlite3 DB "SQL": the statements (and their functions: writefile, edit, readfile, load_extension)
        # are read by patterns for the badge, never vouched for.
        state.gap(f"statements given to `{name}`")
    _vouched(fed_input(entry, name, cmd), cwd, state, name)
    _parsed(found, cwd, state)


def _variable(name: str, state: _Reading) -> None:
    if state.cat.variable_runs_programs(name):
        state.gap(f"variable `{name}`")
        state.findings.add(DESTRUCTIVE, f"sets a variable that makes it run another program ({name})")
    elif not state.cat.variable_is_harmless(name):
        state.gap(f"variable `{name}`")


def _set_variable(word: str, label: str, state: _Reading) -> None:
    """A shell variable a builtin sets (``read PATH``, ``printf -v PROMPT_COMMAND``, ``local IFS=x``,
    ``mapfile arr``): judged like a ``NAME=value`` prefix; a word that is not a plain name (an
    element ``a[$i]``, an expansion) names a variable no reader can tell."""
    name = re.fullmatch(r"([A-Za-z_]\w*)(\[[\w]*\])?\+?", word)
    if name is None:
        state.gap(f"variable `{word}` set by `{label}`")
    else:
        _variable(name.group(1), state)


def _parsed(found: Parse, cwd: str | None, state: _Reading) -> None:
    """Judge a program by its parse: each option by its role, then the operands of the level it
    stopped at, then the command line it runs; a gap of the parse is a gap of the call."""
    for phrase in found.gaps:
        state.gap(phrase)
    here = cwd
    for index, level in enumerate(found.levels):
        if level.entry.unvouched:
            state.gap(f"`{level.label}`: {level.entry.unvouched}")
        for use in level.options:
            here = _option_use(use, level.entry, level.label, here, state)
        if index < len(found.levels) - 1:
            _effect(level.entry, level.label, state, found)
            continue
        if level.helped:
            return
        _effect(level.entry, level.label, state, found)
        _sends(found, level.label, here, state)
        if found.code is not None:
            _inline(found, level.label, state)
        elif found.inner is not None:
            _inner_command(list(found.inner), level.label, here, state)
        elif not (level.entry.subcommands and not level.operands):
            _operands(level.entry, level.label, list(level.operands), here, state, found)


def _inline(found: Parse, label: str, state: _Reading) -> None:
    """``python -c CODE``, ``node -e CODE``: understood only when the code only imports and prints
    (:mod:`.inline` reads it); the findings of what it does are the programs reader's."""
    use = found.code
    if use is None or use.value is None:
        return
    why = only_prints(interpreter_of(found.name) or found.name, use.value)
    if why is not None:
        state.gap(f"the code given to `{label} {use.option}` ({why})")
    elif state.findings.level == SAFE:
        state.findings.add(MODERATE, f"runs inline code that only imports and prints ({label} {use.option})")


def _option_use(use: OptionUse, entry: Program, label: str, here: str | None, state: _Reading) -> str | None:
    """Judge one option of the parse; gives the directory the program acts in after it."""
    role, option, value = use.role, use.option, use.value
    if role is None or role in VALUE_ROLES and value is None:
        return here     # a gap of the parse, said once there
    if role in _PATH_ROLES and value is not None:
        # what an option names to delete may be a directory and all it holds (pytest --basetemp DIR)
        _path(value, role, here, state, f"option `{option}` of `{label}`", judge=True, via=label,
              recursive=role == "delete", maker=entry.name)
    elif role == "upload" and value is not None:
        _path(value, "read", here, state, f"option `{option}` of `{label}`", judge=True, via=label)
    elif role == "url" and value is not None:
        _address(value, label, here, state)
    elif role == "cd" and value is not None:
        if label == "git" and option == "-C":
            # The repository -C names has a config of its own (hooks, fsmonitor, a pager) that
            # an agent can write as plain files first; no reader sees it (red team).
            state.gap(f"repository `{value}` given to `git -C`")
        if literal_path(value):
            here = resolve_path(value, here) if here or value.startswith(("/", "~", "$HOME")) else None
            outside = here is None or state.workspace is None or not Place(
                PathUse(value, here, "read"), state.workspace).inside
            if outside:
                # the program acts in another directory: its config, scripts and files are another project's
                state.gap(f"directory `{value}` of `{label}` (outside the working directory)")
        else:
            state.gap(f"directory `{value}` of `{label}`")
            here = None
    elif role in ("data", "body") and value is not None:
        _vouched(data_value(value, option, label), here, state, f"option `{option}` of `{label}`")
    elif role == "runs":
        state.gap(f"option `{option}` of `{label}` runs a program")
        state.findings.add(DESTRUCTIVE, f"an option runs a program or code it names ({label} {option})")
    elif role == "setting" and value is not None:
        key = value.split("=", 1)[0].lower()
        if not any(re.fullmatch(p.lower().replace(".", r"\.").replace("*", ".*"), key) for p in entry.settings):
            state.gap(f"setting `{key}` of `{label}`")
    elif role == "checks":
        state.gap(f"option `{option}` of `{label}` (a dry run that still runs some of its code)")
    elif role == "elsewhere":
        state.gap(f"option `{option} {value}` of `{label}` (it acts on another machine, cluster or project)")
    elif role == "project-code" and value is not None:
        _project_code(value, label, f"option `{option}` of `{label}`", here, state)
    elif role == "loads" and value is not None and not re.fullmatch(r"no:[\w.-]+", value):
        state.gap(f"module `{value}` that `{label} {option}` loads (its code is not seen)")
    elif role == "requirements" and value is not None:
        state.gap(f"what the file `{value}` of `{label} {option}` lists (code to install, not read)")
    elif role == "variable" and value is not None:
        _set_variable(value, label, state)
    elif role == "target" and value is not None:
        state.gap(f"target `{value}` of `{label} {option}` (what it runs is in the project's file, not read)")
    elif role == "method" and value is not None and not re.fullmatch(r"[A-Za-z]+", value):
        state.gap(f"method `{value}` of `{label}`")
    return here


_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _sends(found: Parse, label: str, here: str | None, state: _Reading) -> None:
    """A request that sends (a body, an upload, a method other than GET/HEAD/OPTIONS) acts outside the
    machine unless every address it goes to is this machine's: destructive, by the product's promise."""
    if state.simulated:
        return
    methods = [use.value.upper() for use in found.by_role("method") if use.value]
    sending = [use.option for use in found.by_role("body", "upload")]
    changing = [method for method in methods if method not in _READ_METHODS]
    if not sending and not changing:
        return
    addresses = [use.value for use in found.by_role("url") if use.value]
    if found.entry is not None and found.entry.operands == "url":
        addresses += list(found.operands)
    remote = [a for a in addresses if not is_local(a)]
    what = " ".join(changing[:1] or sending[:1])
    if remote or not addresses:
        where = host_of(remote[0]) if remote else "an address not given"
        state.findings.add(DESTRUCTIVE, f"sends a request that acts outside the machine ({label} {what} to {where})")
    else:
        state.findings.add(MODERATE, f"sends a request to this machine ({label} {what})")


# Downloaders that name the file they write after the address when told no name (``curl -O``,
# ``wget URL``): the option that makes them, and the options whose name the server picks instead.
_NAMED_BY_ADDRESS = {"curl": ({"O", "--remote-name", "--remote-name-all"}, {"J", "--remote-header-name"}),
                     "wget": (set(), {"r", "m", "p", "--recursive", "--mirror", "--page-requisites",
                                      "--content-disposition", "--trust-server-names"})}


def _download_names(found: Parse, label: str, operands: list[str], cwd: str | None, state: _Reading) -> None:
    """``curl -O URL``, ``wget URL``: the file written is named by the address's last segment, in
    the folder ``--output-dir``/``-P`` gives (``cwd``: a ``cd`` option); judged as any written file.
    A name the server picks (``curl -J``, a recursive ``wget``) is a gap: nothing says what lands where."""
    by_address, by_server = _NAMED_BY_ADDRESS[label]
    words: set[str] = set()
    for use in found.options():
        if use.option.startswith("--"):
            words.add(use.option.split("=", 1)[0])
        elif use.option.startswith("-"):
            words.update(use.option[1:])
    if words & by_server:
        state.gap(f"a download named by the server (`{label}`)")
        return
    if label == "wget" and found.has("-O", "--output-document") or by_address and not words & by_address:
        return      # the name is given (-O FILE, judged as an option) or the body goes to the output
    for word in operands:
        segment = re.sub(r"[?#].*$", "", re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", word, flags=re.I))
        name = segment.rsplit("/", 1)[-1] or ("index.html" if label == "wget" else "")
        if not name or not literal_path(name):
            state.gap(f"a download whose file name is not known (`{word[:40]}`)")
        else:
            _path(name, "write", cwd, state, f"download by `{label}`", judge=True)


def _address(word: str, label: str, here: str | None, state: _Reading) -> None:
    """An address a program reads from: ``file://`` is a read of that file; a scheme other than
    http, https or ftp is not understood."""
    scheme = re.match(r"([a-z][a-z0-9+.-]*)://", word, re.I)
    if scheme is None:
        return
    if scheme.group(1).lower() == "file":
        path = re.sub(r"^file://(localhost)?", "", word, flags=re.I)
        _path(path or "/", "read", here, state, f"address of `{label}`", judge=True, via=label)
    elif scheme.group(1).lower() not in ("http", "https", "ftp", "ftps"):
        state.gap(f"address `{word[:40]}` of `{label}` (not http or https)")


def _operands(entry: Program, label: str, operands: list[str], cwd: str | None, state: _Reading,
              found: Parse) -> None:
    role = entry.operands
    if found.by_role("inplace") and role == "pattern-read":
        role = "pattern-write"     # sed -i: the files it reads are the files it writes
    if found.by_role("deletes"):
        for word in operands:      # rsync --delete*, --remove-source-files: what the operands name loses files
            if not re.match(r"[\w.-]*@?[\w.-]+:", word) or word.startswith("/"):
                _path(word, "delete", cwd, state, f"operand of `{label}`", judge=not state.simulated,
                      recursive=True)
    if not operands:
        return
    _vouched(shaped_operands(entry, label, operands), cwd, state, f"operand of `{label}`", maker=entry.name)
    if role in SHAPED_ROLES:
        return
    if role == "none":
        state.gap(f"operand `{operands[0]}` of `{label}`")
    elif role == "script":
        state.gap(f"the script or program `{operands[0]}` that `{label}` runs")
    elif role == "targets":
        # npm run NAME: what NAME runs is in package.json (the facts read it), not in its name
        state.gap(f"target `{operands[0]}` of `{label}` (what it runs is in the project's file, not read)")
    elif role == "variables":
        for word in operands:
            _set_variable(word.split("=", 1)[0], label, state)
    elif role == "project-code":
        # after a word the parse did not read, which words are operands is not known (a gap stands)
        for word in operands if not found.gaps else ():
            _project_code(word, label, f"operand of `{label}`", cwd, state)
    elif role in ("text", "url"):
        if role == "url":
            for word in operands:
                _address(word, label, cwd, state)
            if label in _NAMED_BY_ADDRESS:
                _download_names(found, label, operands, cwd, state)
        if entry.effect == "changes":     # make -n still runs a target's + and $(MAKE) lines
            for word in operands:
                if _DEPLOY_NAME.search(word):
                    state.gap(f"a project script named like a deploy (`{word}` of `{label}`)")
    elif role == "any":
        for word in operands:
            if re.search(r"[$`]", word) and not word.startswith("$(") or _DOT_COMMAND.match(word):
                state.gap(f"operand `{word}` of `{label}`")
    elif role in ("pattern-read", "pattern-write"):
        script = _SCRIPT_CHECKS.get(label)
        if script is not None and not script(operands[0]):
            state.gap(f"the {label} program `{operands[0][:40]}`")
        written = role == "pattern-write"
        for word in operands[1:]:
            _path(word, "write" if written else "read", cwd, state, f"operand of `{label}`",
                  judge=written and not state.simulated or word not in state.judged)
    else:
        for word in operands:
            # what the reading did not already give the risk reader is judged here (git init DIR,
            # gzip -d FILE, black DIR); a dry run or read-only form writes nothing
            _path(word, role, cwd, state, f"operand of `{label}`", maker=entry.name,
                  judge=word not in state.judged and not (state.simulated and role in ("write", "delete")))


# What a runner's operand adds to the path of the code it names: a pytest node id (``::test_x``),
# an rspec line or example id (``:12``, ``[1:2]``), go's package pattern (``/...``).
_CODE_SELECTOR = re.compile(r"(::.*|(:\d+)+|\[[\d:]+\])$")


def _project_code(word: str, label: str, where: str, cwd: str | None, state: _Reading) -> None:
    """A path of code a runner runs (tests, specs, packages) or of a config that loads code
    (``pytest -c``, ``eslint -c``): the project's own code only as a literal path inside the
    working directory (the project). Anywhere else it is code the agent may have written or
    fetched there a step before, that no reader has seen: a gap, whatever the runner's own why."""
    path = _CODE_SELECTOR.sub("", word)
    path = path[:-4] if path.endswith("/...") else "." if path == "..." else path
    if not path or not literal_path(path):
        state.gap(f"code `{word}` that `{label}` runs ({where})")
        return
    if cwd is None and not path.startswith(("/", "~", "$HOME", "${HOME}")):
        state.gap(f"path `{word}` (the directory it is relative to is not known)")
        return
    place = Place(PathUse(path, resolve_path(path, cwd), "read"), state.workspace) if state.workspace else None
    if place is None or not place.in_project:
        state.gap(f"code `{word}` that `{label}` runs (outside the working directory: not the project's own)")
        return
    judge_use(PathUse(path, resolve_path(path, cwd), "read", False, label), state.workspace, state.findings)


def _plain_sed(script: str) -> bool:
    """A sed script of substitutions, deletions and prints: no ``w``/``W``/``r``/``R`` (files) and
    no ``e`` (runs the pattern space), as commands or as ``s`` flags."""
    for command in re.split(r"[;\n]", script):
        text = command.strip()
        if not text:
            continue
        substitution = re.fullmatch(r"([\d,$]*|/[^/]*/,?(/[^/]*/)?)\s*s(.)(.*?)\3(.*?)\3([gIipm0-9]*)", text)
        if substitution is not None:
            continue
        if not re.fullmatch(r"([\d,$]*|/[^/]*/(,(/[^/]*/|[\d$]+))?)!?\s*[dpqPDNnG=hHgx]?", text):
            return False
    return True


def _plain_awk(program: str) -> bool:
    """An awk program that only computes and prints: no ``system()``, pipes, ``getline`` or
    ``print > file``, and no ``@`` outside its strings: gawk's ``@include`` and ``@load`` read
    another program or load a library, and ``@name()`` calls a function named at run time."""
    code = re.sub(r'"(\\.|[^"\\])*"', '""', program)
    return not re.search(r"system\s*\(|\||getline|print[f]?[^;}]*>|close\s*\(|fflush|ENVIRON|@", code)


_CODE_ON_STDIN = frozenset({"sqlite3", "duckdb", "psql", "mysql", "mariadb", "patch"})
_SQL_OPERANDS = frozenset({"sqlite3", "duckdb"})
_SQL_VALUE_OPTIONS = frozenset({"-separator", "-newline", "-nullvalue", "-cmd", "-init"})


def _link_targets(args: list[str], cwd: str | None, state: _Reading) -> None:
    """``ln -s TARGET LINK``: a link inside the project to a place outside it turns every later
    write or delete through the link (which reads as inside) into one outside: not vouched for."""
    operands = _operand_words(args, frozenset({"-t", "--target-directory", "-S", "--suffix"}))
    for target in operands[:-1] if len(operands) > 1 else operands:
        if not literal_path(target):
            state.gap(f"link target `{target}`")
            continue
        base = cwd if cwd and not target.startswith(("/", "~", "$HOME")) else None
        resolved = resolve_path(target, base) if base or target.startswith(("/", "~", "$HOME")) else None
        if resolved is None or state.workspace is None or not Place(PathUse(target, resolved, "write"),
                                                                   state.workspace).inside:
            state.gap(f"link target `{target}` (outside the working directory)")


def _operand_words(args: list[str], value_options: frozenset[str]) -> list[str]:
    """The words of ``args`` that are operands, not options or the values those take."""
    operands: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in value_options:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            operands.append(arg)
    return operands
# Targets and scripts of a project (npm run X, make X, tox -e X) whose name says they reach outside.
_DEPLOY_NAME = re.compile(r"deploy|publish|release|upload|push|prod|ship|rollout|migrat|infra|terraform|helm|k8s",
                          re.I)
def _plain_jq(program: str) -> bool:
    """A jq filter that does not read the environment (``env``, ``$ENV``) or other files."""
    return not re.search(r"\$ENV|\benv\b|\binput_filename\b|\$__loc__|\bimport\b|\binclude\b", program)


def _plain_yq(program: str) -> bool:
    """A yq expression that does not read other files (``load``, ``load_str``, ...) or the
    environment (``env``, ``strenv``) (issue 19, red team)."""
    if program in ("e", "eval", "ea", "eval-all"):
        return False    # yq's commands: the expression is the next word, which this check does not see
    return _plain_jq(program) and not re.search(r"\bload(_\w+)?\s*\(|\bstrenv\b|\bfile_?name\b", program)


_SCRIPT_CHECKS = {"sed": _plain_sed, "awk": _plain_awk, "jq": _plain_jq, "yq": _plain_yq}
_DOT_COMMAND = re.compile(r"^\s*\.(shell|system|output|once|import|load|open|save|backup|restore|excel|cd|read)\b")


def _inner_command(argv: list[str], label: str, cwd: str | None, state: _Reading) -> None:
    """``uv run pytest -q``: the program it runs is read against the catalog in turn, and judged."""
    run = read_command(argv)
    if state.judge_command is not None:
        state.judge_command(run, cwd, state.workspace, state.findings)
    before = len(state.gaps)
    _command_line(run, cwd, state)
    if len(state.gaps) > before:
        state.gap(f"the program `{label}` runs")


def _effect(entry: Program, label: str, state: _Reading, found: Parse) -> None:
    if not entry.effect:
        return
    state.effects.append(entry.effect)
    # printing a secret is a read: a read-only form does not make it harmless (helm get values)
    if state.simulated and entry.effect != "prints-secret" or found.helped:
        return
    _add_effect(entry.effect, label, state.findings)


def _add_effect(effect: str, label: str, findings: Findings) -> None:
    """A destructive effect always says so; a moderate one (a change, a network read) only when
    nothing else already made the call moderate, so reasons are not said twice."""
    level, reason = _EFFECT_REASONS[effect]
    if level == DESTRUCTIVE or findings.level == SAFE:
        findings.add(level, reason.format(label))


def _path(word: str, role: str, cwd: str | None, state: _Reading, where: str, *, judge: bool,
          via: str = "", recursive: bool = False, maker: str = "") -> None:
    """A path the call names: understood when literal and resolved; a glob only inside the working
    directory, as ``dir/*.ext`` or ``src/**/*.ext`` (or ``dir/*`` read), never one that may match
    a secret."""
    text = word.strip()
    if text in ("-", "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty"):
        return
    if not literal_path(text):
        if _may_match_secret(text, role, cwd, state):
            state.gap(f"path `{word}` ({where}: it may match a secret's name)")
            return
        head, _, last = text.rpartition("/")
        folders = [part for part in head.split("/") if part != "**"] if head else []
        literal_head = literal_path("/".join(folders) or ".") and not text.startswith(("-", "+", "/**"))
        in_subfolder = bool(folders) and last == "*" and role in ("read", "list")   # dist/*: what a folder holds
        globbed_ok = literal_head and (_EXTENSION_GLOB.match(last) is not None or in_subfolder)
        if globbed_ok:
            operation: Operation = "delete" if role == "delete" else "write" if role == "write" else "read"
            place = Place(PathUse(text, resolve_path(text, cwd), operation), state.workspace)
            if state.workspace is not None and place.inside and not place.secret:
                return
        state.gap(f"path `{word}` ({where})")
        return
    if cwd is None and not text.startswith(("/", "~", "$HOME", "${HOME}")):
        state.gap(f"path `{word}` (the directory it is relative to is not known)")
        return
    if role == "write" and text not in state.read_only:
        _written(text, resolve_path(text, cwd), state, where, maker=maker)
    elif role in ("write", "delete") and runs_later(text):
        state.gap(f"a file that runs later (`{word}`, {where})")
    if judge:
        judged: Operation = "delete" if role == "delete" else "write" if role == "write" else "read"
        judge_use(PathUse(text, resolve_path(text, cwd), judged, recursive, via, role == "list"),
                  state.workspace, state.findings)


def _may_match_secret(pattern: str, role: str, cwd: str | None, state: _Reading) -> bool:
    """Whether a file name pattern (``*.pem``, ``certs/*.KEY``, ``**/.env``, ``{a,key}.pem``) can
    match a file named like a secret; if so, it is judged as that file (a read of a secret is
    destructive). Each brace choice is tried, a class as its first letter, and the wildcards as
    matching nothing and a plain name: a shell with ``dotglob`` lets ``*.env`` match ``.env``, and
    no reader knows how a kept shell was set."""
    choices = [pattern]
    while any("{" in choice for choice in choices) and len(choices) < 64:
        expanded: list[str] = []
        for choice in choices:
            brace = re.search(r"\{([^{}]*)\}", choice)
            if brace is None:
                expanded.append(choice)
                continue
            expanded += [choice[:brace.start()] + part + choice[brace.end():] for part in brace.group(1).split(",")]
        if expanded == choices:
            break
        choices = expanded
    operation: Operation = "delete" if role == "delete" else "write" if role == "write" else "read"
    for choice in choices:
        # a class matches its first letter ([kK] -> k), or a plain letter when negated
        shaped = re.sub(r"\[(!|\^)?([^\]])[^\]]*\]", lambda m: "x" if m.group(1) else m.group(2),
                        re.sub(r"\*\*/", "", choice))
        for fill in ("", "x"):
            instance = re.sub(r"[*?]+", fill, shaped)
            if not instance or instance.endswith("/"):
                continue
            use = PathUse(instance, resolve_path(instance, cwd), operation, via=pattern, listing=role == "list")
            if Place(use, state.workspace).secret:
                judge_use(use, state.workspace, state.findings)
                return True
    return False


# -- tool calls --------------------------------------------------------------------------------------

def _tool_call(reading: CallReading, state: _Reading) -> None:
    entry = tool_entry(state.cat, reading.tool, reading.args)
    if entry is None:
        state.gap(f"tool `{reading.tool}`")
        return
    _tool_args(reading, entry, state)
    repository = reading.args.get("repo_path")
    if reading.name.startswith("git_") and isinstance(repository, str) and reading.name not in state.cat.folder_makers:
        _repository_at(resolve_path(repository, reading.cwd) if reading.cwd or repository.startswith("/") else None,
                       state, reading.name)
    if reading.family == "network":
        method = str(reading.args.get("method", _METHOD_IN_NAME.get(reading.name, "GET"))).upper()
        if method not in ("GET", "HEAD", "OPTIONS") or any(reading.args.get(k) not in (None, "", {}, [])
                                                           for k in ("body", "data", "json", "form")):
            state.gap(f"a request that sends data ({method})")
        else:
            # a GET acts where the host makes it act (a webhook, a bot API's sendMessage): it only
            # reads where the catalog knows the host as one that only serves reads
            for url in reading.urls:
                host = host_of(url)
                if not is_local(url) and not state.cat.host_only_reads(host):
                    state.gap(f"a request to `{host}` (the catalog does not know a GET there as only reading)")
    operation = reading.args.get("operation")
    if reading.family == "patch" and isinstance(operation, Mapping) and (
            operation.get("type") not in ("create_file", "update_file", "delete_file")
            or set(operation) - {"type", "path", "diff"}):
        state.gap(f"patch operation `{operation.get('type')}`")
    for url in reading.urls:
        if not re.match(r"https?://", url, re.I):
            state.gap(f"address `{url[:40]}` (not http or https)")
    if reading.name in EDITOR_TOOLS and reading.args.get(EDITOR_VERB_ARG) not in EDITOR_FAMILIES:
        state.gap(f"operation `{reading.args.get(EDITOR_VERB_ARG)}` of `{reading.name}`")
    if entry.effect and not _dry_run_args(reading.args):
        _add_effect(entry.effect, reading.name, state.findings)
    for use in reading.paths:
        if use.operation == "write" and entry.args.get(use.via, "write") in (*_PATH_ROLES, "patch"):
            _written(use.path, use.resolved, state, f"argument `{shown_name(use.via)}`", maker=reading.name)
        elif use.operation in ("write", "delete") and runs_later(use.path):
            state.gap(f"a file that runs later (`{use.path}`)")
        if use.via == "patch" or use.via in entry.args and entry.args[use.via] not in ("remote",):
            if not literal_path(use.path):
                state.gap(f"path `{use.path}`")
            elif reading.cwd is None and not use.path.startswith(("/", "~", "$HOME")):
                state.gap(f"path `{use.path}` (the directory it is relative to is not known)")


def _repository_at(where: str | None, state: _Reading, label: str) -> None:
    """Git finds its repository, and the config that runs programs (hooks, ``core.sshCommand``,
    ``core.fsmonitor``), from the folder it runs in upward: in the project's root that is the
    project's; from any other folder it may be one laid out there as plain files (``HEAD``,
    ``config``, ``objects/``) that no reader saw, like ``git -C DIR``."""
    project = state.workspace
    if project is None or where is None:
        return
    if os.path.normpath(where) != os.path.normpath(os.path.expanduser(project)):
        state.gap(f"the repository `{label}` finds from `{where}` (not the project's root)")


def _written(word: str, resolved: str | None, state: _Reading, where: str, *, maker: str = "") -> None:
    """A file the call writes. In the project it is understood only where proven not to run later
    (:mod:`.inert`: by kind, folder and name, never by a list of dangerous names alone); elsewhere
    (the temp directory, no project) where the catalog does not name it as running later."""
    project = state.workspace
    place = Place(PathUse(word, resolved or word, "write"), project)
    if place.harmless or place.approves or place.startup or place.secret or place.git_internals:
        return      # named exactly by its place, and destructive there (.places)
    if project is not None and resolved and os.path.isabs(resolved) and place.in_project:
        why = unproven_write(resolved, project, state.cat, maker.replace(" ", "."))
        copy = maker in _COPIERS and bool(state.read_only)
        if copy and os.path.normpath(resolved) == os.path.normpath(os.path.expanduser(project)):
            why = _copied(resolved, project, state, root=True)   # cp x . : x lands at the root
        elif copy and why == UNKNOWN_KIND and word.endswith("/"):
            why = _copied(resolved, project, state, root=False)  # cp -r src/ build/: a folder, by its slash
        if why is not None:
            state.gap(f"a file that may run later (`{word}`: {why})")
    elif runs_later(word, state.cat):
        state.gap(f"a file that runs later (`{word}`, {where})")


_COPIERS = frozenset({"cp", "mv", "rsync", "git mv"})
"""Programs that copy or move their sources into the folder their last operand names."""


def _copied(folder: str, project: str, state: _Reading, *, root: bool) -> str | None:
    """A copy or move into ``folder`` (``cp -r src/ build/``, ``cp notes.md .``): proven when every
    source is the project's own, in ordinary folders, and lands as a file or folder proven where it
    lands (a folder of unknown kind only below the root)."""
    for word in sorted(state.read_only):
        source = resolve_path(word, state.cwd_of.get(word)) if word in state.cwd_of else None
        if source is None or not os.path.isabs(source) or not Place(PathUse(word, source, "read"), project).in_project:
            return f"a copy of `{word}`, which is not the project's own"
        landed = os.path.join(folder, os.path.basename(source.rstrip("/")))
        for path in (source, landed):
            why = unproven_write(path, project, state.cat)
            if why is not None and (why != UNKNOWN_KIND or root and path == landed):
                return f"a copy of `{word}` ({why})"
    return None


def runs_later(path: str, cat: Catalog | None = None) -> bool:
    """Whether ``path`` names a file that a build, a test run, an install or a commit runs as code,
    or one of the project's trusted executables (the catalog's ``[project]`` table)."""
    return _runs_later(path, cat or catalog())


def _runs_later(path: str, cat: Catalog) -> bool:
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts:
        return False
    names, folders, tails = _runs_later_patterns(cat)
    if names.fullmatch(parts[-1]) or any(part in folders for part in parts[:-1]):
        return True
    return any(tails.fullmatch("/".join(parts[at:])) for at in range(len(parts) - 1))


_PATTERNS: dict[int, tuple[Catalog, tuple[re.Pattern[str], frozenset[str], re.Pattern[str]]]] = {}


def _runs_later_patterns(cat: Catalog) -> tuple[re.Pattern[str], frozenset[str], re.Pattern[str]]:
    """The catalog's runs-later names and the project's trusted programs, each list as one regex
    (made once a catalog; the catalog is kept with them so its id is not reused)."""
    found = _PATTERNS.get(id(cat))
    if found is not None and found[0] is cat:
        return found[1]

    def one(patterns: Iterable[str]) -> re.Pattern[str]:
        return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)")
    tails = [p.removeprefix("./") for p in cat.trusted_programs if not p.startswith("/")]
    made = (one(cat.runs_later), frozenset(cat.runs_later_dirs), one(tails))
    if len(_PATTERNS) > 8:
        _PATTERNS.clear()
    _PATTERNS[id(cat)] = (cat, made)
    return made


def trusted_program(word: str, cat: Catalog | None = None) -> bool:
    """Whether a program named by its path is one the catalog trusts (the system's, the project's
    virtual environment and node_modules, the build wrappers it ships)."""
    for pattern in (cat or catalog()).trusted_programs:
        if pattern.endswith("/*"):
            folder, _, base = word.rpartition("/")
            if folder == pattern[:-2] and re.fullmatch(r"[\w+-][\w.+-]*", base):
                return True
        elif word == pattern:
            return True
    return False


_METHOD_IN_NAME = {"requests_post": "POST", "requests_put": "PUT", "requests_patch": "PATCH",
                   "requests_delete": "DELETE"}


def _dry_run_args(args: Mapping[str, Any]) -> bool:
    return any(args.get(key) is True for key in ("dryRun", "dry_run", "dryrun", "preview_only"))


def _tool_args(reading: CallReading, entry: Tool, state: _Reading) -> None:
    for key, _value, why in unread_arguments(reading, entry):
        if why == "nested":
            state.gap(f"values nested in argument `{shown_name(key)}` of `{reading.name}`")
        elif why == "not a command line":
            state.gap(f"argument `{shown_name(key)}` of `{reading.name}` (not a command line)")
        elif "." in key:     # a field of an argument (an action's ``env``): the loop below sees arguments
            state.gap(f"argument `{shown_name(key)}` of `{reading.name}`")
    for key, value in reading.args.items():
        role = argument_role(entry, reading.family, key, value)
        if role is None:
            state.gap(f"argument `{shown_name(str(key))}` of `{reading.name}`")
            continue
        if role == "code":
            state.gap(f"code given to `{reading.name}`")
        elif role == "sql" and isinstance(value, str) and _SQL_WRITES.search(value):
            state.findings.add(DESTRUCTIVE, "writes to a database that is not a file in the working directory")
        elif role == "cwd" and isinstance(value, str) and not literal_path(value):
            state.gap(f"directory `{value}`")
        elif role in _PATH_ROLES and isinstance(value, str) and not literal_path(value) and role != "list":
            state.gap(f"path `{value}`")
        elif role == "select":
            # a file name pattern choosing what it reads (Grep glob, read_many_files include)
            for pattern in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
                if isinstance(pattern, str) and _may_match_secret(pattern, "read", reading.cwd, state):
                    state.gap(f"pattern `{pattern}` of `{reading.name}` (it may match a secret's name)")
        elif role == "list" and isinstance(value, str) and re.search(r"[$`]", value):
            state.gap(f"path `{value}`")
        elif role == "option" and isinstance(value, str) and not _PLAIN_WORD.fullmatch(value):
            # a word the tool hands to a program as one of its arguments: a name, never an option
            # (``-f``), a path of the working tree (``.``) or a revision range
            state.gap(f"argument `{shown_name(str(key))}` of `{reading.name}` (`{value}` is not a plain name)")


_PLAIN_WORD = re.compile(r"(?!.*\.\.)\w[\w./@+:=,-]*")
_SQL_WRITES = re.compile(r"\b(insert|update|delete|create|alter|drop|replace|merge|grant|revoke|truncate|attach"
                         r"|rename|vacuum|copy|call|exec|execute|do|load|lock|reindex|cluster|comment|import)\b",
                         re.I)


# -- words whose role depends on their shape (issue 19, red team; see .vouching) --------------------

def _vouched(found: Vouch, cwd: str | None, state: _Reading, where: str, maker: str = "") -> None:
    """Apply what :mod:`.vouching` found: its gaps, the files it reads (judged), what is destructive."""
    for phrase in found.gaps:
        state.gap(phrase)
    for path in found.reads:
        _path(path, "read", cwd, state, where, judge=True)
    for path in found.writes:
        _path(path, "write", cwd, state, where, judge=not state.simulated, maker=maker)
    for reason in found.destructive:
        state.findings.add(DESTRUCTIVE, reason)
    for name in found.variables:
        _variable(name, state)
