"""The protocol's messages as pydantic models: the single source of truth on the app's side.

``ipc/schema/`` is generated from these (``python -m desktop_approver.core.messages.schema``) and a test
fails when it is stale. The thin client does not import this module; the golden exchanges in
``ipc/examples/`` keep it and ``desktop_approver.client.wire`` in step.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from ...client.vocabulary import DecidedBy as DecidedBy  # re-exported: declared here before the words moved out
from ...client.vocabulary import DecisionName as DecisionName
from ...client.vocabulary import NoticeKind, RiskLevel, Scope, ShowWhat
from ...client.wire import PROTOCOL_VERSION

if TYPE_CHECKING:
    from typing import Self

    from ..decisions.verdict import Verdict

MAX_BATCH_CALLS = 100
MAX_TIMEOUT = 24 * 3600.0

Id = Annotated[StrictStr, Field(min_length=1, max_length=128)]
ToolName = Annotated[StrictStr, Field(min_length=1, max_length=200)]
ShortText = Annotated[StrictStr, Field(max_length=4096)]
LongText = Annotated[StrictStr, Field(max_length=64 * 1024)]
Timeout = Annotated[StrictInt | StrictFloat, Field(gt=0, le=MAX_TIMEOUT)]


def _whole_number(value: Any) -> Any:
    """A number without a fractional part is an integer, however it is written (``4242``,
    ``4242.0``, ``4.242e3``), as JSON Schema's ``integer`` has it and as ``v`` is read: one rule for
    every integer field. Anything else goes on to the strict check, which refuses it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE_NUMBER = BeforeValidator(_whole_number)
"""Marks an integer field of a client message (PROTOCOL.md, "Numbers"): ``Annotated[StrictInt, Field(...),
WHOLE_NUMBER]``, with the bounds before it so that the schema names them ``minimum``/``maximum``."""


_WIRE_REQUIRED = frozenset(("v", "type"))
"""Fields with a default in the models that every message must still carry (the schema requires them)."""


@functools.cache
def _optional_names(model: type[BaseModel]) -> frozenset[str]:
    """The names (and aliases) of ``model``'s optional fields, as a client may send them."""
    return frozenset(name for field_name, field in model.model_fields.items() if not field.is_required()
                     for name in (field_name, field.alias) if name and field_name not in _WIRE_REQUIRED)


class _NullIsAbsent(BaseModel):
    """One rule for what clients send (PROTOCOL.md, "Client to app"): an optional field sent as
    ``null`` is read as if it were left out, so it takes its default (``format`` is ``plain``,
    ``show.what`` is ``request``). Only optional fields: a required one sent as null is refused.

    Mixed into the client models with an optional field whose default is not null; in the others
    null *is* the default, so pydantic reads null as absent already, without this validator's cost
    on every message (``tests/core/test_schema.py`` checks every client model keeps to this)."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            optional = _optional_names(cls)
            return {key: value for key, value in data.items() if value is not None or key not in optional}
        return data


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    v: Literal[1] = PROTOCOL_VERSION


# -- previews -----------------------------------------------------------------------------------

class _Preview(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _given(*names: str) -> dict[str, Any]:
    """JSON Schema for "each of ``names`` is sent, and not as null" (null is the same as absent)."""
    return {"required": list(names), "properties": {name: {"not": {"type": "null"}} for name in names}}


class DiffPreview(_Preview):
    """A change to a file: old and new text, or a ready unified diff (one of the two, whole)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={"oneOf": [
        {**_given("old", "new"), "not": _given("unified")},
        {**_given("unified"), "not": {"anyOf": [_given("old"), _given("new")]}},
    ]})
    kind: Literal["diff"]
    path: StrictStr | None = None
    old: StrictStr | None = None
    new: StrictStr | None = None
    unified: StrictStr | None = None

    @model_validator(mode="after")
    def _one_form(self) -> DiffPreview:
        texts = self.old is not None or self.new is not None
        if self.unified is not None and texts:
            raise ValueError("a diff preview has old + new or unified, not both")
        if self.unified is None and (self.old is None or self.new is None):
            raise ValueError("a diff preview needs both old and new, or unified")
        return self


