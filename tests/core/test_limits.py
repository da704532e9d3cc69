"""What clients may cost the app: connections, unread replies, idle time, unfinished lines, refusals.

Every test runs the real service on a real socket with small limits, and checks both sides: the
client gets a typed error (or is simply not read from), and the app keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import AsyncClient, Client
from desktop_approver.core.decisions.tickets import Verdict
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.transport.limits import Limits, RefusalBudget
from tests.support.service import WAIT, ServiceThread

ROOT = Path(__file__).resolve().parents[2]
STATUS = b'{"v":1,"type":"status","id":"s"}\n'


_opened: list[socket.socket] = []


@pytest.fixture(autouse=True)
def close_raw_sockets() -> Iterator[None]:
    """Tests open raw connections in bulk and let the app close them; each test closes its own end."""
    yield
    while _opened:
        _opened.pop().close()


def raw(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _opened.append(sock)
    sock.settimeout(WAIT)
    sock.connect(str(path))
    return sock


def read_lines(sock: socket.socket) -> list[dict[str, Any]]:
    """Everything until the app hangs up."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def one_line(sock: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        assert chunk, "the app hung up without a reply"
        data += chunk
    return json.loads(data.splitlines()[0])


def wait_until(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def on_loop(service: ServiceThread, function: Callable[[], Any]) -> Any:
    """Run ``function`` on the service's loop (where its state lives) and return its result."""
    async def call() -> Any:
        return function()
    return asyncio.run_coroutine_threadsafe(call(), service.loop).result(WAIT)


def status_from_another_process(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_approver", "status", "--json", "--socket", str(path)],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_connections_per_peer_are_capped_with_a_typed_error(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, limits=Limits(max_connections_per_peer=3)) as service:
        held = [raw(service.socket_path) for _ in range(3)]
        wait_until(lambda: on_loop(service, lambda: len(service.service.server._connections)) == 3, "3 connections")
        extra = raw(service.socket_path)
        replies = read_lines(extra)
        assert [r["code"] for r in replies] == ["too_many_connections"]
        assert "this process already has 3 connections" in replies[0]["message"]
        other = status_from_another_process(service.socket_path)   # another process is served
        assert other.returncode == 0 and json.loads(other.stdout)["running"] is True
        held.pop().close()
        wait_until(lambda: on_loop(service, lambda: len(service.service.server._connections)) == 2, "a slot")
        assert Client(service.socket_path).status()["type"] == "status_reply"   # and us again, once a slot is free
        for sock in held:
            sock.close()


def test_at_the_total_cap_the_longest_idle_connection_makes_room(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, limits=Limits(max_connections=2)) as service:
        oldest, newer = raw(service.socket_path), raw(service.socket_path)
        wait_until(lambda: on_loop(service, lambda: len(service.service.server._connections)) == 2, "2 connections")
        newer.sendall(STATUS)
        assert one_line(newer)["type"] == "status_reply"           # newer is active, oldest idle
        newcomer = raw(service.socket_path)
        newcomer.sendall(STATUS)
        assert one_line(newcomer)["type"] == "status_reply"        # let in...
        assert [r["code"] for r in read_lines(oldest)] == ["idle_timeout"]   # ...in the oldest one's place
        for sock in (newer, newcomer):
            sock.close()


def test_connections_with_pending_requests_are_never_evicted(tmp_path: Path) -> None:
    """Issue 34: at the cap with every connection waiting, a newcomer's request is refused
    ``too_many_connections`` at once, and its ``status`` is still answered (up to ``over_cap`` of them)."""
    with ServiceThread(tmp_path, limits=Limits(max_connections=2)) as service:
        held = [raw(service.socket_path) for _ in range(2)]
        for number, sock in enumerate(held):
            sock.sendall(b'{"v":1,"type":"request","id":"r%d","tool":"Bash","args":{"command":"ls"}}\n' % number)
        wait_until(lambda: len(service.person.tickets) == 2, "both requests to wait")
        over_cap = service.service.server.over_cap
        beyond = [raw(service.socket_path) for _ in range(over_cap)]
        newcomer = beyond[0]
        newcomer.sendall(b'{"v":1,"type":"request","id":"n","tool":"Bash","args":{"command":"ls"}}\n' + STATUS)
        data = b""
        while data.count(b"\n") < 2:
            chunk = newcomer.recv(65536)
            assert chunk, "the app hung up without a reply"
            data += chunk
        refused, answered = (json.loads(line) for line in data.splitlines())
        assert (refused["code"], refused["id"]) == ("too_many_connections", "n")
        assert "serves 2 connections" in refused["message"]
        assert answered["type"] == "status_reply"
        wait_until(lambda: on_loop(service, lambda: len(service.service.server._connections)) == 2 + over_cap,
                   "the connections beyond the cap")
        replies = read_lines(raw(service.socket_path))  # past those too: refused and closed
        assert [r["code"] for r in replies] == ["too_many_connections"]
        for sock in held + beyond:
            sock.close()


def test_the_connection_cap_stays_below_the_descriptor_limit() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert Limits(max_connections=10 ** 6).connection_cap() <= resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 64
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= soft


def test_a_client_that_never_reads_its_replies_is_not_read_from(tmp_path: Path) -> None:
    cap = 64 * 1024
    with ServiceThread(tmp_path, limits=Limits(max_unread_reply_bytes=cap)) as service:
        sock = raw(service.socket_path)
        sock.setblocking(False)
        block = STATUS * 1000
        sent = 0

        def unread() -> int:
            return on_loop(service, lambda: max((c.transport.get_write_buffer_size()
                                                 for c in service.service.server._connections), default=0))

        while sent < 8 * 1024 * 1024:    # without back-pressure this would all be read and answered
            try:
                sent += sock.send(block[sent % len(block):])
            except BlockingIOError:
                if unread() >= cap:      # the app stopped reading us: our sends block
                    break
                select.select([], [sock], [], 0.05)
        assert sent < 8 * 1024 * 1024, "the app kept reading although nobody read its replies"
        waiting = unread()
        # At most the cap, plus the replies to the one chunk read before the app noticed.
        assert waiting <= cap + 8 * 65536, waiting
        complete, partial = divmod(sent, len(STATUS))
        replies: list[bytes] = []
        reader = threading.Thread(target=lambda: replies.extend(_read_replies(sock, complete + (1 if partial else 0))))
        sock.setblocking(True)
        reader.start()
        if partial:
            sock.sendall(STATUS[partial:])
        reader.join(WAIT * 3)
        assert len(replies) == complete + (1 if partial else 0)   # nothing dropped, nothing doubled
        assert all(json.loads(line)["type"] == "status_reply" for line in replies[:3])
        sock.close()


def _read_replies(sock: socket.socket, count: int) -> list[bytes]:
    data, lines = b"", []
    while len(lines) < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
        *complete, data = data.split(b"\n")
        lines.extend(complete)
    return lines


def test_idle_connections_are_closed_but_not_while_a_request_waits(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, limits=Limits(idle_seconds=2.0)) as service:  # a busy machine may stall 0.3 s
        waiting = raw(service.socket_path)
        waiting.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"ls"}}\n')
        wait_until(lambda: service.person.tickets, "the request to reach the person")
        idle = raw(service.socket_path)
        idle.sendall(b'{"v":1,"type":"hello","client":{"agent":"sleepy"}}\n')
        replies = read_lines(idle)                       # the app hangs up on the idle one...
        assert [r["type"] for r in replies] == ["welcome", "error"] and replies[1]["code"] == "idle_timeout"
        waiting.setblocking(False)
        with pytest.raises(BlockingIOError):              # ...but not on the one whose request waits
            waiting.recv(1)
        waiting.setblocking(True)
        service.answer(lambda ticket: [Verdict("allow_once", "user")])
        assert one_line(waiting)["decision"] == "allow_once"
        waiting.close()


