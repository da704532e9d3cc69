"""The pydantic model of ``policy.toml``: what a file may hold, and the reason a value is refused.

:class:`PolicyFile` (``version``, ``[[rule]]`` tables, the ``[tools]`` shorthand) and
:class:`RuleTable` (one rule, also as the dialog's editor gives it) are the one description of the
format. Their declared types are what ``ipc/policy.schema.json`` publishes for editors
(``python -m desktop_approver.core.messages.schema`` writes it); every key is checked first by a
before-validator that raises the reason the person reads, in the file's words rather than
pydantic's ("'note' must be a string", "unknown operation 'exec' (expected read, write, delete)").

pydantic reports every problem at once; the person is told the first one as the file reads, top to
bottom, which :func:`file_problem` and :func:`rule_problem` pick and place (:class:`Problem`). The
line is found by :mod:`.load`, which knows the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from .globs import BAD_DOUBLE_STAR, GLOB, check_command, check_glob, check_path_glob
from .rules import _TOP_KEYS, ACTIONS, OPERATIONS, RISK_LEVELS, RULE_KEYS, SUPPORTED_VERSION, Action, Operation, Risk

Glob = Annotated[str, Field(pattern=GLOB)]
Globs = Glob | Annotated[list[Glob], Field(min_length=1)]
PathGlob = Annotated[str, Field(pattern=GLOB, json_schema_extra={"not": {"pattern": BAD_DOUBLE_STAR}})]
PathGlobs = PathGlob | Annotated[list[PathGlob], Field(min_length=1)]

_WHY_FIRST = ("action", "note", "tool", "command", "path", "operation", "agent", "cwd", "risk", "expires")


def _refuse(reason: str, **where: str) -> PydanticCustomError:
    """An error whose message is exactly ``reason``; ``where`` says which ``[tools]`` entry."""
    return PydanticCustomError("policy", "{reason}", {"reason": reason, **where})


class RuleTable(BaseModel):
    """One [[rule]] table. Every key but action is optional; a list means any of its values."""

    model_config = ConfigDict(extra="forbid", title="rule")

    action: Action = Field(description="allow | ask | deny | block: what happens to a call the rule matches "
                                       "(block: refused as a policy violation; the dialog never shows)")
    tool: Globs | None = Field(default=None, description="the tool name; a glob such as mcp__github__*")
    command: Globs | None = Field(default=None, description="each simple command of a shell call, its words "
                                                            "joined by single spaces; * matches spaces too")
    path: PathGlobs | None = Field(default=None, description="the files a call touches: zones relative to the "
                                                             "agent's working directory, or absolute; ** is a "
                                                             "whole component and spans directories")
    operation: Operation | Annotated[list[Operation], Field(min_length=1)] | None = Field(
        default=None, description="what the call does to those files")
    agent: Globs | None = Field(default=None, description="a glob on the agent's name, as the agent claims it")
    cwd: PathGlobs | None = Field(default=None, description="a path glob on the agent's working directory "
                                                            "(~/work/**); a relative one matches its end")
    risk: Risk | Annotated[list[Risk], Field(min_length=1)] | None = Field(
        default=None, description="the app's own risk assessment of the call; on an allow rule, naming "
                                  "destructive is the explicit key that lets it allow destructive calls "
                                  "(without it an allow rule answers only fully understood safe or moderate calls)")
    note: str | None = Field(default=None, description="shown to the person, and the reason the agent reads "
                                                       "with a deny or block")
    expires: datetime | date | None = Field(default=None, description="after this date or date-time (local "
                                                                      "time unless it has an offset) the "
                                                                      "rule is ignored")

    @field_validator("action", mode="before")
    @classmethod
    def _action(cls, value: object) -> object:
        if value not in ACTIONS:
            raise _refuse(f"unknown action {value!r} (expected allow, ask, deny or block)")
        return value

    @field_validator("note", mode="before")
    @classmethod
    def _note(cls, value: object) -> object:
        if value is not None and not isinstance(value, str):
            raise _refuse("'note' must be a string")
        return value

    @field_validator("tool", "agent", "command", "path", "cwd", mode="before")
    @classmethod
    def _patterns(cls, value: object, info: ValidationInfo) -> list[str]:
        key = info.field_name or ""
        check = {"command": check_command, "path": check_path_glob, "cwd": check_path_glob}.get(key, check_glob)
        values = _strings(key, value)
        try:
            return [check(v) for v in values]
        except ValueError as exc:
            raise _refuse(f"bad {key} pattern: {exc}") from None

    @field_validator("operation", "risk", mode="before")
    @classmethod
    def _choices(cls, value: object, info: ValidationInfo) -> list[str]:
        key = info.field_name or ""
        values = _strings(key, value)
        allowed = OPERATIONS if key == "operation" else RISK_LEVELS
        for one in values:
            if one not in allowed:
                raise _refuse(f"unknown {key} {one!r} (expected {', '.join(allowed)})")
        return values

    @field_validator("expires", mode="before")
    @classmethod
    def _expires(cls, value: object) -> datetime | None:
        try:
            return parse_expiry(value)
        except ValueError as exc:
            raise _refuse(str(exc)) from None

    def condition(self, key: Literal["tool", "command", "path", "operation", "agent", "cwd", "risk"]
                  ) -> tuple[str, ...] | None:
        """A condition as the rule holds it: every value, or ``None`` when the key is absent."""
        value = getattr(self, key)
        return None if value is None else (value,) if isinstance(value, str) else tuple(value)

    def expiry(self) -> datetime | None:
        return parse_expiry(self.expires)


class ToolEntry(BaseModel):
    """A ``[tools]`` entry with a note: ``deploy = { action = "block", note = "deploys go through CI" }``."""

    model_config = ConfigDict(extra="forbid")

    action: Action = Field(description="allow | ask | deny | block, for every call of the tool")
    note: str | None = Field(default=None, description="shown to the person, and the reason the agent reads "
                             "when the entry denies or blocks")


class PolicyFile(BaseModel):
    """The rules that answer an agent's tool call before any dialog is shown (docs/policy.md)."""

    model_config = ConfigDict(extra="forbid", title="desktop-approver policy.toml")

    version: Literal[1] = Field(default=1, description="the format version; 1 is the only one")
    rule: list[RuleTable] = Field(default_factory=list, description="the rules; the strongest matching "
                                  "action wins (block, deny, ask, allow) wherever it stands")
    tools: dict[str, Action | ToolEntry] = Field(
        default_factory=dict, description="shorthand: one action for every call of a tool (a name or a glob), "
        "or { action, note } to give the agent and the person a reason",
        json_schema_extra={"propertyNames": {"pattern": GLOB}})

    catalog: dict[str, Any] = Field(
        default_factory=dict, description="extends the catalog of programs and tools the risk reader understands "
        "(the shape of the shipped catalog files: [catalog.program.NAME], [catalog.tool.NAME], ...)")

    @field_validator("catalog", mode="before")
    @classmethod
    def _catalog(cls, value: object) -> object:
        from ..calls.catalog import CatalogError, validate_extension

        try:
            validate_extension(value)
        except CatalogError as exc:
            raise _refuse(f"catalog: {exc}") from None
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: object) -> object:
        if value != SUPPORTED_VERSION or isinstance(value, bool):
            raise _refuse(f"unsupported version {value!r} (this app reads version {SUPPORTED_VERSION})")
        return value

    @field_validator("rule", mode="before")
    @classmethod
    def _rules(cls, value: object) -> object:
        if not isinstance(value, list):
            raise _refuse("'rule' must be written as [[rule]] tables")
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _tools(cls, value: object) -> object:
        """Each entry is the rule ``{action, tool = name}`` (``note`` too, when the entry is a table),
        and is refused as that rule would be."""
        if not isinstance(value, dict):
            raise _refuse("'tools' must be a [tools] table")
        for name, entry in value.items():
            if isinstance(entry, dict):
                unknown = sorted(set(entry) - {"action", "note"})
                if unknown:
                    raise _refuse(f"the entry for tool {name!r} may hold only action and note, not {unknown[0]!r}",
                                  tool=name)
                raw = {**entry, "tool": name}
            elif isinstance(entry, str):
                raw = {"action": entry, "tool": name}
            else:
                raise _refuse(f"the action for tool {name!r} must be a string such as \"allow\", or a table "
                              "{ action = \"block\", note = \"...\" }", tool=name)
            try:
                RuleTable.model_validate(raw)
            except ValidationError as exc:
                raise _refuse(rule_problem(exc, raw).reason, tool=name) from None
        return value


