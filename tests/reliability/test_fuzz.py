"""A bounded fuzz of the real app over its real socket: 30,000 messages, valid and broken.

Every line gets exactly one reply; every broken line a typed error with a documented code; the
app never crashes, never answers ``internal``, and afterwards still answers and has a sound
audit log. The generator is seeded, so a failure replays.
"""

from __future__ import annotations

import json
import random
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.core.messages import models
from tests.reliability.app import AppProcess

MESSAGES = 30_000
CONNECTIONS = 4
SEED = 20261123
STALL = 300.0
"""Seconds without a byte from the app after which a reader stops (then the count of answers fails)."""
CODES = set(models.ErrorCode.__args__)  # type: ignore[attr-defined]

TOOLS = ["Bash", "write_file", "Read", "deploy", "mcp__github__create_issue", "fetch", "é工具"]
STRINGS = ["ls -la", "rm -rf build", "curl https://x.sh | sh", "naïve ✓", "line\nbreak", "\u202eevil", "", "x" * 300]


class Fuzzer:
    """Lines and what each must earn: ``ok`` (a non-error reply) or ``error`` (a typed refusal)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ids = 0

    def new_id(self) -> str:
        self.ids += 1
        return f"f{self.ids}"

    def text(self) -> str:
        return self.rng.choice(STRINGS) + str(self.rng.randrange(1000))

    def value(self, depth: int = 0) -> Any:
        kind = self.rng.randrange(7 if depth < 3 else 4)
        if kind == 0:
            return self.rng.randrange(-2 ** 63, 2 ** 63)
        if kind == 1:
            return self.rng.uniform(-1e300, 1e300)
        if kind == 2:
            return self.text()
        if kind == 3:
            return self.rng.choice([True, False, None])
        if kind in (4, 5):
            return {self.text(): self.value(depth + 1) for _ in range(self.rng.randrange(4))}
        return [self.value(depth + 1) for _ in range(self.rng.randrange(4))]

    def valid(self) -> dict[str, Any]:
        kind = self.rng.choices(["request", "batch", "status", "hello", "sessions", "revoke", "end_session"],
                                [50, 10, 15, 5, 5, 5, 10])[0]
        if kind == "request":
            message: dict[str, Any] = {"v": 1, "type": "request", "id": self.new_id(), "tool": self.rng.choice(TOOLS),
                                       "args": {"command": self.text(), "data": self.value()}, "session": "fuzz"}
            if self.rng.random() < 0.3:
                message["preview"] = self.rng.choice([
                    {"kind": "diff", "path": "a.py", "old": self.text(), "new": self.text()},
                    {"kind": "command", "argv": ["ls", self.text()]},
                    {"kind": "text", "text": self.text(), "format": "markdown"},
                    {"kind": "file_write", "path": "b.txt", "content": self.text(), "old": None}])
            if self.rng.random() < 0.2:
                message["hints"] = {"readOnlyHint": self.rng.random() < 0.5}
            if self.rng.random() < 0.2:
                message["timeout"] = self.rng.choice([1, 0.5, 3600])
            return message
        if kind == "batch":
            return {"v": 1, "type": "batch", "id": self.new_id(), "session": "fuzz",
                    "calls": [{"tool": self.rng.choice(TOOLS), "args": {"n": i}}
                              for i in range(self.rng.randrange(1, 5))]}
        if kind == "hello":
            return {"v": 1, "type": "hello", "client": {"agent": self.text(), "pid": self.rng.randrange(1, 2 ** 31),
                                                        "cwd": "/tmp"}}
        if kind == "revoke":
            return {"v": 1, "type": "revoke", "id": self.new_id(), "tool": self.rng.choice(TOOLS)}
        if kind == "end_session":
            return {"v": 1, "type": "end_session", "id": self.new_id(), "session": self.text()}
        return {"v": 1, "type": kind, "id": self.new_id()}

    def broken(self) -> bytes:
        message = self.valid()
        encoded = json.dumps(message, ensure_ascii=False)
        choice = self.rng.randrange(17)
        if choice == 0:
            return b"\xff" + self.rng.randbytes(self.rng.randrange(1, 200)).replace(b"\n", b" ")
        if choice == 1:
            return encoded[: self.rng.randrange(1, max(2, len(encoded) - 1))].encode()
        if choice == 2:
            return encoded[:-1].encode() + b', "nan": ' + self.rng.choice([b"NaN", b"Infinity", b"-Infinity"]) + b"}"
        if choice == 3:
            return encoded[:-1].encode() + b', "big": ' + b"9" * self.rng.randrange(20, 6000) + b"}"
        if choice == 4:
            return encoded[:-1].encode() + b', "f": 1e' + str(self.rng.randrange(309, 5000)).encode() + b"}"
        if choice == 5:
            surrogate = self.rng.choice([b"d800", b"dbff", b"dc00", b"dfff"])
            return encoded[:-1].encode() + b', "s": "\\u' + surrogate + b'"}'
        if choice == 6:
            message["unexpected"] = self.value()
        elif choice == 7:
            message["type"] = self.rng.choice(["approve", "welcome", "decision", 7, None, ""])
        elif choice == 8:
            message["v"] = self.rng.choice([0, 2, "1", True, None, 1.5])
        elif choice == 9:
            message.pop("v")
        elif choice == 10:
            return b"[" * self.rng.randrange(1000, 100_000) + b"]" * self.rng.randrange(0, 10)
        elif choice == 11:
            message["id"] = self.rng.choice(["", "i" * 129, 5, None, [], "ok"]) if "id" in message else 5
            if message["id"] == "ok":
                message["tool"] = 5
        elif choice == 12:
            return json.dumps(self.rng.choice([[1, 2], "text", 3, None, True])).encode()
        elif choice == 13:
            message = {"v": 1, "type": "request", "id": self.new_id(), "tool": "Edit", "args": {},
                       "preview": self.rng.choice([{"kind": "diff"}, {"kind": "diff", "old": "a"},
                                                   {"kind": "command"}, {"kind": "video"},
                                                   {"kind": "command", "command": "a", "argv": ["a"]}])}
        elif choice == 14:
            message = {"v": 1, "type": "hello", "client": {"pid": self.rng.choice([2 ** 63, -1, "12", 1.5])}}
        elif choice == 15:
            message = {"v": 1, "type": "cancel", "id": "never-sent-" + self.new_id()}
        else:
            message = {"v": 1, "type": "request", "id": self.new_id(),
                       "tool": self.rng.choice(["", None, 1, "x" * 201]),
                       "args": self.rng.choice([[], "a", None, {}])}
        return json.dumps(message, ensure_ascii=False).encode()

    def line(self) -> tuple[bytes, str]:
        if self.rng.random() < 0.00003:
            return b"x" * (1024 * 1024 + 1), "error"               # over the line limit
        if self.rng.random() < 0.55:
            return self.broken(), "error"
        return json.dumps(self.valid(), ensure_ascii=False).encode(), "ok"


def run_connection(path: Path, lines: list[bytes], replies: list[dict[str, Any]]) -> None:
    """Send every line and read until each is answered, the app hangs up, or nothing at all arrives
    for ``STALL`` seconds: no bound on the whole (a busy machine only makes it slower), so a reader
    never gives up while the app is still answering."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(STALL)
    sock.connect(str(path))

    def read() -> None:
        data = b""
        while len(replies) < len(lines):
            try:
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
            *complete, data = data.split(b"\n")
            replies.extend(json.loads(line) for line in complete if line.strip())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        sock.sendall(b"".join(line + b"\n" for line in lines))
    finally:
        reader.join()  # it ends by itself (see above); closing under it would leave its socket to a later test
        sock.close()


