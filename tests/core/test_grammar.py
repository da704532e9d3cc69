"""The parse (:mod:`desktop_approver.core.calls.grammar`): each program's argv read once by its grammar."""

from __future__ import annotations

from desktop_approver.core.calls.grammar import OptionUse, parse


def test_an_option_value_is_never_read_as_an_option() -> None:
    found = parse(("rsync", "-a", "--exclude", "--dry-run", "src/", "dst/"))
    assert not found.simulated
    assert OptionUse("--exclude", "value", "--dry-run") in found.options()
    assert found.operands == ("src/", "dst/")


def test_bundled_short_options_are_read_by_their_arity() -> None:
    found = parse(("curl", "-sXDELETE", "https://api.example.com/x"))
    assert [(use.option, use.value) for use in found.options()] == [("-s", None), ("-X", "DELETE")]
    sed = parse(("sed", "-ni", "s/a/b/p", "notes.txt"))
    assert [use.option for use in sed.options()] == ["-n", "-i"] and sed.by_role("inplace")
    assert parse(("sed", "-i.bak", "s/a/b/", "x")).values("-i") == [".bak"]


def test_long_options_with_equals_and_the_end_of_options() -> None:
    found = parse(("curl", "--request=PUT", "--", "-weird-host"))
    assert found.values("--request") == ["PUT"] and found.operands == ("-weird-host",)


def test_subcommands_and_modules_descend() -> None:
    push = parse(("git", "push", "--dry-run", "origin", "main"))
    assert push.subcommand == ("push",) and push.simulated and push.operands == ("origin", "main")
    module = parse(("python3", "-m", "pytest", "-q"))
    assert module.label == "python3 -m pytest" and not module.gaps


def test_what_the_grammar_does_not_give_is_a_gap_never_a_guess() -> None:
    assert parse(("git", "frobnicate")).gaps == ("subcommand `frobnicate` of `git`",)
    assert parse(("curl", "--no-such-option", "x")).gaps == ("option `--no-such-option` of `curl`",)
    unknown = parse(("never-heard-of", "--dry-run", "--help"))
    assert not unknown.known and not unknown.simulated and not unknown.helped
    assert parse(("python3", "-m", "evilmod")).gaps == ("module `evilmod` run by `python3 -m`",)


def test_a_saved_plan_is_not_only_a_simulation() -> None:
    assert parse(("terraform", "plan")).simulated
    assert not parse(("terraform", "plan", "-out", "x.plan")).simulated