class FileWritePreview(_Preview):
    """New content for a file; ``old`` is the current text, null for a new or unreadable file."""

    kind: Literal["file_write"]
    path: StrictStr
    content: StrictStr
    old: StrictStr | None = None


class CommandPreview(_Preview):
    """A shell command as a string, or an argv list (one of the two); with the directory it runs in."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "oneOf": [_given("command"), _given("argv")]})
    kind: Literal["command"]
    command: StrictStr | None = None
    argv: Annotated[list[StrictStr], Field(min_length=1)] | None = None
    cwd: StrictStr | None = None

    @model_validator(mode="after")
    def _one_form(self) -> CommandPreview:
        if (self.command is None) == (self.argv is None):
            raise ValueError("a command preview has command or argv, exactly one of them")
        return self


class TextPreview(_Preview, _NullIsAbsent):
    kind: Literal["text"]
    text: StrictStr
    format: Literal["plain", "markdown"] = "plain"


Preview = Annotated[DiffPreview | FileWritePreview | CommandPreview | TextPreview, Field(discriminator="kind")]


MAX_HINT_MEMBERS = 37
"""Members of ``hints`` in all: room for the four hints, ``title`` and 32 other annotations. A count
of every member (not of the others alone) so that JSON Schema can say it (``maxProperties``)."""
MAX_HINT_NAME = 64
MAX_HINT_TEXT = 4096
HINT_SPELLINGS = (("read_only", "readOnlyHint"), ("destructive", "destructiveHint"), ("idempotent", "idempotentHint"),
                   ("open_world", "openWorldHint"))


class Hints(BaseModel):
    """What the agent says about its tool (MCP tool annotations). Shown, never trusted.

    The four MCP hints are booleans; ``title`` and any other annotation an MCP server sends (the
    spec may grow) are kept to be shown, and ignored by the risk classifier.
    """

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True, json_schema_extra={
        "maxProperties": MAX_HINT_MEMBERS,
        "propertyNames": {"maxLength": MAX_HINT_NAME},
        "additionalProperties": {"anyOf": [{"type": "string", "maxLength": MAX_HINT_TEXT}, {"type": "number"},
                                           {"type": "boolean"}, {"type": "null"}]},
        "allOf": [{"not": _given(*pair)} for pair in HINT_SPELLINGS],
    })
    read_only: StrictBool | None = Field(None, alias="readOnlyHint")
    destructive: StrictBool | None = Field(None, alias="destructiveHint")
    idempotent: StrictBool | None = Field(None, alias="idempotentHint")
    open_world: StrictBool | None = Field(None, alias="openWorldHint")
    title: ShortText | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_and_plain_extras(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for name, field in cls.model_fields.items():
            if field.alias and data.get(name) is not None and data.get(field.alias) is not None:  # null: absent
                raise ValueError(f"{name} is given twice (as {name} and {field.alias})")
        if len(data) > MAX_HINT_MEMBERS:
            raise ValueError(f"at most {MAX_HINT_MEMBERS} members (the four hints, title and 32 other annotations)")
        known = {name for name in cls.model_fields} | {f.alias for f in cls.model_fields.values() if f.alias}
        for key in data:
            if isinstance(key, str) and len(key) > MAX_HINT_NAME:
                raise ValueError(f"an annotation name is longer than {MAX_HINT_NAME} characters")
        for key in (key for key in data if key not in known):
            value = data[key]
            short_text = isinstance(value, str) and len(value) <= MAX_HINT_TEXT
            if not (value is None or isinstance(value, (bool, int, float)) or short_text):
                raise ValueError(f"{key}: other annotations must be a string, number, boolean or null")
        # A spelling sent as null is absent, and must not hide the other one's value (pydantic would
        # take either when both are there): ``{"destructiveHint": true, "destructive": null}`` is destructive.
        spelled_null = [spelling for pair in HINT_SPELLINGS for spelling in pair if spelling in data
                        and data[spelling] is None]
        return {key: value for key, value in data.items() if key not in spelled_null} if spelled_null else data

    def as_dict(self) -> dict[str, Any]:
        """The hints by our names, then ``title`` and the other annotations as sent."""
        known = {k: v for k, v in self.model_dump(exclude=set(self.model_extra or ())).items() if v is not None}
        return {**known, **{k: v for k, v in (self.model_extra or {}).items() if v is not None}}


# -- client to app ------------------------------------------------------------------------------

class ClientInfo(BaseModel):
    """Who is asking, as the client says; the app adds what the kernel says (peer credentials)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    agent: ShortText | None = None
    pid: Annotated[StrictInt, Field(ge=0, le=2 ** 63 - 1), WHOLE_NUMBER] | None = None
    cwd: ShortText | None = None
    host: ShortText | None = None
    git_branch: ShortText | None = None