def test_clients_reconnect_after_an_idle_close(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, limits=Limits(idle_seconds=2.0)) as service:  # past any stall before the hello
        client = Client(service.socket_path)
        assert client.status()["pending"] == 0
        wait_until(lambda: on_loop(service, lambda: not service.service.server._connections), "the idle close")
        assert client.status()["pending"] == 0
        client.close()

        async def twice() -> None:
            async with AsyncClient(service.socket_path) as agent:
                await agent.status()
                await asyncio.get_running_loop().run_in_executor(None, lambda: wait_until(
                    lambda: on_loop(service, lambda: not service.service.server._connections), "the idle close"))
                assert (await agent.status())["type"] == "status_reply"

        asyncio.run(twice())


def test_unfinished_lines_share_one_budget(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, limits=Limits(max_unfinished_bytes=300_000)) as service:
        held_total = lambda: on_loop(service, lambda: service.service.server._held_total)  # noqa: E731
        first, second, third = (raw(service.socket_path) for _ in range(3))
        first.sendall(b"x" * 150_000)
        wait_until(lambda: held_total() == 150_000, "the first half line")
        second.sendall(b"y" * 140_000)
        wait_until(lambda: held_total() == 290_000, "the second half line")
        third.sendall(b"z" * 20_000)
        replies = read_lines(third)
        assert [r["code"] for r in replies] == ["overloaded"]
        assert held_total() == 290_000
        first.sendall(b"\n")                               # the others still work: their lines end
        assert one_line(first)["code"] == "invalid_json"
        second.sendall(b"\n" + STATUS)
        assert one_line(second)["code"] == "invalid_json"
        for sock in (first, second):
            sock.close()


