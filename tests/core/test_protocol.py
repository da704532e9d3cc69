"""The validation ladder, line by line, and the same bad inputs over a real socket.

Every bad line earns one typed error; the connection that sent it keeps working, and other
clients are not disturbed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import Client, wire
from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.core.messages import models
from desktop_approver.core.messages.protocol import Refusal, decode, describe_errors, encode
from tests.core.test_golden import RawConnection
from tests.support.service import ServiceThread

STATUS = {"v": 1, "type": "status", "id": "s1"}
REQUEST = {"v": 1, "type": "request", "id": "r1", "tool": "Bash", "args": {"command": "ls"}}


def line(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8")


# -- the ladder, without a socket ------------------------------------------------------------------

@pytest.mark.parametrize("raw, code, message_id", [
    (wire.Oversized(wire.MAX_LINE_BYTES + 5), "line_too_long", None),
    (b'{"v": 1, "type": "status", "id": "\xff"}', "invalid_utf8", None),
    (b'{"v": 1,', "invalid_json", None),
    (b"[" * 100_000, "invalid_message", None),         # deeper than the reader goes: no id to read
    (b"[1, 2]", "invalid_message", None),
    (b"null", "invalid_message", None),
    (line({"type": "status", "id": "a"}), "invalid_message", "a"),
    (line({"v": 2, "type": "status", "id": "a"}), "unsupported_version", "a"),
    (line({"v": True, "type": "status", "id": "a"}), "unsupported_version", "a"),
    (line({"v": "1", "type": "status", "id": "a"}), "unsupported_version", "a"),
    (line({"v": None, "type": "status", "id": "a"}), "unsupported_version", "a"),   # present: a version, not missing
    (line({"v": [1], "type": "status", "id": "a"}), "unsupported_version", "a"),
    (line({"v": {}, "type": "status", "id": "a"}), "unsupported_version", "a"),
    (line({"v": 1, "type": "approve", "id": "a"}), "unknown_type", "a"),
    (line({"v": 1, "id": "a"}), "unknown_type", "a"),
    (line({"v": 1, "type": "welcome", "id": "a"}), "unknown_type", "a"),
    (line({**REQUEST, "tool": None}), "invalid_message", "r1"),
    (line({**REQUEST, "args": ["ls"]}), "invalid_message", "r1"),
    (line({**REQUEST, "timeout": -1}), "invalid_message", "r1"),
    (line({**REQUEST, "extra": 1}), "invalid_message", "r1"),
    (line({**REQUEST, "preview": {"kind": "video"}}), "invalid_message", "r1"),
    (line({**REQUEST, "id": 7}), "invalid_message", None),
    (line({"v": 1, "type": "batch", "id": "b", "calls": []}), "invalid_message", "b"),
], ids=lambda value: None)
def test_ladder_names_the_first_problem(raw: Any, code: str, message_id: str | None) -> None:
    result = decode(raw)
    assert isinstance(result, Refusal), result
    assert (result.code, result.id) == (code, message_id), result.message
    assert result.message
    assert result.reply() == models.ErrorMessage(id=message_id, code=code, message=result.message,  # type: ignore[arg-type]
                                                 in_reply_to=result.in_reply_to)  # type: ignore[arg-type]


def test_ladder_checks_the_version_before_the_type() -> None:
    result = decode(line({"v": 3, "type": "approve"}))
    assert isinstance(result, Refusal) and result.code == "unsupported_version"


@pytest.mark.parametrize("message, model", [
    (STATUS, models.Status),
    (REQUEST, models.Request),
    ({"v": 1, "type": "hello"}, models.Hello),
    ({"v": 1, "type": "hello", "client": {"agent": "a", "future_key": 1}}, models.Hello),
    ({"v": 1, "type": "batch", "id": "b", "calls": [{"tool": "t", "args": {}}]}, models.Batch),
    ({"v": 1, "type": "cancel", "id": "r1"}, models.Cancel),
    ({"v": 1, "type": "end_session", "id": "m", "session": "s"}, models.EndSession),
    ({"v": 1, "type": "sessions", "id": "m"}, models.ListSessions),
    ({"v": 1, "type": "revoke", "id": "m"}, models.Revoke),
])
def test_ladder_accepts_every_client_message(message: dict[str, Any], model: type) -> None:
    assert isinstance(decode(line(message)), model)


def test_hints_accept_both_spellings_and_reach_the_broker_by_field_name() -> None:
    mcp = decode(line({**REQUEST, "hints": {"readOnlyHint": True, "openWorldHint": False}}))
    snake = decode(line({**REQUEST, "hints": {"read_only": True, "open_world": False}}))
    assert isinstance(mcp, models.Request) and isinstance(snake, models.Request)
    assert mcp.hints is not None and mcp.hints.as_dict() == {"read_only": True, "open_world": False}
    assert mcp.hints == snake.hints


def test_mcp_annotations_are_accepted_whole_and_only_the_four_hints_count() -> None:
    annotations = {"title": "Delete a file", "readOnlyHint": False, "destructiveHint": True, "x-origin": "fs",
                   "priority": 2}
    request = decode(line({**REQUEST, "hints": annotations}))
    assert isinstance(request, models.Request) and request.hints is not None
    assert request.hints.as_dict() == {"read_only": False, "destructive": True, "title": "Delete a file",
                                       "x-origin": "fs", "priority": 2}
    for bad in ({"readOnlyHint": True, "read_only": True}, {"readOnlyHint": "yes"}, {"nested": {"a": 1}},
                {f"k{i}": i for i in range(40)}, {"title": 5}):
        refused = decode(line({**REQUEST, "hints": bad}))
        assert isinstance(refused, Refusal) and refused.code == "invalid_message", bad


def test_field_errors_are_one_readable_line() -> None:
    result = decode(line({"v": 1, "type": "request", "id": "r", "tool": 1, "args": 2, "session": 3, "timeout": "x"}))
    assert isinstance(result, Refusal)
    assert result.message.startswith("tool: ") and "(+" in result.message and "\n" not in result.message


def test_describe_errors_shows_where() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as raised:
        models.Request.model_validate({"v": 1, "type": "request", "id": "r", "args": {}})
    assert describe_errors(raised.value) == "tool: Field required"


def test_encode_is_one_line_without_nulls() -> None:
    payload = encode(models.DecisionMessage(id="r1", decision="deny", decided_by="user", note="two\nlines",
                                            blocked=False, risk=models.RiskInfo(level="safe")))
    assert payload.endswith(b"\n") and payload.count(b"\n") == 1
    assert json.loads(payload) == {"v": 1, "type": "decision", "id": "r1", "decision": "deny",
                                   "decided_by": "user", "note": "two\nlines", "blocked": False,
                                   "risk": {"level": "safe", "reasons": []}}


def test_framer_splits_joins_and_skips_an_oversized_line() -> None:
    framer = wire.LineFramer(limit=10)
    assert list(framer.feed(b'{"a"')) == []
    assert list(framer.feed(b':1}\n\n  \n{"b":2}\n{')) == [b'{"a":1}', b'{"b":2}']
    out = list(framer.feed(b"x" * 25))
    out += list(framer.feed(b"y" * 5 + b'\n{"c":3}\n'))
    assert [type(item).__name__ for item in out] == ["Oversized", "bytes"]
    assert out[0].size == 1 + 30 and out[1] == b'{"c":3}'  # type: ignore[union-attr]
    assert framer.pending_bytes == 0


def test_a_blank_line_is_empty_or_space_tab_and_cr_only() -> None:
    """Skipped: nothing, spaces, tabs, carriage returns. Any other line is read (and refused when
    it is not JSON): a form feed, a vertical tab, a no-break space, a byte order mark."""
    framer = wire.LineFramer()
    lines = list(framer.feed(b"\n \t\r\n\r\n\x0c\n\x0b\n\xc2\xa0\n\xef\xbb\xbf{}\n\x0c{}\n \t{} \r\n"))
    assert lines == [b"\x0c", b"\x0b", b"\xc2\xa0", b"\xef\xbb\xbf{}", b"\x0c{}", b" \t{} \r"]
    for refused in lines[:-1]:
        result = decode(refused)
        assert isinstance(result, Refusal) and result.code == "invalid_json", (refused, result)
    bom = decode(b'\xef\xbb\xbf{"v": 1, "type": "status", "id": "s"}')
    assert isinstance(bom, Refusal) and "byte order mark" in bom.message and "utf-8-sig" not in bom.message


@pytest.mark.parametrize("raw, message_id, in_reply_to, name", [
    (b'{"v":1,"type":"hello","token":"wrong","token":"sesame"}', None, "hello", "token"),
    (b'{"v":1,"type":"request","id":"q","tool":"read_file","tool":"deploy","args":{}}', "q", "request", "tool"),
    (b'{"v":1,"type":"request","id":"q","id":"q2","tool":"deploy","args":{}}', None, "request", "id"),
    (b'{"v":1,"type":"request","id":"q","\\u0069d":"q","tool":"deploy","args":{}}', None, "request", "id"),
    (b'{"v":1,"type":"status","type":"request","id":"q","tool":"deploy","args":{}}', "q", None, "type"),
    (b'{"v":2,"v":1,"type":"status","id":"s"}', "s", "status", "v"),
    (b'{"v":1,"type":"request","id":"q","tool":"t","args":{"a":{"b":1,"b":2}}}', "q", "request", "b"),
    (b'{"v":1,"type":"request","id":"q","tool":"t","args":{"n":12345678901234567,"n":1}}', "q", "request", "n"),
    (b'{"v":1,"type":"request","id":"q","tool":"t","args":{},"preview":{"kind":"text","kind":"command",'
     b'"command":"ls"}}', "q", "request", "kind"),
    (b'{"v":1,"type":"request","id":"q","tool":"t","args":{},"hints":{"readOnlyHint":true,"readOnlyHint":false}}',
     "q", "request", "readOnlyHint"),
    (b'{"v":1,"type":"status","id":"s","\\ud800":1,"\\ud800":2}', "s", "status", "\\ud800"),  # named as ASCII
], ids=lambda value: None)
def test_a_name_given_twice_in_one_object_is_refused(raw: bytes, message_id: str | None, in_reply_to: str | None,
                                                     name: str) -> None:
    """Readers disagree on which of two same-named members counts, so a filter in front of the app
    could see another call: the line is refused, naming the member, its id echoed unless it is the
    name given twice (and ``in_reply_to`` likewise for ``type``)."""
    result = decode(raw)
    assert isinstance(result, Refusal), result
    assert (result.code, result.id, result.in_reply_to) == ("invalid_message", message_id, in_reply_to), result
    assert f'"{name}" is given twice' in result.message
    encode(result.reply())                                  # the error itself always encodes


def test_the_same_name_in_different_objects_is_no_repetition() -> None:
    message = decode(line({**REQUEST, "args": {"command": "ls", "inner": {"command": "ls", "tool": "x"}},
                           "preview": {"kind": "command", "command": "ls"}}))
    assert isinstance(message, models.Request)


# -- the same over a real socket ------------------------------------------------------------------

@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceThread]:
    with ServiceThread(tmp_path) as running:
        yield running


def recv_until(connection: RawConnection, wanted: str, kept: list[dict[str, Any]]) -> dict[str, Any]:
    """The next message with id ``wanted``; others (a pending request's decision) are kept."""
    while True:
        message = connection.recv()
        if message.get("id") == wanted:
            return message
        kept.append(message)


BAD_INPUTS = [
    ("invalid_utf8", b'{"v": 1, "type": "status", "id": "\xc3\x28"}\n', "invalid_utf8", None),
    ("not_json", b"{'v': 1}\n", "invalid_json", None),
    ("not_an_object", b'["status"]\n', "invalid_message", None),
    ("over_long", b"{" + b" " * wire.MAX_LINE_BYTES + b"}\n", "line_too_long", None),
    ("unknown_type", wire.encode({"v": 1, "type": "approve", "id": "x1"}), "unknown_type", "x1"),
    ("wrong_version", wire.encode({"v": 7, "type": "status", "id": "x2"}), "unsupported_version", "x2"),
    ("missing_field", wire.encode({"v": 1, "type": "request", "id": "x3", "tool": "Bash"}), "invalid_message", "x3"),
    ("wrong_type", wire.encode({"v": 1, "type": "request", "id": "x4", "tool": "Bash", "args": "ls"}),
     "invalid_message", "x4"),
    ("duplicate_id", wire.encode({**REQUEST, "id": "d1"}) + wire.encode({**REQUEST, "id": "d1"}), "duplicate_id", "d1"),
]


@pytest.mark.parametrize("payload, code, error_id", [case[1:] for case in BAD_INPUTS],
                         ids=[case[0] for case in BAD_INPUTS])
def test_bad_input_gets_a_typed_error_and_nothing_breaks(service: ServiceThread, payload: bytes, code: str,
                                                         error_id: str | None) -> None:
    still_pending = 1 if code == "duplicate_id" else 0
    kept: list[dict[str, Any]] = []
    with RawConnection(service.socket_path) as connection:
        connection.send(payload)
        error = connection.recv()
        assert error["type"] == "error" and error["code"] == code, error
        assert error.get("id") == error_id and error["message"]
        models.ErrorMessage.model_validate(error)

        connection.send_msg(STATUS)
        status = recv_until(connection, "s1", kept)
        assert status["type"] == "status_reply" and status["pending"] == still_pending

        for _ in range(still_pending + 1):
            service.answer(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
        with Client(service.socket_path, agent="other") as other:
            assert other.request("Bash", {"command": "pwd"}).decision == "allow_once"
        if still_pending:
            first = kept.pop() if kept else recv_until(connection, "d1", kept)
            assert (first["id"], first["type"], first["decision"]) == ("d1", "decision", "allow_once")
        assert kept == []


def test_request_and_cancel_in_one_write_still_get_an_answer(service: ServiceThread) -> None:
    with RawConnection(service.socket_path) as connection:
        connection.send(wire.encode(REQUEST) + wire.encode({"v": 1, "type": "cancel", "id": "r1"}))
        reply = connection.recv()
        assert (reply["id"], reply["decision"], reply["decided_by"]) == ("r1", "deny", "cancelled")
        connection.send_msg(STATUS)
        assert connection.recv()["pending"] == 0


def test_too_many_pending_per_client(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, max_pending_per_client=2) as service, \
            RawConnection(service.socket_path) as connection:
        for request_id in ("p1", "p2", "p3"):
            connection.send_msg({**REQUEST, "id": request_id})
        error = connection.recv()
        assert (error["type"], error["id"], error["code"]) == ("error", "p3", "too_many_pending")
        connection.send_msg({"v": 1, "type": "cancel", "id": "p1"})
        assert connection.recv()["decided_by"] == "cancelled"
        connection.send_msg({**REQUEST, "id": "p4"})
        service.answer(lambda ticket: [Verdict("deny", "user") for _ in ticket.calls])
        service.answer(lambda ticket: [Verdict("deny", "user") for _ in ticket.calls])
        assert sorted(connection.recv()["id"] for _ in range(2)) == ["p2", "p4"]


def test_token_is_required_when_the_app_asks_for_one(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, token_check=lambda token: token == "sesame") as service:
        with RawConnection(service.socket_path) as connection:
            connection.send_msg(STATUS)
            refused = connection.recv()
            assert (refused["code"], refused["id"]) == ("unauthorized", "s1")
            assert connection.sock.recv(1) == b""  # one refusal, then the app hangs up
        with RawConnection(service.socket_path) as connection:
            connection.send_msg({"v": 1, "type": "hello", "token": "sesame"})
            assert connection.recv()["type"] == "welcome"
            connection.send_msg(STATUS)
            assert connection.recv()["type"] == "status_reply"
        with RawConnection(service.socket_path) as connection:
            connection.send_msg({"v": 1, "type": "hello", "token": "guess"})
            refused = connection.recv()
            assert refused["code"] == "unauthorized" and "id" not in refused
            assert connection.sock.recv(1) == b""  # and the app hung up



# -- the protocol exactly as written ----------------------------------------------------------------

HUGE = "9" * 5000


@pytest.mark.parametrize("raw, code, message_id, in_reply_to", [
    (b'{"v": 1, "type": "status", "id": "s", "n": NaN}', "invalid_json", None, None),
    (b'{"v": 1, "type": "status", "id": "s", "n": Infinity}', "invalid_json", None, None),
    (b'{"v": 1, "type": "status", "id": "s", "n": -Infinity}', "invalid_json", None, None),
    (b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"n": ' + HUGE.encode() + b"}}",
     "invalid_message", "r", "request"),
    (b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"n": -' + HUGE.encode() + b"}}",
     "invalid_message", "r", "request"),
    (b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"n": 1e999}}', "invalid_message", "r", "request"),
    (b'{"v": 1, "type": "hello", "client": {"pid": 9223372036854775808}}', "invalid_message", None, "hello"),
    (b'{"v": 1, "type": "hello", "client": {"pid": -1}}', "invalid_message", None, "hello"),
    (b'{"v": 1, "type": "status", "id": "\\ud800"}', "invalid_message", None, "status"),
    (b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"s": "a\\udc00b"}}', "invalid_message", "r",
     "request"),
    (b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"\\udbff": 1}}', "invalid_message", "r", "request"),
    (b'{"v": 1, "type": "status", "id": "' + b"i" * 129 + b'"}', "invalid_message", None, "status"),
    (b'{"v": 1, "type": "status", "id": ""}', "invalid_message", None, "status"),
    (line({**REQUEST, "preview": {"kind": "diff"}}), "invalid_message", "r1", "request"),
    (line({**REQUEST, "preview": {"kind": "diff", "old": "a"}}), "invalid_message", "r1", "request"),
    (line({**REQUEST, "preview": {"kind": "diff", "old": "a", "new": "b", "unified": "@@"}}), "invalid_message", "r1",
     "request"),
    (line({**REQUEST, "preview": {"kind": "command"}}), "invalid_message", "r1", "request"),
    (line({**REQUEST, "preview": {"kind": "command", "command": "ls", "argv": ["ls"]}}), "invalid_message", "r1",
     "request"),
    (line({**REQUEST, "preview": {"kind": "command", "argv": []}}), "invalid_message", "r1", "request"),
], ids=lambda value: None)
def test_strict_json_bounded_numbers_encodable_strings_valid_previews(raw: bytes, code: str, message_id: str | None,
                                                                       in_reply_to: str | None) -> None:
    result = decode(raw)
    assert isinstance(result, Refusal), result
    assert (result.code, result.id, result.in_reply_to) == (code, message_id, in_reply_to), result.message
    assert len(result.message) < 300
    encode(result.reply())                                  # the error itself always encodes


