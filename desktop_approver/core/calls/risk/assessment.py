"""One call in, one verdict out: the cached entry points that put the readers together."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..catalog import catalog, catalog_generation
from ..reading import UNKNOWN_DIR, CallReading, read_call, unwrap_call
from .findings import MODERATE, Findings, RiskAssessment
from .hidden import judge_hidden
from .programs import command_findings
from .tools import hint_findings, remote_server_findings, request_findings, tool_findings
from .understanding import understand
from .unread import unread_findings
from .variables import variable_gaps

if TYPE_CHECKING:
    from ..facts.model import Facts


def assess_command(command: str | list[str], cwd: str | None = None) -> RiskAssessment:
    """The risk of a shell command line (a string, or an argv list run without a shell)."""
    return assess("Bash", {"command": command}, cwd=cwd)


def assess(tool: str, args: Mapping[str, Any] | Any, *, cwd: str | None = None,
           hints: Mapping[str, Any] | None = None, canonical_args: str | None = None) -> RiskAssessment:
    """Classify one tool call. Never raises on odd input: anything not understood is moderate.

    Agents repeat calls (that is what session memory is for), so answers are cached by the call's
    canonical JSON (``canonical_args`` when the caller has it already), the home, the temp
    directory and the catalog in use; it depends on nothing else (no file is read).
    """
    try:
        if canonical_args is None:
            canonical_args = _canonical(args)
        hints_key = _canonical(dict(hints)) if hints else ""
    except (TypeError, ValueError):
        return _assess(tool, args, cwd, hints)
    if len(canonical_args) > MAX_CACHED_ARGS:  # read, never kept: 2,048 of them could hold gigabytes
        return _assess(tool, args, cwd, hints)
    return _assess_cached(tool, canonical_args, cwd, hints_key, os.environ.get("HOME"), os.environ.get("TMPDIR", ""),
                          catalog_generation())


MAX_CACHED_ARGS = 64 * 1024
"""Characters of a call's arguments beyond which its reading is not cached (requests may be 1 MiB)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=2048)
def _assess_cached(tool: str, canonical_args: str, cwd: str | None, hints_key: str, _home: str | None,
                   _tmp: str, _catalog: int) -> RiskAssessment:
    return _assess(tool, json.loads(canonical_args), cwd, json.loads(hints_key) if hints_key else None)


def _assess(tool: str, args: Mapping[str, Any] | Any, cwd: str | None,
            hints: Mapping[str, Any] | None) -> RiskAssessment:
    tool, args = unwrap_call(tool, args)
    reading = read_call(tool, args, cwd)
    findings = Findings()
    if not isinstance(args, Mapping):
        findings.add(MODERATE, "arguments are not an object")
    return assess_reading(reading, hints, workspace=cwd, findings=findings)


def project_of(directory: str | None) -> str | None:
    """The project a call runs in: its working directory, unless that is the root, the home or a
    system directory (the catalog's ``[project] not_projects``), where nothing is "inside"."""
    if not directory:
        return None
    here = os.path.normpath(os.path.expanduser(directory))
    return None if here in _not_projects(os.path.expanduser("~"), catalog_generation()) else directory


@lru_cache(maxsize=8)
def _not_projects(home: str, _catalog: int) -> frozenset[str]:
    return frozenset(os.path.normpath(home if place == "~" else place) for place in catalog().not_projects)


def assess_reading(reading: CallReading, hints: Mapping[str, Any] | None = None, *, workspace: str | None = None,
                   findings: Findings | None = None, facts: Facts | None = None) -> RiskAssessment:
    """Judge a call already read (``workspace`` is the agent's working directory); with the
    ``facts`` of its paths (issue 32), judged by what it would touch (:mod:`.consequences`)."""
    findings = findings if findings is not None else Findings()
    workspace = project_of(workspace or (reading.cwd if reading.cwd and os.path.isabs(reading.cwd)
                                         and reading.cwd != UNKNOWN_DIR else None))
    if reading.family == "shell":
        if not reading.commands:
            findings.add(MODERATE, "a shell tool without a command argument")
        for run in reading.commands:
            command_findings(run, reading.cwd, workspace, findings)
        remote_server_findings(reading, findings)
        request_findings(reading, findings)
    else:
        tool_findings(reading, workspace, findings)
    unread_findings(reading, workspace, findings)
    judge_hidden(reading.hidden, reading, findings)
    gaps = understand(reading, workspace, findings, judge_command=command_findings)
    gaps = (*gaps, *variable_gaps(reading))
    if facts is not None:
        from .consequences import judge_facts
        gaps = judge_facts(reading, workspace, findings, facts, gaps,
                           judge_line=lambda line: assess("Bash", {"command": line}, cwd=reading.cwd))
    notes = hint_findings(dict(hints or {}), findings)
    return RiskAssessment(findings.level, findings.reasons(), notes, understood=not gaps, gaps=gaps)


