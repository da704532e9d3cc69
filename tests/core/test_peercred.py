"""Peer credentials: the kernel's word on who connected, and strangers refused."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from desktop_approver.core.decisions.broker import Broker
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.transport import server as server_module
from desktop_approver.core.transport.peercred import PeerCredentials, peer_credentials, process_exe
from desktop_approver.core.transport.server import ApproverServer
from tests.support.deciders import FailingPerson

pytestmark = pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="no peer credentials here")


def test_a_socketpair_peer_is_us() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        creds = peer_credentials(left)
        assert creds.uid == os.getuid()
        if sys.platform.startswith("linux"):
            assert creds.pid == os.getpid() and creds.gid == os.getgid()
            assert process_exe(creds.pid) == os.readlink("/proc/self/exe")
    finally:
        left.close()
        right.close()


def test_process_exe_of_nothing_is_none() -> None:
    assert process_exe(None) is None and process_exe(0) is None


def test_a_peer_of_another_uid_is_refused_with_unauthorized(monkeypatch: pytest.MonkeyPatch) -> None:
    stranger = os.getuid() + 4242
    monkeypatch.setattr(server_module, "peer_credentials",
                        lambda sock: PeerCredentials(pid=os.getpid(), uid=stranger, gid=None))
    folder = Path(tempfile.mkdtemp(prefix="da-peer-", dir="/tmp"))

    async def main() -> tuple[dict, bytes, list[dict]]:
        audit = AuditLog(folder / "audit.sqlite3")
        never_asked = FailingPerson(AssertionError("a refused peer must never reach the person"))
        server = ApproverServer(Broker(never_asked, audit=audit), folder / "run" / "s.sock")
        await server.start()
        try:
            reader, writer = await asyncio.open_unix_connection(str(server.socket_path))
            first = json.loads(  # refused before a byte is read
                await asyncio.wait_for(reader.readline(), 10))
            rest = await asyncio.wait_for(reader.read(), 10)       # then the app hangs up
            writer.close()
            return first, rest, audit.events("refused")
        finally:
            await server.close()

    try:
        first, rest, events = asyncio.run(main())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert (first["type"], first["code"]) == ("error", "unauthorized") and rest == b""
    assert events and events[0]["code"] == "unauthorized" and events[0]["peer_uid"] == stranger