class Hello(_Message, _NullIsAbsent):
    type: Literal["hello"]
    client: ClientInfo = ClientInfo()
    token: ShortText | None = None


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: ToolName
    args: dict[str, Any]
    description: LongText | None = None
    preview: Preview | None = None
    hints: Hints | None = None


class AskedCall(Protocol):
    """One call as asked, whether in a ``batch`` (a :class:`ToolCall`) or as a ``request`` itself."""

    @property
    def tool(self) -> str: ...
    @property
    def args(self) -> dict[str, Any]: ...
    @property
    def description(self) -> str | None: ...
    @property
    def preview(self) -> DiffPreview | FileWritePreview | CommandPreview | TextPreview | None: ...
    @property
    def hints(self) -> Hints | None: ...


class Request(_Message):
    type: Literal["request"]
    id: Id
    tool: ToolName
    args: dict[str, Any]
    session: ShortText | None = None
    description: LongText | None = None
    preview: Preview | None = None
    hints: Hints | None = None
    timeout: Timeout | None = None

    def calls(self) -> list[AskedCall]:
        """The request's one call, as a batch's calls are: the request itself (it has a call's fields)."""
        return [self]


class Batch(_Message):
    """Several calls under one prompt; the answer is one decision per call, in order."""

    type: Literal["batch"]
    id: Id
    calls: Annotated[list[ToolCall], Field(min_length=1, max_length=MAX_BATCH_CALLS)]
    session: ShortText | None = None
    timeout: Timeout | None = None


class Cancel(_Message):
    type: Literal["cancel"]
    id: Id


class Status(_Message):
    type: Literal["status"]
    id: Id


class EndSession(_Message):
    """The agent's session is over: forget what ``allow_session`` remembered for it."""

    type: Literal["end_session"]
    id: Id
    session: ShortText


class ListSessions(_Message):
    """What ``allow_session`` remembers right now (for ``desktop-approver sessions``)."""

    type: Literal["sessions"]
    id: Id


class Revoke(_Message):
    """Forget remembered approvals: of one session, one tool, or (neither given) all of them.

    Revoking only ever takes permission away, so it is safe to offer on the agents' socket.
    """

    type: Literal["revoke"]
    id: Id
    session: ShortText | None = None
    tool: ToolName | None = None


class Notice(_Message):
    """The agent tells the person something (it waits for them, it finished): shown in the tray and
    as a notification that never takes focus. It never approves or denies anything."""

    type: Literal["notice"]
    id: Id
    kind: NoticeKind
    text: Annotated[StrictStr, Field(min_length=1, max_length=1024)]
    session: ShortText | None = None


class Show(_Message, _NullIsAbsent):
    """The person asks (through ``desktop-approver show``, bound to a key) to see the waiting request or
    a window. It raises a window and decides nothing."""

    type: Literal["show"]
    id: Id
    what: ShowWhat = "request"


Incoming = Hello | Request | Batch | Cancel | Status | EndSession | ListSessions | Revoke | Notice | Show
"""Any message a client may send; its ``type`` names it."""
Asking = Request | Batch
"""The two messages that ask for decisions."""

INCOMING: dict[str, type[Incoming]] = {
    "hello": Hello, "request": Request, "batch": Batch, "cancel": Cancel,
    "status": Status, "end_session": EndSession, "sessions": ListSessions, "revoke": Revoke, "notice": Notice,
    "show": Show,
}


# -- app to client ------------------------------------------------------------------------------

class Welcome(_Message):
    type: Literal["welcome"] = "welcome"
    server: Literal["desktop-approver"]
    version: StrictStr
    default_timeout: float
    max_line_bytes: int
    peer: dict[str, int | None]


class RiskInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    level: RiskLevel
    reasons: list[str] = []