def test_an_unauthenticated_connection_gets_one_refusal_then_is_closed(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, token_check=lambda token: token == "sesame") as service:
        sock = raw(service.socket_path)
        try:
            sock.sendall(b"not json\n" * 50_000)
        except (BrokenPipeError, ConnectionResetError):
            pass                                            # the app hung up while we were still sending
        try:
            replies = read_lines(sock)
        except ConnectionResetError:
            replies = []
        assert len(replies) <= 1 and all(r["code"] == "invalid_json" for r in replies)
        rows = on_loop(service, lambda: service.service.audit.events(kind="refused", limit=1000))
        assert len(rows) == 1


def test_refusals_are_answered_each_but_rate_limited_in_the_audit_log(tmp_path: Path) -> None:
    lines = 3000
    with ServiceThread(tmp_path) as service:
        sock = raw(service.socket_path)
        reader_replies: list[bytes] = []
        reader = threading.Thread(target=lambda: reader_replies.extend(_read_replies(sock, lines + 1)))
        reader.start()
        sock.sendall(b"[1]\n" * lines + STATUS)
        reader.join(WAIT * 3)
        assert len(reader_replies) == lines + 1 and json.loads(reader_replies[-1])["type"] == "status_reply"
        sock.close()
    audit = AuditLog(tmp_path / "audit.sqlite3", read_only=True)
    try:
        rows = audit.events(kind="refused", limit=10_000)
    finally:
        audit.close()
    single = [row for row in rows if row["code"] == "invalid_message"]
    summaries = [row for row in rows if row["code"] == "rate_limited"]
    assert len(single) < 1000 and summaries
    counted = sum(int(row["detail"].split()[0]) for row in summaries)
    assert len(single) + counted == lines                   # every refusal is accounted for


def test_refusal_budget_refills_over_time() -> None:
    now = [0.0]
    budget = RefusalBudget(burst=3, per_second=2, clock=lambda: now[0])
    assert [budget.allow() for _ in range(5)] == [True, True, True, False, False]
    now[0] += 1.0
    assert [budget.allow() for _ in range(3)] == [True, True, False]
    assert budget.take_suppressed() == 3 and budget.take_suppressed() == 0


def test_a_half_closed_client_still_gets_its_answers_then_the_app_hangs_up(tmp_path: Path) -> None:
    with ServiceThread(tmp_path) as service:
        sock = raw(service.socket_path)
        sock.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"ls"}}\n'
                     b'{"v":1,"type":"request","id":"r2","tool":"Bash","args":{"command":"pwd"}}\n')
        sock.shutdown(socket.SHUT_WR)              # "that is all I will say": like `nc -N`
        wait_until(lambda: len(service.person.tickets) == 2, "both requests to reach the person")
        service.answer(lambda ticket: [Verdict("allow_once", "user")])
        service.answer(lambda ticket: [Verdict("deny", "user", note="no")])
        replies = read_lines(sock)                 # both answers, then EOF
        assert sorted((r["id"], r["decision"]) for r in replies) == [("r1", "allow_once"), ("r2", "deny")]
        sock.close()


