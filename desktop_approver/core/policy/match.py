"""The policy and how it answers a call: every rule against every part, the strongest action wins.

A :class:`Policy` is an immutable list of :class:`~.rules.Rule`; :meth:`Policy.evaluate` answers
``allow`` / ``ask`` / ``deny`` / ``block`` or ``None`` (no rule: ask the person), and
:meth:`Policy.explain` says why, part by part. A call is first cut into parts (:mod:`.parts`), and
every rule is checked against every part, so "allowed" always means "every part allowed" and one
blocked part blocks the whole call.

Two directions of caution run through the matching: an ``allow`` rule must be *sure* (every
path inside the zone, lexically and after resolving symlinks; no path it cannot resolve), while
``ask`` / ``deny`` / ``block`` rules match whatever *might* touch their zone (a glob that could
expand into it, ``rm -rf .`` above it, a tool whose operation is unknown).

An ``allow`` rule whose conditions all hold still answers only what an automatic answer may cover
(:mod:`.automatic`): a call read as safe or moderate and fully understood, or a call of a tool the
catalog does not know when the rule names that tool exactly (the person's declaration). Only a
rule whose ``risk`` names ``destructive`` accepts more. The explain view says which rule was
withheld and why, and which one answers by declaration.

Rules at any size: the rules are indexed (:class:`_Index`) by the tools they name (as written for
``allow`` rules, case folded for the others) and, for command patterns whose first word is literal,
by that program. Deciding a call (``explain(call, candidates_only=True)``: the broker's way) checks
only the rules that could match it, so a call costs about the same with 50,000 rules as with 10
(BENCHMARKS.md); the verdict is the same as checking every rule, which the explain view still does.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from .automatic import MILD_LEVELS, only_the_tool_is_unknown, unproven
from .explain import Explanation, PartExplanation, RuleCheck
from .globs import _has_glob
from .parts import _components, _Context, _normalise, _Part, _Touch
from .rules import _STRENGTH, PolicyCall, PolicyVerdict, Rule, _show


class Policy:
    """An immutable, validated rule list; build it with :meth:`load`, :meth:`parse` or :meth:`empty`."""

    def __init__(self, rules: Iterable[Rule] = (), source: str | os.PathLike[str] | None = None) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.source = str(source) if source is not None else ""
        self._index: _Index | None = None

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"Policy({len(self.rules)} rules from {self.source or '<memory>'})"

    @classmethod
    def empty(cls, source: str | os.PathLike[str] | None = None) -> Policy:
        return cls((), source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Policy:
        """Read and validate a policy file; any problem raises :class:`PolicyError` with a line."""
        policy, catalog = cls.read(path)
        # The person's [catalog] table extends what the risk reader understands (issue 19).
        from ..calls.catalog import use_catalog

        use_catalog(catalog)
        return policy

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> tuple[Policy, Any]:
        """The policy file's rules (indexed) and its ``[catalog]`` table, not yet in use: what may
        run in a thread (:class:`~.watch.PolicyWatcher` reloads so), the catalog applied after."""
        path = Path(path)
        from .load import read_policy_file  # the file model (pydantic) loads with the first rules file

        text = read_policy_file(path)
        policy = cls.parse(text, path)
        policy.index  # noqa: B018 - built here, where the reading is, not by the first call decided
        return policy, tomllib.loads(text).get("catalog")

    @classmethod
    def parse(cls, text: str, source: str | os.PathLike[str] | None = None) -> Policy:
        from .load import read_rules

        return cls(read_rules(text, source), source)

    def evaluate(self, call: PolicyCall, *, now: datetime | None = None) -> PolicyVerdict | None:
        """The rule's answer for ``call``, or ``None`` when no rule decides (ask the person)."""
        return self.explain(call, now=now, candidates_only=True).verdict

    @property
    def index(self) -> _Index:
        """The rules by tool and program (built once: a loaded policy builds it off the event loop)."""
        if self._index is None:
            self._index = _Index(self.rules)
        return self._index

    def explain(self, call: PolicyCall, *, now: datetime | None = None,
                candidates_only: bool = False) -> Explanation:
        """Why the policy answers ``call`` as it does, part by part. ``candidates_only`` (deciding):
        only the rules the index says could match are checked, and listed; the verdict is the same."""
        now = now or datetime.now(UTC)
        context = _Context(call)
        gates: dict[int, tuple[str, str]] = {}  # per allow rule: the call is the same in every part
        explained = []
        by_tool = self.index.for_tool(call.tool) if candidates_only else None
        for part in context.parts:
            checks = []
            numbers = range(len(self.rules)) if by_tool is None else by_tool.for_part(part)
            for number in numbers:
                candidate = self.rules[number]
                why = _mismatch(candidate, call, part, context, now)
                if why is not None or candidate.action != "allow":
                    checks.append(RuleCheck(candidate, why is None, why or ""))
                    continue
                if number not in gates:
                    gates[number] = _allow_gate(candidate, call)
                withheld, declared = gates[number]
                checks.append(RuleCheck(candidate, not withheld, withheld, declared=declared, withheld=bool(withheld)))
            rule = _decisive([check.rule for check in checks if check.matched])
            declared = next((c.declared for c in checks if c.rule is rule and c.declared), "")
            explained.append(PartExplanation(part.text, rule.action if rule else None, rule, tuple(checks), declared))
        return Explanation(call, _verdict(explained), tuple(explained), self.source)