@dataclass(frozen=True)
class Problem:
    """The first thing wrong, and where: a top-level key, a key of a ``[[rule]]`` (counted from 1;
    ``key`` None for the table itself), or an entry of ``[tools]``."""

    reason: str
    top: str | None = None
    rule: int | None = None
    key: str | None = None
    tool: str | None = None


def rule_problem(error: ValidationError, raw: dict[str, Any]) -> Problem:
    """The problem of one rule the person meets first: an unknown key, then a missing action, then
    the keys in the order they are checked."""
    first = min(error.errors(), key=lambda e: _rank_in_rule(e, raw))
    return _rule_problem(first)


def file_problem(error: ValidationError, data: dict[str, Any]) -> Problem:
    """The problem of a file the person meets first: unknown top-level keys, the version, the rules
    in order, then ``[tools]``."""
    first = min(error.errors(), key=lambda e: _rank_in_file(e, data))
    loc = first["loc"]
    head = loc[0] if loc else None
    if head == "rule" and len(loc) >= 2 and isinstance(loc[1], int):
        number = loc[1] + 1
        if len(loc) == 2:
            return Problem(f"rule {number} is not a table", rule=number)
        found = _rule_problem({**first, "loc": loc[2:]})
        return Problem(f"rule {number}: {found.reason}", rule=number, key=found.key)
    if head == "tools" and "tool" in first.get("ctx", {}):
        name = str(first["ctx"]["tool"])
        return Problem(f"[tools] {name}: {first['msg']}", tool=name)
    if first["type"] == "extra_forbidden" and len(loc) == 1:
        return Problem(f"unknown key {head!r} (expected {', '.join(_TOP_KEYS)})", top=str(head))
    return Problem(first["msg"], top=str(head) if head is not None else None)


