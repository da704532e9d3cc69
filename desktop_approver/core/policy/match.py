"""The person's policy file: rules that answer a tool call before any dialog is shown.

Qt-free and standard library only. A :class:`Policy` is an immutable list of :class:`Rule` read
from TOML; :meth:`Policy.evaluate` answers ``allow`` / ``ask`` / ``deny`` / ``block`` or ``None``
(no rule: ask the person), and :meth:`Policy.explain` says why, part by part. A call is first cut
into parts (one per simple command of a shell command line, one for any other call), each part
carries the files it touches, and every rule is checked against every part, so "allowed" always
means "every part allowed" and one blocked part blocks the whole call.

Two directions of caution run through the matching: an ``allow`` rule must be *sure* (every
path inside the zone, lexically and after resolving symlinks; no path it cannot resolve), while
``ask`` / ``deny`` / ``block`` rules match whatever *might* touch their zone (a glob that could
expand into it, ``rm -rf .`` above it, a tool whose operation is unknown).

:class:`PolicyWatcher` keeps the policy in force while the person edits the file: it polls the
file's stat cheaply, reloads on change and keeps the last good policy when a reload fails.
:func:`suggest_rule`, :func:`rule_matches` and :func:`append_rule` serve the dialog's
"Always allow...": the rule shown is exactly the rule written.

The file format (also in :data:`POLICY_FORMAT_MD`, for the README) follows.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from ..reading import FAMILIES, ShellRun, command_paths, read_call

log = logging.getLogger(__name__)

POLICY_FORMAT_MD = """\
## The policy file

Rules in `~/.config/desktop-approver/policy.toml` (under `$XDG_CONFIG_HOME` when set; `--policy PATH`
picks another file) answer a tool call before any dialog is shown. Without the file every call is
asked. Edits take effect within a second, no restart needed; a file with an error is refused with
its file, line and reason, and the last good rules stay in force. Validate a file with
`desktop-approver policy check [--file F]`; ask which rule would decide a call with
`desktop-approver policy explain --tool Bash --args '{"command": "npm test && rm -rf build"}'`.

```toml
version = 1

# Shorthand: one action for every call of a tool (name or glob).
[tools]
read_file = "allow"
"mcp__github__*" = "ask"
deploy = "block"

[[rule]]
action = "allow"              # allow | ask | deny | block  (the only required key)
tool = "Bash"
command = "npm run test*"     # shell command pattern(s)
note = "the test suite is harmless"

[[rule]]
action = "allow"
path = "./scratch/**"         # path zone(s), relative to the agent's working directory
operation = "write"

[[rule]]
action = "ask"
path = "./src/**"
operation = ["write", "delete"]

[[rule]]
action = "block"
path = "./.git/**"
operation = "delete"
note = "git history is not to be deleted by an agent"

[[rule]]
action = "deny"
command = ["curl *", "wget *"]
agent = "claude-*"
cwd = "~/work/**"
risk = ["moderate", "destructive"]
expires = 2026-12-01T00:00:00Z
note = "no downloads from work repositories; ask me in chat"
```

### Actions
- `allow`: the call goes ahead without a dialog.
- `ask`: always ask the person, even when an `allow` rule matches too, in approve-all mode, or
  when session memory would have answered.
- `deny`: refuse; `note` is the reason the agent reads.
- `block`: refuse as a policy violation, which the agent's client reports differently from a
  person's deny (`decision.blocked`, or `desktop_approver.Blocked` with `raise_on_block=True`; exit code 3 from `request`). The dialog never shows.

### Conditions
Every key but `action`, `note` and `expires` is a condition; a rule applies when all its
conditions hold (a rule with none applies to every call). A condition is one value or a list of
values, any of which may match. Patterns are case-sensitive.

| key | matches |
| --- | --- |
| `tool` | the tool name; a glob such as `mcp__github__*` |
| `command` | each simple command of a shell call (see below) |
| `path` | the files a call touches (see below) |
| `operation` | `read`, `write` or `delete`: what the call does to those files |
| `agent` | a glob on the agent's name, as the agent *claims* it in `hello` (any process of yours can say any name: use it to sort agents, not to trust them) |
| `cwd` | a path glob on the agent's working directory: `~/work/**`; a relative pattern matches its end (`myproject`). The directory the kernel reports for the connected process (`/proc/<pid>/cwd`), not the one the agent claims; the claim only where the kernel tells nothing (a socket forwarded over SSH) |
| `risk` | the app's own risk assessment: `safe`, `moderate`, `destructive` (never the agent's hints) |

`note` is shown to the person and returned to the agent with a deny or block. `expires` (a TOML
date or date-time; local time unless it has an offset) ends the rule: after it, the rule is
ignored. `version = 1` may head the file.

### Shell commands
A call's shell command is its `command` (or `cmd`, or `argv`) argument. It is cut into simple
commands at `&&`, `||`, `;`, `|`, `&`, newlines and command substitutions `$(...)`, and `sudo`,
`env`, `xargs`, `sh -c` and the like are unwrapped. Each part is matched alone: its words (quotes
removed) joined by single spaces.
- `*` matches any characters, spaces included: `npm run test*` matches `npm run test`,
  `npm run test:unit` and `npm run test -- --watch`, but never a second command: in
  `npm run test && curl x | sh` the parts `curl x` and `sh` must be allowed too.
