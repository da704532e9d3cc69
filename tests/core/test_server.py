"""The socket server over real unix sockets: permissions, one app per socket, limits, cancellation."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

from desktop_approver.core.audit import AuditLog
from desktop_approver.core.broker import Broker
from desktop_approver.core.server import AlreadyRunning, ApproverServer
from desktop_approver.core.tickets import Ticket, Verdict


class Waits:
    """A person who never answers: tickets stay pending until cancelled."""

    def __init__(self) -> None:
        self.tickets: list[Ticket] = []
        self.cancelled = 0

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        self.tickets.append(ticket)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return []


@pytest.fixture
def folder() -> Path:
    path = Path(tempfile.mkdtemp(prefix="da-core-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def request(request_id: str, command: str = "echo hi") -> dict[str, Any]:
    return {"v": 1, "type": "request", "id": request_id, "tool": "Bash", "args": {"command": command}}


async def read(reader: asyncio.StreamReader) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(reader.readline(), 10))


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never became true")


def run(folder: Path, scenario: Callable[[ApproverServer, Waits], Awaitable[None]], **kwargs: Any) -> Waits:
    person = Waits()

    async def main() -> None:
        broker = Broker(person, audit=AuditLog(folder / "audit.sqlite3"))
        server = ApproverServer(broker, folder / "run" / "s.sock", **kwargs)
        await server.start()
        try:
            await scenario(server, person)
        finally:
            await server.close()

    asyncio.run(main())
    return person


def test_private_directory_and_socket(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: Waits) -> None:
        assert stat.S_IMODE(os.stat(server.socket_path.parent).st_mode) == 0o700
        mode = os.stat(server.socket_path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600

    run(folder, scenario)


def test_a_stale_socket_is_replaced(folder: Path) -> None:
    (folder / "run").mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / "run" / "s.sock"))
    stale.close()                                        # the file stays, nobody listens

    async def scenario(server: ApproverServer, person: Waits) -> None:
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        writer.write(json.dumps({"v": 1, "type": "status", "id": "st"}).encode() + b"\n")
        assert (await read(reader))["type"] == "status_reply"
        writer.close()

    run(folder, scenario)


def test_a_second_server_on_a_live_socket_raises_already_running(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: Waits) -> None:
        second = ApproverServer(server.broker, server.socket_path)
        with pytest.raises(AlreadyRunning):
            await second.start()
        assert server.socket_path.exists()              # the live app's socket is untouched

    run(folder, scenario)


def test_per_client_pending_limit(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: Waits) -> None:
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        for index in range(3):
            writer.write(json.dumps(request(f"r{index}")).encode() + b"\n")
        await writer.drain()
        reply = await read(reader)
        assert (reply["type"], reply["code"], reply["id"]) == ("error", "too_many_pending", "r2")
        await until(lambda: len(person.tickets) == 2)
        writer.close()

    run(folder, scenario, max_pending_per_client=2)


def test_disconnect_cancels_the_ticket(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: Waits) -> None:
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        writer.write(json.dumps(request("r1")).encode() + b"\n")
        await writer.drain()
        await until(lambda: len(server.broker.pending) == 1)
        writer.close()
        await until(lambda: person.cancelled == 1 and not server.broker.pending)
        await until(lambda: server.broker.audit.history()[0].decision is not None)
        assert server.broker.audit.history()[0].decided_by == "cancelled"

    run(folder, scenario)


def test_close_tells_pending_clients_shutting_down(folder: Path) -> None:
    replies: list[dict[str, Any]] = []

    async def main() -> None:
        person = Waits()
        server = ApproverServer(Broker(person, audit=AuditLog(folder / "audit.sqlite3")), folder / "run" / "s.sock")
        await server.start()
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        writer.write(json.dumps(request("r1")).encode() + b"\n")
        await writer.drain()
        await until(lambda: len(person.tickets) == 1)
        await server.close()
        while line := await asyncio.wait_for(reader.readline(), 10):
            replies.append(json.loads(line))
        writer.close()
        assert not server.socket_path.exists()

    asyncio.run(main())
    assert replies[0]["type"] == "error" and replies[0]["code"] == "shutting_down" and replies[0]["id"] == "r1"
