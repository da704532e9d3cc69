"""Gather the facts of one call from this machine's file system, within a time budget.

Blocking work (``stat``, directory walks, ``git`` subprocesses, reading files to scan them): the
broker runs it in an executor, never on the event loop, once per request. Over the budget, or on
any error, the facts are incomplete and nothing path-dependent is proven: never a guess.

What it looks at, for the reading's paths and programs:

- globs are expanded as a shell would (no dot files for ``*``): how many files, which;
- each path is resolved through its links: a link leading out of the project, or a file written
  that has other names (a hard link), is not proof;
- reads of files are scanned for secrets (:mod:`.secrets`) within count and size bounds; a read
  outside the project, or one too large, is not proof; recursive readers (``grep -r``, ``rg``)
  are enumerated with their own ignore rules (``rg`` skips what git ignores);
- deletes and overwrites are graded by loss: every file under the path with git's state
  (:mod:`.gitview`) and whether it is build output the catalog names;
- ``git reset --hard``, ``checkout -- PATH``, ``restore``, ``clean``, ``stash drop|clear``: what
  git says they would discard;
- archives (``tar -x``, ``unzip``) and patch files (``git apply``, ``patch -i``) are opened and
  their members listed, with where each lands;
- a file written in the project inside a virtual environment (a folder with ``pyvenv.cfg``, whatever
  its name), or named like a module the project's virtual environments install, or over a folder
  read as a file's name, is not proof (issue 30);
- requirements files an installer is given (``pip install -r FILE``) are read (:mod:`.requirements`):
  proven only when they list package names and nothing else;
- a project script run by name (``npm run NAME``) is looked up in ``package.json`` (:mod:`.scripts`).
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import re
import stat
import tarfile
import time
import zipfile
from collections import Counter
from collections.abc import Iterator

from ..catalog import catalog
from ..grammar import parse
from ..reading import (
    _PATTERN_FIRST,
    _READERS,
    CallReading,
    PathUse,
    _patch_uses,
    command_paths,
    resolve_path,
    working_dirs,
)
from ..shellparse import SimpleCommand
from .gitview import GitError, GitView, repository_of
from .model import Facts, Glob, Loss, Member, Script, count_states
from .requirements import requirement_lines
from .scripts import package_script
from .secrets import Unscannable, scan, warm

__all__ = ["DEFAULT_BUDGET", "gather", "needs_facts"]

log = logging.getLogger(__name__)

DEFAULT_BUDGET = 1.5
"""Seconds a call's facts may take; past it they are incomplete (the call goes to the person)."""
MAX_GLOB_MATCHES = 5_000
MAX_TREE_FILES = 200_000
MAX_SCANNED_FILES = 200
MAX_SCANNED_BYTES = 8_000_000
MAX_MEMBERS = 20_000
_GLOB = re.compile(r"[*?[]")
# Programs that read a whole tree, and whose ignore rules they follow ("git": what git does not ignore).
_RECURSIVE_READERS = {"rg": "git", "ag": "git", "ack": "all", "grep": "all", "egrep": "all", "fgrep": "all"}
# Options that make rg / ag read what git ignores too (then every file is enumerated).
_NO_IGNORE = frozenset({"--no-ignore", "--no-ignore-vcs", "-u", "-uu", "-uuu", "--unrestricted", "--skip-vcs-ignores",
                        "-U", "--all-types", "--no-ignore-dot", "--no-ignore-files", "--no-ignore-global"})
_HIDDEN = frozenset({"--hidden", "-.", "-uu", "-uuu", "--unrestricted"})
_SEARCH_IGNORES = (".ignore", ".rgignore", ".agignore")
_ARCHIVERS = frozenset({"tar", "bsdtar", "unzip"})
_GREP_RECURSIVE = frozenset({"-r", "-R", "--recursive", "--dereference-recursive"})
# Writers whose destination, when it is a folder, receives the source under its own name.
_INTO_FOLDER = frozenset({"cp", "mv", "install", "ln", "rsync", "git", "destination", "target", "new_path"})
# What makes a folder a virtual environment (installed code), whatever it is called.
_ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")


_COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "ls-files", "ls-tree", "rev-parse", "blame", "grep",
                            "describe", "shortlog", "cat-file", "rev-list", "whatchanged", "help", "version"})
_MOVERS = frozenset({"mv", "cp", "ln", "rsync", "install", "tar", "bsdtar", "unzip", "patch", "scp"})
_GIT_WRITES_FILES = frozenset({"checkout", "switch", "restore", "reset", "stash", "merge", "pull", "rebase",
                              "cherry-pick", "revert", "apply", "am", "mv", "clone", "worktree", "submodule",
                              "read-tree", "checkout-index"})
_STEERS_GIT = frozenset({".gitignore", ".gitattributes", ".gitmodules", ".ignore", ".rgignore", "exclude"})


def _changes_what_follows(program: SimpleCommand, uses: list[PathUse]) -> str:
    """What a program changes that a later delete, overwrite or discard of the same call is graded
    by: ``files`` (it moves, copies or checks out files into place), ``loss`` (git's view: its
    index, its ignore rules, its own directory), or nothing (``""``)."""
    if program.name == "git":
        sub = next((w for w in program.argv[1:] if not w.startswith("-")), "")
        return "" if sub in _READ_ONLY_GIT else "files" if sub in _GIT_WRITES_FILES else "loss"
    writes = [use for use in uses if use.operation in ("write", "delete")]
    if program.name in _MOVERS and writes:
        return "files"
    steers = any(os.path.basename(use.resolved) in _STEERS_GIT or _in_git_dir(use.resolved) for use in writes)
    return "loss" if steers else ""


_BUILD_MANIFESTS = ("package.json", "Cargo.toml", "pyproject.toml", "setup.py", "setup.cfg", "CMakeLists.txt",
                    "Makefile", "GNUmakefile", "meson.build", "build.gradle", "build.gradle.kts", "pom.xml", "go.mod",
                    "build.zig", "WORKSPACE", "MODULE.bazel", "tox.ini", "noxfile.py", "composer.json", "mix.exs",
                    "Gemfile", "build.sbt", "deno.json", "angular.json", "next.config.js", "vite.config.ts")
"""The files that mark where a build runs: its output folder sits beside one (``web/package.json``,
``web/node_modules``)."""
_BUILT_BESIDE_SOURCES = frozenset({"__pycache__"})
"""Output a tool writes beside every source file it compiles, wherever that is."""