- A pattern ending in ` *` also matches the bare command: `git log *` matches `git log`.
  (Claude Code's `Bash(npm run test:*)` is `command = "npm run test *"` here.)
- No wildcard means exactly that command. `?` matches one character, `[abc]` one of a set,
  `[*]` a literal star.
- A compound command is allowed only when every part is allowed. One part blocked or denied
  blocks or denies the whole; a part under an `ask` rule, or under no rule, means the person is
  asked. A command that cannot be parsed (an open quote) is never allowed by a `command` pattern.

### Path zones
- A zone is relative to the agent's working directory (`./src/**`) or absolute; `~` is expanded.
  `**` matches any number of directories, none included (`./.git/**` covers `.git` itself); `*`
  matches within one name.
- Paths are normalised before matching (`./scratch/../.git/config` is `.git/config`), and symlinks
  are resolved on this machine: an `allow` needs every path inside its zone both as written and
  as resolved; `ask`, `deny` and `block` apply when either is inside.
- File tools are known by name and arguments (`path`, `file_path`, `filename`, `target_file`,
  `notebook_path`, `paths`; the file headers of an `apply_patch`). Writes: `write_file`, `Write`,
  `create_file`, `edit`, `Edit`, `MultiEdit`, `str_replace_editor`, `apply_patch`...; deletes:
  `delete_file`, `remove`, `rm`...; reads: `read_file`, `Read`, `view`, `cat`.... Other tools
  are classified by the words in their names; a tool whose operation is still unknown can never
  be allowed by a rule with `operation`, and is caught by every `ask`, `deny` or `block` zone.
- In shell commands, `rm`, `rmdir`, `unlink` and `shred` delete their arguments. Deleting a
  directory above a zone (`rm -rf .`) counts as deleting in it. Arguments the shell would expand
  (`$VAR`, `{a,b}`, a glob that could match `..`) and relative paths in a command that also runs
  `cd` are never allowed by a zone; shell globs are caught by the zones they could expand into.
- An `allow` zone needs every path of the call inside it; `ask`, `deny` and `block` need one.

### Precedence
1. `block`, 2. `deny`, 3. `ask`, 4. `allow`: a stronger matching rule always wins over a weaker
   one, wherever it stands in the file.
2. Among rules of the same action, the most specific one is named in the decision: more
   conditions first, then more literal (wildcard-free) patterns, then longer patterns, then the
   earlier rule.
3. When no rule matches, the call goes to session memory and the person.
"""

__doc__ = (__doc__ or "") + "\n" + POLICY_FORMAT_MD

Action = Literal["allow", "ask", "deny", "block"]
ACTIONS: tuple[str, ...] = ("block", "deny", "ask", "allow")          # strongest first
_STRENGTH = {action: len(ACTIONS) - i for i, action in enumerate(ACTIONS)}
OPERATIONS: tuple[str, ...] = ("read", "write", "delete")
RISK_LEVELS: tuple[str, ...] = ("safe", "moderate", "destructive")
RULE_KEYS: tuple[str, ...] = ("action", "tool", "command", "path", "operation", "agent", "cwd", "risk",
                              "note", "expires")
_TOP_KEYS = ("version", "rule", "tools")
SUPPORTED_VERSION = 1

_CD_COMMANDS = frozenset({"cd", "pushd", "popd"})
_EXPANSION_CHARS = ("$", "`", "{")
_UNKNOWN_CWD = "/<unknown working directory>"

# ---------------------------------------------------------------------------------------------
# errors


class PolicyError(ValueError):
    """A policy file (or rule) that cannot be used, with where and why: ``FILE:LINE: reason``."""

    def __init__(self, path: str | os.PathLike[str] | None, line: int | None, reason: str) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = reason
        super().__init__(str(self))

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else "<policy>"
        return f"{where}:{self.line}: {self.reason}" if self.line else f"{where}: {self.reason}"


# ---------------------------------------------------------------------------------------------
# rules


MAX_POLICY_BYTES = 4 * 1024 * 1024
"""A larger policy file is refused with a clear error (the last good rules stay in force)."""


@dataclass(frozen=True)
class PolicyCall:
    """What a rule sees of a call: the tool, its arguments, and who asks from where."""

    tool: str
    args: dict[str, Any]
    agent: str | None = None
    cwd: str | None = None
    risk: str | None = None


@dataclass(frozen=True)
class Rule:
    """One rule, validated and normalised; conditions that are ``None`` are absent."""

    action: str
    index: int = 0
    line: int | None = None
    source: str = ""
    tools: tuple[str, ...] | None = None
    commands: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    operations: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None
    cwds: tuple[str, ...] | None = None
    risks: tuple[str, ...] | None = None
    note: str | None = None
    expires: datetime | None = None
    label: str | None = None          # "tools.deploy" for the [tools] shorthand

    @property
    def id(self) -> str:
        name = self.label or f"rule {self.index}"
        return f"{name} (line {self.line})" if self.line else name

    @property
    def restrictive(self) -> bool:
        return self.action != "allow"

    def summary(self) -> str:
        """``allow tool="Bash" command="npm run test*"``: the action and its conditions."""
        bits = [f"{key}={_show(values)}" for key, values in self._conditions() if values is not None]
        return f"{self.action} " + (" ".join(bits) if bits else "every call")

    def describe(self) -> str:
        """One line naming the rule and where it is written, as the agent and the audit log see it."""
        where = f" of {Path(self.source).name}" if self.source else ""
        return f"{self.id}{where}: {self.summary()}"

    def specificity(self) -> tuple[int, int, int]:
        """How narrow the rule is: (conditions, literal patterns, pattern length); bigger is narrower."""
        conditions = [values for _, values in self._conditions() if values is not None]
        patterns = [p for values in (self.tools, self.commands, self.paths, self.agents, self.cwds)
                    for p in values or ()]
        literal = sum(1 for p in patterns if not _has_glob(p))
        return len(conditions), literal, sum(len(p) for p in patterns)

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now

    def as_dict(self) -> dict[str, Any]:
        """The rule as a TOML table would hold it (the form :func:`append_rule` takes)."""
        out: dict[str, Any] = {"action": self.action}
        for key, values in self._conditions():
            if values is not None:
                out[key] = values[0] if len(values) == 1 else list(values)
        if self.note is not None:
            out["note"] = self.note
        if self.expires is not None:
            out["expires"] = self.expires
        return out

    def _conditions(self) -> list[tuple[str, tuple[str, ...] | None]]:
        return [("tool", self.tools), ("command", self.commands), ("path", self.paths),
                ("operation", self.operations), ("agent", self.agents), ("cwd", self.cwds),
                ("risk", self.risks)]


@dataclass(frozen=True)
class PolicyVerdict:
    """The policy's answer for a call; ``rules`` lists every deciding rule (one per part)."""

    action: str
    rule: Rule
    reason: str
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True)
class RuleCheck:
    """One rule against one part: did it match, and if not, why not."""

    rule: Rule
    matched: bool
    why: str = ""


