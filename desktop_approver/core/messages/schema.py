"""JSON Schema for every protocol message and for ``policy.toml``, generated from the pydantic models.

``python -m desktop_approver.core.messages.schema`` writes ``ipc/schema/<type>.json`` (one file per message
type), ``ipc/schema/index.json`` and ``ipc/policy.schema.json`` (the policy file, from
:mod:`desktop_approver.core.policy.model`); ``--check`` writes nothing and exits 1 naming the stale
files, so a model change without regenerated schemas fails the tests. Output is deterministic
(sorted keys, two-space indent, trailing newline) so regenerating is a no-op when nothing changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ...client import wire
from . import models
from .protocol import MAX_DEPTH

DRAFT = "https://json-schema.org/draft/2020-12/schema"
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "ipc" / "schema"
INDEX = "index.json"
POLICY_SCHEMA = DEFAULT_DIR.parent / "policy.schema.json"

CLIENT_MESSAGES: dict[str, type[BaseModel]] = dict(models.INCOMING)
APP_MESSAGES: dict[str, type[BaseModel]] = {
    "welcome": models.Welcome, "decision": models.DecisionMessage, "batch_decision": models.BatchDecision,
    "status_reply": models.StatusReply, "session_ended": models.SessionEnded, "sessions_reply": models.SessionsReply,
    "revoked": models.Revoked, "noticed": models.Noticed, "shown": models.Shown, "error": models.ErrorMessage,
}
SUMMARIES = {
    "hello": "client to app: optional first message; says who the agent is and carries the token when one is required",
    "request": "client to app: ask whether one tool call may run; answered by one decision",
    "batch": "client to app: several calls under one prompt; answered by one batch_decision",
    "cancel": "client to app: withdraw a pending request or batch; the request is answered with a decision, the "
              "batch with a batch_decision of one entry per call, each a deny decided_by cancelled",
    "status": "client to app: is the app running, and how busy; answered by status_reply",
    "end_session": "client to app: the agent's session is over; answered by session_ended",
    "sessions": "client to app: list what allow_session remembers; answered by sessions_reply",
    "revoke": "client to app: forget remembered approvals; answered by revoked",
    "notice": "client to app: tell the person the agent waits for them or finished (shown, never decides anything); "
              "answered by noticed",
    "show": "client to app: the person asks to see the waiting request, the inbox or the history (raises a window, "
            "never decides anything); answered by shown",
    "welcome": "app to client: the answer to hello",
    "decision": "app to client: the outcome of one request",
    "batch_decision": "app to client: one decision per call of a batch, in the calls' order",
    "status_reply": "app to client: the answer to status",
    "session_ended": "app to client: the answer to end_session",
    "sessions_reply": "app to client: the answer to sessions",
    "revoked": "app to client: the answer to revoke",
    "noticed": "app to client: the answer to notice",
    "shown": "app to client: the answer to show",
    "error": "app to client: a typed refusal of a message",
}


def message_schema(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    """One message's schema: pydantic's, made stricter where the wire is stricter than the model."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    # ``v`` and ``type`` have defaults in the models, but a line without them is refused (and the
    # app always sends them), so on the wire they are required.
    required = [name for name in ("v", "type") if name not in schema.get("required", [])]
    schema["required"] = required + schema.get("required", [])
    schema["description"] = SUMMARIES[kind] + (f". {schema['description']}" if schema.get("description") else "")
    schema["$schema"] = DRAFT
    schema["$id"] = f"{kind}.json"
    _accept_field_names(schema, model)
    if kind in CLIENT_MESSAGES:
        _null_is_absent(schema)
    _drop_property_titles(schema)
    _translate_constraints(schema)
    return schema


PYDANTIC_CONSTRAINTS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}


def _translate_constraints(node: Any) -> None:
    """Bounds on a union (``Timeout``: int or float, > 0) come out under pydantic's own names,
    which JSON Schema ignores; give them their JSON Schema names so validators enforce them."""
    if isinstance(node, dict):
        if "anyOf" in node:
            for ours, theirs in PYDANTIC_CONSTRAINTS.items():
                if ours in node:
                    node[theirs] = node.pop(ours)
        for value in node.values():
            _translate_constraints(value)
    elif isinstance(node, list):
        for value in node:
            _translate_constraints(value)