_EXTGLOB = re.compile(r"[!@+*?]\(")
_NOT_PRINTING = frozenset({
    "echo", "printf", "mkdir", "rmdir", "rm", "touch", "ls", "cd", "pushd", "popd", "test", "[", "[[", "stat",
    "chmod", "chown", "chgrp", "mv", "cp", "ln", "install", "git", "wc", "file", "du", "df", "basename", "dirname",
    "realpath", "readlink", "which", "type", "command", "kill", "sleep", "true", "false", "export", "unset", "set",
    "shopt", "local", "declare", "alias", "unalias", "exit", "return", "make", "cmake", "ninja", "npm", "npx", "yarn",
    "pnpm", "cargo", "rustc", "go", "pip", "pip3", "uv", "poetry", "pytest", "tox", "nox", "docker", "podman",
    "kubectl", "helm", "terraform", "sha256sum", "sha1sum", "md5sum", "cksum", "b2sum", "date", "whoami", "id",
    "uname", "nproc", "seq", "mktemp", "rsync", "scp", "ssh", "curl", "wget", "python", "python3", "node", "deno",
    "bun", "ruby", "perl", "php", "java", "bash", "sh", "zsh", "dash", "source", ".", "exec", "time", "nohup",
    "timeout", "xargs", "env", "sudo", "tar", "bsdtar", "unzip", "zip", "gzip", "gunzip", "patch", "open",
    "xdg-open", "code", "pwd", "cmp", "tee", "truncate", "shred", "sync", "mypy", "ruff", "black", "isort", "eslint",
    "prettier", "tsc", "jest", "vitest", "gradle", "mvn", "javac", "gcc", "g++", "clang", "ld", "strip", "chattr"})
"""Programs known not to print the files their operands name (or judged as what they run): any
other program's operand that names an existing file is a read, scanned (``rev creds`` prints it)."""


def _may_read_operands(cmd: SimpleCommand) -> bool:
    return bool(cmd.name) and cmd.name not in _NOT_PRINTING and cmd.name not in _READERS and any(
        not word.startswith("-") for word in cmd.argv[1:])


def _expand(pattern: str) -> list[str]:
    """The files a glob matches in any shell's settings: the components from the first with a
    wildcard on are matched in any case, with ``**`` at any depth, dot files included."""
    parts = pattern.split("/")
    first = next((i for i, part in enumerate(parts) if _GLOB.search(part)), len(parts))
    folded = "/".join(parts[:first] + [_any_case(part) for part in parts[first:]])
    return sorted(set(glob.glob(folded, recursive=True, include_hidden=True)))


def _any_case(part: str) -> str:
    out: list[str] = []
    in_class = False
    for char in part:
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        elif not in_class and char.isalpha() and char.lower() != char.upper():
            out.append(f"[{char.lower()}{char.upper()}]")
            continue
        out.append(char)
    return "".join(out)


def _in_git_dir(rel: str) -> bool:
    return ".git" in rel.split(os.sep)


class _OverBudget(Exception):
    pass


def needs_facts(reading: CallReading) -> bool:
    """The call's judgement depends on this machine's files: it names paths, or runs a program
    whose effect depends on them (a git discard, a recursive reader, an archive, a patch)."""
    if reading.paths or _git_elsewhere(reading):
        return True
    if any(parse(cmd.argv).by_role("requirements") or _runs_target(cmd) for cmd in reading.programs):
        return True     # a requirements file is read to see what it installs, package.json what a script runs
    return any(cmd.name in _READERS or cmd.name in _PATTERN_FIRST or cmd.name in _RECURSIVE_READERS
               or _may_read_operands(cmd)
               or cmd.name in ("unzip", "patch") or _git_consequential(cmd)
               or cmd.name in ("tar", "bsdtar") and _tar_extracts(cmd.argv) for cmd in reading.programs)


def _git_elsewhere(reading: CallReading) -> bool:
    """Git runs in a folder other than the call's own: which repository it finds there is a fact."""
    dirs = working_dirs(reading.programs, reading.cwd)
    return any(cmd.name == "git" and here != reading.cwd for cmd, here in zip(reading.programs, dirs, strict=True))


def _runs_target(cmd: SimpleCommand) -> bool:
    """``npm run NAME`` and the like: a project script run by its name."""
    found = parse(cmd.argv)
    return found.entry is not None and found.entry.operands == "targets" and bool(found.operands)


def _git_consequential(cmd: SimpleCommand) -> bool:
    words = list(cmd.argv[1:])
    return cmd.name == "git" and bool(words) and (
        _discard_of(words[0], words[1:]) is not None or words[0] in ("apply", "am", "mv", "worktree")
        or _overwrites_work_tree(words[0], words[1:]))


def gather(reading: CallReading, project: str | None, *, budget: float = DEFAULT_BUDGET) -> Facts:
    """The facts of ``reading`` run from ``reading.cwd`` in ``project`` (None: no project, so
    every path is outside one). Never raises: a failure is an incomplete result."""
    warm()      # the scanner's one-time import is the process's cost, not this call's budget
    started = time.monotonic()
    gathering = _Gathering(reading, project, started + budget)
    try:
        gathering.run()
    except _OverBudget:
        gathering.facts.complete = False
        gathering.facts.why = f"looking took longer than {budget:g} s"
    except Exception as exc:  # a fact not gathered proves nothing; the call goes to the person
        log.exception("gathering the facts of a call failed")
        gathering.facts.complete = False
        gathering.facts.why = f"looking failed ({type(exc).__name__})"
    gathering.facts.elapsed_ms = (time.monotonic() - started) * 1000
    return gathering.facts