@pytest.mark.parametrize("raw", [
    b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"n": 9223372036854775807, '
    b'"m": -9223372036854775808}}',
    b'{"v": 1, "type": "request", "id": "r", "tool": "t", "args": {"x": 1.5e308, "emoji": "\\ud83d\\ude00"}}',
    b'{"v": 1, "type": "hello", "client": {"pid": 4242}}',
    line({**REQUEST, "preview": {"kind": "diff", "old": "a", "new": "b"}}),
    line({**REQUEST, "preview": {"kind": "diff", "unified": "@@ -1 +1 @@"}}),
    line({**REQUEST, "preview": {"kind": "command", "argv": ["ls", "-l"]}}),
], ids=lambda value: None)
def test_what_the_prose_allows_is_accepted(raw: bytes) -> None:
    assert not isinstance(decode(raw), Refusal)


def test_bad_numbers_and_strings_keep_the_connection_and_its_pending_requests(tmp_path: Path) -> None:
    with ServiceThread(tmp_path) as service, RawConnection(service.socket_path) as connection:
        connection.send_msg(REQUEST)                        # r1 waits for the person
        assert _wait(lambda: service.person.tickets)
        for raw in (b'{"v": 1, "type": "request", "id": "r2", "tool": "t", "args": {"n": ' + HUGE.encode() + b"}}",
                    b'{"v": 1, "type": "status", "id": "\\ud800"}',
                    b'{"v": 1, "type": "request", "id": "r3", "tool": "t", "args": {"s": "\\udc00"}}',
                    b'{"v": 1, "type": "hello", "client": {"pid": 9223372036854775808}}',
                    b'{"v": 1, "type": "status", "id": "s", "n": NaN}'):
            connection.send(raw + b"\n")
            error = connection.recv()
            assert error["type"] == "error" and error["code"] in ("invalid_message", "invalid_json")
        service.answer(lambda ticket: [Verdict("allow_once", "user")])
        assert connection.recv()["id"] == "r1"               # the pending request survived all of it
    from desktop_approver.core.store.audit import AuditLog

    audit = AuditLog(tmp_path / "audit.sqlite3", read_only=True)
    try:
        refused = audit.events(kind="refused")
    finally:
        audit.close()
    assert len(refused) == 5                                # every refused message is in the audit log
    assert any("'r2'" in row["detail"] for row in refused) and any("'r3'" in row["detail"] for row in refused)


