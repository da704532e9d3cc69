"""The socket server over real unix sockets: permissions, one app per socket, limits, cancellation."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.service import ApproverService, ServiceOptions
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.transport import server as server_module
from desktop_approver.core.transport.peercred import peer_credentials
from desktop_approver.core.transport.server import AlreadyRunning, ApproverServer
from tests.support.deciders import WaitingPerson


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


def run(folder: Path, scenario: Callable[[ApproverServer, WaitingPerson], Awaitable[None]],
        **kwargs: Any) -> WaitingPerson:
    person = WaitingPerson()

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
    async def scenario(server: ApproverServer, person: WaitingPerson) -> None:
        assert stat.S_IMODE(os.stat(server.socket_path.parent).st_mode) == 0o700
        mode = os.stat(server.socket_path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600

    run(folder, scenario)


def test_a_stale_socket_is_replaced(folder: Path) -> None:
    (folder / "run").mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(folder / "run" / "s.sock"))
    stale.close()                                        # the file stays, nobody listens

    async def scenario(server: ApproverServer, person: WaitingPerson) -> None:
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        writer.write(json.dumps({"v": 1, "type": "status", "id": "st"}).encode() + b"\n")
        assert (await read(reader))["type"] == "status_reply"
        writer.close()

    run(folder, scenario)


def test_a_second_server_on_a_live_socket_raises_already_running(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: WaitingPerson) -> None:
        second = ApproverServer(server.broker, server.socket_path)
        with pytest.raises(AlreadyRunning):
            await second.start()
        assert server.socket_path.exists()              # the live app's socket is untouched

    run(folder, scenario)


def test_per_client_pending_limit(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: WaitingPerson) -> None:
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        for index in range(3):
            writer.write(json.dumps(request(f"r{index}")).encode() + b"\n")
        await writer.drain()
        reply = await read(reader)
        assert (reply["type"], reply["code"], reply["id"]) == ("error", "too_many_pending", "r2")
        await until(lambda: len(person.seen) == 2)
        writer.close()

    run(folder, scenario, max_pending_per_client=2)


def test_disconnect_cancels_the_ticket(folder: Path) -> None:
    async def scenario(server: ApproverServer, person: WaitingPerson) -> None:
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
        person = WaitingPerson()
        server = ApproverServer(Broker(person, audit=AuditLog(folder / "audit.sqlite3")), folder / "run" / "s.sock")
        await server.start()
        reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
        writer.write(json.dumps(request("r1")).encode() + b"\n")
        await writer.drain()
        await until(lambda: len(person.seen) == 1)
        await server.close()
        while line := await asyncio.wait_for(reader.readline(), 10):
            replies.append(json.loads(line))
        writer.close()
        assert not server.socket_path.exists()

    asyncio.run(main())
    assert replies[0]["type"] == "error" and replies[0]["code"] == "shutting_down" and replies[0]["id"] == "r1"


# -- through the whole service ---------------------------------------------------------------------

def options(folder: Path) -> ServiceOptions:
    return ServiceOptions(socket_path=folder / "run" / "approver.sock", audit_path=folder / "audit.sqlite3",
                          policy_path=None, state_path=None)


async def exchange(path: Path, *messages: dict[str, Any], replies: int = 1) -> list[dict[str, Any]]:
    reader, writer = await asyncio.open_unix_connection(str(path))
    for message in messages:
        writer.write(json.dumps(message).encode() + b"\n")
    await writer.drain()
    out = [json.loads(await asyncio.wait_for(reader.readline(), 10)) for _ in range(replies)]
    writer.close()
    return out


def test_socket_is_0600_in_a_0700_directory(folder: Path) -> None:
    async def scenario() -> None:
        service = ApproverService(options(folder), WaitingPerson())
        await service.start()
        try:
            sock = service.options.socket_path
            assert stat.S_IMODE(os.stat(sock.parent).st_mode) == 0o700
            assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
            assert stat.S_ISSOCK(os.stat(sock).st_mode)
        finally:
            await service.close()
        assert not service.options.socket_path.exists()

    asyncio.run(scenario())


def test_second_app_on_a_live_socket_refuses_and_a_stale_one_is_replaced(folder: Path) -> None:
    async def scenario() -> None:
        first = ApproverService(options(folder), WaitingPerson())
        await first.start()
        second = ApproverService(options(folder), WaitingPerson())
        with pytest.raises(AlreadyRunning):
            await second.start()
        second.audit.close()
        status = await exchange(first.options.socket_path, {"v": 1, "type": "status", "id": "s"})
        assert status[0]["type"] == "status_reply"     # the first app was not disturbed
        await first.close()

        stale = socket.socket(socket.AF_UNIX)           # a socket file nobody listens on (a crash)
        stale.bind(str(first.options.socket_path))
        stale.close()
        third = ApproverService(options(folder), WaitingPerson())
        await third.start()
        status = await exchange(third.options.socket_path, {"v": 1, "type": "status", "id": "s"})
        assert status[0]["type"] == "status_reply"
        await third.close()

    asyncio.run(scenario())


def test_peer_credentials_are_the_kernels() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    try:
        creds = peer_credentials(left)
        assert creds.uid == os.getuid() and creds.pid == os.getpid()
    finally:
        left.close()
        right.close()


def test_a_peer_of_another_user_is_refused_and_audited(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        service = ApproverService(options(folder), WaitingPerson())
        await service.start()
        try:
            monkeypatch.setattr(server_module.os, "getuid", lambda: os.geteuid() + 4242)
            reply = await exchange(service.options.socket_path, {"v": 1, "type": "status", "id": "s"})
            assert reply[0]["type"] == "error" and reply[0]["code"] == "unauthorized"
            monkeypatch.undo()
            events = service.audit.events(kind="refused")
            assert events and events[0]["code"] == "unauthorized"
        finally:
            await service.close()

    asyncio.run(scenario())


def test_a_client_that_vanishes_cancels_its_ticket_and_is_audited(folder: Path) -> None:
    async def scenario() -> None:
        person = WaitingPerson()
        service = ApproverService(options(folder), person)
        await service.start()
        try:
            reader, writer = await asyncio.open_unix_connection(str(service.options.socket_path))
            writer.write(b'{"v":1,"type":"request","id":"r","tool":"Bash","args":{"command":"ls"}}\n')
            await writer.drain()
            for _ in range(500):
                if person.seen:
                    break
                await asyncio.sleep(0.01)
            assert service.broker.pending
            writer.close()
            for _ in range(500):
                if not service.broker.pending:
                    break
                await asyncio.sleep(0.01)
            assert not service.broker.pending and person.cancelled == 1
            assert service.audit.history()[0].decided_by == "cancelled"
        finally:
            await service.close()

    asyncio.run(scenario())


def test_closing_the_app_answers_waiting_clients_with_shutting_down(folder: Path) -> None:
    async def scenario() -> None:
        service = ApproverService(options(folder), WaitingPerson())
        await service.start()
        reader, writer = await asyncio.open_unix_connection(str(service.options.socket_path))
        writer.write(b'{"v":1,"type":"request","id":"r","tool":"Bash","args":{"command":"ls"}}\n')
        await writer.drain()
        for _ in range(500):
            if service.broker.pending:
                break
            await asyncio.sleep(0.01)
        await service.close()
        reply = json.loads(await asyncio.wait_for(reader.readline(), 10))
        assert reply["type"] == "error" and reply["code"] == "shutting_down" and reply["id"] == "r"
        writer.close()

    asyncio.run(scenario())


# -- closing cleanly -------------------------------------------------------------------------------

def leaks(folder: Path, main: Callable[[], Awaitable[None]]) -> list[str]:
    """The sockets under ``folder`` that ``main`` left unclosed (other tests' garbage is collected first)."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        asyncio.run(main())
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and str(folder) in str(w.message)]


