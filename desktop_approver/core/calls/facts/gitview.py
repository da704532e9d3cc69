"""Git's view of a repository's files, asked of git itself (``git status --porcelain=v2 -z``,
``git ls-files``) as subprocesses with a timeout, once per repository per request.

Git is run so that it changes nothing and runs nothing of the repository's: no optional locks
(``GIT_OPTIONAL_LOCKS=0``), no fsmonitor, no pager, no system config, submodules not entered
(``--ignore-submodules=all``: their own settings are not read here), case never folded
(``core.ignorecase=false``: an untracked ``A.TXT`` is not the tracked ``a.txt``); and not at all
in a repository whose effective settings, from any scope but the person's own global file, name
programs git may run while it compares files (``filter.*`` drivers, which status runs on changed
files, ``core.fsmonitor``, includes that could hide either, a per-worktree config): the agent may
have written those settings (``.git/config``, ``config.worktree``), and asking git would run them
before the person said a word.

"Tracked and unchanged" is a positive fact: the path is in the index with git's ordinary tag
(``git ls-files -v``) and in no status entry. A file marked ``assume-unchanged`` or
``skip-worktree`` (status hides its edits), or one git does not list at all, is ``unverified``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["GitError", "GitView", "repository_of"]


class GitError(Exception):
    """Git could not say (not installed, refused, too slow, a repository that runs programs)."""


_RUNS_PROGRAMS = re.compile(r"^(filter\.|core\.fsmonitor|core\.sshcommand|include\.|includeif\.|diff\.[^.]+\.textconv"
                            r"|core\.pager|core\.hookspath|extensions\.worktreeconfig)", re.I)
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.ignorecase=false",
         "-c", "core.hooksPath=/dev/null", "-c", "diff.external=", "-c", "core.precomposeunicode=false")
"""Fixed settings every look runs with, whatever the repository says."""
_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF",
             "GIT_PAGER", "GIT_SSH_COMMAND", "GIT_CEILING_DIRECTORIES", "GIT_NAMESPACE", "GIT_OBJECT_DIRECTORY")


def repository_of(path: str) -> str | None:
    """The work tree holding ``path`` (the nearest directory above it with a ``.git``), or None."""
    here = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _git(root: str, args: Iterable[str], timeout: float) -> bytes:
    if timeout <= 0:
        raise GitError("no time left to ask git")
    env = {key: value for key, value in os.environ.items() if key not in _ENV_DROP}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_CONFIG_NOSYSTEM="1")
    try:
        done = subprocess.run(["git", "--no-pager", "--no-optional-locks", *_SAFE, "-C", root, *args],
                              capture_output=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git took longer than {timeout:.2f} s") from exc
    except OSError as exc:
        raise GitError(f"git could not run ({exc.strerror or exc})") from exc
    if done.returncode != 0:
        raise GitError(f"git refused: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    return done.stdout


@dataclass
class GitView:
    """One repository's status, taken once: which files have changes, are untracked or ignored.

    Untracked and ignored directories come back whole (``--untracked-files=normal``,
    ``--ignored=traditional``), so the cost does not grow with ``node_modules``; a file under one
    takes its state. A file in no entry is tracked and unchanged only if the index lists it
    with the plain tag (``tracked``); anything else is ``unverified``.
    """

    root: str
    changed: set[str] = field(default_factory=set)
    untracked: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    tracked: set[str] = field(default_factory=set)

    @classmethod
    def take(cls, root: str, timeout: float) -> GitView:
        # every scope git reads here (local, worktree, command, an include...) but the person's global file
        config = _git(root, ["config", "--list", "--show-scope", "--name-only", "-z"], timeout)
        words = config.decode(errors="replace").split("\0")
        runs = sorted({key for scope, key in zip(words[0::2], words[1::2], strict=False)   # scope, name pairs
                       if scope not in ("global", "system", "command") and _RUNS_PROGRAMS.match(key)})
        if runs:
            raise GitError(f"the repository's own settings run programs ({', '.join(runs[:3])}): git was not asked")
        out = _git(root, ["status", "--porcelain=v2", "-z", "--ignored=traditional", "--untracked-files=normal",
                          "--no-renames", "--ignore-submodules=all"], timeout)
        index = _git(root, ["ls-files", "-v", "-z", "--cached"], timeout)
        view = cls(root)
        for entry in index.decode("utf-8", errors="surrogateescape").split("\0"):
            if entry[:2] == "H ":       # cached, neither assume-unchanged (lowercase) nor skip-worktree (S)
                view.tracked.add(entry[2:])
        for entry in out.decode("utf-8", errors="surrogateescape").split("\0"):
            if entry[:2] in ("1 ", "u "):
                view.changed.add(entry.split(" ", 8 if entry[0] == "1" else 10)[-1])
            elif entry[:2] == "2 ":   # not with --no-renames, but read it all the same
                view.changed.add(entry.split(" ", 9)[-1])
            elif entry[:2] == "? ":
                view.untracked.add(entry[2:].rstrip("/"))
            elif entry[:2] == "! ":
                view.ignored.add(entry[2:].rstrip("/"))
        return view

    def stash_count(self, timeout: float) -> int:
        return len([line for line in _git(self.root, ["stash", "list", "-z"], timeout).split(b"\0") if line])

    def diff_stat(self, pathspecs: list[str], timeout: float) -> str:
        """A short ``git diff --stat HEAD`` of what a discard would lose."""
        out = _git(self.root, ["diff", "--no-ext-diff", "--no-textconv", "--stat=100", "HEAD", "--",
                               *pathspecs], timeout)
        lines = out.decode(errors="replace").splitlines()
        return "\n".join(lines[:12] + (["..."] if len(lines) > 12 else []))

    def listed(self, directory: str, timeout: float, *, respect_ignores: bool) -> list[str]:
        """The files under ``directory`` that a program honouring git's ignore rules reads
        (tracked plus untracked, less the ignored), or every file git knows of there."""
        rel = os.path.relpath(directory, self.root)
        args = ["ls-files", "-z", "--cached", "--others"]
        if respect_ignores:
            args.append("--exclude-standard")
        out = _git(self.root, [*args, "--", f":(literal){rel}"], timeout)
        return [os.path.join(self.root, name) for name in out.decode("utf-8", "surrogateescape").split("\0") if name]

    @staticmethod
    def within(rel: str, entries: set[str]) -> bool:
        return _under(rel, entries)

    def state(self, path: str) -> str:
        """``tracked``, ``changed``, ``untracked`` or ``ignored`` for a file of this work tree."""
        rel = os.path.relpath(path, self.root)
        if rel in self.changed:
            return "changed"
        if _under(rel, self.untracked):
            return "untracked"
        if _under(rel, self.ignored):
            return "ignored"
        return "tracked" if rel in self.tracked else "unverified"

    def ignored_entry(self, rel: str) -> str | None:
        """The ignored entry git reported that holds ``rel`` (the top of what is ignored), or None."""
        while rel and rel != ".":
            if rel in self.ignored:
                return rel
            rel = os.path.dirname(rel)
        return None


def _under(rel: str, entries: set[str]) -> bool:
    """``rel`` is an entry, or lies in a directory that is one (a walk up its parents, not a scan)."""
    while rel and rel != ".":
        if rel in entries:
            return True
        rel = os.path.dirname(rel)
    return False
