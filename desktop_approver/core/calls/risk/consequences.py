"""The verdict over what a call would really touch (:mod:`..facts`): loss, not names; secrets by
content; links, globs, archive and patch members judged as the files they are.

Applied last, by :func:`.assessment.assess_reading` when it is given facts:

- facts unavailable (an agent elsewhere) or incomplete (over the time budget, an error): every
  path-dependent call is not understood (a gap), never guessed;
- each problem the gathering met (a link out of the project, a hard link written, a read outside
  the project or too large to scan, a glob too wide) is a gap: not proof, the person's;
- a secret found in what it reads is destructive;
- a delete or overwrite is graded by its loss: every file recoverable from git or regenerable
  build output is moderate, anything else is destructive. The reader's own grading *by name* of
  the same deletes ("deletes recursively") and git discards ("discards uncommitted changes") gives
  way to it, and only where every such path or command was graded (the reasons it replaces are
  listed below, and a test keeps them the reader's);
- every archive or patch member is judged as a write of the place it lands (a git hook, an
  agent's settings file, a file outside the project), and one in the project is understood only
  where it is proven not to run later (:mod:`.inert`: ``conftest.py`` in an archive is the person's);
- a requirements file read whole that lists package names only closes the reader's gap for it;
- a project script run by name is read like the command lines ``package.json`` gives it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..catalog import catalog
from ..facts.model import Facts, Loss, Script
from ..reading import CallReading, PathUse
from .findings import DESTRUCTIVE, MODERATE, Findings
from .inert import unproven_write
from .places import judge_use

__all__ = ["BY_NAME_DELETES", "BY_NAME_GIT", "judge_facts"]

_PLAIN_GLOB = re.compile(r"[\w./*?\[\]-]+\Z")
"""A glob with nothing else a shell expands (no variable, brace, tilde or command): its matches,
listed by the facts, are exactly what the call gets, so the reader's gap for it is closed."""
BY_NAME_DELETES = ("deletes recursively", "deletes files in the working directory",
                   "deletes a cache directory in the working directory (regenerated)")
"""The reader's grading of a delete inside the project by its name; facts grade it by loss instead."""
BY_NAME_GIT = {"reset": ("discards uncommitted changes (reset --hard)",),
               "checkout": ("discards uncommitted changes",), "restore": ("discards uncommitted changes",),
               "clean": ("deletes untracked files (git clean)",), "stash": ("throws away stashed changes",)}
"""The reader's grading of a git discard by its words (prefixes); facts grade it by what git would discard."""


LineJudge = Callable[[str], Any]
"""How a command line of the project's (a script's) is read: the full assessment of it as a shell
call, given by :mod:`.assessment` (whose reader this module sits below)."""


