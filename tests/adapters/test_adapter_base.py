"""What every adapter shares (``adapters/base.py``), against the app's real core on its socket."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.adapters.base import MAX_PREVIEW_BYTES, Approver, Call, deny_message, hints_from
from desktop_approver.client.errors import Blocked
from desktop_approver.client.wire import Decision
from desktop_approver.core.decisions.tickets import Verdict


class Annotations:
    read_only_hint = True
    destructive_hint = None
    title = "ignored"


def test_hints_from_mcp_annotations_dicts_and_objects() -> None:
    assert hints_from({"readOnlyHint": True, "destructiveHint": False, "title": "x"}) == {
        "readOnlyHint": True, "destructiveHint": False}
    assert hints_from(Annotations()) == {"readOnlyHint": True}
    assert hints_from({"destructive": "yes"}) is None and hints_from(None) is None


@pytest.mark.parametrize(("decision", "text"), [
    (Decision("deny", "not now", "user"),
     "The tool call was denied by the person at the desktop and was not run. Note: not now"),
    (Decision("deny", None, "timeout"), "The tool call was denied because nobody answered in time and was not run."),
    (Decision("deny", "no", "mode"), "The tool call was denied by the approver's deny-everything mode and was not run. "
                                     "Note: no"),
    (Decision("deny", "x", "policy", extra={"blocked": True}),
     "The tool call was blocked by a policy rule and was not run. Note: x"),
])
def test_deny_message_says_who_and_the_note(decision: Decision, text: str) -> None:
    assert deny_message(decision) == text


def test_write_calls_carry_a_file_write_preview_made_in_the_agent_process(serve: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("old\n")
    service = serve(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
    approver = Approver(socket_path=service.socket_path)
    approver.ask("write_file", {"path": "a.txt", "content": "new\n"})
    asyncio.run(approver.ask_batch_async([Call("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "x"}),
                                          Call("Bash", {"command": "ls"})]))
    first, batch = service.person.seen
    preview = first.calls[0].preview
    assert preview is not None and preview["kind"] == "file_write"
    assert (preview["content"], preview["old"]) == ("new\n", "old\n")  # old text read here, by the agent
    assert batch.calls[0].preview["kind"] == "diff" and batch.calls[1].preview["kind"] == "command"


def test_oversized_or_unwanted_previews_are_left_out() -> None:
    approver = Approver(socket_path="/nonexistent")
    assert approver.preview("write_file", {"path": "big.txt", "content": "x" * (MAX_PREVIEW_BYTES + 1)}) is None
    assert approver.preview("lookup", {"q": "x"}) is None
    assert Approver(socket_path="/nonexistent", previews=False).preview("Bash", {"command": "ls"}) is None


def test_unreachable_app_denies_unless_told_to_allow(tmp_path: Path) -> None:
    denied = Approver(socket_path=tmp_path / "none.sock").ask("Bash", {"command": "ls"})
    assert not denied.allowed and "not reachable" in denied.message and denied.decision is None
    allowed = Approver(socket_path=tmp_path / "none.sock", on_unavailable="allow").ask("Bash", {"command": "ls"})
    assert allowed.allowed and allowed.args == {"command": "ls"}
    with pytest.raises(ValueError):
        Approver(on_unavailable="ask")  # type: ignore[arg-type]


def test_a_refused_request_denies_with_the_reason(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
    answer = Approver(socket_path=service.socket_path).ask("Bash", {"command": "ls"}, hints={"readOnlyHint": "yes"})
    assert not answer.allowed and "refused the request" in answer.message
    assert service.person.seen == []


def test_block_raises_unless_stop_on_block_is_off(serve: Any) -> None:
    service = serve(lambda ticket: [Verdict("deny", "policy", note="never", blocked=True) for _ in ticket.calls])
    with pytest.raises(Blocked):
        Approver(socket_path=service.socket_path).ask("Bash", {"command": "ls"})
    answers = Approver(socket_path=service.socket_path, stop_on_block=False).ask_batch(
        [Call("Bash", {"command": "ls"}), Call("Bash", {"command": "pwd"})])
    assert [a.allowed for a in answers] == [False, False] and "blocked by a policy rule" in answers[0].message


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 0.0, -1.0, -6.0, -1e9])
def test_a_timeout_that_cannot_be_waited_is_refused_at_construction(tmp_path: Path, timeout: float) -> None:
    # Before: a wait <= 0 read as "not reachable", and on_unavailable="allow" allowed the call.
    with pytest.raises(ValueError, match="finite number of seconds above 0"):
        Approver(timeout=timeout, on_unavailable="allow", socket_path=tmp_path / "none.sock")
