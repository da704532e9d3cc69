"""``desktop-approver policy check | explain``, driven through ``add_arguments`` and ``run``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from desktop_approver.commands import policy as command

POLICY = """\
[[rule]]
action = "allow"
tool = "Bash"
command = "npm run test*"

[[rule]]
action = "block"
tool = "Bash"
command = "rm -rf /*"
note = "never"
"""


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="desktop-approver policy")
    command.add_arguments(parser)
    return command.run(parser.parse_args(list(argv)))


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "desktop-approver" / "policy.toml"


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return path


def test_check_a_good_file(policy_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("check", "--file", str(policy_file)) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"ok: 2 rules in {policy_file}",
        f"{policy_file}:1: warning: rule 1: command 'npm run test*': the * after npm also matches its options that "
        "run programs or write files (--script-shell, run scripts, publish)"]


def test_check_warns_about_allow_rules_broader_than_they_look(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\nread_file = "allow"\n"mcp__github__*" = "allow"\ndeploy = "block"\n\n'
                    '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = ["git status", "git log *", "ls *"]\n\n'
                    '[[rule]]\naction = "allow"\ncommand = "GIT_PAGER=cat python3.12 *"\n\n'
                    '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "rm -rf ./build*"\nrisk = "destructive"\n\n'
                    '[[rule]]\naction = "allow"\nagent = "claude-*"\n\n'
                    '[[rule]]\naction = "deny"\ntool = "Bash"\n')
    assert run("check", "--file", str(path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok: 8 rules in {path}"
    warnings = [line.split(": warning: ", 1)[1] for line in out[1:]]
    assert all(line.startswith(f"{path}:") for line in out[1:])
    assert warnings == [
        "rule 1: command 'git log *': the * after git also matches its options that run programs or write files "
        "(--output, -c, --exec, an external diff or pager)",
        "rule 2: command 'GIT_PAGER=cat python3.12 *': the * after python3.12 also matches its options that run "
        "programs or write files (any code)",
        "rule 3: command 'rm -rf ./build*': the * after rm also matches its options that run programs or write "
        "files (any file)",
        "rule 3: its risk names destructive: it allows destructive calls it matches, never asking",
        "rule 4: allows every call of every tool, with any arguments",
        'tools.read_file: allows every call of tool "read_file", with any arguments',
        'tools.mcp__github__*: allows every call of every tool matching "mcp__github__*", with any arguments',
    ]
    assert out[1].startswith(f"{path}:6: ")  # the line of the rule, for an editor to jump to


def test_check_a_bad_file_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.replace('"block"', '"blok"'))
    assert run("check", "--file", str(path)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{path}:7: rule 2: unknown action 'blok' (expected allow, ask, deny or block)\n"


def test_check_without_a_default_file(config_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("check") == 0
    assert capsys.readouterr().out == f"no policy file at {config_home} (every call is asked)\n"


def test_check_reads_the_default_file(config_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_home.parent.mkdir(parents=True)
    config_home.write_text(POLICY)
    assert run("check") == 0
    assert capsys.readouterr().out.startswith(f"ok: 2 rules in {config_home}\n")


def test_check_a_named_file_that_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("check", "--file", str(tmp_path / "absent.toml")) == 1
    assert "no such file" in capsys.readouterr().err


@pytest.fixture
def understood(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader understands every call (at the level it gives): these tests are about the rules."""
    from dataclasses import replace

    from desktop_approver.core.calls import risk

    real = risk.assess
    monkeypatch.setattr(risk, "assess", lambda *a, **k: replace(real(*a, **k), understood=True))


