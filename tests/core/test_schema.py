"""ipc/schema is generated from the models and must not go stale; the golden examples obey it."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel
from referencing import Registry, Resource

from desktop_approver.client import wire
from desktop_approver.core.messages import models, schema
from desktop_approver.core.messages.protocol import decode
from tests.core.test_golden import EXAMPLES, fill, step_bytes

IPC = Path(__file__).resolve().parents[2] / "ipc"


def validator() -> jsonschema.protocols.Validator:
    """A validator for any message (index.json), with every per-type file registered by its $id."""
    files = {name: json.loads(text) for name, text in schema.generated().items()}
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(contents)) for name, contents in files.items())
    index = files[schema.INDEX]
    jsonschema.Draft202012Validator.check_schema(index)
    return jsonschema.Draft202012Validator(index, registry=registry)


def test_schema_files_are_up_to_date() -> None:
    stale = schema.stale(IPC / "schema")
    assert not stale, f"stale: {stale}; regenerate with `python -m desktop_approver.core.messages.schema`"


def test_output_is_deterministic_and_tidy() -> None:
    first, second = schema.generated(), schema.generated()
    assert first == second
    assert set(first) == {f"{kind}.json" for kind in [*schema.CLIENT_MESSAGES, *schema.APP_MESSAGES]} | {"index.json"}
    for name, text in first.items():
        assert text.endswith("}\n") and not text.endswith("\n\n"), name
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n", name
        jsonschema.Draft202012Validator.check_schema(json.loads(text))


def test_check_names_stale_files_and_write_fixes_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert schema.main(["--out", str(tmp_path)]) == 0
    assert schema.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "decision.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "status.json").unlink()
    (tmp_path / "leftover.json").write_text("{}\n", encoding="utf-8")
    capsys.readouterr()
    assert schema.main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert all(name in err for name in ("decision.json", "status.json", "leftover.json"))
    assert "request.json" not in err
    assert schema.main(["--out", str(tmp_path)]) == 0
    assert schema.main(["--check", "--out", str(tmp_path)]) == 0
    assert not (tmp_path / "leftover.json").exists()


def test_wire_rules_are_in_the_schema() -> None:
    check = validator()
    good = {"v": 1, "type": "request", "id": "r1", "tool": "Bash", "args": {}}
    assert check.is_valid(good)
    assert check.is_valid({**good, "hints": {"readOnlyHint": True}})
    assert check.is_valid({**good, "hints": {"read_only": True}})
    assert not check.is_valid({key: value for key, value in good.items() if key != "v"})
    assert not check.is_valid({**good, "surprise": 1})
    assert not check.is_valid({**good, "v": 2})
    assert not check.is_valid({**good, "timeout": 0})
    error_codes = json.loads(schema.generated()["error.json"])["properties"]["code"]["enum"]
    assert error_codes == list(typing.get_args(models.ErrorCode))


def golden_messages() -> list[tuple[str, str, dict[str, Any]]]:
    """(where, direction, the whole step): a sent message is judged as its line sends it."""
    return [(f"{example.name}:{number}", step["dir"], step) for example in EXAMPLES
            for number, step in enumerate(example.steps, 1) if "msg" in step]


@pytest.mark.parametrize("where, direction, step", golden_messages(), ids=lambda value: value if
                         isinstance(value, str) and ":" in value else "")
def test_golden_messages_obey_the_schema(where: str, direction: str, step: dict[str, Any]) -> None:
    check = validator()
    message = step["msg"]
    if direction == "recv":
        errors = [error.message for error in check.iter_errors(fill(message))]
        assert not errors, f"{where}: {errors}"
    else:
        # A sent message may be deliberately bad; the schema must judge it as the app does (as sent).
        accepted = isinstance(decode(step_bytes(step)[:-1]), BaseModel)
        assert check.is_valid(message) == accepted, where


def test_protocol_doc_covers_every_message_and_error_code() -> None:
    text = (IPC / "PROTOCOL.md").read_text(encoding="utf-8")
    for kind in [*schema.CLIENT_MESSAGES, *schema.APP_MESSAGES]:
        assert f"`{kind}`" in text, kind
    for code in typing.get_args(models.ErrorCode):
        assert f"`{code}`" in text, code
    for decided_by in typing.get_args(models.DecidedBy):
        assert f"`{decided_by}`" in text, decided_by
    assert str(wire.MAX_LINE_BYTES) in text


def test_protocol_doc_includes_the_recognised_previews() -> None:
    recognised = (Path(__file__).resolve().parents[2] / "desktop_approver" / "render" / "RECOGNISED.md")
    body = recognised.read_text(encoding="utf-8").split("\n", 1)[1].strip()
    assert body in (IPC / "PROTOCOL.md").read_text(encoding="utf-8")


REQUEST = {"v": 1, "type": "request", "id": "q29", "tool": "deploy", "args": {}}


def with_preview(preview: dict[str, Any]) -> dict[str, Any]:
    return {**REQUEST, "preview": preview}


NULLS = [  # (message, accepted): null is the same as absent for an optional field (PROTOCOL.md, "Client to app")
    (with_preview({"kind": "command", "command": None, "argv": ["ls"]}), True),
    (with_preview({"kind": "command", "command": "ls", "argv": None}), True),
    (with_preview({"kind": "command", "command": "ls", "argv": None, "cwd": None}), True),
    (with_preview({"kind": "command", "command": None, "argv": None}), False),
    (with_preview({"kind": "command", "command": None}), False),
    (with_preview({"kind": "command", "command": "ls", "argv": ["ls"]}), False),
    (with_preview({"kind": "diff", "old": "a", "new": "b", "unified": None}), True),
    (with_preview({"kind": "diff", "old": None, "new": None, "unified": "@@ -1 +1 @@"}), True),
    (with_preview({"kind": "diff", "old": None, "unified": "@@ -1 +1 @@", "path": None}), True),
    (with_preview({"kind": "diff", "old": None, "new": "b", "unified": "@@ -1 +1 @@"}), False),
    (with_preview({"kind": "diff", "old": "a", "new": None, "unified": None}), False),
    (with_preview({"kind": "diff", "old": None, "new": None, "unified": None}), False),
    (with_preview({"kind": "diff", "old": "a", "new": "b", "unified": "@@"}), False),
    (with_preview({"kind": "file_write", "path": "/p", "content": "c", "old": None}), True),
    (with_preview({"kind": "file_write", "path": "/p", "content": None}), False),   # required: null is no value
    (with_preview({"kind": "text", "text": "t", "format": None}), True),
    (with_preview({"kind": "text", "text": "t", "format": "html"}), False),
    (with_preview({"kind": "text", "text": None}), False),
    ({**REQUEST, "preview": None, "hints": None, "session": None, "description": None, "timeout": None}, True),
    ({**REQUEST, "tool": None}, False),
    ({**REQUEST, "args": None}, False),
    ({"v": 1, "type": "batch", "id": "b", "calls": [{"tool": "t", "args": {}, "preview": None, "hints": None,
                                                     "description": None}], "session": None, "timeout": None}, True),
    ({"v": 1, "type": "batch", "id": "b", "calls": [{"tool": "t", "args": {},
                                                     "preview": {"kind": "command", "command": None, "argv": ["ls"]}}]},
     True),
    ({"v": 1, "type": "show", "id": "m", "what": None}, True),
    ({"v": 1, "type": "show", "id": "m", "what": "desktop"}, False),
    ({"v": 1, "type": "hello", "client": None, "token": None}, True),
    ({"v": 1, "type": "hello", "client": {"agent": None, "pid": None}}, True),
    ({"v": 1, "type": "revoke", "id": "m", "session": None, "tool": None}, True),
    ({"v": 1, "type": "notice", "id": "m", "kind": "info", "text": "hi", "session": None}, True),
    ({"v": 1, "type": "end_session", "id": "m", "session": None}, False),           # required
    ({"v": 1, "type": "status", "id": None}, False),
    ({**REQUEST, "hints": {"title": None, "readOnlyHint": None, "read_only": None}}, True),  # neither given
    ({**REQUEST, "hints": {"readOnlyHint": True, "read_only": None}}, True),        # one spelling given
    ({**REQUEST, "hints": {"readOnlyHint": True, "read_only": False}}, False),      # both given
    ({**REQUEST, "hints": {"title": None, "readOnlyHint": None, "x-vendor": None}}, True),
    ({**REQUEST, "hints": {"title": "Deploy"}}, True),
    ({**REQUEST, "hints": {"title": 5}}, False),      # title is text; other annotations may be numbers
    ({**REQUEST, "hints": {"title": True}}, False),
    ({**REQUEST, "hints": {"priority": 5, "x-flag": True}}, True),
]


@pytest.mark.parametrize("message, accepted", NULLS, ids=lambda value: "" if isinstance(value, bool) else None)
def test_the_schema_and_the_app_accept_and_refuse_the_same_nulls(message: dict[str, Any], accepted: bool) -> None:
    app = decode(wire.encode(message)[:-1])
    assert isinstance(app, BaseModel) == accepted, app
    errors = [error.message for error in validator().iter_errors(message)]
    assert (not errors) == accepted, errors


def test_a_null_optional_field_takes_its_default() -> None:
    text = decode(wire.encode(with_preview({"kind": "text", "text": "t", "format": None}))[:-1])
    assert isinstance(text, models.Request) and isinstance(text.preview, models.TextPreview)
    assert text.preview.format == "plain"
    show = decode(b'{"v": 1, "type": "show", "id": "m", "what": null}')
    assert isinstance(show, models.Show) and show.what == "request"
    hello = decode(b'{"v": 1, "type": "hello", "client": null}')
    assert isinstance(hello, models.Hello) and hello.client == models.ClientInfo()


def optional_properties(node: Any, where: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every property of every object schema under ``node`` that is not required."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            required = set(node.get("required", []))
            found += [(f"{where}.{name}", prop) for name, prop in node["properties"].items() if name not in required]
        for key, value in node.items():
            found += optional_properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += optional_properties(value, f"{where}[{index}]")
    return found


def test_every_optional_field_of_a_client_message_may_be_null() -> None:
    """The rule is stated once and holds everywhere: no optional field refuses null."""
    for kind in schema.CLIENT_MESSAGES:
        document = json.loads(schema.generated()[f"{kind}.json"])
        for where, prop in optional_properties(document):
            if where.count(".") == 1 and "/oneOf" in where:  # the "given, not as null" tests of a preview's form
                continue
            allowed = jsonschema.Draft202012Validator({**prop, "$defs": document.get("$defs", {})}).is_valid(None)
            assert allowed, f"{kind}.json{where} refuses null"


def test_the_null_rule_is_stated_once_without_exceptions() -> None:
    text = (IPC / "PROTOCOL.md").read_text(encoding="utf-8")
    assert text.count("**Optional fields and `null`.**") == 1
    assert "except `hello.client`" not in text


@pytest.mark.parametrize("name, alias", models.HINT_SPELLINGS)
def test_a_hint_spelled_twice_with_one_null_keeps_the_other(name: str, alias: str) -> None:
    """Null is absent: the spelling sent as null never hides the other's value (a destructive hint
    that vanished would leave the risk lower than the agent said)."""
    for given, null in ((name, alias), (alias, name)):
        for order in ((given, null), (null, given)):
            hints = {key: (True if key == given else None) for key in order}
            message = decode(wire.encode({**REQUEST, "hints": hints})[:-1])
            assert isinstance(message, models.Request) and message.hints is not None, message
            assert message.hints.as_dict() == {name: True}, (order, message.hints.as_dict())


def client_models() -> set[type[BaseModel]]:
    """Every model a client message is read with, nested ones included."""
    found: set[type[BaseModel]] = set()
    todo: list[Any] = list(models.INCOMING.values())
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item not in found:
                found.add(item)
                todo.extend(field.annotation for field in item.model_fields.values())
        else:
            todo.extend(typing.get_args(item))
    return found


def test_every_client_model_reads_a_null_optional_field_as_absent() -> None:
    """Where an optional field's default is not null, the model reads null as absent itself
    (``_NullIsAbsent``); everywhere else null is the default, which comes to the same."""
    needing = set()
    for model in client_models():
        for name, field in model.model_fields.items():
            if name not in ("v", "type") and not field.is_required() and field.get_default() is not None:
                needing.add(model)
                assert issubclass(model, models._NullIsAbsent), f"{model.__name__}.{name} would refuse null"
    assert {model.__name__ for model in needing} == {"Hello", "Show", "TextPreview"}
