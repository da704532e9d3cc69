"""The README and CI promise things to users; these checks keep the promises true to the code."""

from __future__ import annotations

import re
from pathlib import Path

from desktop_approver.cli import build_parser
from desktop_approver.core.policy import POLICY_FORMAT_MD

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _normalise(text: str) -> str:
    return re.sub(r"^#+ ", "", text, flags=re.M)


def test_readme_points_at_the_policy_format_the_code_documents() -> None:
    """The format has one copy, docs/policy.md, which the package ships; the README links to it."""
    assert POLICY_FORMAT_MD == (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    assert _normalise(POLICY_FORMAT_MD).startswith("The policy file\n")
    assert "[docs/policy.md](docs/policy.md)" in README


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = re.findall(r"^# 2\..*\n(.+)$", README, flags=re.M)
    assert len(commands) == 1
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[0].strip() in ci.splitlines()


def test_every_command_the_readme_names_exists() -> None:
    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    named = set(re.findall(r"`desktop-approver ([a-z][a-z-]+)", README))
    missing = sorted(name for name in named if name not in choices)
    assert not missing, missing


def test_screenshots_the_readme_shows_exist() -> None:
    for path in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / path).is_file(), path


def _python_block_under(heading: str) -> str:
    section = README.split(f"\n{heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)  # type: ignore[union-attr]


def test_the_readme_deny_path_test_runs_and_fails_when_the_deny_does_not_arrive() -> None:
    """The "Testing your agent" snippet is real: run its tests; with an allowing fake they fail."""
    from desktop_approver import testing

    code = _python_block_under("### Testing your agent")
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md (Testing your agent)", "exec"), namespace)
    tests = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert len(tests) == 1
    tests[0]()
    namespace["testing"] = _Allowing(testing)
    try:
        tests[0]()
    except AssertionError:
        pass
    else:
        raise AssertionError("the README's deny-path test passed with a fake that allows")


class _Allowing:
    """``desktop_approver.testing`` with every ``deny`` turned into an ``allow_once``."""

    def __init__(self, module: object) -> None:
        self._module = module

    def __getattr__(self, name: str) -> object:
        if name == "deny":
            return lambda note=None: self._module.allow_once(note=note)  # type: ignore[attr-defined]
        return getattr(self._module, name)