_GLOB = frozenset("*?[")


def _literal(pattern: str) -> bool:
    return not _GLOB.intersection(pattern)


def _program_of(pattern: str) -> str | None:
    """The program every command a pattern matches starts with (its first word), or None when the
    pattern's first word is a glob (``*``, ``np?``): then it may match any program."""
    first = pattern.split(" ", 1)[0]
    return first if first and _literal(first) else None


class _Bucket:
    """Rules (by number) of one tool key: those any program may match, and those keyed by program."""

    __slots__ = ("any_program", "by_program")

    def __init__(self) -> None:
        self.any_program: list[int] = []
        self.by_program: dict[str, list[int]] = {}

    def add(self, number: int, rule: Rule) -> None:
        programs = [_program_of(pattern) for pattern in rule.commands] if rule.commands else [None]
        if None in programs:
            self.any_program.append(number)
            return
        for program in dict.fromkeys(programs):
            assert program is not None
            self.by_program.setdefault(program, []).append(number)


class _ToolCandidates:
    """The buckets a call's tool reaches: :meth:`for_part` gives the rule numbers for one part, in order."""

    __slots__ = ("buckets",)

    def __init__(self, buckets: list[_Bucket]) -> None:
        self.buckets = buckets

    def for_part(self, part: _Part) -> list[int]:
        program = part.command.split(" ", 1)[0] if part.command else None
        found: list[int] = []
        for bucket in self.buckets:
            found += bucket.any_program
            if program is not None:
                found += bucket.by_program.get(program, ())
        return sorted(set(found))


class _Index:
    """The rules by the tool they name and, under it, by the program of their command patterns.

    A rule can match a call only when its tool pattern matches the call's tool (:func:`_tool_matches`:
    exactly as written for ``allow`` rules, case folded for the others) and, when it has command
    patterns, when the part's command matches one of them: a pattern whose first word is literal
    matches only commands with that first word. Rules naming a tool by a glob, or no tool, are
    candidates for every tool (and checked in full). The index only narrows; :func:`_mismatch` decides.
    """

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.any_tool = _Bucket()
        self.exact: dict[str, _Bucket] = {}     # allow rules: the tool as written
        self.folded: dict[str, _Bucket] = {}    # ask, deny, block: the tool case folded
        for number, rule in enumerate(rules):
            if rule.tools is None or not all(_literal(pattern) for pattern in rule.tools):
                self.any_tool.add(number, rule)
                continue
            table = self.exact if rule.action == "allow" else self.folded
            for tool in dict.fromkeys(pattern if rule.action == "allow" else pattern.casefold()
                                      for pattern in rule.tools):
                table.setdefault(tool, _Bucket()).add(number, rule)

    def for_tool(self, tool: str) -> _ToolCandidates:
        buckets = [self.any_tool]
        for bucket in (self.exact.get(tool), self.folded.get(tool.casefold())):
            if bucket is not None:
                buckets.append(bucket)
        return _ToolCandidates(buckets)