class Holds:
    """A person who never answers (the tests below count tickets on the broker, not here)."""

    async def decide(self, ticket: object) -> list[Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable: an event nobody sets")


def test_close_closes_every_connection_and_waits_for_it(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="desktop_approver.core.transport.server")
    found: list[Any] = []

    async def main() -> None:
        server = ApproverServer(Broker(Holds(), audit=AuditLog(folder / "audit.sqlite3")), folder / "run" / "s.sock")
        await server.start()
        waiting = await asyncio.open_unix_connection(str(server.socket_path))
        waiting[1].write(json.dumps(request("r1")).encode() + b"\n")
        idle = await asyncio.open_unix_connection(str(server.socket_path))
        half = await asyncio.open_unix_connection(str(server.socket_path))
        half[1].write(json.dumps(request("r2")).encode() + b"\n")
        half[1].write_eof()
        await until(lambda: len(server.broker.pending) == 2 and len(server._connections) == 3)
        links = list(server._connections)
        assert repr(server).endswith("connections=3 listening=True>")
        await server.close()
        found.extend(link.transport.is_closing() for link in links)
        found.append(not server._links and not server._connections)
        found.append(repr(server).endswith("connections=0 listening=False>"))
        for reader, writer in (waiting, idle, half):
            found.append((await reader.read()).count(b"shutting_down"))
            writer.close()
            await writer.wait_closed()

    assert leaks(folder, main) == []
    assert found == [True, True, True, True, True, 1, 0, 1]
    opened = [r.getMessage() for r in caplog.records if r.getMessage().startswith("connection opened")]
    closed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("connection closed")]
    assert len(opened) == 3 and len(closed) == 3 and f"pid {os.getpid()}, uid {os.getuid()}" in closed[0]


