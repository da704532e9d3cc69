"""A call judged with the facts of what it touches (issue 32): the blocking entry point the broker
runs in an executor, and the cached test of whether a call needs facts at all."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from ..catalog import catalog_generation
from ..facts import DEFAULT_BUDGET, gather, needs_facts
from ..facts.model import Facts
from ..reading import UNKNOWN_DIR, read_call, unwrap_call
from .assessment import assess, assess_reading, project_of
from .findings import MODERATE, Findings, RiskAssessment

__all__ = ["assess_touching", "needs_facts_of"]


def needs_facts_of(tool: str, args: Mapping[str, Any] | Any, canonical_args: str | None = None) -> bool:
    """Whether judging this call depends on this machine's files (see :func:`..facts.needs_facts`);
    cached by the call's canonical JSON, as the reading's verdicts are."""
    try:
        key = canonical_args if canonical_args is not None else json.dumps(args, sort_keys=True)
    except (TypeError, ValueError):
        return True
    return _needs_facts(tool, key, catalog_generation())


@lru_cache(maxsize=2048)
def _needs_facts(tool: str, canonical_args: str, _catalog: int) -> bool:
    tool, args = unwrap_call(tool, json.loads(canonical_args))
    return needs_facts(read_call(tool, args, None))


def assess_touching(tool: str, args: Mapping[str, Any] | Any, *, cwd: str | None,
                    hints: Mapping[str, Any] | None = None, unavailable: str | None = None,
                    budget: float = DEFAULT_BUDGET) -> tuple[RiskAssessment, Facts | None]:
    """The verdict on a call with the facts of what it touches, and those facts (None: it names
    nothing on the file system). Blocking: it stats, walks, scans and runs git, so the app calls
    it in an executor. ``unavailable`` says why this machine cannot see the agent's files (then
    every path-dependent part is not understood)."""
    tool, args = unwrap_call(tool, args)
    reading = read_call(tool, args, cwd)
    if not needs_facts(reading):
        return assess(tool, args, cwd=cwd, hints=hints), None
    if unavailable is not None:
        facts = Facts.unavailable(unavailable)
    elif not cwd or not os.path.isabs(cwd) or reading.cwd == UNKNOWN_DIR:
        facts = Facts.unavailable("the agent's working directory is not known")
    elif not os.path.isdir(cwd):
        facts = Facts.unavailable("the agent's working directory is not on this machine")
    else:
        facts = gather(reading, project_of(cwd), budget=budget)
    findings = Findings()
    if not isinstance(args, Mapping):
        findings.add(MODERATE, "arguments are not an object")
    return assess_reading(reading, hints, workspace=cwd, findings=findings, facts=facts), facts
