"""Nothing destructive is answered without the person: every family of issue 19, through the real broker.

Each family of calls the reviewers got answered without a person (options that run programs or
write files, ``NAME=value`` prefixes, ``cd`` and ``-C``, programs that run programs, downloads run
in two steps, credentials, deploys, tools that are not a shell) has representative calls here, in
the argument shapes of the agents that send them; so have the argument shapes that say more than
the reader read (tests/core/test_automatic_answers_argument_shapes.py) and the red team's families
(tests/core/test_automatic_answers_redteam.py). The cases are in tests/core/automatic_answer_cases.py,
each once. Each goes through the real broker, with the real reader, in the three ways an answer
comes without the person: approve-all mode, a session approval of the whole tool, and an allow rule
with a trailing ``*`` whose conditions match the call. In every one the person is asked, and the
ticket and the audit log say why in one line.

The allow rules are checked to *match* (the explain view lists them as withheld, not as "no"), so a
test cannot pass because a rule happened to miss the call. These hold whatever the catalog
understands: a destructive call, or one not fully understood, is the person's. The calls an
automatic answer must still cover, once the catalog understands them, are in
tests/core/test_automatic_answers_understood.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.calls.risk import assess
from desktop_approver.core.decisions import modes
from desktop_approver.core.policy import Policy, PolicyCall
from tests.core.automatic_answer_cases import (
    ARGUMENT_SHAPE_CASES,
    ISSUE_19_CASES,
    ISSUE_30_CASES,
    ISSUE_30_RED_TEAM_CASES,
    RED_TEAM_CASES,
)
from tests.support.automatic_answers import PROJECT, WHO, ask, asked_with_reason, bash, broker_for

CASES = ISSUE_19_CASES + ARGUMENT_SHAPE_CASES + RED_TEAM_CASES + ISSUE_30_CASES + ISSUE_30_RED_TEAM_CASES


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's home is /home/me, as in the calls."""
    monkeypatch.setenv("HOME", "/home/me")


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_approve_all_leaves_the_call_to_the_person(tmp_path: Path, tool: str, args: dict[str, Any],
                                                  rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path)
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    asked_with_reason(person, broker, ask(broker, tool, args), "approve-all mode")


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_a_session_approval_of_the_whole_tool_leaves_the_call_to_the_person(
        tmp_path: Path, tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path)
    broker.memory.remember("s", tool, {}, scope="tool", agent=WHO.agent)
    asked_with_reason(person, broker, ask(broker, tool, args), "the session approval of the whole tool")


@pytest.mark.parametrize(("tool", "args", "rule"), CASES)
def test_an_allow_rule_with_a_trailing_star_leaves_the_call_to_the_person(
        tmp_path: Path, tool: str, args: dict[str, Any], rule: dict[str, Any]) -> None:
    broker, person = broker_for(tmp_path, rule)
    policy = broker.policy
    assert isinstance(policy, Policy)
    reading = assess(tool, args, cwd=PROJECT)
    explanation = policy.explain(PolicyCall(tool, args, agent=WHO.agent, cwd=PROJECT, risk=reading.level,
                                            understood=reading.understood, gaps=reading.gaps))
    assert [rule.id for rule, _ in explanation.withheld] == ["rule 1 (line 2)"], explanation.render()
    asked_with_reason(person, broker, ask(broker, tool, args), "not answered by rule 1 (line 2) of policy.toml")


def test_every_automatic_answer_at_once_still_leaves_a_destructive_call_to_the_person(tmp_path: Path) -> None:
    """Approve-all, a whole-tool session approval and a matching allow rule together: one line names them all."""
    broker, person = broker_for(tmp_path, {"tool": "Bash", "command": "rm *"})
    broker.mode.set(modes.APPROVE_ALL, seconds=600)
    broker.memory.remember("s", "Bash", {}, scope="tool", agent=WHO.agent)
    because = asked_with_reason(person, broker, ask(broker, *bash("rm -rf /home/me/important")), "approve-all mode")
    assert because.startswith('read as destructive; not answered by rule 1 (line 2) of policy.toml: allow tool="Bash"')
    assert because.endswith("approve-all mode or the session approval of the whole tool")


