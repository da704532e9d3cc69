"""The catalog as data: every shipped file has the documented shape, every entry is exercised by a
labelled row, a malformed entry is refused with where it is, and a policy file extends it."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls import catalog as catalog_module
from desktop_approver.core.calls.catalog import (
    CatalogError,
    catalog,
    data_files,
    extend_catalog,
    parse_catalog,
    shipped_catalog,
    use_catalog,
)
from desktop_approver.core.calls.reading import read_call, unwrap_call
from desktop_approver.core.calls.risk import assess, assess_command
from desktop_approver.core.calls.risk.roles import tool_entry
from desktop_approver.core.policy import Policy, PolicyError
from tests.core.understood_tables import rows


@pytest.fixture(autouse=True)
def shipped_only() -> Iterator[None]:
    """Every test starts and ends with the shipped catalog alone (an extension is process-wide)."""
    use_catalog(None)
    yield
    use_catalog(None)


def test_every_shipped_file_loads_and_has_one_family() -> None:
    names = data_files()
    assert {"shell.toml", "git.toml", "python.toml", "node.toml", "go.toml", "rust.toml", "java_c.toml",
            "containers.toml", "infra.toml", "network.toml", "files.toml", "system.toml", "tools.toml",
            "environment.toml", "credentials.toml"} <= set(names)
    folder = resources.files(catalog_module.__name__)
    for name in names:
        data = tomllib.loads(folder.joinpath(name).read_text(encoding="utf-8"))
        parse_catalog(data, name)   # each file is valid on its own, not only in the sum
    found = shipped_catalog()
    assert len(found.programs) >= 250 and len(found.tools) >= 100
    assert found.harmless_variables and found.program_variables and found.credential_names


def _exercised() -> tuple[set[str], set[str]]:
    programs: set[str] = set()
    tools: set[str] = set()
    known = catalog()
    for row in rows():
        tool, args = unwrap_call(row["tool"], row["args"])
        entry = tool_entry(known, tool, args if isinstance(args, dict) else {})
        if entry is not None:
            tools.add(entry.name)
        for program in read_call(tool, args, row["cwd"]).programs:
            programs.add(program.name)
            if "-m" in program.argv[:-1]:
                programs.add(program.argv[program.argv.index("-m") + 1])
    return programs, tools


def test_every_program_and_tool_entry_is_exercised_by_a_labelled_row() -> None:
    programs, tools = _exercised()
    known = shipped_catalog()
    assert sorted(set(known.programs) - programs) == []
    assert sorted(set(known.tools) - tools) == []


@pytest.mark.parametrize(("data", "problem"), [
    ({"program": {"x": {"flg": "-a"}}}, "unknown key(s) ['flg']"),
    ({"program": {"x": {"flag": "a"}}}, "'a' is not an option"),
    ({"program": {"x": {"flag": "-a", "value": "-a"}}}, "-a is listed as flag and value"),
    ({"program": {"x": {"operands": "paths"}}}, "'paths' is not one of"),
    ({"program": {"x": {"effect": "explodes"}}}, "'explodes' is not one of"),
    ({"program": {"x": {"setting": "-c"}}}, "need a settings list"),
    ({"program": {"x": {"sub": {"y": {"read": 3}}}}}, "expected a string of words"),
    ({"tool": {"t": {"args": {"path": "reads"}}}}, "'reads' is not one of"),
    ({"tool": {"t": {"argz": {}}}}, "unknown key(s) ['argz']"),
    ({"environment": {"safe": ["X"]}}, "unknown key(s) ['safe']"),
    ({"programs": {}}, "unknown table(s) ['programs']"),
])
def test_a_malformed_entry_is_refused_naming_where_it_is(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(data, "mine.toml")
    assert problem in str(caught.value) and str(caught.value).startswith("mine.toml")


def test_a_subcommand_takes_its_programs_options_unless_the_entry_says_not() -> None:
    known = shipped_catalog()
    assert known.programs["kubectl"].subcommands["get"].options["-n"] == "value"       # kubectl get -n ns
    assert "-C" not in known.programs["git"].subcommands["status"].options             # git: -C means other things


def test_extending_adds_a_program_and_keeps_the_shipped_entries() -> None:
    extended = extend_catalog({"program": {"acme-sync": {"flag": "--dry", "operands": "read"}}})
    assert "acme-sync" in extended.programs and "git" in extended.programs
    assert "acme-sync" not in shipped_catalog().programs


def test_using_an_extension_changes_what_is_understood_and_cached_answers_follow() -> None:
    before = assess_command("acme-sync --dry", cwd="/home/dev/proj")
    assert not before.understood and before.gaps == ("program `acme-sync`",)
    use_catalog({"program": {"acme-sync": {"flag": "--dry"}}})
    assert assess_command("acme-sync --dry", cwd="/home/dev/proj").understood
    use_catalog(None)
    assert not assess_command("acme-sync --dry", cwd="/home/dev/proj").understood


def test_a_malformed_extension_keeps_the_catalog_in_use() -> None:
    use_catalog({"program": {"acme-sync": {"flag": "--dry"}}})
    with pytest.raises(CatalogError):
        use_catalog({"program": {"other": {"flag": "x"}}})
    assert "acme-sync" in catalog().programs


def test_a_policy_files_catalog_table_extends_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('version = 1\n\n[catalog.tool.acme_sync]\nargs = {target = "option"}\n', encoding="utf-8")
    assert not assess("mcp__acme__acme_sync", {"target": "prod"}, cwd="/home/dev/proj").understood
    Policy.load(path)
    assert assess("mcp__acme__acme_sync", {"target": "prod"}, cwd="/home/dev/proj").understood


def test_a_policy_files_malformed_catalog_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('version = 1\n\n[catalog.program.acme]\nflg = "--x"\n', encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        Policy.load(path)
    assert "unknown key(s) ['flg']" in str(caught.value)


def test_credential_files_of_the_catalog_are_secrets_and_their_configuration_is_not() -> None:
    for path in ("~/.config/gh/hosts.yml", "~/.codex/auth.json", "~/.aws/credentials",
                 "~/.terraform.d/credentials.tfrc.json"):
        assert assess("Read", {"file_path": path}, cwd="/home/dev/proj").level == "destructive", path
    for path in ("~/.aws/config", "~/.config/gh/config.yml"):
        assert assess("Read", {"file_path": path}, cwd="/home/dev/proj").level == "safe", path
