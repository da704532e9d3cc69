"""The socket itself: private permissions, one app per socket, stale sockets, strangers refused."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core import server as server_module
from desktop_approver.core.peercred import peer_credentials
from desktop_approver.core.server import AlreadyRunning
from desktop_approver.core.service import ApproverService, ServiceOptions
from desktop_approver.core.tickets import Ticket, Verdict


class Waits:
    """A person who never answers until told: tickets stay pending."""

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
    path = Path(tempfile.mkdtemp(prefix="da-srv-", dir="/tmp"))
    yield path
    for child in sorted(path.rglob("*"), reverse=True):
        child.unlink() if not child.is_dir() else child.rmdir()
    path.rmdir()


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
        service = ApproverService(options(folder), Waits())
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
        first = ApproverService(options(folder), Waits())
        await first.start()
        second = ApproverService(options(folder), Waits())
        with pytest.raises(AlreadyRunning):
            await second.start()
        second.audit.close()
        status = await exchange(first.options.socket_path, {"v": 1, "type": "status", "id": "s"})
        assert status[0]["type"] == "status_reply"     # the first app was not disturbed
        await first.close()

        stale = socket.socket(socket.AF_UNIX)           # a socket file nobody listens on (a crash)
        stale.bind(str(first.options.socket_path))
        stale.close()
        third = ApproverService(options(folder), Waits())
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
        service = ApproverService(options(folder), Waits())
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
        person = Waits()
        service = ApproverService(options(folder), person)
        await service.start()
        try:
            reader, writer = await asyncio.open_unix_connection(str(service.options.socket_path))
            writer.write(b'{"v":1,"type":"request","id":"r","tool":"Bash","args":{"command":"ls"}}\n')
            await writer.drain()
            for _ in range(500):
                if person.tickets:
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
        service = ApproverService(options(folder), Waits())
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