class _Gathering:
    def __init__(self, reading: CallReading, project: str | None, deadline: float) -> None:
        self.reading = reading
        self.project = os.path.realpath(project) if project else None
        self.facts = Facts(project=self.project)
        self.deadline = deadline
        self.views: dict[str, GitView | GitError] = {}
        self.scanned_bytes = 0
        self.builds = catalog().build_outputs
        self.modules: frozenset[str] | None = None

    # -- the budget --------------------------------------------------------------------------

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _OverBudget

    # -- the walk over the reading -------------------------------------------------------------

    def run(self) -> None:
        self.own_paths()
        self.whole_call()
        recursive_vias = {cmd.name: _tree_rules(cmd) for cmd in self.reading.programs
                          if cmd.name in _RECURSIVE_READERS and (cmd.name not in ("grep", "egrep", "fgrep")
                                                                 or _grep_recursive(cmd.argv))}
        for use in self.reading.paths:
            self.tick()
            self.path_use(use, recursive_vias.get(use.via))
            if use.via == "repo_path" and self.reading.name.startswith("git_"):
                self.repository_from(use.resolved)
        dirs = working_dirs(self.reading.programs, self.reading.cwd)
        for cmd, here in zip(self.reading.programs, dirs, strict=True):
            self.tick()
            self.bare_operands(cmd, here, recursive_vias.get(cmd.name))
            if cmd.name in recursive_vias and not any(u.via == cmd.name and u.operation == "read"
                                                      for u in self.reading.paths):
                if here and os.path.isabs(here):    # rg with no path searches where it runs
                    self.path_use(PathUse(".", here, "read", via=cmd.name), recursive_vias[cmd.name])
                else:
                    self.facts.problem(f"where `{cmd.name}` searches is not known")
            for listing in parse(cmd.argv).by_role("requirements"):
                self.requirements(listing.value or "", here)
            if _runs_target(cmd):
                self.script(cmd, here)
            if cmd.name == "git":
                if here and here != self.reading.cwd:
                    self.repository_from(here)
                self.git(cmd, here)
            elif cmd.name in ("tar", "bsdtar") and _tar_extracts(cmd.argv):
                self.archive(cmd, here, "tar")
            elif cmd.name == "unzip":
                self.archive(cmd, here, "zip")
            elif cmd.name == "patch":
                into = _patch_directory(cmd, here)
                if into is None:
                    self.facts.problem("where `patch` applies its changes (`-d`, `-p`) is not known")
                else:
                    self.patch_files(cmd, into, _patch_inputs(cmd, self.reading))

    def own_paths(self) -> None:
        """Which program of the call each path belongs to, and the directories they run in."""
        self.owner: dict[PathUse, int] = {}
        self.programs: list[SimpleCommand] = []
        self.changers: list[tuple[int, str, str]] = []   # programs that change what later ones are graded by
        self.graders: list[tuple[int, str, str]] = []    # programs graded by loss (deletes, overwrites, discards)
        self.dirs: set[str] = {self.reading.cwd} if self.reading.cwd else set()
        index = 0
        for run in self.reading.commands:
            for program, here in zip(run.programs, working_dirs(run.programs, self.reading.cwd), strict=True):
                self.programs.append(program)
                if here:
                    self.dirs.add(here)
                uses = command_paths(program, here) if program.argv else []
                for use in uses:
                    self.owner.setdefault(use, index)
                text = " ".join(program.argv)[:60]
                changes = _changes_what_follows(program, uses)
                if changes:
                    self.changers.append((index, text, changes))
                if _git_consequential(program) or program.name == "git" and program.argv[1:2] in (("mv",), ("rm",)) \
                        or any(use.operation == "delete" for use in uses):
                    self.graders.append((index, text, "loss"))
                elif any(use.operation == "write" for use in uses):
                    self.graders.append((index, text, "files"))
                index += 1

    def whole_call(self) -> None:
        """The facts are one look before the call runs: a delete, an overwrite or a git discard that
        follows a command of the same call that changes git's view or moves files (``echo x >>
        .gitignore && git clean -fX``, ``git add -A && git reset --hard``, ``mv data build/ && rm -rf
        build``) is graded by a state the call itself changes first: not proof."""
        for index, text, graded in self.graders:
            # a delete or discard depends on git's view and the files; a write on the files only
            before = [changer for at, changer, kind in self.changers if at < index and graded in ("loss", kind)]
            if before:
                self.facts.problem(f"`{text}` follows `{before[0]}` in the same call, which changes what it "
                                   "would lose: the facts describe the files before the call")

    def script(self, cmd: SimpleCommand, here: str | None) -> None:
        """A project script run by name: the command lines package.json gives it."""
        found = parse(cmd.argv)
        if found.gaps or any(use.role not in ("flag", "help") for use in found.options()):
            # a workspace, a prefix or an option the grammar does not know: another package.json
            self.facts.problem(f"which `package.json` `{found.label}` reads is not known")
            return
        name, *args = found.operands
        if not here or not os.path.isabs(here) or not self.inside(os.path.realpath(here)):
            self.facts.problem(f"the script `{name}` of `{found.label}` is not in a known project")
            return
        lines, problem = package_script(here, name, tuple(args))
        if problem:
            self.facts.problem(problem)
        else:
            self.facts.scripts.append(Script(found.label, name, lines))

    def requirements(self, word: str, here: str | None) -> None:
        """A requirements file an installer reads: proven when it lists package names only."""
        if not here or not os.path.isabs(here) or self.project is None:
            self.facts.problem(f"the requirements file `{word}` is not in a known project")
            return
        _lines, problem = requirement_lines(resolve_path(word, here), self.project)
        if problem:
            self.facts.problem(problem)
        elif word not in self.facts.requirements:
            self.facts.requirements.append(word)

    def bare_operands(self, cmd: SimpleCommand, here: str | None, recursive_reader: str | None) -> None:
        """The files a content reader prints that the reading did not take for paths: it reads
        a word as a path by its spelling (``cat notes`` and ``cat *`` have no ``/`` or ``.``),
        but ``cat`` prints whatever file the word names."""
        if cmd.name not in _READERS and cmd.name not in _PATTERN_FIRST:
            if _may_read_operands(cmd) and here and os.path.isabs(here):
                self.existing_operands(cmd, here, recursive_reader)
            return
        found = parse(cmd.argv)
        words = list(found.operands) if found.known else [w for w in cmd.argv[1:] if not w.startswith("-")]
        if cmd.name in _PATTERN_FIRST and not any(use.option in ("-e", "--regexp", "-f", "--file")
                                                   for use in found.options()):
            words = words[1:]
        seen = {use.path for use in self.reading.paths if use.via == cmd.name}
        for word in words:
            if word in seen or word == "-":
                continue
            if not here or not os.path.isabs(here):
                self.facts.problem(f"where `{cmd.name}` reads `{word}` is not known")
                continue
            self.path_use(PathUse(word, resolve_path(word, here), "read", via=cmd.name), recursive_reader)

    def existing_operands(self, cmd: SimpleCommand, here: str, recursive_reader: str | None) -> None:
        """A program the app does not know not to print its operands (``comm creds creds``, ``rev
        creds``): every operand that names an existing file is a read, scanned. Not a list of readers."""
        seen = {use.path for use in self.reading.paths if self.owner.get(use) is not None}
        for word in cmd.argv[1:]:
            if word.startswith("-") or word in seen:
                continue
            path = resolve_path(word, here)
            if os.path.isfile(path) or os.path.islink(path):
                self.path_use(PathUse(word, path, "read", via=cmd.name), recursive_reader)

    def path_use(self, use: PathUse, recursive_reader: str | None = None) -> None:
        targets = [use.resolved]
        if _EXTGLOB.search(use.path):
            self.facts.problem(f"`{use.path}` is an extended glob (extglob): what it matches is not modelled")
            return
        if _GLOB.search(use.path):
            # A superset of what any shell matches: dot files too (``dotglob``), ``**`` at any depth
            # (``globstar``), letters in any case (``nocaseglob``), as a kept shell may have them on.
            matches = _expand(use.resolved)
            self.facts.globs.append(_glob_fact(use.path, matches, self.project))
            if len(matches) > MAX_GLOB_MATCHES:
                self.facts.problem(f"`{use.path}` matches more than {MAX_GLOB_MATCHES:,} files")
                return
            targets = matches or [use.resolved]
        before = len(self.facts.losses)
        for target in targets:
            self.tick()
            self.target(use, target, recursive_reader)
        if len(targets) > 1 and len(self.facts.losses) - before > 1:   # one line for the pattern
            self.facts.losses[before:] = [_merged(use.path, self.facts.losses[before:])]
        if use.operation == "delete" and all(target in self.facts.graded_deletes for target in targets):
            self.facts.graded_deletes.add(use.resolved)    # every file the pattern matches is graded

    def target(self, use: PathUse, target: str, recursive_reader: str | None) -> None:
        shown = self.shown(target)
        if self.up_after_link(use):
            self.facts.problem(f"`{use.path}` goes up (`..`) after a link: where it leads is the file system's, "
                               "not its spelling")
            return
        written_inside = self.inside(os.path.normpath(target))
        follow = not (use.operation == "delete" and not use.path.endswith("/"))
        real = os.path.realpath(target) if follow else os.path.join(os.path.realpath(os.path.dirname(target)),
                                                                   os.path.basename(target))
        if real != os.path.normpath(target):
            self.facts.links.append(f"`{shown}` leads to `{real}`")
            if written_inside and not self.inside(real):
                self.facts.problem(f"`{shown}` leads outside the project (to `{real}`) through a link")
        if use.operation == "read":
            if use.listing:
                return      # names only
            if use.via in _ARCHIVERS:
                program = self.program_of(use)
                if program is None or not _archive_creates(program):
                    return  # an archive listed or unpacked: judged by its members, not printed
                recursive_reader = "all"    # tar -c .: every file it packs goes where the agent reads it
            if not self.inside(real):
                self.facts.problem(f"reads `{shown}` outside the project: what it holds is not checked")
            elif os.path.isdir(real):
                if recursive_reader is not None:
                    self.read_tree(real, recursive_reader)
            elif os.path.lexists(real):
                self.read_file(real)
            return
        if use.operation == "write":
            self.hard_links(real, shown)
            if written_inside:
                self.installed(real, shown)
                if os.path.isdir(real) and use.via in _INTO_FOLDER and not use.path.endswith("/"):
                    # read as a file's name (`cp conftest.py notes.md`), it is a folder: the source lands
                    # inside it under its own name, which no reader judged
                    self.facts.problem(f"`{shown}` is a folder: what lands in it is not judged by its name")
            if self.reading.family in ("edit", "patch") or not os.path.lexists(real):
                return      # an edit (shown as its diff), a new file
            if os.path.isdir(real):
                self.lands_in(use, real)    # a directory written into: the files that land there
                return
            # an existing file is overwritten whatever the flags say (``cp -r a.txt c.txt``)
        if not written_inside:
            # the reader judges places outside the project by where they are; the facts say so
            self.facts.outside.append(f"{'deletes' if use.operation == 'delete' else 'writes'} `{shown}` outside "
                                      "the project: judged by where it is, not looked at")
            return
        self.loss(use.path if target == use.resolved else shown, real,
                  "delete" if use.operation == "delete" else "overwrite", target=target)

    # -- the repository git finds (issue 30) --------------------------------------------------------

    def repository_from(self, where: str) -> None:
        """Git finds its repository (and the config that runs programs) from ``where`` upward: a
        folder below the project's root that holds a ``.git`` or is laid out as a repository
        (``HEAD``, ``objects/``, ``refs/``) is one no reader saw; none there, and git finds the
        project's own (``git_folders``, which lifts the reader's gap)."""
        real = os.path.realpath(where)
        if self.project is None or real == self.project or not self.inside(real) or not os.path.isdir(real):
            return      # outside the project or not there: the reader's gap stands
        folder = real
        while folder != self.project:
            self.tick()
            laid_out = os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isdir(os.path.join(folder, "objects"))
            if os.path.lexists(os.path.join(folder, ".git")) or laid_out:
                self.facts.problem(f"`{self.shown(folder)}` holds a git repository of its own: its config is "
                                   "not checked")
                return
            folder = os.path.dirname(folder)
        self.facts.git_folders.add(where)

    # -- installed code (issue 30) ------------------------------------------------------------------

    def installed(self, real: str, shown: str) -> None:
        """A file written in installed code, whatever the folders are named: a folder of the path
        that is a virtual environment (``pyvenv.cfg``, ``conda-meta``); or a Python module named
        like one a virtual environment of the project installs, which Python would import in its
        place from the project's root or a test folder."""
        if self.project is None:
            return
        folder = os.path.dirname(real)
        while folder != self.project and self.inside(folder):
            self.tick()
            if any(os.path.lexists(os.path.join(folder, mark)) for mark in _ENVIRONMENT_MARKS):
                self.facts.problem(f"`{shown}` is inside the virtual environment `{self.shown(folder)}` "
                                   "(installed code)")
                return
            folder = os.path.dirname(folder)
        name = os.path.basename(real).casefold()
        if name.endswith((".py", ".pyi")) or name == "__init__.py":
            stem = name.rsplit(".", 1)[0]
            if stem == "__init__":
                stem = os.path.basename(os.path.dirname(real)).casefold()
            if stem in self.installed_names():
                self.facts.problem(f"`{shown}` is named like the installed module `{stem}`, which Python "
                                   "would import from the project instead")

    def installed_names(self) -> frozenset[str]:
        """The top-level modules installed in the project's virtual environments (its root's folders
        with a ``pyvenv.cfg``), case-folded."""
        if self.modules is not None:
            return self.modules
        names: set[str] = set()
        try:
            entries = list(os.scandir(self.project or "."))
        except OSError:
            entries = []
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or not os.path.isfile(os.path.join(entry.path, "pyvenv.cfg")):
                continue
            for packages in glob.glob(os.path.join(entry.path, "lib", "python*", "site-packages")):
                self.tick()
                try:
                    for item in os.scandir(packages):
                        if not item.name.endswith((".dist-info", ".egg-info", ".pth")):
                            names.add(item.name.split(".", 1)[0].casefold())
                except OSError:
                    continue
        self.modules = frozenset(names)
        return self.modules

    def program_of(self, use: PathUse) -> SimpleCommand | None:
        index = self.owner.get(use)
        return self.programs[index] if index is not None else None

    def up_after_link(self, use: PathUse) -> bool:
        """A ``..`` that follows a link in the path as written (``cache/../src`` with ``cache`` a
        link): the kernel goes up from where the link leads, not from where it is spelled."""
        written = os.path.expanduser(use.path)
        parts = written.split("/")
        if ".." not in parts:
            return False
        bases = ["/"] if os.path.isabs(written) else [d for d in self.dirs if resolve_path(use.path, d) == use.resolved]
        if not bases:
            return True
        for base in bases:
            here, through_link = base, False
            for part in parts:
                if part in ("", "."):
                    continue
                if part == "..":
                    if through_link:
                        return True
                    here = os.path.dirname(here)
                    continue
                here = os.path.join(here, part)
                through_link = through_link or os.path.islink(here)
        return False

    def lands_in(self, use: PathUse, directory: str) -> None:
        """``cp a.txt sub/``: the file that lands in ``sub`` is what is written (through a link or a
        hard link already there, over a file with changes), graded as an overwrite of it."""
        if use.via not in _COPIERS:
            return
        index = self.owner.get(use)
        sources = [other for other, at in self.owner.items() if at == index and other != use and not other.listing]
        if index is None or not sources:
            self.facts.problem(f"which files `{use.via}` writes into `{self.shown(directory)}` is not known")
            return
        for source in sources:
            names = sorted(glob.glob(source.resolved, include_hidden=True)) if _GLOB.search(source.path) \
                else [source.resolved]
            for name in names[:MAX_GLOB_MATCHES]:
                self.tick()
                landing = os.path.join(directory, os.path.basename(name.rstrip("/")))
                if not os.path.lexists(landing):
                    continue
                shown = self.shown(landing)
                real = os.path.realpath(landing)
                if real != landing:
                    self.facts.links.append(f"`{shown}` leads to `{real}`")
                    if not self.inside(real):
                        self.facts.problem(f"`{use.via}` writes `{shown}`, which leads outside the project "
                                           f"(to `{real}`) through a link")
                        continue
                if os.path.isdir(real):
                    self.facts.problem(f"`{use.via}` copies into the existing directory `{shown}`: what it "
                                       "overwrites there is not graded")
                    continue
                self.hard_links(real, shown)
                if self.inside(real):
                    self.loss(shown, real, "overwrite", target=landing)

    # -- links ----------------------------------------------------------------------------------

    def hard_links(self, real: str, shown: str) -> None:
        try:
            info = os.lstat(real)
        except OSError:
            return
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            self.facts.problem(f"`{shown}` has {info.st_nlink} names (a hard link): writing it changes the others")

    # -- reads ----------------------------------------------------------------------------------

    def read_file(self, real: str) -> None:
        if self.facts.scanned >= MAX_SCANNED_FILES or self.scanned_bytes >= MAX_SCANNED_BYTES:
            self.facts.problem(f"reads more than the {MAX_SCANNED_FILES} files or "
                               f"{MAX_SCANNED_BYTES // 1_000_000} MB the app scans for secrets")
            return
        try:
            found = scan(real, self.shown(real))
        except Unscannable as exc:
            self.facts.problem(str(exc))
            return
        try:
            self.scanned_bytes += os.stat(real).st_size
        except OSError:
            pass
        if found:
            self.facts.secrets.extend(found)
        else:
            self.facts.scanned += 1

    def read_tree(self, top: str, rules: str) -> None:
        """The files a recursive reader reads under ``top``: with git's ignore rules (``git``) as
        ``git ls-files`` lists them, or every file (``all``); ``+dotgit``: git's own directory too
        (``grep -r``, ``rg --hidden``: ``.git/config`` may hold a remote's token). A superset where
        the reader's own rules are not git's: a nested repository or a submodule is read whole, and
        an ``.ignore``/``.rgignore`` (which can re-include what git ignores) makes it every file."""
        dotgit = rules.endswith("+dotgit")
        files: list[str] | None = None
        if rules.startswith("git"):
            root = repository_of(top)
            if root is not None:
                view = self.view(root)
                if isinstance(view, GitView):
                    try:
                        files = view.listed(top, self.left(), respect_ignores=True)
                    except GitError as exc:
                        self.facts.problem(f"which files `{self.shown(top)}` holds is not known: {exc}")
                        return
                    if self.own_ignore_rules(top, root, files):
                        files = None
                    elif dotgit:
                        files += self.walk(os.path.join(root, ".git"), dotgit=True)
        if files is None:
            files = list(self.walk(top, dotgit=dotgit))
        for path in files:
            self.tick()
            if os.path.islink(path) and not self.inside(os.path.realpath(path)):
                self.facts.problem(f"`{self.shown(path)}` leads outside the project (to "
                                   f"`{os.path.realpath(path)}`) through a link")
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                # a repository inside (git lists it as one entry): its reader's rules are its own
                for inner in self.walk(path, dotgit=dotgit):
                    self.read_file(inner)
                    if self.facts.problems and self.facts.problems[-1].startswith("reads more than"):
                        return
            elif os.path.isfile(path):
                self.read_file(path)
            if self.facts.problems and self.facts.problems[-1].startswith("reads more than"):
                return

    def own_ignore_rules(self, top: str, root: str, files: list[str]) -> bool:
        """A search tool's own ignore files (``.ignore``, ``.rgignore``, ``.agignore``) anywhere it
        reads or above it: their rules are not git's (``!data/`` re-includes what git ignores)."""
        folders = {os.path.dirname(path) for path in files} | {top}
        here = top
        while here.startswith(root) and here != os.path.dirname(here):
            folders.add(here)
            here = os.path.dirname(here)
        return any(os.path.lexists(os.path.join(folder, name)) for folder in folders for name in _SEARCH_IGNORES)

    # -- loss -------------------------------------------------------------------------------------

    def loss(self, what: str, real: str, operation: str, *, target: str) -> None:
        if not os.path.lexists(real):
            # Nothing there now is no proof that nothing will be (it may appear before the call
            # runs): shown, but the reader's grading by name stands.
            self.facts.losses.append(Loss(what, operation))
            return
        states: Counter[str] = Counter()
        sample: list[str] = []
        files, size = self.tally(real, states, sample)
        outside = not self.inside(real)
        self.facts.losses.append(Loss(what, operation, files, size, count_states(states), outside,
                                      sample=tuple(sample)))
        self.facts.graded_deletes.add(target)

    def tally(self, top: str, states: Counter[str], sample: list[str]) -> tuple[int, int]:
        """Count the files under ``top`` (or ``top`` itself) by git state, with their sizes.

        A directory walk that decides a state once per directory where git does (an untracked or
        ignored directory: every file under it shares it), else once per file; one ``lstat`` per
        file (``scandir``), no per-file search up the tree. A repository nested inside is untracked
        to the outer one (git cannot bring it back from there)."""
        root = repository_of(top)
        view = self.view(root) if root is not None else None
        files = size = 0
        pending: list[tuple[str, str | None]] = [(top, None)]
        if not os.path.isdir(top) or os.path.islink(top):
            alone = self.file_state(top, root, view)
            states[alone] += 1
            if alone not in ("tracked", "build"):
                sample.append(self.shown(top))
            return 1, _size_of(top)
        while pending:
            here, inherited = pending.pop()
            self.tick()
            state: str | None = inherited
            if root is not None and here != root and os.path.lexists(os.path.join(here, ".git")):
                state = "untracked"     # a repository of its own inside this one, whatever holds it (build/_deps)
            if os.path.basename(here) == ".git" or root is not None and _in_git_dir(os.path.relpath(here, root)):
                state = "repository"    # git's own files: history no work tree holds
            if state is None:
                state = self.dir_state(here, root, view)
            try:
                entries = list(os.scandir(here))
            except OSError as exc:
                self.facts.problem(f"`{self.shown(here)}` could not be read ({exc.strerror or exc})")
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, state))
                    continue
                files += 1
                if files > MAX_TREE_FILES:
                    raise _OverBudget
                try:
                    size += entry.stat(follow_symlinks=False).st_size
                except OSError:
                    pass
                found = state or self.entry_state(here, entry.name, root, view)
                states[found] += 1
                if found not in ("tracked", "build") and len(sample) < 5:
                    sample.append(self.shown(entry.path))
        return files, size

    def dir_state(self, here: str, root: str | None, view: GitView | GitError | None) -> str | None:
        """The state every file under ``here`` shares, or None: each file has its own."""
        if root is None or not isinstance(view, GitView):
            return "no-git"
        rel = here[len(root) + 1:] if here.startswith(root + os.sep) else ""
        if not rel:
            return None
        if view.within(rel, view.untracked):
            return "untracked"
        entry = view.ignored_entry(rel)
        if entry is not None:
            return "build" if self.is_build_dir(root, entry) else "ignored"
        return None

    def entry_state(self, here: str, name: str, root: str | None, view: GitView | GitError | None) -> str:
        """A file's state in a directory git tracks (its directory has no state of its own): three
        set lookups, no path arithmetic beyond one join."""
        if root is None or not isinstance(view, GitView):
            return "no-git"
        rel = f"{here[len(root) + 1:]}/{name}" if here != root else name
        if rel in view.changed:
            return "changed"
        if rel in view.untracked:
            return "untracked"
        if rel in view.ignored:
            return "build" if self.is_build_dir(root, rel) else "ignored"
        return "tracked" if rel in view.tracked else "unverified"

    def file_state(self, path: str, root: str | None, view: GitView | GitError | None) -> str:
        if root is None or not isinstance(view, GitView):
            return "no-git"
        if _in_git_dir(os.path.relpath(path, root)):
            return "repository"
        state = view.state(path)
        entry = view.ignored_entry(os.path.relpath(path, root)) if state == "ignored" else None
        if entry is not None and self.is_build_dir(root, entry):
            return "build"
        return state

    def is_build_dir(self, root: str, entry: str) -> bool:
        """Whether the ignored entry git reported (``entry``, relative to ``root``: the top of what
        is ignored) is a build's output: a directory the catalog names, where a build writes it: at
        the project's or repository's root, next to a build's manifest, or (``__pycache__``) beside
        the sources. A build folder's name deeper in ignored data (``data/build``) is data."""
        name = os.path.basename(entry)
        if not os.path.isdir(os.path.join(root, entry)) or os.path.islink(os.path.join(root, entry)) or not any(
                fnmatch.fnmatchcase(name, pattern) for pattern in self.builds):
            return False
        if name in _BUILT_BESIDE_SOURCES:
            return True
        parent = os.path.dirname(os.path.join(root, entry))
        return parent in (root, self.project) or any(os.path.isfile(os.path.join(parent, manifest))
                                                     for manifest in _BUILD_MANIFESTS)

    def view(self, root: str) -> GitView | GitError:
        if root not in self.views:
            try:
                self.views[root] = GitView.take(root, self.left())
            except GitError as exc:
                self.facts.problem(f"git's view of `{self.shown(root)}` is not known: {exc}")
                self.views[root] = exc
        return self.views[root]

    # -- git commands that discard ------------------------------------------------------------------

    def git(self, cmd: SimpleCommand, here: str | None) -> None:
        words = list(cmd.argv[1:])
        if not words or words[0].startswith("-") or not here or not os.path.isabs(here):
            return      # global options (-C, -c, --git-dir): left to the reader's grading by name
        sub, rest = words[0], words[1:]
        discard = _discard_of(sub, rest)
        if discard is None:
            if sub in ("apply", "am") and not {"--check", "--stat", "--numstat", "--summary"} & set(rest):
                if any(w.startswith(("--directory", "-p", "--unsafe-paths")) and w != "-p1" for w in rest):
                    self.facts.problem(f"where `git {sub}` applies its changes (`--directory`, `-p`) is not known")
                    return
                self.patch_files(cmd, here, [os.path.join(here, w) for w in rest if not w.startswith("-")])
            elif sub == "mv":
                self.git_mv(rest, here)
            elif sub == "worktree" and rest[:1] == ["remove"]:
                self.git_worktree_remove(rest[1:], here)
            elif _overwrites_work_tree(sub, rest):
                self.facts.problem(f"what `{' '.join(['git', sub, *rest])[:80]}` would overwrite or delete in the "
                                   "work tree is not graded")
            return
        root = repository_of(here)
        view = self.view(root) if root else None
        if root is None or not isinstance(view, GitView):
            self.facts.problem(f"what `git {sub}` would discard is not known")
            return
        label = " ".join(["git", sub, *rest])[:80]
        kind, pathspecs = discard
        if kind == "stash":
            try:
                count = view.stash_count(self.left())
            except GitError as exc:
                self.facts.problem(f"what `{label}` would discard is not known: {exc}")
                return
            dropped = count if "clear" in rest else min(count, 1)
            self.facts.losses.append(Loss(label, "drops stashed changes", dropped, 0,
                                          (("changed", dropped),) if dropped else ()))
            self.facts.graded_git.add(sub)
            return
        within = [os.path.relpath(os.path.normpath(os.path.join(here, spec)), root) for spec in pathspecs] or ["."]
        if any(_GLOB.search(spec) or spec.startswith(":") for spec in pathspecs):
            self.facts.problem(f"the pathspecs of `{label}` are not plain paths")
            return
        states: Counter[str] = Counter()
        sample: list[str] = []
        if kind == "changes":
            lost = sorted(path for path in view.changed if _within(path, within))
            states["changed"] = len(lost)
            size = sum(_size_of(os.path.join(root, path)) for path in lost)
            sample = lost[:5]
            diff = ""
            if lost:
                try:
                    diff = view.diff_stat([f":(literal){p}" for p in lost[:200]], self.left())
                except GitError:
                    diff = ""
            self.facts.losses.append(Loss(label, "discards", len(lost), size, count_states(states), diff=diff,
                                          sample=tuple(sample)))
        else:   # clean: untracked files, and ignored ones with -x (only those with -X)
            flags = "".join(w[1:] for w in rest if w.startswith("-") and not w.startswith("--"))
            entries = ([] if "X" in flags else sorted(view.untracked)) + (
                sorted(view.ignored) if "x" in flags or "X" in flags else [])
            size = 0
            files = 0
            for entry in entries:
                if not _within(entry, within):
                    continue
                counted, weight = self.tally(os.path.join(root, entry), states, sample)
                files, size = files + counted, size + weight
            self.facts.losses.append(Loss(label, "deletes", files, size, count_states(states), sample=tuple(sample)))
        self.facts.graded_git.add(sub)

    def git_mv(self, rest: list[str], here: str) -> None:
        """``git mv -f a.txt b.txt`` overwrites ``b.txt`` (its uncommitted text is never staged):
        graded as an overwrite of what lands on the destination; without ``-f`` git refuses."""
        operands = [w for w in rest if not w.startswith("-")]
        if not ({"-f", "--force"} & set(rest)) or len(operands) < 2:
            return
        *sources, dest = (os.path.normpath(os.path.join(here, w)) for w in operands)
        landings = [os.path.join(dest, os.path.basename(src)) for src in sources] if os.path.isdir(dest) else [dest]
        for landing in landings:
            if os.path.lexists(landing) and not os.path.isdir(landing) and self.inside(landing):
                self.loss(self.shown(landing), landing, "overwrite", target=landing)
            elif os.path.isdir(landing):
                self.facts.problem(f"`git mv -f` moves onto the directory `{self.shown(landing)}`: not graded")

    def git_worktree_remove(self, rest: list[str], here: str) -> None:
        """``git worktree remove [--force] DIR`` deletes a work tree: graded by that tree's own state."""
        operands = [w for w in rest if not w.startswith("-")]
        if len(operands) != 1:
            self.facts.problem("which work tree `git worktree remove` deletes is not known")
            return
        tree = os.path.normpath(os.path.join(here, operands[0]))
        if not self.inside(tree):
            self.facts.problem(f"`git worktree remove` deletes `{tree}`, outside the project: not graded")
            return
        self.loss(f"git worktree remove {operands[0]}"[:80], tree, "delete", target=tree)

    # -- archives and patches ----------------------------------------------------------------------------

    def archive(self, cmd: SimpleCommand, here: str | None, kind: str) -> None:
        if _prints_members(cmd):
            self.facts.problem(f"`{cmd.name}` prints the archive's members: what they hold is not checked")
            return
        source, dest = _archive_and_destination(cmd, here, self.reading)
        if source is None or dest is None:
            self.facts.problem(f"which files `{cmd.name}` writes is not known")
            return
        if not os.path.isfile(source):     # a FIFO or a device would block the listing
            self.facts.problem(f"the archive `{self.shown(source)}` is not a file there to list")
            return
        rewrites = _renames_members(cmd)
        if rewrites:
            self.facts.problem(f"`{cmd.name} {rewrites}` changes the members' names: where they land is not known")
            return
        strip = _strip_components(cmd) if kind == "tar" else 0
        if strip is None:
            self.facts.problem(f"how many parts of the members' names `{cmd.name}` strips is not known")
            return
        links: list[str] = []
        try:
            for name, link in _members(source, kind):
                self.tick()
                if link:
                    links.append(f"{name} to {link}")
                if kind == "zip" and "\\" in name:
                    name = name.replace("\\", "/")   # unzip makes folders of a DOS or Windows name's backslashes
                if strip:
                    parts = [part for part in name.split("/") if part]
                    if len(parts) <= strip:
                        continue    # tar skips a member with no name left
                    name = "/".join(parts[strip:])
                self.member(source, name, link, dest)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError) as exc:
            self.facts.problem(f"the members of `{self.shown(source)}` could not be listed ({exc})")
        finally:
            if links:   # one problem for all of them, with a few named
                self.facts.problem(f"`{self.shown(source)}` carries {len(links):,} link{'s' if len(links) != 1 else ''}"
                                   f" ({', '.join(links[:3])}{', ...' if len(links) > 3 else ''})")

    def patch_files(self, cmd: SimpleCommand, here: str | None, files: list[str]) -> None:
        if not files or not here:
            self.facts.problem(f"which files `{cmd.name}` changes is not known")
            return
        for path in files:
            if not os.path.isfile(path):
                self.facts.problem(f"the patch `{self.shown(path)}` is not a file there to read")
                continue
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read(2_000_000)
            except OSError as exc:
                self.facts.problem(f"the patch `{self.shown(path)}` could not be read ({exc.strerror or exc})")
                continue
            uses = _patch_uses(text, here, "patch")
            if not uses:
                self.facts.problem(f"the patch `{self.shown(path)}` names no file")
            for use in uses:
                self.tick()
                self.member(path, use.path, "", here, operation=use.operation)

    def member(self, source: str, name: str, link: str, dest: str, operation: str = "write") -> None:
        if len(self.facts.members) >= MAX_MEMBERS:
            raise _OverBudget
        lands = os.path.normpath(os.path.join(dest, name.lstrip("/")))
        real = os.path.join(os.path.realpath(os.path.dirname(lands)), os.path.basename(lands))
        outside = not self.inside(real)
        self.facts.members.append(Member(self.shown(source), name, self.shown(real), outside, link))
        if real != lands and not outside:
            self.facts.links.append(f"`{name}` from `{self.shown(source)}` lands through a link at `{real}`")
        if outside:
            return
        if operation == "delete" or (os.path.lexists(real) and not os.path.isdir(real)):
            self.hard_links(real, self.shown(real))
            self.loss(self.shown(real), real, "delete" if operation == "delete" else "overwrite", target=real)

    # -- helpers ----------------------------------------------------------------------------------------

    def inside(self, path: str) -> bool:
        return self.project is not None and (path == self.project or path.startswith(self.project + os.sep))

    def shown(self, path: str) -> str:
        if self.project and self.inside(path) and path != self.project:
            return os.path.relpath(path, self.project)
        return path

    def walk(self, top: str, *, dotgit: bool = False) -> Iterator[str]:
        """Every file under ``top``; git's own directories only with ``dotgit`` (less the compressed
        objects and the index, which hold no text a reader prints)."""
        count = 0
        for here, dirs, files in os.walk(top, followlinks=False):
            self.tick()
            in_git = _in_git_dir(here)
            if in_git:
                dirs[:] = [d for d in dirs if d != "objects"]
                files = [f for f in files if f != "index" and not f.endswith((".pack", ".idx"))]
            elif not dotgit and not top.endswith(".git"):
                dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                count += 1
                if count > MAX_TREE_FILES:
                    raise _OverBudget
                yield os.path.join(here, name)
            for name in dirs:  # links to directories are files here (os.walk does not enter them)
                path = os.path.join(here, name)
                if os.path.islink(path):
                    yield path


