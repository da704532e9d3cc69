"""The pydantic model of policy.toml: a refused rule or file says exactly what the person reads,
on the line it is written, and only the first problem as the file reads, top to bottom."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from desktop_approver.core.policy import Policy, PolicyError, render_rule, rule_from_dict
from desktop_approver.core.policy.globs import BAD_DOUBLE_STAR, GLOB, _check_brackets, check_path_glob
from desktop_approver.core.policy.model import PolicyFile, RuleTable

EXPECTED_KEYS = "action, tool, command, path, operation, agent, cwd, risk, note, expires"


@pytest.mark.parametrize(("text", "line", "reason"), [
    # an unknown key, on its own line
    ('[[rule]]\naction = "allow"\ntool = "Bash"\ncomand = "ls"\n', 4,
     f"rule 1: unknown key 'comand' (expected one of {EXPECTED_KEYS})"),
    # wrong types
    ('[[rule]]\naction = "deny"\nnote = 3\n', 3, "rule 1: 'note' must be a string"),
    ('[[rule]]\naction = "deny"\ncommand = []\n', 3,
     "rule 1: 'command' must be a string or a non-empty list of strings"),
    ('[[rule]]\naction = "deny"\npath = ["./a", 1]\n', 3,
     "rule 1: 'path' must be a string or a non-empty list of strings"),
    ('[[rule]]\naction = "deny"\nexpires = 2026\n', 3,
     "rule 1: 'expires' must be a date or date-time, such as 2026-12-01T00:00:00Z"),
    ('[[rule]]\naction = "deny"\nexpires = "tomorrow"\n', 3, "rule 1: 'expires' 'tomorrow' is not a date or date-time"),
    # bad actions and choices
    ('[[rule]]\naction = "permit"\n', 2, "rule 1: unknown action 'permit' (expected allow, ask, deny or block)"),
    ('[[rule]]\naction = ["allow"]\n', 2, "rule 1: unknown action ['allow'] (expected allow, ask, deny or block)"),
    ('[[rule]]\ntool = "x"\n', 1, "rule 1: missing 'action' (allow, ask, deny or block)"),
    ('[[rule]]\naction = "ask"\noperation = ["read", "exec"]\n', 3,
     "rule 1: unknown operation 'exec' (expected read, write, delete)"),
    ('[[rule]]\naction = "ask"\nrisk = "high"\n', 3,
     "rule 1: unknown risk 'high' (expected safe, moderate, destructive)"),
    # bad globs
    ('[[rule]]\naction = "allow"\ntool = "mcp__[ab"\n', 3,
     "rule 1: bad tool pattern: unclosed '[' in 'mcp__[ab' (write '[[]' for a literal '[')"),
    ('[[rule]]\naction = "allow"\ncommand = "   "\n', 3, "rule 1: bad command pattern: empty pattern"),
    ('[[rule]]\naction = "allow"\ncwd = "~/work**"\n', 3,
     "rule 1: bad cwd pattern: '**' must be a whole path component in '~/work**' (write 'dir/**/name')"),
    # the file around the rules
    ('version = 1\nrules = []\n', 2, "unknown key 'rules' (expected version, rule, tools, catalog)"),
    ('version = "1"\n', 1, "unsupported version '1' (this app reads version 1)"),
    ('[rule]\naction = "allow"\n', 1, "'rule' must be written as [[rule]] tables"),
    ('rule = ["allow"]\n', 1, "rule 1 is not a table"),
    ('tools = ["Bash"]\n', 1, "'tools' must be a [tools] table"),
    ('[tools]\nBash = "allow"\n"git[" = "ask"\n', 3,
     "[tools] git[: bad tool pattern: unclosed '[' in 'git[' (write '[[]' for a literal '[')"),
    ('[tools]\nBash = ["allow"]\n', 2, "[tools] Bash: the action for tool 'Bash' must be a string such as \"allow\", "
     'or a table { action = "block", note = "..." }'),
    ('[tools]\nBash = "yes"\n', 2, "[tools] Bash: unknown action 'yes' (expected allow, ask, deny or block)"),
])
def test_a_bad_rule_is_refused_with_its_line_and_the_reason_people_read(tmp_path: Path, text: str, line: int,
                                                                         reason: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        Policy.load(path)
    assert (caught.value.line, caught.value.reason) == (line, reason)
    assert str(caught.value) == f"{path}:{line}: {reason}"


@pytest.mark.parametrize(("text", "line", "reason"), [
    # unknown top-level keys first, then the version, then the rules in order, then [tools]
    ('version = 2\nsurprise = 1\n[[rule]]\naction = "no"\n', 2, "unknown key 'surprise'"),
    ('version = 2\n[[rule]]\naction = "no"\n', 1, "unsupported version 2"),
    ('[tools]\nx = "no"\n[[rule]]\naction = "allow"\n[[rule]]\naction = "no"\n', 6, "rule 2: unknown action 'no'"),
    # within a rule: unknown keys as written, then a missing action, then the keys in their order
    ('[[rule]]\nrisk = "x"\nwhen = 1\nnote = 2\n', 3, "rule 1: unknown key 'when'"),
    ('[[rule]]\nrisk = "x"\nnote = 2\n', 1, "rule 1: missing 'action'"),
    ('[[rule]]\naction = "allow"\nrisk = "x"\ntool = ""\nnote = 2\n', 5, "rule 1: 'note' must be a string"),
    ('[[rule]]\naction = "allow"\nrisk = "x"\ntool = ""\n', 4, "rule 1: bad tool pattern: empty pattern"),
])
def test_of_several_problems_the_first_as_the_file_reads_is_reported(text: str, line: int, reason: str) -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.parse(text, "policy.toml")
    assert caught.value.line == line
    assert caught.value.reason.startswith(reason)


def test_a_reason_never_speaks_pydantic() -> None:
    texts = ['[[rule]]\naction = 1\ntool = 2\npath = {a = 1}\nexpires = 10:00:00\nsurprise = true\n',
             'version = [1]\nrule = "x"\ntools = 5\n', '[tools]\nx = {}\n']
    for text in texts:
        with pytest.raises(PolicyError) as caught:
            Policy.parse(text)
        assert not re.search(r"(?i)pydantic|validation error|input should|value error|\[type=", str(caught.value))


@pytest.mark.parametrize(("rule", "reason"), [
    ({"action": "allow", "tools": "search"}, f"unknown key 'tools' (expected one of {EXPECTED_KEYS})"),
    ({"tool": "search"}, "missing 'action' (allow, ask, deny or block)"),
    ({"action": "allow", "tool": None}, "'tool' must be a string or a non-empty list of strings"),
    ({"action": "allow", "operation": "run"}, "unknown operation 'run' (expected read, write, delete)"),
    ({"action": "allow", "path": "./a**/b"}, "bad path pattern: '**' must be a whole path component in './a**/b' "
                                             "(write 'dir/**/name')"),
])
def test_the_dialogs_rule_is_refused_the_same_way(rule: dict[str, Any], reason: str) -> None:
    with pytest.raises(PolicyError) as caught:
        rule_from_dict(rule, source="editor")
    assert (caught.value.line, caught.value.reason) == (None, reason)
    assert str(caught.value) == f"editor: {reason}"
    with pytest.raises(PolicyError):
        render_rule(rule)


def test_a_valid_rule_is_normalised_as_before() -> None:
    rule = rule_from_dict({"action": "deny", "command": ["curl  *", "wget *"], "tool": "Bash", "operation": "write",
                           "expires": "2026-12-01T00:00:00Z", "note": "no downloads"})
    assert rule.commands == ("curl *", "wget *")          # words joined by single spaces
    assert rule.tools == ("Bash",) and rule.operations == ("write",) and rule.paths is None
    assert rule.expires is not None and rule.expires.isoformat() == "2026-12-01T00:00:00+00:00"
    table = RuleTable.model_validate({"action": "allow", "tool": "x"})
    assert table.condition("tool") == ("x",) and table.condition("path") is None


def test_the_models_accept_what_the_file_format_allows() -> None:
    model = PolicyFile.model_validate({"version": 1, "rule": [{"action": "allow", "risk": ["safe"]}],
                                       "tools": {"read_file": "allow"}})
    assert model.rule[0].risk == ["safe"] and model.tools == {"read_file": "allow"}
    assert PolicyFile.model_validate({}).version == 1
    with pytest.raises(ValidationError):
        PolicyFile.model_validate({"rule": [{"action": "allow", "tool": "[x"}]})


def test_the_glob_regex_is_the_bracket_check_as_a_pattern() -> None:
    """The schema's GLOB accepts exactly the patterns the app accepts (not blank, every '[' closed
    the way fnmatch reads it), so an editor and ``policy check`` agree."""
    glob = re.compile(GLOB)
    rng = random.Random(11)
    alphabet = ["[", "]", "!", "*", "a", " ", "/", "?", "\t"]
    samples = ["[!]", "[]]", "[]", "[!]]", "[!a]", "[[]", "a[", "[ ]", "[!", "  ", "x[]y]", "[*]"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(20000)]
    for sample in samples:
        try:
            _check_brackets(sample)
            app = bool(sample.strip())
        except ValueError:
            app = False
        assert bool(glob.search(sample)) == app, repr(sample)


def test_the_path_glob_patterns_are_the_path_check_as_patterns() -> None:
    glob, bad = re.compile(GLOB), re.compile(BAD_DOUBLE_STAR)
    rng = random.Random(12)
    samples = ["**", "a/**", "**/b", "a/**/b", "a**", "***", "/**/", "a/b**/c", "[**]", "x/*/y"]
    samples += ["".join(rng.choice("*/a[]") for _ in range(rng.randint(1, 8))) for _ in range(20000)]
    for sample in samples:
        try:
            check_path_glob(sample)
            app = True
        except ValueError:
            app = False
        assert (bool(glob.search(sample)) and not bad.search(sample)) == app, repr(sample)