@pytest.mark.timeout(3600)  # against a hang only: the readers stop when the app stops answering
def test_thirty_thousand_messages_each_get_one_typed_answer(tmp_path: Path, figures: dict[str, str]) -> None:
    rng = random.Random(SEED)
    fuzzer = Fuzzer(rng)
    generated = [fuzzer.line() for _ in range(MESSAGES)]
    per_connection = [generated[i::CONNECTIONS] for i in range(CONNECTIONS)]
    with AppProcess(tmp_path, "deny", max_pending=10 ** 6) as app:
        replies: list[list[dict[str, Any]]] = [[] for _ in range(CONNECTIONS)]
        started = time.perf_counter()
        threads = [threading.Thread(target=run_connection, args=(app.socket_path, [line for line, _ in part], out))
                   for part, out in zip(per_connection, replies, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        for part, out in zip(per_connection, replies, strict=True):
            expected_errors = sum(1 for _, kind in part if kind == "error")
            errors = [reply for reply in out if reply.get("type") == "error"]
            assert len(out) == len(part), "a line went unanswered or was answered twice"
            assert len(errors) == expected_errors
            assert {reply["code"] for reply in errors} <= CODES - {"internal"}
            assert all(isinstance(reply.get("message"), str) for reply in errors)
        assert app.alive()
        assert Client(app.socket_path).status()["type"] == "status_reply"
        stderr = app.stop()
    assert "Traceback" not in stderr, stderr[-3000:]
    with sqlite3.connect(app.audit_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        refused = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'refused'").fetchone()[0]
        requests = db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
    errors = sum(1 for _, kind in generated if kind == "error")
    figures["fuzz: messages, broken, wall time"] = (f"{MESSAGES:,} messages ({errors:,} broken) over {CONNECTIONS} "
                                                    f"connections in {elapsed:.1f} s ({MESSAGES / elapsed:,.0f}/s)")
    figures["fuzz: audit rows"] = f"{requests:,} calls, {refused:,} refusal rows (rate-limited)"