def judge_facts(reading: CallReading, workspace: str | None, findings: Findings, facts: Facts,
                reader_gaps: tuple[str, ...] = (), *, judge_line: LineJudge | None = None) -> tuple[str, ...]:
    """Add what the facts show to ``findings`` (in place); return the gaps left: the reader's
    (less a plain glob the facts expanded whole, a requirements file of names, a script whose lines
    ``judge_line`` understands) and the facts' own."""
    if not facts.available:
        return (*reader_gaps, f"facts about its paths are unavailable: {facts.why}")
    expanded = {glob.pattern for glob in facts.globs if facts.complete and _PLAIN_GLOB.match(glob.pattern)}
    gaps: list[str] = [gap for gap in reader_gaps if not any(gap.startswith(f"path `{p}` ") for p in expanded)]
    # a requirements file read whole and listing only package names is what the same names on the
    # command line would be (pip install -r requirements.txt)
    listed = tuple(f"what the file `{path}` of " for path in facts.requirements) if facts.complete else ()
    gaps = [gap for gap in gaps if not gap.startswith(listed)] if listed else gaps
    if facts.complete and judge_line is not None:
        for script in facts.scripts:
            gaps = _script(script, judge_line, findings, gaps)
    if facts.complete:
        # git run in a folder with no repository of its own below the project's root finds the project's
        gaps = [gap for gap in gaps if not any(gap.startswith("the repository `") and gap.endswith(
            f" finds from `{folder}` (not the project's root)") for folder in facts.git_folders)]
    else:
        gaps.append(f"facts about its paths are incomplete: {facts.why}")
    gaps += facts.problems
    for secret in facts.secrets:
        findings.add(DESTRUCTIVE, f"reads a secret ({secret.kind} in {secret.path})")
    for member in facts.members:
        if member.outside:
            findings.add(DESTRUCTIVE, f"an archive or patch writes outside the project ({member.name})")
        if member.lands:
            lands = member.lands if member.lands.startswith("/") or not facts.project else \
                f"{facts.project}/{member.lands}"
            judge_use(PathUse(member.name, lands, "write", via=member.source), workspace, findings)
            why = unproven_write(lands, facts.project, catalog()) if facts.project and not member.outside else None
            if why is not None:
                gaps.append(f"`{member.source}` writes a file that may run later (`{member.name}`: {why})")
    deletes = [use.resolved for use in reading.paths if use.operation == "delete"]
    if facts.complete and deletes and all(_graded(path, facts) for path in deletes):
        findings.items[:] = [(level, reason) for level, reason in findings.items if reason not in BY_NAME_DELETES]
    if facts.complete:
        for sub in facts.graded_git:
            prefixes = BY_NAME_GIT.get(sub, ())
            findings.items[:] = [(level, reason) for level, reason in findings.items
                                 if not reason.startswith(prefixes) or not _only_graded(reading, sub, facts)]
    lost = [loss for loss in facts.losses if loss.lost]
    kept = [loss for loss in facts.losses if not loss.lost]
    if lost:
        findings.add(DESTRUCTIVE, f"{_verbs(lost)} what git or a build cannot bring back: "
                     + _named([loss.what for loss in lost]))
    if kept:
        findings.add(MODERATE, f"{_verbs(kept)} only what git or a build can bring back: "
                     + _named([loss.what for loss in kept]))
    return tuple(gaps)


def _script(script: Script, judge_line: LineJudge, findings: Findings, gaps: list[str]) -> list[str]:
    """A project script run by name is read like the command lines its file gives it: understood
    (the reader's gap for its name closed) when each of them is, its findings the call's."""
    missing: list[str] = []
    for line in script.lines:
        found = judge_line(line)
        for reason in found.reasons:
            findings.add(found.level, reason)
        missing += [f"script `{script.name}` of `{script.runner}`: {gap}" for gap in found.gaps]
    if missing:
        return [*gaps, *missing]
    return [gap for gap in gaps if not gap.startswith(f"target `{script.name}` of `{script.runner}` ")]


_VERBS = {"delete": "deletes", "deletes": "deletes", "overwrite": "overwrites", "discards": "discards",
          "drops stashed changes": "discards"}


def _verbs(losses: list[Loss]) -> str:
    verbs = list(dict.fromkeys(_VERBS.get(loss.operation, "changes") for loss in losses))
    return " or ".join(verbs)


def _named(whats: list[str]) -> str:
    shown = ", ".join(f"`{what}`" for what in whats[:4])
    return shown + (f" and {len(whats) - 4} more" if len(whats) > 4 else "")


def _graded(path: str, facts: Facts) -> bool:
    return path in facts.graded_deletes


def _only_graded(reading: CallReading, sub: str, facts: Facts) -> bool:
    """Every git program of the call with this subcommand was graded (one not graded keeps the
    reader's grading by name for all of them)."""
    runs = [cmd for cmd in reading.programs if cmd.name == "git" and len(cmd.argv) > 1 and cmd.argv[1] == sub]
    return len(runs) == 1 and sub in facts.graded_git