def _allow_gate(rule: Rule, call: PolicyCall) -> tuple[str, str]:
    """For an allow rule whose conditions hold: why it may still not answer the call ("" when it
    may), and the person's declaration it answers by ("" when the call needed none)."""
    if rule.risks is not None and "destructive" in rule.risks:
        return "", ""  # the person accepted destructive calls in so many words: the worst case is covered
    why = unproven(call.risk, call.understood, call.gaps)
    if why is None:
        return "", ""
    if call.risk in MILD_LEVELS and only_the_tool_is_unknown(call.tool, call.understood, call.gaps) \
            and any(pattern == call.tool and not _has_glob(pattern) for pattern in rule.tools or ()):
        return "", (f"the catalog does not know tool `{call.tool}`; the rule names it exactly, "
                    "so it answers by your declaration")
    if call.risk == "destructive":
        return f'{why}: an allow rule covers a destructive call only with risk = "destructive"', ""
    if call.risk not in MILD_LEVELS:
        return f"{why}: an allow rule answers only calls read as safe or moderate", ""
    if only_the_tool_is_unknown(call.tool, call.understood, call.gaps):
        return f"{why}: a tool the catalog does not know is allowed only by a rule naming it exactly", ""
    return f"{why}: an allow rule answers only fully understood calls", ""


def _decisive(matched: list[Rule]) -> Rule | None:
    """The strongest action wins; within it the most specific rule, then the earliest."""
    if not matched:
        return None
    return max(matched, key=lambda r: (_STRENGTH[r.action], r.specificity(), -r.index))


def _verdict(parts: list[PartExplanation]) -> PolicyVerdict | None:
    for action in ("block", "deny", "ask"):
        deciding = [(n, p, p.rule) for n, p in enumerate(parts, 1) if p.action == action and p.rule is not None]
        if deciding:
            number, part, rule = max(deciding, key=lambda npr: (npr[2].specificity(), -npr[2].index, -npr[0]))
            reason = rule.note or rule.summary()
            if len(parts) > 1:
                reason += f" (part {number}: {part.text})"
            return PolicyVerdict(action, rule, reason, tuple(r for _, _, r in deciding))
    if not parts or any(p.action != "allow" for p in parts):
        return None
    rules = tuple(dict.fromkeys(p.rule for p in parts if p.rule))
    reason = "; ".join(rule.note or rule.summary() for rule in rules)
    declared = next((p.declared for p in parts if p.declared), "")
    if declared:
        reason += f" ({declared})"
    return PolicyVerdict("allow", rules[0], reason, rules)


def _mismatch(rule: Rule, call: PolicyCall, part: _Part, context: _Context, now: datetime) -> str | None:
    """Why ``rule`` does not apply to this part of ``call``; ``None`` when it does."""
    if rule.expired(now):
        return f"expired {rule.expires.isoformat() if rule.expires else ''}"
    if rule.tools is not None and not _tool_matches(rule, call.tool):
        return f"tool {call.tool!r} is not {_show(rule.tools)}"
    if rule.agents is not None and not (call.agent and any(fnmatchcase(call.agent, p) for p in rule.agents)):
        return f"agent {call.agent!r} is not {_show(rule.agents)}"
    if rule.cwds is not None and not _cwd_matches(rule.cwds, context.base):
        return f"working directory {call.cwd!r} is not in {_show(rule.cwds)}"
    if rule.risks is not None and call.risk not in rule.risks:
        return f"risk {call.risk or 'unknown'} is not {_show(rule.risks)}"
    if rule.commands is not None:
        why = _command_mismatch(rule, part)
        if why:
            return why
    if rule.paths is not None or rule.operations is not None:
        return _touch_mismatch(rule, part, context)
    return None


