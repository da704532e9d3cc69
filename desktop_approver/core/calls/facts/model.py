"""What the app found on this machine about a call's paths: plain data, made by :mod:`.gather`,
judged by :mod:`..risk.consequences`, shown by the dialog and ``risk --explain``, kept in the audit log.

Facts are a snapshot: they say what the files were when the app looked, not what they will be when
the call runs (a file changed in between is not seen; see ``docs/policy.md``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["GitState", "GIT_STATES", "Loss", "Glob", "Secret", "Member", "Script", "Facts"]

GitState = Literal["tracked", "changed", "untracked", "ignored", "build", "unverified", "repository", "no-git"]
GIT_STATES: tuple[GitState, ...] = ("tracked", "changed", "untracked", "ignored", "build", "unverified", "repository",
                                    "no-git")
"""A file's state as git sees it: tracked and unchanged since HEAD (a positive fact from the index),
tracked with changes, untracked, ignored (``build``: ignored output of a build the catalog names, where
that build writes it), ``unverified`` (git hides its state: assume-unchanged, skip-worktree, or not
listed), ``repository`` (git's own files under ``.git``: history), or in no repository."""

_STATE_WORDS = {"tracked": "unchanged in git", "changed": "with uncommitted changes", "untracked": "untracked",
                "ignored": "ignored by git (not build output)", "build": "build output ignored by git",
                "no-git": "not in a git repository",
                "unverified": "that git does not vouch for (assume-unchanged, skip-worktree or unlisted)",
                "repository": "of git's own (its history)"}
_RECOVERABLE = frozenset({"tracked", "build"})
MAX_MEMBER_LINES = 20
"""Archive members told one line each; the rest are counted (a tar of 10,000 links is one call)."""


@dataclass(frozen=True)
class Loss:
    """What a delete, an overwrite or a git command would lose at one place (``what``)."""

    what: str
    operation: str                  # "delete", "overwrite", "git reset --hard", ...
    files: int = 0
    size: int = 0
    states: tuple[tuple[str, int], ...] = ()
    outside: bool = False           # some of it lies outside the project
    diff: str = ""                  # a short diff of what a git command would discard
    sample: tuple[str, ...] = ()    # a few of the files, for the person

    @property
    def lost(self) -> bool:
        """Something here cannot be brought back by git or a build."""
        return self.outside or any(state not in _RECOVERABLE and count for state, count in self.states)

    @property
    def level(self) -> str:
        return "destructive" if self.lost else "moderate"

    def describe(self) -> str:
        head = f"`{self.what}` {self.operation}" if self.what.startswith("git ") else f"{self.operation} `{self.what}`"
        if not self.files and not self.outside:
            return f"{head}: nothing there to lose"
        parts = ", ".join(f"{count:,} {_STATE_WORDS[state]}" for state, count in self.states if count)
        where = " (outside the project)" if self.outside else ""
        states = dict(self.states)
        back = "cannot all be brought back" if self.lost else (
            "git can bring them back" if states.get("tracked") and not states.get("build")
            else "a build can remake them" if not states.get("tracked") else "git or a build can remake them")
        return (f"{head}{where}: {self.files:,} file{'s' if self.files != 1 else ''} "
                f"({_size(self.size)}; {parts}): {back}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"what": self.what, "operation": self.operation, "files": self.files, "size": self.size,
                               "states": dict(self.states), "level": self.level}
        if self.outside:
            out["outside"] = True
        if self.diff:
            out["diff"] = self.diff
        if self.sample:
            out["sample"] = list(self.sample)
        return out


@dataclass(frozen=True)
class Glob:
    pattern: str
    count: int
    sample: tuple[str, ...] = ()

    def describe(self) -> str:
        shown = ", ".join(self.sample) + (", ..." if self.count > len(self.sample) else "")
        return f"`{self.pattern}` matches {self.count:,} file{'s' if self.count != 1 else ''}" + (
            f": {shown}" if shown else "")


@dataclass(frozen=True)
class Secret:
    """A secret the scanner found in a file the call reads, named and redacted."""

    path: str
    kind: str
    line: int

    def describe(self) -> str:
        return f"{self.kind} in `{self.path}` (line {self.line})"


@dataclass(frozen=True)
class Member:
    """A path an archive or a patch would write, where it lands, and what it is."""

    source: str
    name: str
    lands: str
    outside: bool = False
    link: str = ""

    def describe(self) -> str:
        where = " (outside the project)" if self.outside else ""
        return f"`{self.name}` from `{self.source}` lands at `{self.lands}`{where}" + (
            f", a link to `{self.link}`" if self.link else "")


@dataclass(frozen=True)
class Script:
    """A project script a call runs by name (``npm run build``) and the command lines the project's
    file gives it (``preNAME``, ``NAME``, ``postNAME``)."""

    runner: str
    name: str
    lines: tuple[str, ...]

    def describe(self) -> str:
        return f"`{self.runner} {self.name}` runs " + "; then ".join(f"`{line}`" for line in self.lines)


@dataclass
class Facts:
    """Everything gathered for one call. ``available`` False: this machine cannot see the agent's
    files (relay, forwarded socket); ``complete`` False: gathering did not finish (time budget,
    an error) and nothing path-dependent is proven. ``problems`` are reasons a part is not proven
    (each becomes a gap of the verdict); the rest is what the person is shown."""

    available: bool = True
    complete: bool = True
    why: str = ""
    project: str | None = None
    problems: list[str] = field(default_factory=list)
    losses: list[Loss] = field(default_factory=list)
    globs: list[Glob] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    secrets: list[Secret] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)   # deletes and writes outside the project, not looked at
    scanned: int = 0                # files whose content was scanned for secrets and found free of them
    requirements: list[str] = field(default_factory=list)   # requirements files (as written) listing only names
    scripts: list[Script] = field(default_factory=list)     # named project scripts and what they run
    graded_deletes: set[str] = field(default_factory=set)   # resolved delete targets whose loss is in ``losses``
    graded_git: set[str] = field(default_factory=set)       # git subcommands graded by what they discard
    git_folders: set[str] = field(default_factory=set)      # folders git runs in that hold no repository of
    #                                                         their own below the project's root (issue 30)
    elapsed_ms: float = 0.0
    _said: set[str] = field(default_factory=set, repr=False, compare=False)

    @classmethod
    def unavailable(cls, why: str) -> Facts:
        return cls(available=False, complete=False, why=why)

    def problem(self, text: str) -> None:
        if text not in self._said:      # a set: ten thousand members cost no quadratic time
            self._said.add(text)
            self.problems.append(text)

    @property
    def nothing_lost(self) -> bool:
        return not any(loss.lost for loss in self.losses)

    def lines(self) -> list[str]:
        """What this touches, one line each, for the dialog and ``risk --explain``."""
        if not self.available:
            return [f"facts unavailable: {self.why}"]
        out = [loss.describe() for loss in self.losses]
        out += [glob.describe() for glob in self.globs]
        out += list(self.outside)
        out += [f"link: {link}" for link in self.links]
        out += [f"secret: {secret.describe()}" for secret in self.secrets]
        told = [member for member in self.members if member.outside or member.link]
        out += [f"archive or patch writes {member.describe()}" for member in told[:MAX_MEMBER_LINES]]
        if len(told) > MAX_MEMBER_LINES:
            out.append(f"archive or patch writes {len(told) - MAX_MEMBER_LINES:,} more links or paths outside")
        if self.scanned:
            out.append(f"read {self.scanned:,} file{'s' if self.scanned != 1 else ''} scanned: no secret found")
        out += [f"requirements file `{path}` lists only package names" for path in self.requirements]
        out += [script.describe() for script in self.scripts]
        out += [f"not proven: {problem}" for problem in self.problems]
        if not self.complete and self.why:
            out.append(f"facts incomplete: {self.why}")
        return out

    def summary(self) -> str:
        """One calm line: what is lost, or that nothing is."""
        if not self.available:
            return f"Facts unavailable: {self.why}."
        lost = [loss for loss in self.losses if loss.lost]
        if lost:
            files = sum(loss.files for loss in lost)
            return f"Loses {files:,} file{'s' if files != 1 else ''} ({_size(sum(loss.size for loss in lost))}) " \
                   "that git or a build cannot bring back."
        if self.secrets:
            return f"Reads {len(self.secrets)} secret{'s' if len(self.secrets) != 1 else ''}."
        if not self.complete or self.problems:
            return "Not everything it touches could be checked."
        if self.outside:
            return "It changes files outside the project, judged by where they are."
        return "Nothing is lost: everything it changes can be brought back."

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"available": self.available, "complete": self.complete}
        if self.why:
            out["why"] = self.why
        if self.problems:
            out["problems"] = list(self.problems)
        if self.losses:
            out["losses"] = [loss.to_json() for loss in self.losses]
        if self.globs:
            out["globs"] = [{"pattern": g.pattern, "count": g.count, "sample": list(g.sample)} for g in self.globs]
        if self.links:
            out["links"] = list(self.links)
        if self.secrets:
            out["secrets"] = [{"path": s.path, "kind": s.kind, "line": s.line} for s in self.secrets]
        if self.members:
            out["members"] = [{"source": m.source, "name": m.name, "lands": m.lands, "outside": m.outside,
                               "link": m.link} for m in self.members[:50]]
        if self.outside:
            out["outside"] = list(self.outside)
        if self.scanned:
            out["scanned"] = self.scanned
        if self.requirements:
            out["requirements"] = list(self.requirements)
        if self.scripts:
            out["scripts"] = [{"runner": s.runner, "name": s.name, "lines": list(s.lines)} for s in self.scripts]
        return out


def count_states(states: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple((state, states[state]) for state in GIT_STATES if states.get(state))


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1000
    return f"{size} bytes"