@dataclass(frozen=True)
class PartExplanation:
    text: str
    action: str | None
    rule: Rule | None
    checks: tuple[RuleCheck, ...]


@dataclass(frozen=True)
class Explanation:
    """Which rule decides a call, which others matched, and why the rest did not, per part."""

    call: PolicyCall
    verdict: PolicyVerdict | None
    parts: tuple[PartExplanation, ...]
    source: str = ""

    @property
    def outcome(self) -> str:
        if self.verdict is not None and self.verdict.action != "ask":
            return self.verdict.action
        return "ask"

    def render(self) -> str:
        """The human-readable form printed by ``desktop-approver policy explain``."""
        args = json.dumps(self.call.args, sort_keys=True)
        lines = [f"call: {self.call.tool} {args if len(args) <= 300 else args[:297] + '...'}"]
        if self.verdict is None:
            uncovered = [str(i) for i, part in enumerate(self.parts, 1) if part.rule is None]
            gap = f" (no rule covers part {', '.join(uncovered)})" if len(self.parts) > 1 else ""
            lines.append(f"decision: ask the person: no rule decides{gap}")
        else:
            lines.append(f"decision: {self.verdict.action} by {self.verdict.rule.describe()}")
            lines.append(f"reason: {self.verdict.reason}")
        for number, part in enumerate(self.parts, 1):
            lines.append(f"part {number}: {part.text}")
            if part.rule is not None:
                lines.append(f"  decided: {part.action} by {part.rule.describe()}")
            else:
                lines.append("  decided: no rule")
            for check in part.checks:
                if check.rule is part.rule:
                    continue
                state = "also matches" if check.matched else f"no: {check.why}"
                lines.append(f"  {check.rule.id}: {state}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        verdict = None
        if self.verdict is not None:
            verdict = {"action": self.verdict.action, "rule": self.verdict.rule.describe(),
                       "reason": self.verdict.reason}
        return {
            "source": self.source, "outcome": self.outcome, "verdict": verdict,
            "call": {"tool": self.call.tool, "args": self.call.args, "agent": self.call.agent,
                     "cwd": self.call.cwd, "risk": self.call.risk},
            "parts": [{"text": part.text, "action": part.action,
                       "rule": part.rule.describe() if part.rule else None,
                       "checks": [{"rule": c.rule.id, "matched": c.matched, "why": c.why} for c in part.checks]}
                      for part in self.parts],
        }


# ---------------------------------------------------------------------------------------------
# the policy


class Policy:
    """An immutable, validated rule list; build it with :meth:`load`, :meth:`parse` or :meth:`empty`."""

    def __init__(self, rules: Iterable[Rule] = (), source: str | os.PathLike[str] | None = None) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.source = str(source) if source is not None else ""

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
        path = Path(path)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_POLICY_BYTES + 1)  # never more: a huge file must not stall the app
                if len(data) > MAX_POLICY_BYTES:
                    raise PolicyError(path, None, _too_big(os.fstat(handle.fileno()).st_size))
            text = data.decode("utf-8")
        except FileNotFoundError:
            raise PolicyError(path, None, "no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(path, None, f"cannot read: {exc}") from None
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text: str, source: str | os.PathLike[str] | None = None) -> Policy:
        if len(text) > MAX_POLICY_BYTES:  # characters: at least as many bytes
            raise PolicyError(source, None, _too_big(len(text.encode("utf-8", "surrogatepass"))))
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            line, reason = _toml_error_location(str(exc), text)
            raise PolicyError(source, line, f"TOML syntax: {reason}") from None
        lines = _Lines(text)
        src = str(source) if source is not None else ""

        for key in data:
            if key not in _TOP_KEYS:
                raise PolicyError(source, lines.top_key(key),
                                  f"unknown key {key!r} (expected {', '.join(_TOP_KEYS)})")
        version = data.get("version", SUPPORTED_VERSION)
        if version != SUPPORTED_VERSION or isinstance(version, bool):
            raise PolicyError(source, lines.top_key("version"),
                              f"unsupported version {version!r} (this app reads version {SUPPORTED_VERSION})")

        rules: list[Rule] = []
        raw_rules = data.get("rule", [])
        if not isinstance(raw_rules, list):
            raise PolicyError(source, lines.top_key("rule"), "'rule' must be written as [[rule]] tables")
        for number, raw in enumerate(raw_rules, 1):
            line = lines.rule_header(number)
            if not isinstance(raw, dict):
                raise PolicyError(source, line, f"rule {number} is not a table")
            try:
                rules.append(_build_rule(raw, index=number, line=line, source=src))
            except _BadRule as exc:
                raise PolicyError(source, lines.rule_key(number, exc.key) or line,
                                  f"rule {number}: {exc.reason}") from None

        shorthand = data.get("tools", {})
        if not isinstance(shorthand, dict):
            raise PolicyError(source, lines.top_key("tools"), "'tools' must be a [tools] table")
        for offset, (name, action) in enumerate(shorthand.items(), len(rules) + 1):
            line = lines.tools_key(name)
            try:
                if not isinstance(action, str):
                    raise _BadRule(None, f"the action for tool {name!r} must be a string such as \"allow\"")
                rules.append(_build_rule({"action": action, "tool": name}, index=offset, line=line, source=src,
                                         label=f"tools.{name}"))
            except _BadRule as exc:
                raise PolicyError(source, line, f"[tools] {name}: {exc.reason}") from None
        return cls(rules, source)

    def evaluate(self, call: PolicyCall, *, now: datetime | None = None) -> PolicyVerdict | None:
        """The rule's answer for ``call``, or ``None`` when no rule decides (ask the person)."""
        return self.explain(call, now=now).verdict

    def explain(self, call: PolicyCall, *, now: datetime | None = None) -> Explanation:
        now = now or datetime.now(UTC)
        context = _Context(call)
        explained = []
        for part in context.parts:
            whys = [(rule, _mismatch(rule, call, part, context, now)) for rule in self.rules]
            checks = tuple(RuleCheck(rule, why is None, why or "") for rule, why in whys)
            rule = _decisive([check.rule for check in checks if check.matched])
            explained.append(PartExplanation(part.text, rule.action if rule else None, rule, checks))
        return Explanation(call, _verdict(explained), tuple(explained), self.source)