@pytest.mark.parametrize("turns", range(6))
def test_closing_just_after_a_client_connects_leaks_nothing(folder: Path, turns: int) -> None:
    """Closing while asyncio is between accepting a connection and attaching it trips an assertion in
    asyncio and leaks the socket (CPython gh-109564); the server stops accepting first."""
    errors: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        server = ApproverServer(Broker(Holds(), audit=AuditLog(folder / "audit.sqlite3")), folder / "run" / "s.sock")
        await server.start()
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(server.socket_path))
        for _ in range(turns):
            await asyncio.sleep(0)
        await server.close()
        client.close()

    assert leaks(folder, main) == []
    assert errors == []


IDLE_SCRIPT = """
import asyncio, json, sys, tempfile
from pathlib import Path
from desktop_approver.core.service import ApproverService, ServiceOptions

async def main():
    folder = Path(tempfile.mkdtemp())
    options = ServiceOptions(socket_path=folder / "run" / "s.sock", audit_path=folder / "audit.sqlite3",
                             policy_path=folder / "policy.toml", state_path=None)
    service = ApproverService(options, None)
    await service.start()
    await asyncio.sleep(0.1)
    before = sorted(name for name in sys.modules if name.split(".")[0] in ("pydantic", "pydantic_core"))
    reader, writer = await asyncio.open_unix_connection(str(options.socket_path))
    writer.write(b'{"v": 1, "type": "status", "id": "s1"}\\n')
    reply = json.loads(await reader.readline())
    writer.close()
    await writer.wait_closed()
    await service.close()
    print(json.dumps({"before": before, "reply": reply["type"], "after": "pydantic" in sys.modules}))

asyncio.run(main())
"""


def test_the_protocol_loads_with_the_first_connection_not_before(tmp_path: Path) -> None:
    """An app no agent has talked to yet does without pydantic (idle memory, BENCHMARKS.md); the
    first connection loads the protocol and is answered as any other."""
    done = subprocess.run([sys.executable, "-c", IDLE_SCRIPT], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"before": [], "reply": "status_reply", "after": True}
