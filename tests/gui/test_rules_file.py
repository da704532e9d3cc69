"""Rules edited in the file's text: comments and layout kept, every change validated like the app does."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from desktop_approver.core.policy import Policy, PolicyError
from desktop_approver.gui.rules_file import RulesFile

POLICY = '''version = 1

# Shorthand stays as it is.
[tools]
read_file = "allow"

# The tests are harmless.
[[rule]]
action = "allow"   # no dialog
tool = "Bash"
command = "npm test*"

# Never delete git history.
[[rule]]
action = "block"
path = "./.git/**"
operation = "delete"
note = "git history is not to be deleted by an agent"

[[rule]]
action = "deny"
command = ["curl *", "wget *"]
'''


@pytest.fixture
def rules(tmp_path: Path) -> RulesFile:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return RulesFile(path)


def test_rules_are_listed_with_their_keys(rules: RulesFile) -> None:
    listed = rules.rules()
    assert [r.values["action"] for r in listed] == ["allow", "block", "deny"]
    assert listed[0].summary() == 'tool="Bash" command="npm test*"'
    assert all(r.enabled for r in listed)


def test_disable_keeps_the_rule_in_the_file_and_enable_restores_it_exactly(rules: RulesFile) -> None:
    rules.set_enabled(2, False)
    text = rules.path.read_text()
    assert "#~ [[rule]]\n#~ action = \"block\"" in text and "# Never delete git history." in text
    assert [r.action for r in Policy.load(rules.path).rules if not r.label] == ["allow", "deny"]
    assert [r.enabled for r in rules.rules()] == [True, False, True]
    rules.set_enabled(2, True)
    assert rules.path.read_text() == POLICY


def test_move_carries_comments_and_delete_removes_them(rules: RulesFile) -> None:
    assert rules.move(2, -1) == 1
    text = rules.path.read_text()
    assert text.index("# Never delete git history.") < text.index("# The tests are harmless.")
    assert text.index("# Shorthand stays as it is.") < text.index("# Never delete")
    assert [r.values["action"] for r in rules.rules()] == ["block", "allow", "deny"]
    rules.move(1, 1)
    assert rules.path.read_text() == POLICY
    rules.delete(1)
    text = rules.path.read_text()
    assert "# The tests are harmless." not in text and "npm test" not in text
    assert "# Shorthand stays as it is." in text and "# Never delete git history." in text


def test_an_edit_is_validated_before_it_is_written(rules: RulesFile) -> None:
    rules.replace(3, 'action = "deny"\ncommand = ["curl *", "wget *", "nc *"]  # no network tools\n')
    assert '"nc *"]  # no network tools' in rules.path.read_text()
    before = rules.path.read_text()
    with pytest.raises(PolicyError):
        rules.replace(3, 'action = "permit"\n')  # not an action: refused by the app's reader
    with pytest.raises(tomlkit.exceptions.ParseError):
        rules.replace(3, 'action = "deny\n')  # not TOML
    with pytest.raises(PolicyError):
        rules.replace(3, 'tool = "x"\n')  # no action
    assert rules.path.read_text() == before
