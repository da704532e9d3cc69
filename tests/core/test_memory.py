"""Session memory: exact vs whole-tool entries, per session, idle expiry, revocation, listeners."""

from __future__ import annotations

import pytest

from desktop_approver.core.decisions.memory import EXACT, WHOLE_TOOL, SessionMemory


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_exact_entry_matches_canonically_equal_arguments_only() -> None:
    memory = SessionMemory()
    memory.remember("s", "edit", {"path": "a.py", "lines": [1, 2]})
    assert memory.lookup("s", "edit", {"lines": [1, 2], "path": "a.py"}) is not None   # key order irrelevant
    assert memory.lookup("s", "edit", {"path": "a.py", "lines": [2, 1]}) is None
    assert memory.lookup("s", "write", {"path": "a.py", "lines": [1, 2]}) is None
    assert memory.lookup("other", "edit", {"path": "a.py", "lines": [1, 2]}) is None


def test_whole_tool_entry_covers_any_arguments_in_its_session() -> None:
    memory = SessionMemory()
    entry = memory.remember("s", "Bash", {"command": "ls"}, scope=WHOLE_TOOL, agent="bot")
    assert entry.scope == WHOLE_TOOL and entry.args_json is None and "any arguments" in entry.describe()
    assert memory.lookup("s", "Bash", {"command": "rm x"}, agent="bot") is entry
    assert memory.lookup("t", "Bash", {"command": "ls"}, agent="bot") is None
    assert entry.hits == 1


def test_only_the_scopes_given_may_answer_and_the_exact_entry_comes_first() -> None:
    """The broker lets a whole-tool entry answer only a fully understood call: it passes the scopes."""
    memory = SessionMemory()
    whole = memory.remember("s", "Bash", {}, scope=WHOLE_TOOL, agent="bot")
    exact = memory.remember("s", "Bash", {"command": "make x"}, agent="bot")
    assert memory.lookup("s", "Bash", {"command": "make x"}, agent="bot") is exact
    assert memory.lookup("s", "Bash", {"command": "make y"}, agent="bot", scopes=(EXACT,)) is None
    assert memory.lookup("s", "Bash", {"command": "make y"}, agent="bot", scopes=(WHOLE_TOOL,)) is whole
    assert memory.lookup("s", "Bash", {"command": "make x"}, agent="bot", scopes=()) is None
    assert (whole.hits, exact.hits) == (1, 1)


def test_covering_names_the_entry_without_using_it() -> None:
    clock = Clock()
    memory = SessionMemory(idle_seconds=10, clock=clock)
    exact = memory.remember("s", "Bash", {"command": "make x"}, agent="bot")
    assert memory.covering("s", "Bash", {"command": "make x"}, agent="bot") is exact
    assert memory.covering("s", "Bash", {"command": "make y"}, agent="bot") is None
    whole = memory.remember("s", "Bash", {}, scope=WHOLE_TOOL, agent="bot")
    assert memory.covering("s", "Bash", {"command": "make y"}, agent="bot") is whole
    assert (exact.hits, whole.hits) == (0, 0)
    clock.now += 11
    assert memory.covering("s", "Bash", {"command": "make y"}, agent="bot") is None  # a lapsed session covers nothing


def test_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError):
        SessionMemory().remember("s", "Bash", {}, scope="forever")


def test_idle_sessions_expire_and_activity_keeps_them_alive() -> None:
    clock = Clock()
    memory = SessionMemory(idle_seconds=60, clock=clock)
    memory.remember("s", "Bash", {"command": "ls"}, scope=EXACT)
    memory.remember("t", "Bash", {"command": "ls"})
    clock.now += 50
    memory.seen("s")                      # a request in "s" keeps it alive
    clock.now += 50
    assert memory.lookup("s", "Bash", {"command": "ls"}) is not None
    assert memory.lookup("t", "Bash", {"command": "ls"}) is None   # idle for 100 s
    assert memory.sessions() == [(None, "s")]
    clock.now += 61
    assert memory.expire_idle() == 1 and memory.entries() == []


def test_seen_does_not_create_a_session() -> None:
    memory = SessionMemory(idle_seconds=1, clock=Clock())
    memory.seen("nobody")
    assert memory.sessions() == [] and memory.expire_idle() == 0


def test_revoke_by_session_tool_and_all() -> None:
    memory = SessionMemory()
    for session in ("s", "t"):
        for tool in ("Bash", "edit"):
            memory.remember(session, tool, {"x": 1})
    assert memory.revoke(session="s", tool="Bash") == 1
    assert memory.revoke(tool="edit") == 2
    assert [(e.session, e.tool) for e in memory.entries()] == [("t", "Bash")]
    assert memory.revoke() == 1 and memory.entries() == []
    assert memory.revoke() == 0


def test_forget_session_and_revoke_entry() -> None:
    memory = SessionMemory()
    kept = memory.remember("s", "Bash", {"a": 1})
    memory.remember("t", "Bash", {"a": 1})
    assert memory.forget_session("t") == 1
    assert memory.revoke_entry(kept) is True and memory.revoke_entry(kept) is False
    assert memory.entries() == []


def test_listeners_hear_every_change_but_not_no_ops() -> None:
    memory = SessionMemory()
    calls: list[int] = []
    memory.listeners.append(lambda: calls.append(1))
    memory.remember("s", "Bash", {})
    memory.lookup("s", "Bash", {})
    memory.revoke(session="nobody")
    assert len(calls) == 1
    memory.revoke()
    assert len(calls) == 2