class DecisionFields(BaseModel):
    """What the agent is told about one decided call: the fields a ``decision`` and each call of a
    ``batch_decision`` share, declared once and filled from a :class:`~desktop_approver.core.decisions.verdict.Verdict`
    by :meth:`of`, whose attributes carry the same names."""

    model_config = ConfigDict(frozen=True)
    decision: DecisionName
    decided_by: DecidedBy
    note: StrictStr | None = None
    rule: StrictStr | None = None
    blocked: bool
    updated_args: dict[str, Any] | None = None
    risk: RiskInfo

    @classmethod
    def of(cls, verdict: Verdict, **fields: Any) -> Self:
        """The verdict's wire fields plus ``fields`` (``id``, ``index``), validated once."""
        for name in _DECISION_FIELDS:
            fields[name] = getattr(verdict, name)
        return cls(**fields)


_DECISION_FIELDS = tuple(DecisionFields.model_fields)


class _Indexed(BaseModel):
    index: int


# The bases' order puts ``index`` and ``v, type, id`` first on the wire, where they always were. (Comments
# rather than docstrings: a docstring would become the schema's description.)

class CallDecision(DecisionFields, _Indexed):
    pass


class _DecisionHead(_Message):
    type: Literal["decision"] = "decision"
    id: Id


class DecisionMessage(DecisionFields, _DecisionHead):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BatchDecision(_Message):
    type: Literal["batch_decision"] = "batch_decision"
    id: Id
    decisions: list[CallDecision]


class RelayState(BaseModel):
    """The app's NATS relay, in ``status_reply`` (``tray --relay``): where, as whom, and how it goes."""

    model_config = ConfigDict(frozen=True)
    server: StrictStr
    user: StrictStr
    connected: StrictBool
    pending: int
    """Relayed calls waiting for the person in this app now."""


class StatusReply(_Message):
    type: Literal["status_reply"] = "status_reply"
    id: Id
    version: StrictStr
    pid: int
    socket: StrictStr
    pending: int
    mode: StrictStr
    mode_until: float | None = None
    sessions: int = 0
    uptime: float = 0.0
    problems: list[StrictStr] | None = None
    """What the app runs without now (the audit log, the rules file), in words; absent when nothing."""
    relay: RelayState | None = None
    """The relay's state, when the app answers one; absent otherwise."""


class SessionEnded(_Message):
    type: Literal["session_ended"] = "session_ended"
    id: Id
    forgotten: int


class MemoryEntryInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    session: StrictStr
    tool: StrictStr
    scope: Scope
    args: StrictStr | None = None
    agent: StrictStr | None = None
    created: float
    hits: int


class SessionsReply(_Message):
    type: Literal["sessions_reply"] = "sessions_reply"
    id: Id
    entries: list[MemoryEntryInfo]


class Revoked(_Message):
    type: Literal["revoked"] = "revoked"
    id: Id
    count: int


class Shown(_Message):
    """What ``show`` raised: ``shown`` is false where the app has no windows (a service without its GUI)."""

    type: Literal["shown"] = "shown"
    id: Id
    what: ShowWhat
    shown: bool


class Noticed(_Message):
    """The notice reached the app (it is shown unless do-not-disturb holds it back)."""

    type: Literal["noticed"] = "noticed"
    id: Id


ErrorCode = Literal[
    "invalid_utf8", "invalid_json", "line_too_long", "invalid_message", "unknown_type",
    "unsupported_version", "duplicate_id", "unknown_id", "too_many_pending", "unauthorized",
    "shutting_down", "internal", "too_many_connections", "idle_timeout", "overloaded",
]


MessageType = Literal["hello", "request", "batch", "cancel", "status", "end_session", "sessions", "revoke",
                      "notice", "show"]


class ErrorMessage(_Message):
    """A typed refusal. ``id`` and ``in_reply_to`` name the message it answers, when readable: an
    error with ``in_reply_to: "cancel"`` and a pending request's id is about the cancel, not the request."""

    type: Literal["error"] = "error"
    id: Id | None = None
    in_reply_to: MessageType | None = None
    code: ErrorCode
    message: StrictStr


OUTGOING: tuple[type[_Message], ...] = (Welcome, DecisionMessage, BatchDecision, StatusReply, SessionEnded,
                                        SessionsReply, Revoked, Noticed, Shown, ErrorMessage)