def _rank_in_rule(error: ErrorDetails, raw: dict[str, Any]) -> tuple[int, int]:
    key = error["loc"][0] if error["loc"] else None
    if error["type"] == "extra_forbidden":
        return 0, list(raw).index(key) if key in raw else 0
    if error["type"] == "missing":
        return 1, 0
    return 2, _WHY_FIRST.index(key) if key in _WHY_FIRST else len(_WHY_FIRST)


def _rank_in_file(error: ErrorDetails, data: dict[str, Any]) -> tuple[int, ...]:
    loc = error["loc"]
    head = loc[0] if loc else None
    if error["type"] == "extra_forbidden" and len(loc) == 1:
        return 0, list(data).index(head) if head in data else 0
    if head == "version":
        return (1,)
    if head == "rule":
        if len(loc) < 2 or not isinstance(loc[1], int):
            return (2, 0)
        raw = data["rule"][loc[1]]
        inner = _rank_in_rule({**error, "loc": loc[2:]}, raw) if len(loc) > 2 and isinstance(raw, dict) else (0, 0)
        return 2, loc[1] + 1, *inner
    return (3,) if head == "tools" else (4,)


def _rule_problem(error: ErrorDetails) -> Problem:
    key = str(error["loc"][0]) if error["loc"] else None
    if error["type"] == "extra_forbidden":
        return Problem(f"unknown key {key!r} (expected one of {', '.join(RULE_KEYS)})", key=key)
    if error["type"] == "missing":
        return Problem("missing 'action' (allow, ask, deny or block)")
    return Problem(error["msg"], key=key)


def _strings(key: str, value: object) -> list[str]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise _refuse(f"{key!r} must be a string or a non-empty list of strings")
    return values


def parse_expiry(value: object) -> datetime | None:
    """A TOML date or date-time (or its ISO text) as an aware date-time: local time without an offset."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"'expires' {value!r} is not a date or date-time") from None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.astimezone()
    if isinstance(value, date):
        return datetime.combine(value, time()).astimezone()
    raise ValueError("'expires' must be a date or date-time, such as 2026-12-01T00:00:00Z")