def _size_of(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _merged(what: str, losses: list[Loss]) -> Loss:
    states: Counter[str] = Counter()
    for loss in losses:
        states.update(dict(loss.states))
    return Loss(what, losses[0].operation, sum(loss.files for loss in losses), sum(loss.size for loss in losses),
                count_states(states), any(loss.outside for loss in losses),
                sample=tuple(path for loss in losses for path in loss.sample)[:5])


def _glob_fact(pattern: str, matches: list[str], project: str | None) -> Glob:
    def shown(path: str) -> str:
        return os.path.relpath(path, project) if project and path.startswith(project + os.sep) else path
    return Glob(pattern, len(matches), tuple(shown(m) for m in matches[:5]))


def _tree_rules(cmd: SimpleCommand) -> str:
    """Which files a recursive reader reads: ``git`` (what git does not ignore) or ``all``, with
    ``+dotgit`` when it reads git's own directory too (``grep -r``; ``rg --hidden``, ``-uu``)."""
    words = set(cmd.argv[1:])
    rules = "all" if _NO_IGNORE & words else _RECURSIVE_READERS[cmd.name]
    reads_dotgit = cmd.name in ("grep", "egrep", "fgrep") or bool(_HIDDEN & words) or any(
        w.startswith("-") and not w.startswith("--") and "uu" in w for w in words)
    return rules + "+dotgit" if reads_dotgit else rules


def _grep_recursive(argv: tuple[str, ...]) -> bool:
    return any(w in _GREP_RECURSIVE or (w.startswith("-") and not w.startswith("--") and ("r" in w or "R" in w))
               for w in argv[1:])


def _tar_extracts(argv: tuple[str, ...]) -> bool:
    words = argv[1:]
    if any(w in ("-x", "--extract", "--get") for w in words):
        return True
    first = words[0] if words else ""
    return bool(first) and not first.startswith("--") and "x" in first.lstrip("-") and first.lstrip("-").isalpha()


def _archive_creates(cmd: SimpleCommand) -> bool:
    """``tar -c``/``-r``/``-u`` (and bsdtar's): it packs the files it names, to a file or the output."""
    words = cmd.argv[1:]
    if any(w in ("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate")
           for w in words):
        return True
    first = words[0] if words else ""
    letters = first.lstrip("-") if first and not first.startswith("--") else ""
    return letters.isalpha() and bool(set(letters) & set("cruA"))


def _renames_members(cmd: SimpleCommand) -> str:
    """An option that rewrites the members' names as they land (``--transform``, bsdtar ``-s``)."""
    for word in cmd.argv[1:]:
        if word.startswith(("--transform", "--xform", "--no-anchored")) or cmd.name == "bsdtar" and word == "-s":
            return word.split("=", 1)[0]
    return ""


def _strip_components(cmd: SimpleCommand) -> int | None:
    words = list(cmd.argv[1:])
    for i, word in enumerate(words):
        value = word.split("=", 1)[1] if word.startswith("--strip-components=") else (
            words[i + 1] if word == "--strip-components" and i + 1 < len(words) else None)
        if value is not None:
            return int(value) if value.isdigit() else None
    return 0


def _patch_directory(cmd: SimpleCommand, here: str | None) -> str | None:
    """Where ``patch`` lands the files its patch names: ``-d DIR`` resolved for real (through
    links); None for a ``-p`` other than the one the headers are read with (``a/``, ``b/``)."""
    if not here:
        return None
    words = list(cmd.argv[1:])
    into = here
    for i, word in enumerate(words):
        value = None
        if word in ("-d", "--directory") and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith("--directory="):
            value = word.split("=", 1)[1]
        elif word.startswith("-d") and len(word) > 2 and not word.startswith("--"):
            value = word[2:]
        elif word == "-p" and words[i + 1:i + 2] != ["1"] or word.startswith("-p") and word not in (
                "-p1", "-p", "--posix") or word.startswith("--strip") and word != "--strip=1":
            return None
        if value is not None:
            into = os.path.realpath(os.path.join(into, os.path.expanduser(value)))
    return into


def _prints_members(cmd: SimpleCommand) -> bool:
    """``tar -xO``, ``unzip -p`` / ``-c``: members go to the output (the agent's context), not to disk."""
    letters = "O" if cmd.name != "unzip" else "pc"
    words = cmd.argv[1:]
    bundled = [w.lstrip("-") for w in words if not w.startswith("--")][:1] if cmd.name != "unzip" else []
    return any(w in ("--to-stdout", "--to-command") or w.startswith("--to-command=") for w in words) or any(
        set(w[1:]) & set(letters) for w in words if w.startswith("-") and not w.startswith("--")) or any(
        "O" in w and w.isalpha() for w in bundled)


def _overwrites_work_tree(sub: str, rest: list[str]) -> bool:
    """A git command that overwrites or deletes work-tree files and that :func:`_discard_of` does
    not grade (``checkout REV -- p``, ``restore --source``, ``reset --hard REV``, ``switch -f``...):
    left unproven, never moderate."""
    words = set(rest)
    force = bool(words & {"-f", "--force"}) or any(re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", w) for w in rest)
    if sub == "checkout":
        return "--" in words or force or "--ours" in words or "--theirs" in words or "-p" in words
    if sub == "restore":
        return True
    if sub == "reset":
        return bool(words & {"--hard", "--merge", "--keep"})
    if sub == "switch":
        return force or "--discard-changes" in words
    if sub == "read-tree":
        return "-u" in words or "--reset" in words
    if sub == "checkout-index":
        return force or "-a" in words or "--all" in words
    if sub == "stash":
        return rest[:1] in (["drop"], ["clear"], ["pop"], ["apply"])
    if sub == "clean":
        return force
    if sub == "submodule":
        return rest[:1] in (["deinit"], ["update"]) and force
    return sub in ("rm",) and force


def _discard_of(sub: str, rest: list[str]) -> tuple[str, list[str]] | None:
    """What a git subcommand discards (``changes`` in pathspecs, ``clean``, ``stash``), or None
    when it is not a discard this module grades (then the reader's grading by name stands)."""
    operands = [w for w in rest if not w.startswith("-")]
    if sub == "reset" and "--hard" in rest and all(w in ("--hard", "HEAD") for w in rest):
        return "changes", []
    if sub == "checkout" and "--" in rest and rest.index("--") == 0 and len(rest) > 1:
        return "changes", rest[1:]
    if sub == "checkout" and rest == ["."]:
        return "changes", ["."]
    if sub == "restore" and operands and all(w in ("--worktree", "-W", "--") or not w.startswith("-") for w in rest):
        return "changes", [w for w in rest if w != "--" and not w.startswith("-")]
    if sub == "clean" and all(re.fullmatch(r"-[fdxXq]+|--force|--quiet", w) for w in rest if w.startswith("-")) \
            and any("f" in w or w == "--force" for w in rest if w.startswith("-")):
        return "clean", operands
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]) and len(rest) == 1:
        return "stash", []
    return None