def _tool_matches(rule: Rule, tool: str) -> bool:
    """An ``allow`` rule names tools exactly as written, like session memory; ``ask``, ``deny`` and
    ``block`` rules in any case, as the reading of a call does (``bash`` is read as ``Bash``): a
    change of case never slips past a restriction, and never widens a permission."""
    assert rule.tools is not None
    if rule.action == "allow":
        return any(fnmatchcase(tool, pattern) for pattern in rule.tools)
    folded = tool.casefold()
    return any(fnmatchcase(folded, pattern.casefold()) for pattern in rule.tools)


def _cwd_matches(patterns: tuple[str, ...], base: str | None) -> bool:
    """Absolute (or ``~``) patterns match the whole directory; relative ones its last names."""
    if base is None:
        return False
    cwd = _components(base)
    return any(_glob_parts(cwd, _components(_normalise(p, "/**")), loose=False) for p in patterns)


def _command_mismatch(rule: Rule, part: _Part) -> str | None:
    if part.command is None:
        return "not a shell command"
    if not part.parsed and not rule.restrictive:
        return "the command could not be parsed, so no command pattern can allow it"
    if any(_command_matches(part.command, p) for p in rule.commands or ()):
        return None
    return f"command {part.command!r} does not match {_show(rule.commands or ())}"


def _command_matches(command: str, pattern: str) -> bool:
    return fnmatchcase(command, pattern) or (pattern.endswith(" *") and command == pattern[:-2])


def _touch_mismatch(rule: Rule, part: _Part, context: _Context) -> str | None:
    if not part.touches:
        return "touches no file"
    results = [_touch_fits(rule, touch, context) for touch in part.touches]
    if rule.restrictive:
        return None if any(why is None for why in results) else next(why for why in results if why)
    return next((why for why in results if why), None)


def _touch_fits(rule: Rule, touch: _Touch, context: _Context) -> str | None:
    """For an allow rule: the touch is surely inside; for the others: it may be."""
    loose = rule.restrictive
    if rule.operations is not None:
        if touch.operation is None and not loose:
            return "the tool's operation is unknown"
        if touch.operation is not None and touch.operation not in rule.operations:
            return f"operation {touch.operation} is not {_show(rule.operations)}"
    if rule.paths is None:
        return None
    if touch.path is None:
        return "the call names no path"
    if not loose and touch.doubt:
        return touch.doubt
    deletes = touch.operation in ("delete", None)
    for pattern in rule.paths:
        lexical_zone, real_zone = context.zone(pattern)
        if loose:
            candidates = [(p, z) for p in touch.lexical + ((touch.real,) if touch.real else ())
                          for z in (lexical_zone, real_zone)]
            if any(_glob_parts(p, z, loose=True) or (deletes and _contains(p, z)) for p, z in candidates):
                return None
        elif all(_glob_parts(p, lexical_zone, loose=False) for p in touch.lexical) and (
                touch.real is None or _glob_parts(touch.real, real_zone, loose=False)):
            return None
    if not loose and touch.real is not None and all(
            any(_glob_parts(p, context.zone(z)[0], loose=False) for z in rule.paths) for p in touch.lexical):
        return f"{touch.path} resolves to /{'/'.join(touch.real)}, outside {_show(rule.paths)}"
    return f"{touch.path} is not in {_show(rule.paths)}"


def _component_fits(name: str, pattern: str, loose: bool) -> bool:
    if fnmatchcase(name, pattern):
        return True
    # A shell glob in the path (rm -rf .gi*) may expand into the pattern's name.
    return loose and _has_glob(name) and (_has_glob(pattern) or fnmatchcase(pattern, name))


def _glob_parts(path: tuple[str, ...], pattern: tuple[str, ...], loose: bool) -> bool:
    """Component-wise glob match; ``**`` matches any number of components, none included."""
    if not pattern:
        return not path
    if pattern[0] == "**":
        return any(_glob_parts(path[i:], pattern[1:], loose) for i in range(len(path) + 1))
    return bool(path) and _component_fits(path[0], pattern[0], loose) and _glob_parts(path[1:], pattern[1:], loose)


def _contains(path: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether deleting ``path`` (recursively) could delete something in the zone: it lies above it."""
    for depth, name in enumerate(path):
        if depth >= len(pattern):
            return False
        if pattern[depth] == "**":
            return True
        if not _component_fits(name, pattern[depth], loose=True):
            return False
    return True