def _decisive(matched: list[Rule]) -> Rule | None:
    """The strongest action wins; within it the most specific rule, then the earliest."""
    if not matched:
        return None
    return max(matched, key=lambda r: (_STRENGTH[r.action], r.specificity(), -r.index))


def _verdict(parts: list[PartExplanation]) -> PolicyVerdict | None:
    for action in ("block", "deny", "ask"):
        deciding = [(n, p) for n, p in enumerate(parts, 1) if p.action == action]
        if deciding:
            number, part = max(deciding, key=lambda np: (np[1].rule.specificity(), -np[1].rule.index, -np[0]))
            assert part.rule is not None
            reason = part.rule.note or part.rule.summary()
            if len(parts) > 1:
                reason += f" (part {number}: {part.text})"
            return PolicyVerdict(action, part.rule, reason, tuple(p.rule for _, p in deciding if p.rule))
    if not parts or any(p.action != "allow" for p in parts):
        return None
    rules = tuple(dict.fromkeys(p.rule for p in parts if p.rule))
    reason = "; ".join(rule.note or rule.summary() for rule in rules)
    return PolicyVerdict("allow", rules[0], reason, rules)


# ---------------------------------------------------------------------------------------------
# building rules from TOML values


class _BadRule(Exception):
    def __init__(self, key: str | None, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


def _build_rule(raw: dict[str, Any], *, index: int = 0, line: int | None = None, source: str = "",
                label: str | None = None) -> Rule:
    for key in raw:
        if key not in RULE_KEYS:
            raise _BadRule(key, f"unknown key {key!r} (expected one of {', '.join(RULE_KEYS)})")
    if "action" not in raw:
        raise _BadRule(None, "missing 'action' (allow, ask, deny or block)")
    action = raw["action"]
    if action not in ACTIONS:
        raise _BadRule("action", f"unknown action {action!r} (expected allow, ask, deny or block)")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise _BadRule("note", "'note' must be a string")
    return Rule(
        action=action, index=index, line=line, source=source, label=label,
        tools=_patterns(raw, "tool", _check_glob),
        commands=_patterns(raw, "command", _check_command),
        paths=_patterns(raw, "path", _check_path_glob),
        operations=_choices(raw, "operation", OPERATIONS),
        agents=_patterns(raw, "agent", _check_glob),
        cwds=_patterns(raw, "cwd", _check_path_glob),
        risks=_choices(raw, "risk", RISK_LEVELS),
        note=note,
        expires=_expiry(raw.get("expires")),
    )


def _strings(raw: dict[str, Any], key: str) -> tuple[str, ...] | None:
    if key not in raw:
        return None
    value = raw[key]
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise _BadRule(key, f"{key!r} must be a string or a non-empty list of strings")
    return tuple(values)


def _patterns(raw: dict[str, Any], key: str, check: Callable[[str], str]) -> tuple[str, ...] | None:
    values = _strings(raw, key)
    if values is None:
        return None
    try:
        return tuple(check(v) for v in values)
    except ValueError as exc:
        raise _BadRule(key, f"bad {key} pattern: {exc}") from None


def _choices(raw: dict[str, Any], key: str, allowed: tuple[str, ...]) -> tuple[str, ...] | None:
    values = _strings(raw, key)
    for value in values or ():
        if value not in allowed:
            raise _BadRule(key, f"unknown {key} {value!r} (expected {', '.join(allowed)})")
    return values


def _expiry(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _BadRule("expires", f"'expires' {value!r} is not a date or date-time") from None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, date):
        return datetime.combine(value, time()).astimezone()
    raise _BadRule("expires", "'expires' must be a date or date-time, such as 2026-12-01T00:00:00Z")


def _check_glob(pattern: str) -> str:
    if not pattern.strip():
        raise ValueError("empty pattern")
    _check_brackets(pattern)
    return pattern


def _check_command(pattern: str) -> str:
    return _check_glob(_squeeze(pattern))


def _check_path_glob(pattern: str) -> str:
    _check_glob(pattern)
    for part in pattern.split("/"):
        if "**" in part and part != "**":
            raise ValueError(f"'**' must be a whole path component in {pattern!r} (write 'dir/**/name')")
    return pattern


def _check_brackets(pattern: str) -> None:
    """fnmatch quietly reads an unclosed ``[`` as a literal; in a rule it is always a typo."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 1
            if j >= len(pattern):
                raise ValueError(f"unclosed '[' in {pattern!r} (write '[[]' for a literal '[')")
            i = j
        i += 1


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _show(values: tuple[str, ...]) -> str:
    return json.dumps(values[0]) if len(values) == 1 else "[" + ", ".join(json.dumps(v) for v in values) + "]"


# ---------------------------------------------------------------------------------------------
# line numbers for errors


def _too_big(size: int) -> str:
    return (f"the file is {size:,} bytes; a policy file may be at most {MAX_POLICY_BYTES:,} "
            "(8,000 rules take about 0.5 MB)")


def _toml_error_location(message: str, text: str) -> tuple[int | None, str]:
    found = re.search(r"\s*\(at line (\d+), column \d+\)\s*$", message)
    if found:
        return int(found.group(1)), message[:found.start()]
    found = re.search(r"\s*\(at end of document\)\s*$", message)
    if found:
        return max(1, text.count("\n") + (0 if text.endswith("\n") else 1)), message[:found.start()]
    return None, message


class _Lines:
    """Finds where a rule or key is written, by scanning the text tomllib already accepted."""

    _HEADER = re.compile(r"^\s*\[")
    _RULE = re.compile(r"^\s*\[\[\s*rule\s*\]\]")
    _TOOLS = re.compile(r"^\s*\[\s*tools\s*\]")

    _TABLE_KEY = re.compile(r"""^\s*(?:"([^"\\]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        # Indexed once, on first use: looking each rule up by scanning the text again made loading
        # quadratic in the number of rules (8,000 rules took a minute).
        self._rule_headers: list[int] | None = None
        self._tools_keys: dict[str, int] | None = None

    def _key_in(self, start: int, key: str) -> int | None:
        pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
        for number in range(start, len(self.lines)):
            text = self.lines[number]
            if number > start and self._HEADER.match(text):
                return None
            if pattern.match(text):
                return number + 1
        return None

    def top_key(self, key: str) -> int | None:
        for number, text in enumerate(self.lines):
            if self._HEADER.match(text):
                break
            if re.match(rf"^\s*{re.escape(key)}\s*[=.]", text):
                return number + 1
        return self.table_header(key)

    def table_header(self, key: str) -> int | None:
        header = re.compile(rf"^\s*\[\[?\s*{re.escape(key)}\s*[\].]")
        return next((n + 1 for n, text in enumerate(self.lines) if header.match(text)), None)

    def rule_header(self, number: int) -> int | None:
        if self._rule_headers is None:
            self._rule_headers = [n for n, text in enumerate(self.lines) if self._RULE.match(text)]
        headers = self._rule_headers
        return headers[number - 1] + 1 if number <= len(headers) else self.top_key("rule")

    def rule_key(self, number: int, key: str | None) -> int | None:
        header = self.rule_header(number)
        if key is None or header is None or not self._RULE.match(self.lines[header - 1]):
            return header
        return self._key_in(header - 1, key) or header

    def tools_key(self, name: str) -> int | None:
        if self._tools_keys is None:
            self._tools_keys = self._index_tools()
        found = self._tools_keys.get(name)
        if found is not None:
            return found
        for number, text in enumerate(self.lines):  # a name written with escapes: look it up the slow way
            if self._TOOLS.match(text):
                return self._key_in(number, name) or number + 1
        return self.top_key("tools")

    def _index_tools(self) -> dict[str, int]:
        """Line of every plainly written key of the ``[tools]`` table, in one pass."""
        keys: dict[str, int] = {}
        inside = False
        for number, text in enumerate(self.lines):
            if self._HEADER.match(text):
                inside = bool(self._TOOLS.match(text))
                continue
            found = self._TABLE_KEY.match(text) if inside else None
            if found:
                keys.setdefault(next(group for group in found.groups() if group is not None), number + 1)
        return keys


# ---------------------------------------------------------------------------------------------
# what a call touches


@dataclass(frozen=True)
class _Touch:
    """One file a part reads, writes or deletes, seen every way a rule may need."""

    path: str | None                   # as written; None when the tool names no path
    operation: str | None              # None: unknown
    lexical: tuple[tuple[str, ...], ...] = ()   # normalised absolute components, per possible base
    real: tuple[str, ...] | None = None         # after resolving symlinks, when it could be
    doubt: str = ""                    # why an allow rule cannot rely on this path ("" = it can)


@dataclass(frozen=True)
class _Part:
    text: str
    command: str | None = None         # normalised words of a shell part; None for other calls
    parsed: bool = True
    touches: tuple[_Touch, ...] = ()


class _Context:
    """A call cut into parts, plus a cache of the zones resolved against its working directory."""

    def __init__(self, call: PolicyCall) -> None:
        self.call = call
        self.base = _absolute_base(call.cwd)
        self._zones: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.parts = _parts_of(call, self.base)

    def zone(self, pattern: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The zone's components as written, and with the symlinks of its literal prefix resolved."""
        if pattern not in self._zones:
            lexical = _components(_normalise(pattern, self.base or _UNKNOWN_CWD))
            literal = 0
            while literal < len(lexical) and not _has_glob(lexical[literal]):
                literal += 1
            real = lexical
            if self.base is not None or os.path.isabs(os.path.expanduser(pattern)):
                real = _components(os.path.realpath("/" + "/".join(lexical[:literal]))) + lexical[literal:]
            self._zones[pattern] = (lexical, real)
        return self._zones[pattern]


def _absolute_base(cwd: str | None) -> str | None:
    if not cwd:
        return None
    cwd = os.path.expanduser(cwd)
    return os.path.normpath(cwd) if os.path.isabs(cwd) else None


def _normalise(path: str, base: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path))


def _components(path: str) -> tuple[str, ...]:
    return tuple(c for c in path.split("/") if c)


def _parts_of(call: PolicyCall, base: str | None) -> tuple[_Part, ...]:
    reading = read_call(call.tool, call.args, base)
    if reading.commands:
        return tuple(part for run in reading.commands for part in _shell_parts(run, base))
    operation = _FAMILY_OPERATION.get(reading.family)
    touches: list[tuple[str | None, str | None]] = [
        (use.path, use.operation if operation is not None else None) for use in reading.paths]
    if not touches and reading.family in _FAMILY_OPERATION and reading.family != "unknown":
        touches.append((None, operation))
    text = call.tool
    if touches:
        text += " " + ", ".join(f"{t[1] or 'touch'} {t[0] or '(no path)'}" for t in touches)
    return (_Part(text, touches=tuple(_touch(path, op, base) for path, op in touches)),)


# What a rule's ``operation`` sees for each family of tool; None: not known (allow rules cannot
# rely on it, ask / deny / block rules take it as possibly theirs).
_FAMILY_OPERATION: dict[str, str | None] = {
    "read": "read", "write": "write", "edit": "write", "patch": "write", "move": "write", "delete": "delete",
    "network": None, "database": None, "message": None, "unknown": None,
}
assert set(_FAMILY_OPERATION) == set(FAMILIES) - {"shell"}


def shell_command(tool: str, args: dict[str, Any]) -> str | None:
    """The shell command line a call runs, or ``None`` when it is not a shell call."""
    reading = read_call(tool, args)
    return reading.commands[0].text if reading.commands else None


def _shell_parts(run: ShellRun, base: str | None) -> tuple[_Part, ...]:
    if run.parse_error:  # an open quote: never allowed by a command pattern
        return (_Part(_squeeze(run.text), _squeeze(run.text), parsed=False),)
    simple = [c for c in run.programs if c.argv]
    if not simple:
        return (_Part(_squeeze(run.text), ""),)
    moves = [c.argv for c in simple if os.path.basename(c.argv[0]) in _CD_COMMANDS]
    bases = _cd_bases(moves, base)
    doubt = "the command also changes directory (cd)" if moves else ""
    parts = []
    for simple_command in run.programs:
        if not simple_command.argv:
            continue
        words = _squeeze(" ".join(simple_command.argv))
        touches = tuple(_touch(use.path, use.operation, base, bases, doubt, shell=True)
                        for use in command_paths(simple_command, None))  # relative: _touch resolves per base
        parts.append(_Part(words, words, touches=touches))
    return tuple(parts)


def _cd_bases(moves: list[tuple[str, ...]], base: str | None) -> tuple[str, ...]:
    """Where a ``cd`` in the command may take relative paths: checked by ask/deny/block zones."""
    bases = []
    for argv in moves:
        target = argv[1] if len(argv) > 1 and argv[0] != "popd" else "~"
        if not any(c in target for c in _EXPANSION_CHARS) and target != "-":
            bases.append(_normalise(target, base or _UNKNOWN_CWD))
    return tuple(bases)


def _touch(path: str | None, operation: str | None, base: str | None, other_bases: tuple[str, ...] = (),
           doubt: str = "", *, shell: bool = False) -> _Touch:
    """``doubt`` comes from the command around the path (a ``cd``); the path may add its own."""
    if path is None:
        return _Touch(None, operation, doubt="the call names no path")
    expanded = os.path.expanduser(path)
    relative = not os.path.isabs(expanded)
    if shell and any(c in path for c in _EXPANSION_CHARS):
        doubt = f"the shell would expand {path!r}"
    elif shell and any(fnmatchcase("..", part) and _has_glob(part) for part in path.split("/")):
        doubt = f"the glob in {path!r} could match '..'"
    elif relative and base is None:
        doubt = "the agent's working directory is unknown"
    elif not relative:
        doubt = ""
    bases = (base or _UNKNOWN_CWD,) + (other_bases if relative else ())
    lexical = tuple(dict.fromkeys(_components(_normalise(expanded, b)) for b in bases))
    real = None
    if not relative or base is not None:
        real = _components(os.path.realpath(_normalise(expanded, base or "/")))
    return _Touch(path, operation, lexical, real, doubt)


# ---------------------------------------------------------------------------------------------
# matching


def _mismatch(rule: Rule, call: PolicyCall, part: _Part, context: _Context, now: datetime) -> str | None:
    """Why ``rule`` does not apply to this part of ``call``; ``None`` when it does."""
    if rule.expired(now):
        return f"expired {rule.expires.isoformat() if rule.expires else ''}"
    if rule.tools is not None and not any(fnmatchcase(call.tool, p) for p in rule.tools):
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


# ---------------------------------------------------------------------------------------------
# "Always allow...": suggesting, previewing and writing a rule


def suggest_rule(call: PolicyCall) -> dict[str, Any]:
    """The narrowest sensible allow rule for this call: the exact command, the exact path(s), or the tool."""
    return suggest_rule_alternatives(call)[0]


def suggest_rule_alternatives(call: PolicyCall) -> list[dict[str, Any]]:
    """Allow rules for the call, narrowest first, each matching it (see :func:`rule_matches`).

    Shell calls get the exact command (every part, for a compound one), then each part's first two
    words and ``*``; file calls the exact path(s), then their folders, then the tool; other calls
    the tool. A shell command that cannot be parsed gets only its exact text, which no rule can
    allow (``rule_matches`` says so), rather than a rule for the whole shell tool.
    """
    context = _Context(call)
    tool_only = {"action": "allow", "tool": call.tool}
    reading = read_call(call.tool, call.args)
    command = " ; ".join(run.text for run in reading.commands) if reading.commands else None
    if command is not None:
        parts = [p for p in context.parts if p.command]
        if not command.strip():
            return [tool_only]
        if not parts or not all(p.parsed for p in parts):
            return [{"action": "allow", "tool": call.tool, "command": _escape_glob(_squeeze(command))}]
        exact = _one_or_list(list(dict.fromkeys(_escape_glob(p.command or "") for p in parts)))
        prefixes = _one_or_list(list(dict.fromkeys(
            " ".join(_escape_glob(w) for w in (p.command or "").split(" ")[:2]) + " *" for p in parts)))
        found = [{"action": "allow", "tool": call.tool, "command": exact}]
        if prefixes != exact:
            found.append({"action": "allow", "tool": call.tool, "command": prefixes})
        return found

    touches = [t for part in context.parts for t in part.touches]
    if not touches or any(t.doubt or t.path is None or t.operation is None for t in touches):
        return [tool_only]
    operations = sorted({t.operation for t in touches if t.operation})
    exact_paths = _one_or_list(list(dict.fromkeys("/" + _escape_glob("/".join(t.lexical[0])) for t in touches)))
    folders = _one_or_list(list(dict.fromkeys(
        "/" + _escape_glob("/".join(t.lexical[0][:-1])) + "/**" for t in touches)))
    by_path = {"action": "allow", "tool": call.tool, "path": exact_paths, "operation": _one_or_list(operations)}
    found = [by_path, {**by_path, "path": folders}, tool_only]
    return _keep_matching(found, call) or [tool_only]


def _one_or_list(values: list[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else values


def _keep_matching(rules: list[dict[str, Any]], call: PolicyCall) -> list[dict[str, Any]]:
    return [rule for rule in rules if rule_matches(rule, call)]


def rule_from_dict(rule: dict[str, Any], source: str = "") -> Rule:
    """Validate a rule given as a dict (from the dialog's editor); raises :class:`PolicyError`."""
    try:
        return _build_rule(rule, source=source)
    except _BadRule as exc:
        raise PolicyError(source or None, None, exc.reason) from None


def rule_matches(rule: dict[str, Any], call: PolicyCall, *, now: datetime | None = None) -> bool:
    """Whether this rule alone would decide the call (an allow rule: every part of it)."""
    return Policy([rule_from_dict(rule)]).evaluate(call, now=now) is not None


def render_rule(rule: dict[str, Any]) -> str:
    """The ``[[rule]]`` table for a rule dict, keys in the documented order."""
    rule_from_dict(rule)
    lines = ["[[rule]]"]
    for key in RULE_KEYS:
        if rule.get(key) is not None:
            lines.append(f"{key} = {_toml_value(_expiry(rule[key]) if key == 'expires' else rule[key])}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    raise TypeError(f"cannot write {type(value).__name__} to the policy file")


def _toml_string(text: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_NEW_FILE_HEADER = """\
# desktop-approver policy: rules that answer tool calls before any dialog.
# The format is described in the README ("The policy file").
version = 1
"""


def append_rule(path: str | os.PathLike[str], rule: dict[str, Any]) -> None:
    """Add a ``[[rule]]`` at the end of the file, keeping every existing line and comment.

    The new text is validated as a whole before it replaces the file (atomically), so a file that
    is already broken is left alone and the error raised.
    """
    path = Path(path)
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = _NEW_FILE_HEADER
    if existing and not existing.endswith("\n"):
        existing += "\n"
    text = existing + ("\n" if existing.strip() else "") + render_rule(rule)
    Policy.parse(text, path)
    _write_atomically(path, text)


def _write_atomically(path: Path, text: str) -> None:
    path = Path(os.path.realpath(path))     # a symlinked dotfile stays a symlink
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# hot reload


ChangeCallback = Callable[[Policy | None, PolicyError | None], None]


class PolicyWatcher:
    """The policy in force, reloaded when the file changes; a bad edit keeps the last good policy.

    Polls ``os.stat`` every ``interval`` seconds on the running asyncio loop (cheap, and works for
    editors that replace the file as well as those that rewrite it). ``on_change(policy, None)``
    follows a successful reload, ``on_change(None, error)`` a refused one. A file that disappears
    is taken as "no rules" only when it is still missing at the next poll, so an editor that
    deletes and rewrites does not drop the block rules for a moment.
    """

    def __init__(self, path: str | os.PathLike[str], *, interval: float = 1.0,
                 on_change: ChangeCallback | None = None) -> None:
        self.path = Path(path)
        self.interval = interval
        self.on_change = on_change
        self.policy: Policy = Policy.empty(self.path)
        self.last_error: PolicyError | None = None
        self._signature: tuple[int, ...] | None = None    # the file as last read; None: missing
        self._gone = False                                 # the missing file has been taken as "no rules"
        self._missing_polls = 0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Load the file now and keep watching it; call from within the running loop."""
        self.check()
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def evaluate(self, call: PolicyCall) -> PolicyVerdict | None:
        return self.policy.evaluate(call)

    def explain(self, call: PolicyCall) -> Explanation:
        return self.policy.explain(call)

    def check(self) -> bool:
        """Reload if the file changed since the last look; True when the policy or error changed."""
        signature = _stat_signature(self.path)
        if signature is None:
            return self._missing()
        self._missing_polls = 0
        if signature == self._signature:
            return False
        self._signature, self._gone = signature, False
        try:
            policy = Policy.load(self.path)
        except PolicyError as error:
            log.warning("policy file refused, the last good rules stay in force: %s", error)
            self.last_error = error
            self._notify(None, error)
        else:
            self.policy, self.last_error = policy, None
            self._notify(policy, None)
        return True

    def _missing(self) -> bool:
        if self._gone:
            return False
        self._missing_polls += 1
        if self._signature is not None and self._missing_polls < 2:
            return False        # perhaps an editor between delete and write: look once more
        self._signature, self._gone = None, True
        self.policy, self.last_error = Policy.empty(self.path), None
        self._notify(self.policy, None)
        return True

    def _notify(self, policy: Policy | None, error: PolicyError | None) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(policy, error)
        except Exception:      # a listener's bug must not stop the watching
            log.exception("policy on_change callback failed")

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle = loop.call_later(self.interval, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self.check()
        except Exception:      # e.g. a permission error on stat: keep the last policy, try again
            log.exception("checking the policy file failed")
        self._schedule(loop)


def _stat_signature(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