@pytest.mark.usefixtures("understood")
def test_explain_a_compound_command(policy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run("explain", "--file", str(policy_file), "--tool", "Bash", "--cwd", str(tmp_path), "--risk", "moderate",
               "--args", json.dumps({"command": "npm run test && rm -rf /home"}))
    assert code == 0
    out = capsys.readouterr().out
    assert f"policy: {policy_file} (2 rules)" in out
    assert "decision: block by rule 2 (line 6) of policy.toml" in out
    assert "part 1: npm run test\n  decided: allow by rule 1 (line 1)" in out
    assert "part 2: rm -rf /home\n  decided: block by rule 2 (line 6)" in out


@pytest.mark.usefixtures("understood")
def test_explain_as_json(policy_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run("explain", "--file", str(policy_file), "--tool", "Bash", "--json", "--cwd", str(tmp_path),
               "--risk", "safe", "--agent", "claude-code", "--args", '{"command": "npm run test; curl x"}')
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["outcome"] == "ask" and report["verdict"] is None
    assert [part["action"] for part in report["parts"]] == ["allow", None]
    assert report["call"]["agent"] == "claude-code"
    assert report["call"]["understood"] is True


def test_explain_says_why_an_allow_rule_was_withheld(policy_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A rule whose conditions hold, kept from a call the reader did not fully understand: the view says so."""
    from dataclasses import replace

    from desktop_approver.core.calls import risk

    real = risk.assess
    monkeypatch.setattr(risk, "assess", lambda *a, **k: replace(
        real(*a, **k), level="moderate", understood=False, gaps=("option `--script-shell` of `npm`",)))
    assert run("explain", "--file", str(policy_file), "--tool", "Bash", "--cwd", str(tmp_path),
               "--args", json.dumps({"command": "npm run test --script-shell=./x.sh"})) == 0
    out = capsys.readouterr().out
    assert "read: moderate, not understood: option `--script-shell` of `npm`\n" in out
    assert "decision: ask the person: no rule decides" in out
    assert ("rule 1 (line 1): withheld: not understood: option `--script-shell` of `npm`: an allow rule answers "
            "only fully understood calls") in out


def test_explain_an_allow_rule_withheld_from_a_destructive_call(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[tools]\nread_file = "allow"\n')
    assert run("explain", "--file", str(path), "--tool", "read_file", "--cwd", str(tmp_path),
               "--args", json.dumps({"path": "~/.ssh/id_rsa"})) == 0
    out = capsys.readouterr().out
    assert "risk: destructive\n" in out and "decision: ask the person" in out
    assert ('tools.read_file (line 2): withheld: read as destructive: an allow rule covers a destructive call only '
            'with risk = "destructive"') in out


def test_explain_assesses_the_risk_when_not_given(policy_file: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "risky.toml"
    path.write_text('[[rule]]\naction = "deny"\nrisk = "destructive"\n')
    assert run("explain", "--file", str(path), "--tool", "Bash", "--cwd", str(tmp_path),
               "--args", '{"command": "rm -rf /"}') == 0
    assert "decision: deny" in capsys.readouterr().out


def test_explain_without_a_policy_file(config_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("explain", "--tool", "search", "--risk", "safe") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"no policy file at {config_home} (every call is asked)\n")
    assert "decision: ask the person" in out


@pytest.mark.parametrize(("args_json", "message"), [
    ("{not json", "not valid JSON"),
    ('["ls"]', "must be a JSON object"),
])
def test_explain_refuses_bad_input(policy_file: Path, capsys: pytest.CaptureFixture[str], args_json: str,
                                   message: str) -> None:
    assert run("explain", "--file", str(policy_file), "--tool", "Bash", "--args", args_json) == 2
    assert message in capsys.readouterr().err


def test_explain_with_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[[rule]\n")
    assert run("explain", "--file", str(path), "--tool", "search", "--risk", "safe") == 1
    assert capsys.readouterr().err.startswith(f"{path}:1: TOML syntax")


def test_the_global_policy_option_is_honoured(policy_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy")
    command.add_arguments(parser)
    assert command.run(parser.parse_args(["--policy", str(policy_file), "check"])) == 0
    assert capsys.readouterr().out.startswith(f"ok: 2 rules in {policy_file}\n")