def _wait(condition: Any) -> Any:
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def test_an_error_about_a_cancel_names_it_and_does_not_answer_the_request() -> None:
    from desktop_approver.client.base import ClientProtocol

    error = {"v": 1, "type": "error", "id": "r1", "in_reply_to": "cancel", "code": "unknown_id", "message": "x"}
    assert not ClientProtocol.answers(error, "request")
    assert ClientProtocol.answers({**error, "in_reply_to": "request"}, "request")
    assert ClientProtocol.answers({"v": 1, "type": "error", "id": "r1", "code": "internal", "message": "x"}, "request")


def test_every_error_the_app_sends_says_what_it_answers(tmp_path: Path) -> None:
    with ServiceThread(tmp_path) as service, RawConnection(service.socket_path) as connection:
        connection.send_msg(REQUEST)
        assert _wait(lambda: service.person.tickets)
        connection.send_msg(REQUEST)
        duplicate = connection.recv()
        connection.send_msg({"v": 1, "type": "cancel", "id": "nope"})
        unknown = connection.recv()
        connection.send_msg({"v": 1, "type": "cancel", "id": "r1"})
        cancelled = connection.recv()
    assert (duplicate["code"], duplicate["in_reply_to"]) == ("duplicate_id", "request")
    assert (unknown["code"], unknown["in_reply_to"]) == ("unknown_id", "cancel")
    assert cancelled["type"] == "decision" and cancelled["risk"]["level"] in ("safe", "moderate", "destructive")