def _accept_field_names(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Models that populate by name accept both spellings (``readOnlyHint`` and ``read_only``)."""
    for definition in [schema, *schema.get("$defs", {}).values()]:
        found = _model_named(model, definition.get("title"))
        if found is None or not found.model_config.get("populate_by_name"):
            continue
        for name, field in found.model_fields.items():
            if field.alias and field.alias != name and field.alias in definition["properties"]:
                definition["properties"][name] = dict(definition["properties"][field.alias])


def _null_is_absent(schema: dict[str, Any]) -> None:
    """Every optional field of a client message may be sent as null, read as left out (the models'
    ``_NullIsAbsent``): pydantic says so only for fields whose default is null, so say it for the
    others too (``format``, ``show.what``, ``hello.client``)."""
    for definition in [schema, *schema.get("$defs", {}).values()]:
        required = set(definition.get("required", []))
        properties = definition.get("properties", {})
        for name, prop in properties.items():
            if name in required or _allows_null(prop):
                continue
            widened: dict[str, Any] = {"anyOf": [prop, {"type": "null"}]}
            for kept in ("default", "description", "title"):
                if kept in prop:
                    widened[kept] = prop.pop(kept)
            properties[name] = widened


def _allows_null(prop: dict[str, Any]) -> bool:
    kinds = prop.get("type")
    return kinds == "null" or (isinstance(kinds, list) and "null" in kinds) or any(
        _allows_null(option) for option in prop.get("anyOf", []))


def _model_named(root: type[BaseModel], title: object) -> type[BaseModel] | None:
    candidates: list[type[BaseModel]] = [root, models.Hints, models.ToolCall, models.ClientInfo]
    return next((candidate for candidate in candidates if candidate.__name__ == title), None)


def _drop_property_titles(node: Any) -> None:
    """pydantic titles every property with its own name capitalised: noise in a schema for people."""
    if isinstance(node, dict):
        for value in node.get("properties", {}).values():
            if isinstance(value, dict):
                value.pop("title", None)
        for value in node.values():
            _drop_property_titles(value)
    elif isinstance(node, list):
        for value in node:
            _drop_property_titles(value)


def index_schema() -> dict[str, Any]:
    """Any message at all: a oneOf over the per-type files, plus the numbers a client needs."""
    return {
        "$schema": DRAFT,
        "$id": INDEX,
        "title": "desktop-approver protocol message",
        "description": "One line of the protocol (see PROTOCOL.md). x-client-messages are sent by agents, "
                       "x-app-messages by the app.",
        "x-protocol-version": wire.PROTOCOL_VERSION,
        "x-max-line-bytes": wire.MAX_LINE_BYTES,
        "x-max-depth": MAX_DEPTH,
        "x-client-messages": {kind: f"{kind}.json" for kind in CLIENT_MESSAGES},
        "x-app-messages": {kind: f"{kind}.json" for kind in APP_MESSAGES},
        "oneOf": [{"$ref": f"{kind}.json"} for kind in [*CLIENT_MESSAGES, *APP_MESSAGES]],
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generated() -> dict[str, str]:
    """File name to file content, for every file of the schema directory."""
    files = {f"{kind}.json": render(message_schema(kind, model))
             for kind, model in [*CLIENT_MESSAGES.items(), *APP_MESSAGES.items()]}
    files[INDEX] = render(index_schema())
    return files


def stale(directory: Path) -> list[str]:
    """Files that differ from what the models generate, are missing, or should not be there."""
    expected = generated()
    present = {path.name for path in directory.glob("*.json")} if directory.is_dir() else set()
    wrong = [name for name, text in expected.items()
             if name not in present or (directory / name).read_text(encoding="utf-8") != text]
    return sorted(wrong + [name for name in present if name not in expected])


def write(directory: Path) -> list[str]:
    """Bring ``directory`` up to date; returns the names of the files that changed."""
    changed = stale(directory)
    directory.mkdir(parents=True, exist_ok=True)
    expected = generated()
    for name in changed:
        if name in expected:
            (directory / name).write_text(expected[name], encoding="utf-8")
        else:
            (directory / name).unlink()
    return changed


def policy_schema() -> dict[str, Any]:
    """The schema of ``policy.toml`` as TOML writes it: absent keys, never nulls; one shared ``glob``."""
    from ..policy.globs import BAD_DOUBLE_STAR, GLOB, GLOB_HELP, PATH_GLOB_HELP
    from ..policy.model import PolicyFile

    schema = PolicyFile.model_json_schema(mode="validation")
    _drop_nulls(schema)
    _drop_property_titles(schema)
    shared: dict[str, tuple[dict[str, Any], str]] = {
        "glob": ({"pattern": GLOB, "type": "string"}, GLOB_HELP),
        "path_glob": ({"pattern": GLOB, "type": "string", "not": {"pattern": BAD_DOUBLE_STAR}}, PATH_GLOB_HELP)}
    for name, (inline, description) in shared.items():
        schema = _shared(schema, inline, {"$ref": f"#/$defs/{name}"})
        schema["$defs"][name] = {**inline, "description": description}
    schema["$schema"] = DRAFT
    schema["$id"] = POLICY_SCHEMA.name
    schema["description"] += (" Validate a file with `desktop-approver policy check`; the app refuses a file with "
                              "its line and reason and keeps the last good rules.")
    return schema


def _drop_nulls(node: Any) -> None:
    """Optional keys come out as ``anyOf [..., null]`` with ``default: null``; TOML has no null."""
    if isinstance(node, dict):
        branches = node.get("anyOf")
        if isinstance(branches, list) and {"type": "null"} in branches:
            branches.remove({"type": "null"})
            if node.get("default", 0) is None:
                del node["default"]
            if len(branches) == 1:
                node.update(node.pop("anyOf")[0])
        for value in node.values():
            _drop_nulls(value)
    elif isinstance(node, list):
        for value in node:
            _drop_nulls(value)


def _shared(node: Any, inline: dict[str, Any], ref: dict[str, Any]) -> Any:
    """``node`` with every copy of the ``inline`` subschema replaced by ``ref``."""
    if node == inline:
        return dict(ref)
    if isinstance(node, dict):
        return {key: _shared(value, inline, ref) for key, value in node.items()}
    if isinstance(node, list):
        return [_shared(value, inline, ref) for value in node]
    return node


def generated_policy() -> str:
    """The content of ``ipc/policy.schema.json``."""
    return render(policy_schema())


def policy_stale(path: Path) -> bool:
    return not path.is_file() or path.read_text(encoding="utf-8") != generated_policy()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m desktop_approver.core.messages.schema",
                                     description="Generate ipc/schema/*.json and ipc/policy.schema.json from the "
                                                 "pydantic models. With --out or --policy-out, only what is named.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any file is stale")
    parser.add_argument("--out", type=Path, help=f"message schema directory (default: {DEFAULT_DIR})")
    parser.add_argument("--policy-out", type=Path, metavar="FILE",
                        help=f"policy.toml schema file (default: {POLICY_SCHEMA})")
    args = parser.parse_args(argv)
    out, policy_out = args.out, args.policy_out
    if out is None and policy_out is None:
        out, policy_out = DEFAULT_DIR, POLICY_SCHEMA
    if args.check:
        paths = [out / name for name in stale(out)] if out is not None else []
        paths += [policy_out] if policy_out is not None and policy_stale(policy_out) else []
        for path in paths:
            print(f"stale: {path}", file=sys.stderr)
        if paths:
            print("regenerate with: python -m desktop_approver.core.messages.schema", file=sys.stderr)
        return 1 if paths else 0
    for name in write(out) if out is not None else []:
        print(f"wrote {out / name}")
    if policy_out is not None and policy_stale(policy_out):
        policy_out.parent.mkdir(parents=True, exist_ok=True)
        policy_out.write_text(generated_policy(), encoding="utf-8")
        print(f"wrote {policy_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
