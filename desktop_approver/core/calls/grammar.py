"""The parse: one program's argv read once by its grammar in the catalog.

Whether a shell program was understood, the paths it touches, whether it only simulates or prints
help, what it sends and what it deletes are read from the :class:`Parse` this module makes: a
word is an option, an option's value or an operand exactly as the program itself will take it.
(The per-program findings of :mod:`.risk.programs` still match some words by pattern; they can
only raise a level, never make a call understood.) ``rsync -a --exclude --dry-run
src/ dst/`` is not a dry run (``--dry-run`` is the pattern ``--exclude`` takes), ``sed -ni``
edits in place (``-n`` and ``-i`` bundled), ``curl -sXDELETE`` sends a DELETE.

The grammar is the catalog's (:mod:`.catalog`): each program and subcommand lists its options by
role, with their arity (a flag, or an option that takes a value, given as the next word, glued to
a short option or after ``=``); short flags bundle; ``--`` ends the options; the first word that
is not an option names a subcommand where the entry has any. A word the grammar does not give a
role exactly (an unknown option, subcommand or module, an option missing its value) is a gap,
and nothing about it is guessed: a program the catalog does not know is never a dry run, never
help, and its words are nobody's paths.

Standard library only; nothing here judges.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from .catalog import Catalog, Program, catalog, catalog_generation

__all__ = ["VALUE_ROLES", "Level", "OptionUse", "Parse", "interpreter_of", "parse", "parse_argv"]

# Options whose role takes a value (the next word, glued to a short option, or after ``=``).
VALUE_ROLES = frozenset({"value", "read", "list", "write", "delete", "cd", "runs", "setting", "data", "module",
                         "method", "url", "upload", "body", "code", "elsewhere", "project-code", "loads",
                         "requirements", "target", "variable"})
# Options every program is taken to know: asking for help or a version. A dry run is not among
# them: ``npm run deploy --dry-run`` runs the script; only a program whose grammar lists the
# option simulates.
_UNIVERSAL = {"--help": "help", "--version": "help"}
# The values of a dry-run option that still simulate (``kubectl --dry-run=none`` runs for real).
_SIMULATING_VALUES = frozenset({"client", "server", "true", "yes", "1"})
# Long spellings of a dry run: an option of one of these names that the grammar gives as a flag
# (not the value of another option) simulates.
_SIMULATE_SPELLINGS = frozenset({"--dry-run", "--dry_run", "--dryrun", "--simulate", "--just-print", "--recon",
                                 "--what-if", "--noop", "--no-act", "--list-only"})
_VERSIONED = re.compile(r"(python|pypy|ruby|perl|node|php|lua|julia)(\d+(?:\.\d+)*)?(?:-[\w.]+)?")
_INTERPRETERS = frozenset({"python", "python2", "python3", "pypy", "pypy3", "python3.11", "python3.12", "python3.13",
                           "node", "deno", "bun", "perl", "ruby", "php", "lua", "osascript", "Rscript", "julia", "pwsh",
                           "powershell"})


@dataclass(frozen=True)
class OptionUse:
    """One option as the program reads it: its name (``-X``, ``--output``), its role in the
    grammar (None: the grammar does not know it), and its value, when its role takes one."""

    option: str
    role: str | None
    value: str | None = None


@dataclass(frozen=True)
class Level:
    """The program, or one of its subcommands (or the module ``python -m`` runs): the options
    given to it and the operands left for it."""

    label: str
    entry: Program
    options: tuple[OptionUse, ...] = ()
    operands: tuple[str, ...] = ()
    helped: bool = False


@dataclass(frozen=True)
class Parse:
    """One program's argv read by its grammar.

    ``levels`` is the program then each subcommand it descended into; ``inner`` the command line
    it runs (``uv run pytest -q`` gives ``("pytest", "-q")``); ``gaps`` what the grammar did not
    give a role exactly (empty: every word was read). A program the catalog does not know has
    no levels and one gap."""

    name: str
    levels: tuple[Level, ...] = ()
    inner: tuple[str, ...] | None = None
    gaps: tuple[str, ...] = ()
    code: OptionUse | None = None     # the program given inline (python -c CODE): the words after it are its own

    @property
    def known(self) -> bool:
        return bool(self.levels)

    @property
    def entry(self) -> Program | None:
        return self.levels[-1].entry if self.levels else None

    @property
    def label(self) -> str:
        return self.levels[-1].label if self.levels else self.name

    @property
    def subcommand(self) -> tuple[str, ...]:
        """The subcommand words it descended through (``("stash", "pop")`` of ``git stash pop``)."""
        if not self.levels:
            return ()
        return tuple(self.levels[-1].label.split()[len(self.levels[0].label.split()):])

    @property
    def operands(self) -> tuple[str, ...]:
        return self.levels[-1].operands if self.levels else ()

    def options(self) -> Iterator[OptionUse]:
        for level in self.levels:
            yield from level.options

    def has(self, *names: str) -> bool:
        """Whether one of the options ``names`` was given (as an option, not as a value)."""
        return any(use.option in names for use in self.options())

    def values(self, *names: str) -> list[str]:
        """The values given to the options ``names``, in order."""
        return [use.value for use in self.options() if use.option in names and use.value is not None]

    def by_role(self, *roles: str) -> list[OptionUse]:
        return [use for use in self.options() if use.role in roles]

    @property
    def helped(self) -> bool:
        """It only prints help or a version: an option of role ``help`` given to the level it stops at."""
        return bool(self.levels) and self.levels[-1].helped

    @property
    def simulated(self) -> bool:
        """It only simulates: an option of role ``simulate`` (or a dry-run spelling read as a flag),
        or a subcommand the catalog marks as a dry run (``terraform plan``)."""
        if not self.levels:
            return False
        for use in self.options():
            if use.value is not None and use.value.lower() not in _SIMULATING_VALUES:
                continue
            if use.role in ("simulate", "checks") or use.role in ("flag", "optional") \
                    and use.option in _SIMULATE_SPELLINGS:
                return True
        # a dry run that saves what it would do (terraform plan -out F) is not only a simulation
        return self.levels[-1].entry.simulates and not self.by_role("write", "delete")


def interpreter_of(name: str) -> str | None:
    """The interpreter a program name is, versioned names too (``python3.9``, ``perl5.36``,
    ``nodejs``): its base name (``python3``), whose grammar reads it; ``None`` for any other program."""
    if name in _INTERPRETERS:
        return name
    if name == "nodejs":
        return "node"
    found = _VERSIONED.fullmatch(name)
    if found is None:
        return None
    base = found.group(1)
    return "python3" if base == "python" else base


def parse_argv(argv: tuple[str, ...] | list[str], cat: Catalog | None = None) -> Parse:
    """The parse of ``argv`` (its first word names the program) by ``cat`` (the catalog in use)."""
    argv = tuple(argv)
    if cat is None:
        return _cached(argv, catalog_generation())
    return _parse(argv, cat)


def parse(argv: tuple[str, ...] | list[str]) -> Parse:
    """The parse of ``argv`` by the catalog in use (cached)."""
    return _cached(tuple(argv), catalog_generation())


@lru_cache(maxsize=8192)
def _cached(argv: tuple[str, ...], _generation: int) -> Parse:
    return _parse(argv, catalog())


def _parse(argv: tuple[str, ...], cat: Catalog) -> Parse:
    if not argv:
        return Parse("")
    name = argv[0].rsplit("/", 1)[-1]
    entry = cat.program(name)
    base = interpreter_of(name) if entry is None else None
    if base is not None:
        entry = cat.program(base)
    if entry is None:
        return Parse(name, gaps=(f"program `{name}`",))
    return _walk(cat, name, entry, name, list(argv[1:]))


def _walk(cat: Catalog, name: str, entry: Program, label: str, args: list[str]) -> Parse:
    levels: list[Level] = []
    gaps: list[str] = []
    inner: tuple[str, ...] | None = None
    code: OptionUse | None = None
    while True:
        options: list[OptionUse] = []
        operands: list[str] = []
        helped = False
        descend: tuple[str, Program, list[str]] | None = None
        done = False
        i = 0
        while i < len(args):
            word = args[i]
            numeric = entry.numeric and word.startswith("-") and word[1:].isdigit()
            if numeric and not done:
                options.append(OptionUse(word, "value", word[1:]))
                i += 1
                continue
            if done or word == "-" or not word.startswith("-"):
                if entry.subcommands and not operands and not done:
                    sub = entry.subcommands.get(word)
                    if sub is None:
                        gaps.append(f"subcommand `{word}` of `{label}`")
                        break
                    descend = (f"{label} {word}", sub, args[i + 1:])
                    break
                if entry.operands == "command":
                    inner = tuple(args[i:])
                    break
                operands.append(word)
                i += 1
                continue
            if word == "--":
                done = True
                i += 1
                continue
            if entry.options_as_text and word not in entry.options:
                operands.append(word)
                i += 1
                continue
            found, i = _option(entry, args, i)
            for use in found:
                options.append(use)
                if use.role is None:
                    gaps.append(f"option `{use.option}` of `{label}`")
                elif use.role in VALUE_ROLES and use.value is None:
                    gaps.append(f"option `{use.option}` of `{label}` without its value")
                elif use.role == "help":
                    helped = True
            code = next((use for use in found if use.role == "code" and use.value is not None), None)
            if code is not None:
                break       # the rest are the inline program's own arguments
            module = next((use for use in found if use.role == "module" and use.value is not None), None)
            if module is not None:
                module_entry = cat.program(module.value or "")
                if module_entry is None:
                    gaps.append(f"module `{module.value}` run by `{label} {module.option}`")
                    break
                descend = (f"{label} {module.option} {module.value}", module_entry, args[i:])
                break
        # help or a version ends the run only where nothing is left for it to act on: with an
        # operand, a command or code after it the program may go on (mvn -V deploy builds, go run
        # PKG -h passes -h on, BSD rm -rf DIR --help deletes DIR), so it is judged as run
        helped = helped and not operands and descend is None and inner is None and code is None
        levels.append(Level(label, entry, tuple(options), tuple(operands), helped))
        if descend is None:
            break
        label, entry, args = descend
    return Parse(name, tuple(levels), inner, tuple(dict.fromkeys(gaps)), code)


def _option(entry: Program, args: list[str], i: int) -> tuple[list[OptionUse], int]:
    """The options at ``args[i]`` (several for bundled short flags) and the next index."""
    word = args[i]
    following = args[i + 1] if i + 1 < len(args) else None
    if word.startswith("--"):
        name, eq, attached = word.partition("=")
        role = entry.options.get(name) or (_UNIVERSAL.get(name) if not eq else None)
        if role is None:
            return [OptionUse(name, None)], i + 1
        if role in VALUE_ROLES:
            return ([OptionUse(name, role, attached)], i + 1) if eq else ([OptionUse(name, role, following)], i + 2)
        if eq and role != "optional":
            return [OptionUse(word, None)], i + 1
        return [OptionUse(name, role, attached if eq else None)], i + 1
    whole = entry.options.get(word)
    if whole is not None:     # single-dash words the program reads whole (find -name, java -jar)
        if whole in VALUE_ROLES:
            return [OptionUse(word, whole, following)], i + 2
        return [OptionUse(word, whole)], i + 1
    name, eq, attached = word.partition("=")
    if eq and entry.options.get(name) in VALUE_ROLES:
        return [OptionUse(name, entry.options[name], attached)], i + 1
    found: list[OptionUse] = []
    at = 1
    while at < len(word):
        letter = "-" + word[at]
        role = entry.options.get(letter)
        if role is None:
            found.append(OptionUse(letter, None))
            return found, i + 1
        if role in ("inplace", "optional"):     # sed -i.bak, git -U5: the rest of the word is its value
            found.append(OptionUse(letter, role, word[at + 1:] or None))
            return found, i + 1
        if role in VALUE_ROLES:
            rest = word[at + 1:]
            if rest:
                found.append(OptionUse(letter, role, rest))
                return found, i + 1
            found.append(OptionUse(letter, role, following))
            return found, i + 2
        found.append(OptionUse(letter, role))
        at += 1
    return found, i + 1