def test_too_many_pending_counts_calls_like_status_pending(tmp_path: Path) -> None:
    def batch(batch_id: str, size: int) -> dict[str, Any]:
        return {"v": 1, "type": "batch", "id": batch_id,
                "calls": [{"tool": "Bash", "args": {"n": n}} for n in range(size)]}

    with ServiceThread(tmp_path, max_pending_per_client=4) as service, \
            RawConnection(service.socket_path) as connection:
        connection.send_msg(batch("b1", 3))
        assert _wait(lambda: service.person.tickets)
        connection.send_msg(STATUS)
        assert connection.recv()["pending"] == 3               # status counts calls...
        connection.send_msg(batch("b2", 2))                    # ...and so does the limit: 3 + 2 > 4
        error = connection.recv()
        assert (error["code"], error["id"], error["in_reply_to"]) == ("too_many_pending", "b2", "batch")
        connection.send_msg({**REQUEST, "id": "r4"})           # 3 + 1 = 4 still fits
        assert _wait(lambda: len(service.person.tickets) == 2)
        connection.send_msg(STATUS)
        assert connection.recv()["pending"] == 4


def test_the_schema_requires_what_the_app_always_sends() -> None:
    from desktop_approver.core.messages import schema

    generated = {name: json.loads(text) for name, text in schema.generated().items()}
    assert {"risk", "blocked"} <= set(generated["decision.json"]["required"])
    call = generated["batch_decision.json"]["$defs"]["CallDecision"]
    assert {"risk", "blocked", "index"} <= set(call["required"])
    assert "server" in generated["welcome.json"]["required"]
    error_id = generated["error.json"]["properties"]["id"]["anyOf"][0]
    assert (error_id["minLength"], error_id["maxLength"]) == (1, 128)
    hello_pid = generated["hello.json"]["$defs"]["ClientInfo"]["properties"]["pid"]["anyOf"][0]
    assert hello_pid["type"] == "integer"