def _within(rel: str, specs: list[str]) -> bool:
    rel = rel.rstrip("/")
    return any(spec == "." or rel == spec or rel.startswith(spec.rstrip("/") + "/") for spec in specs)


def _archive_and_destination(cmd: SimpleCommand, here: str | None,
                             reading: CallReading) -> tuple[str | None, str | None]:
    if not here or not os.path.isabs(here):
        return None, None
    words = list(cmd.argv[1:])
    if cmd.name == "unzip":
        dest = here
        for i, word in enumerate(words):
            if word == "-d" and i + 1 < len(words):
                dest = os.path.join(here, words[i + 1])
            elif word.startswith("-d") and len(word) > 2:
                dest = os.path.join(here, word[2:])
        archives = [w for i, w in enumerate(words) if not w.startswith("-") and (i == 0 or words[i - 1] != "-d")]
        return (os.path.join(here, archives[0]) if archives else None), dest
    reads = [u.resolved for u in reading.paths if u.via == cmd.name and u.operation == "read" and not u.listing]
    writes = [u.resolved for u in reading.paths if u.via == cmd.name and u.operation == "write"]
    return (reads[0] if len(reads) == 1 else None), (writes[0] if len(writes) == 1 else here)


def _members(source: str, kind: str) -> Iterator[tuple[str, str]]:
    if kind == "zip":
        with zipfile.ZipFile(source) as archive:
            for info in archive.infolist():
                is_link = stat.S_ISLNK(info.external_attr >> 16)
                yield info.filename, (archive.read(info).decode(errors="replace") if is_link else "")
        return
    with tarfile.open(source, "r:*") as archive:
        for member in archive:
            yield member.name, (member.linkname if member.issym() or member.islnk() else "")


def _patch_inputs(cmd: SimpleCommand, reading: CallReading) -> list[str]:
    words = list(cmd.argv[1:])
    found = [u.resolved for u in reading.paths if u.via in ("patch", "<") and u.operation == "read"]
    for i, word in enumerate(words):
        if word in ("-i", "--input") and i + 1 < len(words):
            found.append(os.path.join(reading.cwd or "", words[i + 1]))
        elif word.startswith("--input="):
            found.append(os.path.join(reading.cwd or "", word.split("=", 1)[1]))
    return found