def test_read_file_allowed_in_the_tools_table_does_not_read_a_private_key(tmp_path: Path) -> None:
    """The documented ``read_file = "allow"`` once allowed reading a key the same app rates destructive."""
    broker, person = broker_for(tmp_path)
    broker.policy = Policy.parse('version = 1\n[tools]\nread_file = "allow"\n', "policy.toml")
    key = {"path": "/home/me/.ssh/id_ed25519"}
    assert assess("read_file", key, cwd=PROJECT).level == "destructive"
    asked_with_reason(person, broker, ask(broker, "read_file", key), "tools.read_file (line 3) of policy.toml")


def test_an_exact_session_approval_never_answers_a_destructive_call(tmp_path: Path) -> None:
    broker, person = broker_for(tmp_path)
    tool, args = bash("rm -rf /home/me/important")
    broker.memory.remember("s", tool, args, agent=WHO.agent)
    because = asked_with_reason(person, broker, ask(broker, tool, args), "the session approval of this exact call")
    assert because.startswith("read as destructive")


def test_an_exact_session_approval_answers_the_identical_call_the_person_saw(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Not understood, read as moderate: the person saw exactly this call, so the same call is answered
    again; a whole-tool approval is not enough for it, and another call is asked."""
    from dataclasses import replace

    from desktop_approver.core.decisions import broker as broker_module

    real = broker_module.assess

    def not_understood(*given: Any, **named: Any) -> Any:
        found = real(*given, **named)
        return replace(found, level="moderate", understood=False, gaps=("option `--frobnicate` of `make`",))

    monkeypatch.setattr(broker_module, "assess", not_understood)
    broker, person = broker_for(tmp_path)
    seen = bash("make --frobnicate")
    broker.memory.remember("s", *seen, agent=WHO.agent)
    assert (ask(broker, *seen).decided_by) == "session"
    assert person.seen == []
    broker.memory.remember("s", "Bash", {}, scope="tool", agent=WHO.agent)
    other = ask(broker, *bash("make --frobnicate other"))
    assert other.decided_by == "user"
    assert person.seen[0].calls[0].asked_because == (
        "not understood: option `--frobnicate` of `make`; not answered by the session approval of the whole tool")


def test_an_allow_rule_that_says_risk_destructive_allows_a_destructive_call(tmp_path: Path) -> None:
    broker, person = broker_for(tmp_path, {"tool": "Bash", "command": "rm -rf ./build*", "risk": "destructive"})
    tool, args = bash("rm -rf ./build")
    assert assess(tool, args, cwd=PROJECT).level == "destructive"
    verdict = ask(broker, tool, args)
    assert (verdict.decision, verdict.decided_by) == ("allow_once", "policy")
    assert verdict.rule is not None and 'risk="destructive"' in verdict.rule
    assert person.seen == []


def test_a_rule_naming_an_unknown_tool_exactly_is_the_persons_declaration(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool the catalog does not know, read as moderate: a rule naming it exactly answers it (and the
    explain view says it is the person's declaration); a glob over it does not, nor approve-all."""
    from dataclasses import replace

    from desktop_approver.core.decisions import broker as broker_module

    real = broker_module.assess
    monkeypatch.setattr(broker_module, "assess", lambda *a, **k: replace(
        real(*a, **k), level="moderate", understood=False, gaps=("tool `acme_sync`",)))
    args = {"target": "staging"}
    broker, person = broker_for(tmp_path, {"tool": "acme_sync"})
    assert ask(broker, "acme_sync", args).decided_by == "policy"
    policy = broker.policy
    assert isinstance(policy, Policy)
    explained = policy.explain(PolicyCall("acme_sync", args, risk="moderate", gaps=("tool `acme_sync`",)))
    assert "your declaration" in explained.render()

    globbed, asked = broker_for(tmp_path / "glob", {"tool": "acme_*"})
    globbed.mode.set(modes.APPROVE_ALL, seconds=600)
    assert ask(globbed, "acme_sync", args).decided_by == "user"
    assert asked.seen[0].calls[0].asked_because == (
        "not understood: tool `acme_sync`; not answered by rule 1 (line 2) of policy.toml: "
        'allow tool="acme_*" or approve-all mode')