def test_lines_read_without_the_number_hooks_decode_exactly_as_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C reader alone is used only where the strict number checks could find nothing: for every
    number, big or small, the outcome (message or refusal) is the one the checks give."""
    import random

    from desktop_approver.core.messages import protocol

    generator = random.Random(11)
    numbers = ["0", "-0", "1", "-1", "1.5", "-2.5e-3", "1e308", "1e309", "-1e309", "1E+400", "2.2250738585072014e-308",
               "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
               "123456789012345", "1234567890123456", "0.1234567890123456789", "1" * 40, "NaN", "Infinity",
               "-Infinity", "4e-999", "12e99", "1e100"]
    numbers += [str(generator.randint(-10 ** generator.randint(1, 25), 10 ** generator.randint(1, 25)))
                for _ in range(200)]
    numbers += [f"{generator.uniform(-9.99, 9.99):.{generator.randint(0, 20)}f}e{generator.randint(-330, 330)}"
                for _ in range(200)]
    lines = [b'{"v": 1, "type": "request", "id": "r", "tool": "T", "args": {"n": %s, "s": "NaN e123"}, "timeout": %s}'
             % (number.encode(), b"5") for number in numbers]
    lines += [b'{"v": 1, "type": "status", "id": "s", "n": [%s]}' % number.encode() for number in numbers]
    # and with nothing else in the line that looks like a number: only the number decides the reader
    lines += [b'{"v":1,"type":"request","id":"r","tool":"T","args":{"n":[%s]},"timeout":5}' % number.encode()
              for number in numbers]
    assert any(protocol._NEEDS_STRICT_NUMBERS.search(line.decode()) is None for line in lines)  # the fast path is tried
    assert any(protocol._NEEDS_STRICT_NUMBERS.search(line.decode()) is not None for line in lines)

    def outcome(line: bytes) -> object:
        message = protocol.decode(line)
        return message if isinstance(message, protocol.Refusal) else message.model_dump()

    fast = [outcome(line) for line in lines]
    monkeypatch.setattr(protocol, "_NEEDS_STRICT_NUMBERS", re.compile(""))  # every line through the hooks
    assert fast == [outcome(line) for line in lines]


def test_a_decision_line_is_byte_for_byte_the_models_encoding() -> None:
    """The app's busiest reply skips the model for a verdict it has encoded before, and says exactly the same."""
    import itertools

    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.messages.protocol import encode, encode_decision

    ids = ["r1", "é ✓ 漢字", 'quote " and \\ backslash', "ctl \x1b[31m \x00 \x7f", "line\u2028sep\u202e", "x" * 128]
    risks = [{"level": "safe", "reasons": []}, {"level": "destructive", "reasons": ["deletes files", "sudo «root»"]}]
    verdicts = [Verdict(decision, decided_by, note=note, rule=rule, blocked=blocked, risk=risk)  # type: ignore[arg-type]
                for decision, decided_by, note, rule, blocked, risk in itertools.product(
                    ("allow_once", "allow_session", "deny"), ("user", "session", "policy", "mode", "timeout"),
                    (None, "", "not on main 🙂\n"), (None, "deny Bash rm *"), (False, True), risks)]
    verdicts.append(Verdict("allow_once", "user", updated_args={"command": "ls"}, risk=risks[0]))
    for request_id in ids:
        for verdict in verdicts:
            assert encode_decision(request_id, verdict) == encode(models.DecisionMessage.of(verdict, id=request_id))
    with pytest.raises(ValueError):
        encode_decision("r", Verdict("allow-once", "user", risk=risks[0]))  # type: ignore[arg-type]