def test_a_client_that_closes_entirely_still_cancels_its_requests(tmp_path: Path) -> None:
    with ServiceThread(tmp_path) as service:
        sock = raw(service.socket_path)
        sock.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"ls"}}\n')
        wait_until(lambda: service.person.tickets, "the request to reach the person")
        sock.close()
        wait_until(lambda: on_loop(service, lambda: not service.service.broker.pending), "the request to be cancelled")
    audit = AuditLog(tmp_path / "audit.sqlite3", read_only=True)
    try:
        assert audit.history()[0].decided_by == "cancelled"
    finally:
        audit.close()


class ClosesTheFirstConnectionAsIdle:
    """A fake app: on its first connection it answers the request with ``idle_timeout`` and hangs
    up (as the app does when its idle timer fires just as a request is in flight); on the second
    it allows. The clients must send the request again, once."""

    def __init__(self, path: Path) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        path.chmod(0o600)
        self.listener.listen()
        self.requests = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for number in (1, 2):
            conn, _ = self.listener.accept()
            with conn, conn.makefile("rwb") as stream:
                for line in stream:
                    message = json.loads(line)
                    if message["type"] == "hello":
                        stream.write(b'{"v":1,"type":"welcome","server":"desktop-approver","version":"x",'
                                     b'"default_timeout":300,"max_line_bytes":1048576,"peer":{}}\n')
                    else:
                        self.requests += 1
                        stream.write(b'{"v":1,"type":"error","code":"idle_timeout","message":"idle"}\n' if number == 1
                                     else b'{"v":1,"type":"decision","id":"%s","decision":"allow_once",'
                                          b'"decided_by":"user","blocked":false}\n' % message["id"].encode())
                        if number == 1:
                            stream.flush()
                            break
                    stream.flush()
                    if number == 2 and self.requests == 2:
                        break


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_request_crossing_an_idle_close_is_sent_again_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "fake.sock"
    fake = ClosesTheFirstConnectionAsIdle(path)
    if kind == "sync":
        decision = Client(path).request("Bash", {"command": "ls"})
    else:
        async def ask() -> Any:
            async with AsyncClient(path) as client:
                return await client.request("Bash", {"command": "ls"})
        decision = asyncio.run(ask())
    assert decision.decision == "allow_once" and fake.requests == 2
    fake.thread.join(WAIT)
    fake.listener.close()


# -- the app's own failures and closes, on a stream under back-pressure (review of the protocol transport) --

def _failing_audit(*_args: Any, **_kwargs: Any) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def test_a_connection_the_app_closes_withdraws_its_requests_at_once(tmp_path: Path) -> None:
    """Closed by a limit while it has a request waiting and replies unread: the dialog goes at once,
    not when the unread replies have drained (or the linger gives up on them)."""
    limits = Limits(max_unread_reply_bytes=64 << 20, max_unfinished_bytes=100_000)
    with ServiceThread(tmp_path, limits=limits) as service:
        sock = raw(service.socket_path)
        sock.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"make"}}\n')
        wait_until(lambda: on_loop(service, lambda: list(service.service.broker.pending)), "the request to wait")
        sock.sendall(STATUS * 6000)                       # replies pile up unread
        sock.sendall(b"x" * 150_000)                      # over the unfinished-line budget: closed
        deadline = time.monotonic() + 3  # well inside LINGER (30 s), which the withdrawal must not wait for
        while on_loop(service, lambda: list(service.service.broker.pending)) and time.monotonic() < deadline:
            time.sleep(0.01)
        server = service.service.server
        assert on_loop(service, lambda: (list(service.service.broker.pending), len(server._connections))) == ([], 0)
        audit = AuditLog(service.options.audit_path, read_only=True)
        try:
            assert [(entry.decision, entry.decided_by) for entry in audit.history()] == [("deny", "cancelled")]
        finally:
            audit.close()
        sock.close()  # the replies it never read go with it


def test_complete_lines_held_back_by_back_pressure_are_not_unfinished_ones(tmp_path: Path) -> None:
    """A slow reader of well-formed lines is never refused as 'overloaded' (only bytes after the last newline count)."""
    with ServiceThread(tmp_path, limits=Limits(max_unread_reply_bytes=4096, max_unfinished_bytes=100_000)) as service:
        sock = raw(service.socket_path)
        sock.sendall(STATUS * 6000)
        time.sleep(0.3)                                   # the app stops mid-chunk: the replies are unread
        data = b""
        while data.count(b"\n") < 6000:
            chunk = sock.recv(1 << 20)
            assert chunk, "the app hung up"
            data += chunk
        assert b'"overloaded"' not in data and data.count(b'"status_reply"') == 6000


