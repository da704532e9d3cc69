"""ipc/policy.schema.json: generated from the policy's model, never stale, and it judges the example
policies of the docs and the tests as the app does."""

from __future__ import annotations

import ast
import json
import re
import tomllib
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from desktop_approver.core.messages import schema
from desktop_approver.core.policy import Policy, PolicyError
from tests.core.test_policy import POLICY as TEST_POLICY

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "ipc" / "policy.schema.json"
SCHEMA_LINE = "#:schema https://raw.githubusercontent.com/desktop-approver/desktop-approver/main/ipc/policy.schema.json"


def as_json(value: Any) -> Any:
    """A TOML document as an editor hands it to a JSON Schema validator: dates become text."""
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    return value


def validators() -> list[jsonschema.protocols.Validator]:
    """The published schema as draft 2020-12 says, and as an editor still on draft 7 reads it."""
    published = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(published)
    return [jsonschema.Draft202012Validator(published), jsonschema.Draft7Validator(published)]


def toml_blocks(path: Path) -> list[str]:
    return re.findall(r"^```toml\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def example_policies() -> list[tuple[str, str]]:
    """Every policy the repository shows people, and the one the policy tests run against."""
    found = [(f"{path.relative_to(ROOT)} block {number}", text)
             for path in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
             for number, text in enumerate(toml_blocks(path), 1) if re.search(r"^\[\[rule\]\]|^\[tools\]", text, re.M)]
    assert len(found) >= 2, found
    return [*found, ("tests/core/test_policy.py POLICY", TEST_POLICY)]


def test_the_schema_file_is_up_to_date() -> None:
    assert schema.main(["--check"]) == 0, "regenerate with `python -m desktop_approver.core.messages.schema`"
    assert not schema.policy_stale(SCHEMA_FILE)


def test_check_names_a_stale_policy_schema_and_writing_fixes_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "policy.schema.json"
    assert schema.main(["--check", "--policy-out", str(target)]) == 1
    assert f"stale: {target}" in capsys.readouterr().err
    assert schema.main(["--policy-out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == SCHEMA_FILE.read_text(encoding="utf-8")
    assert schema.main(["--check", "--policy-out", str(target)]) == 0
    assert not (tmp_path / "index.json").exists()       # --policy-out alone writes only the policy schema
    target.write_text("{}\n", encoding="utf-8")
    assert schema.main(["--check", "--policy-out", str(target)]) == 1


def test_the_schema_is_tidy_and_speaks_toml() -> None:
    text = schema.generated_policy()
    assert text == schema.generated_policy() and text.endswith("}\n")
    published = json.loads(text)
    assert published["$schema"] == schema.DRAFT and published["$id"] == "policy.schema.json"
    assert '"null"' not in text, "TOML has no null: an absent key is how a rule leaves a condition out"
    assert published["additionalProperties"] is False
    assert published["$defs"]["RuleTable"]["required"] == ["action"]


EXAMPLES = example_policies()


@pytest.mark.parametrize(("where", "text"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_the_example_policies_obey_the_schema(where: str, text: str) -> None:
    Policy.parse(text, where)                          # the app takes it...
    document = as_json(tomllib.loads(text))
    for validator in validators():                     # ...and so does an editor
        errors = [error.message for error in validator.iter_errors(document)]
        assert not errors, f"{where}: {errors}"


def test_the_schema_line_the_docs_give_is_a_comment_the_app_ignores() -> None:
    docs = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    assert SCHEMA_LINE in docs and SCHEMA_LINE in (ROOT / "ipc" / "README.md").read_text(encoding="utf-8")
    assert len(Policy.parse(SCHEMA_LINE + "\n" + TEST_POLICY)) == len(Policy.parse(TEST_POLICY))


BAD = [
    ('[[rule]]\naction = "alow"\n', "a misspelt action"),
    ('[[rule]]\naction = "allow"\ncomand = "ls"\n', "an unknown key"),
    ('[[rule]]\ntool = "Bash"\n', "no action"),
    ('[[rule]]\naction = "allow"\ntool = 3\n', "a number for a pattern"),
    ('[[rule]]\naction = "allow"\ncommand = []\n', "an empty list"),
    ('[[rule]]\naction = "allow"\ncommand = "ls [abc"\n', "an unclosed '['"),
    ('[[rule]]\naction = "allow"\npath = "./scratch**"\n', "'**' not a whole path component"),
    ('[[rule]]\naction = "allow"\ncwd = ["~/work/**", "src/***"]\n', "'***' as a component"),
    ('[[rule]]\naction = "allow"\ntool = "  "\n', "a blank pattern"),
    ('[[rule]]\naction = "allow"\nrisk = ["safe", "low"]\n', "an unknown risk"),
    ('[[rule]]\naction = "allow"\noperation = "execute"\n', "an unknown operation"),
    ('[[rule]]\naction = "allow"\nnote = 1\n', "a number for a note"),
    ('version = 2\n', "another version"),
    ('rules = []\n', "an unknown top-level key"),
    ('"$schema" = "policy.schema.json"\n', "the schema as a key rather than a comment"),
    ('rule = 3\n', "'rule' not as tables"),
    ('[tools]\nWrite = "maybe"\n', "a misspelt action in [tools]"),
    ('[tools]\nBash = true\n', "a boolean action in [tools]"),
    ('[tools]\n"mcp__[x" = "allow"\n', "an unclosed '[' in a [tools] name"),
]


@pytest.mark.parametrize(("text", "what"), BAD, ids=[what for _, what in BAD])
def test_the_schema_rejects_what_the_app_refuses(text: str, what: str) -> None:
    with pytest.raises(PolicyError):
        Policy.parse(text)
    document = as_json(tomllib.loads(text))
    for validator in validators():
        assert not validator.is_valid(document), what


def test_the_schema_and_the_app_agree_on_every_policy_the_tests_write() -> None:
    """Each policy file written in the tests (valid or not) is judged alike by the app and the
    schema, but for the one thing the schema leaves to the app: an ``expires`` string that is no date."""
    judged = 0
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and re.search(r"^\s*\[\[rule\]\]|^\s*\[tools\]", node.value, re.M)):
                continue
            try:
                document = as_json(tomllib.loads(node.value))
            except tomllib.TOMLDecodeError:
                continue        # a syntax error: neither gets that far
            try:
                Policy.parse(node.value)
            except PolicyError as error:
                app, why = False, error.reason
            else:
                app, why = True, ""
            judged += 1
            if "is not a date or date-time" not in why:
                assert validators()[0].is_valid(document) == app, f"{path.name}:{node.lineno}: {why or 'accepted'}"
    assert judged > 50