# -- "For implementers": the order of checks, over a real socket, against the table in PROTOCOL.md ------

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "ipc" / "PROTOCOL.md"
TOKEN = "sesame"


def nested(levels: int) -> dict[str, Any]:
    """An object ``levels`` deep (``{}`` is one level)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@dataclass(frozen=True)
class Case:
    """One line that fails at ``step`` (and at no earlier step), with the id its error must carry."""

    step: int
    line: bytes
    code: str
    error_id: str | None
    before: tuple[bytes, ...] = ()      # sent first (on a connection that may send them)
    modes: tuple[str, ...] = ("open", "authenticated", "unauthenticated")


CASES = [
    Case(1, b"x" * (wire.MAX_LINE_BYTES + 1), "line_too_long", None),
    Case(1, b" " * (wire.MAX_LINE_BYTES - 2) + b"{}\r", "line_too_long", None),           # the \r counts
    Case(2, b'{"v": 1, "type": "status", "id": "\xff"}', "invalid_utf8", None),
    Case(3, b'{"v": 1, "type": "status", "id": "s3"', "invalid_json", None),
    Case(3, b'{"v": 1, "type": "status", "id": "s3", "n": NaN}', "invalid_json", None),
    Case(4, b'["status"]', "invalid_message", None),
    Case(5, line({"v": 1, "type": "request", "id": "r5", "tool": "t", "args": nested(64)}), "invalid_message", "r5"),
    Case(5, b'{"v": 1, "type": "request", "id": "r5", "tool": "t", "args": {"n": 1e999}}', "invalid_message", "r5"),
    Case(5, b'{"v": 1, "type": "request", "id": "r5", "tool": "read_file", "tool": "deploy", "args": {}}',
         "invalid_message", "r5"),                                                     # a name given twice
    Case(6, line({"type": "request", "id": "r6", "tool": "t"}), "invalid_message", "r6"),
    Case(7, line({"v": 2, "type": "request", "id": "r7", "tool": "t"}), "unsupported_version", "r7"),
    Case(7, line({"v": None, "type": "request", "id": "r7", "tool": "t"}), "unsupported_version", "r7"),
    Case(7, line({"v": 2, "type": "hello", "token": TOKEN}), "unsupported_version", None),
    Case(8, line({"v": 1, "type": "status", "id": "s8"}), "unauthorized", "s8", modes=("unauthenticated",)),
    Case(8, line({"v": 1, "type": "hello", "token": "guess"}), "unauthorized", None,
         modes=("authenticated", "unauthenticated")),
    Case(9, line({"v": 1, "type": "approve", "id": "x9", "tool": "t"}), "unknown_type", "x9"),
    Case(10, line({"v": 1, "type": "request", "id": "r10", "tool": "t"}), "invalid_message", "r10"),
    Case(10, line({"v": 1, "type": "hello", "token": TOKEN, "client": {"pid": 1.5}}), "invalid_message", None,
         modes=("authenticated",)),
    Case(11, line({**REQUEST, "id": "d11"}), "duplicate_id", "d11", before=(line({**REQUEST, "id": "d11"}),)),
    Case(11, line({"v": 1, "type": "cancel", "id": "c11"}), "unknown_id", "c11"),
]


def implementers_table() -> dict[int, tuple[list[str], str, str]]:
    """step -> (codes, the ``id`` column, the "afterwards" column) of the table in PROTOCOL.md."""
    section = PROTOCOL_MD.read_text(encoding="utf-8").split("\n## For implementers\n", 1)[1]
    rows = {}
    for row in section.split("\n## ", 1)[0].splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit():
            rows[int(cells[0])] = (re.findall(r"`([a-z0-9_]+)`", cells[2]), cells[3], cells[4])
    return rows


TABLE = implementers_table()
TOKEN_STEP = next(step for step, (codes, _, _) in TABLE.items() if codes == ["unauthorized"])


def test_the_table_has_a_case_for_every_step_and_each_case_agrees_with_it() -> None:
    assert sorted(TABLE) == list(range(1, len(TABLE) + 1)) and {case.step for case in CASES} == set(TABLE)
    for case in CASES:
        codes, id_column, _ = TABLE[case.step]
        assert case.code in codes, (case.step, case.code, codes)
        if id_column in ("no", "yes"):  # otherwise "when readable": the case's line decides
            assert (case.error_id is not None) == (id_column == "yes"), case


def expected(case: Case, mode: str) -> tuple[str, str | None, bool]:
    """(code, id, closed afterwards) as the table and the token rule say for ``case`` in ``mode``."""
    _, _, afterwards = TABLE[case.step]
    if mode == "unauthenticated":
        if case.step > TOKEN_STEP:  # the token is checked before the fields and the connection's state
            return "unauthorized", case.error_id, True
        return case.code, case.error_id, True
    return case.code, case.error_id, afterwards.startswith("closed")


@pytest.mark.parametrize("mode", ["open", "authenticated", "unauthenticated"])
def test_every_check_answers_and_keeps_or_closes_as_the_table_says(tmp_path: Path, mode: str) -> None:
    options = {} if mode == "open" else {"token_check": lambda sent: sent == TOKEN}
    with ServiceThread(tmp_path, **options) as service:
        for case in CASES:
            if mode not in case.modes:
                continue
            code, error_id, closed = expected(case, mode)
            where = f"step {case.step} ({case.code}), {mode}"
            with RawConnection(service.socket_path) as connection:
                if mode == "authenticated":
                    connection.send_msg({"v": 1, "type": "hello", "token": TOKEN})
                    assert connection.recv()["type"] == "welcome", where
                if mode != "unauthenticated":
                    for earlier in case.before:
                        connection.send(earlier + b"\n")
                connection.send(case.line + b"\n")
                error = connection.recv()
                assert (error["type"], error["code"], error.get("id")) == ("error", code, error_id), (where, error)
                if closed:
                    connection.expect_closed(where)
                else:
                    connection.send_msg(STATUS)
                    assert connection.recv()["type"] == "status_reply", where


def test_a_line_failing_several_checks_is_answered_for_the_first() -> None:
    """The ladder's own order, without a socket: each case's line, made to fail every later step too."""
    for case in CASES:
        if case.step in (5, 6, 7) and case.line.startswith(b"{"):
            # an unknown type and an unknown field (not a second "type": a repeated name fails step 5)
            worse = re.sub(rb'"type": "[a-z_]+"', b'"type": "approve"', case.line[:-1]) + b', "unknown": 1}'
            assert b'"type": "approve"' in worse, case
            result = decode(worse)
            assert isinstance(result, Refusal) and result.code == case.code, (case, result)


def test_the_schema_names_every_spelling_of_every_hint() -> None:
    """``hints``' one-spelling rule is in the schema from HINT_SPELLINGS: it must list the model's pairs."""
    pairs = {(name, field.alias) for name, field in models.Hints.model_fields.items() if field.alias}
    assert pairs == set(models.HINT_SPELLINGS)
    for name, alias in models.HINT_SPELLINGS:
        refused = decode(line({**REQUEST, "hints": {name: True, alias: True}}))
        assert isinstance(refused, Refusal) and refused.code == "invalid_message"


@pytest.mark.parametrize("args, refused", [
    (nested(63), False), (nested(64), True),
    ({"rows": [nested(61)] * 50 + [[[]]]}, False), ({"rows": [nested(2)] * 50 + [nested(62)]}, True),
    ({"list": json.loads("[" * 62 + "]" * 62)}, False), ({"list": json.loads("[" * 63 + "]" * 63)}, True),
], ids=lambda value: None)
def test_nesting_is_counted_in_objects_and_arrays_alike_wherever_it_is(args: dict[str, Any], refused: bool) -> None:
    """The message is level 1 and ``args`` level 2: ``args`` may hold 62 more levels (PROTOCOL.md)."""
    result = decode(line({**REQUEST, "args": args}))
    assert isinstance(result, Refusal) == refused
    if refused:
        assert isinstance(result, Refusal) and (result.code, result.id) == ("invalid_message", "r1")