def test_an_audit_failure_on_a_held_back_line_is_a_typed_answer_on_a_kept_connection(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A notice the audit log cannot record, handled when the client reads its replies again: a typed
    error, and the connection stays (issue 20, item 1: it used to be closed, and what waited on it lost)."""
    with ServiceThread(tmp_path, limits=Limits(max_unread_reply_bytes=4096)) as service:
        on_loop(service, lambda: setattr(service.service.audit, "record_event", _failing_audit))
        sock = raw(service.socket_path)
        sock.sendall(STATUS * 6000 + b'{"v":1,"type":"notice","id":"n","kind":"info","text":"hi"}\n' + STATUS)
        data = b""
        while data.count(b'"status_reply"') < 6001:
            chunk = sock.recv(1 << 20)
            assert chunk, "the app hung up"
            data += chunk
        assert b'"noticed"' not in data and b'"in_reply_to": "notice"' in data.replace(b'":"', b'": "')
        sock.close()
    assert "could not record a notice" in caplog.text


def test_a_failure_while_accepting_a_connection_closes_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A refusal the audit log cannot record: the refused client is still hung up on, never left waiting."""
    with ServiceThread(tmp_path, limits=Limits(max_connections_per_peer=1)) as service:
        first = raw(service.socket_path)
        first.sendall(STATUS)
        one_line(first)
        on_loop(service, lambda: setattr(service.service.audit, "record_event", _failing_audit))
        second = raw(service.socket_path)
        try:  # the app may have hung up already when the line goes out: that is the answer too
            second.sendall(STATUS)
            answer = second.recv(65536)
        except (BrokenPipeError, ConnectionResetError):
            answer = b""
        assert b'"status_reply"' not in answer          # closed: EOF or a reset, not silence (recv would time out)
        assert on_loop(service, lambda: len(service.service.server._links)) == 1
    assert "accepting a connection failed" in caplog.text


def test_a_request_the_audit_log_cannot_record_is_answered_internal(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """The person cannot be asked about a call the log cannot hold: the agent hears a typed deny at once.
    (The log's failure is told by its health signal; the request's own lines only at DEBUG.)"""
    caplog.set_level("DEBUG", logger="desktop_approver.core.transport.connection")
    with ServiceThread(tmp_path) as service:
        for name in ("record_event", "record_calls", "record_answered", "record_decisions"):
            on_loop(service, lambda name=name: setattr(service.service.audit, name, _failing_audit))
        sock = raw(service.socket_path)
        sock.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"make"}}\n')
        reply = one_line(sock)
        assert (reply["type"], reply["code"], reply["id"]) == ("error", "internal", "r1")
        assert not on_loop(service, lambda: list(service.service.broker.pending))
    assert "could not record the failure" in caplog.text


def test_a_half_closed_client_whose_replies_back_up_is_watched_once(tmp_path: Path) -> None:
    """Reading resumed after back-pressure on a socket already at its end reads nothing again: one watch
    of the half-closed client, and its request is still answered."""
    with ServiceThread(tmp_path) as service:
        sock = raw(service.socket_path)
        sock.sendall(b'{"v":1,"type":"request","id":"r1","tool":"Bash","args":{"command":"make"}}\n')
        sock.shutdown(socket.SHUT_WR)
        server = service.service.server
        wait_until(lambda: on_loop(service, lambda: any(link._watch for link in server._links)), "the half-close")
        link = on_loop(service, lambda: next(iter(server._links)))
        watch = link._watch
        on_loop(service, link.pause_writing)    # as the transport calls them when replies back up
        on_loop(service, link.resume_writing)
        time.sleep(0.1)
        assert on_loop(service, lambda: (link._watch is watch, link.transport.is_reading())) == (True, False)
        service.answer(lambda ticket: [Verdict("allow_once", "user") for _ in ticket.calls])
        assert one_line(sock)["decision"] == "allow_once"