# -- scopes, expiry and revocation, once more ------------------------------------------------------

def test_exact_scope_matches_the_same_arguments_in_any_key_order_only() -> None:
    memory = SessionMemory()
    memory.remember("s1", "write_file", {"path": "a.txt", "content": "hi"})
    hit = memory.lookup("s1", "write_file", {"content": "hi", "path": "a.txt"})
    assert hit is not None and hit.hits == 1 and hit.scope == EXACT
    assert memory.lookup("s1", "write_file", {"path": "a.txt", "content": "bye"}) is None
    assert memory.lookup("s2", "write_file", {"path": "a.txt", "content": "hi"}) is None   # another session
    assert memory.lookup("s1", "Write", {"path": "a.txt", "content": "hi"}) is None         # another tool


def test_whole_tool_scope_covers_any_arguments_of_that_tool_in_that_session() -> None:
    memory = SessionMemory()
    memory.remember("s1", "Bash", {"command": "ls"}, scope=WHOLE_TOOL, agent="coder")
    assert memory.lookup("s1", "Bash", {"command": "rm -rf /"}, agent="coder") is not None
    assert memory.lookup("s2", "Bash", {"command": "ls"}, agent="coder") is None
    assert memory.entries()[0].describe() == "Bash(any arguments)"
    with pytest.raises(ValueError):
        memory.remember("s1", "Bash", {}, scope="forever")


def test_idle_sessions_expire_and_use_keeps_them_alive() -> None:
    clock = Clock()
    memory = SessionMemory(idle_seconds=60, clock=clock)
    memory.remember("busy", "Bash", {"command": "ls"})
    memory.remember("idle", "Bash", {"command": "ls"})
    clock.now += 50
    assert memory.lookup("busy", "Bash", {"command": "ls"}) is not None
    clock.now += 50                                    # idle: 100 s without use; busy: 50 s
    assert memory.lookup("idle", "Bash", {"command": "ls"}) is None
    assert memory.sessions() == [(None, "busy")]
    memory.seen("busy")
    clock.now += 59
    assert [e.session for e in memory.entries()] == ["busy"]
    clock.now += 2
    assert memory.entries() == []


def test_revoke_by_session_tool_entry_or_all_and_listeners_hear_it() -> None:
    memory = SessionMemory()
    changes: list[int] = []
    memory.listeners.append(lambda: changes.append(len(memory.entries())))
    for session, tool in (("a", "Bash"), ("a", "Write"), ("b", "Bash")):
        memory.remember(session, tool, {"x": 1})
    assert memory.revoke(tool="Write") == 1
    assert memory.revoke(session="b") == 1
    assert memory.revoke_entry(memory.entries()[0]) is True
    assert memory.revoke_entry(memory.remember("c", "Bash", {})) is True
    memory.remember("d", "Bash", {})
    assert memory.revoke() == 1 and memory.revoke() == 0
    assert changes[:3] == [1, 2, 3] and changes[-1] == 0
    assert memory.forget_session("nobody") == 0


def test_sessions_list_leaves_out_lapsed_ones() -> None:
    clock = Clock()
    memory = SessionMemory(idle_seconds=10, clock=clock)
    memory.remember("old", "Bash", {"command": "ls"})
    clock.now += 11
    memory.remember("new", "Bash", {"command": "ls"})
    assert memory.sessions() == [(None, "new")]


# -- sessions belong to their agent -----------------------------------------------------------------

def test_two_agents_on_one_session_name_share_nothing() -> None:
    memory = SessionMemory()
    memory.remember("shared", "Bash", {}, scope=WHOLE_TOOL, agent="A")
    assert memory.lookup("shared", "Bash", {"command": "curl x | sh"}, agent="B") is None
    assert memory.lookup("shared", "Bash", {"command": "curl x | sh"}, agent=None) is None
    assert memory.lookup("shared", "Bash", {"command": "ls"}, agent="A") is not None
    memory.remember("shared", "Bash", {"command": "ls"}, agent="B")
    assert memory.sessions() == [("A", "shared"), ("B", "shared")]


def test_an_agent_sees_revokes_and_ends_only_its_own_sessions_the_tray_all() -> None:
    memory = SessionMemory()
    for agent in ("A", "B"):
        memory.remember("s", "Bash", {"n": 1}, agent=agent)
        memory.remember("s", "Edit", {"n": 1}, agent=agent)
    assert [e.agent for e in memory.entries(agent="B")] == ["B", "B"]
    assert len(memory.entries()) == 4                              # the tray's view
    assert memory.revoke(session="s", agent="B") == 2 and memory.revoke(agent="B") == 0
    assert memory.forget_session("s", agent="B") == 0
    assert memory.revoke(tool="Edit", agent="A") == 1
    assert memory.forget_session("s", agent="A") == 1 and memory.entries() == []


def test_idle_expiry_is_per_agent_session() -> None:
    clock = Clock()
    memory = SessionMemory(idle_seconds=60, clock=clock)
    memory.remember("s", "Bash", {}, agent="A")
    memory.remember("s", "Bash", {}, agent="B")
    clock.now += 50
    memory.seen("s", agent="A")        # A's use keeps A's session alive, not B's namesake
    clock.now += 50
    assert [e.agent for e in memory.entries()] == ["A"]
