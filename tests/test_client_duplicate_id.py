"""A ``duplicate_id`` error is never a request's answer, against the real service over a real socket.

The app refuses a second message sent with the id of one still pending with ``duplicate_id``
(ipc/PROTOCOL.md, ``error``); the first one still stands and gets the person's decision later.
A client that took that error as the pending request's answer would end its wait before the
person decided; one that sent the second message would then read the first one's decision as
its own. So the client reads a ``duplicate_id`` as the answer of nothing, and never sends an id
still waiting: that request gets a typed ``duplicate_id`` error of its own, and no decision.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.client import wire
from desktop_approver.client.async_client import AsyncClient
from desktop_approver.client.base import ClientProtocol
from desktop_approver.client.errors import ProtocolError
from tests.support.deciders import every
from tests.support.service import WAIT, ServiceThread

WRITE = ("write_file", {"path": "notes.txt", "content": "x"})


def until(condition: Callable[[], object]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.005)


def replies(sock: socket.socket, protocol: ClientProtocol) -> list[dict[str, Any]]:
    """The next complete replies (the welcome is absorbed by the protocol)."""
    while True:
        data = sock.recv(65536)
        assert data, "the app closed the connection"
        got = protocol.parse(data)
        if got:
            return got


def test_the_apps_duplicate_id_is_not_the_answer_of_the_request_waiting_with_that_id(tmp_path: Path) -> None:
    with ServiceThread(tmp_path) as service, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(WAIT)
        sock.connect(str(service.socket_path))
        protocol = ClientProtocol(agent="tester", session="run-1")
        request_id, message = protocol.request(*WRITE, session=None, description=None, preview=None,
                                               timeout=60, hints=None)
        sock.sendall(wire.encode(protocol.hello()) + wire.encode(message))
        until(lambda: service.person.tickets)
        sock.sendall(wire.encode(message))  # the same id again, while the first waits for the person
        [refusal] = replies(sock, protocol)
        assert (refusal["type"], refusal["code"], refusal["id"], refusal["in_reply_to"]) == (
            "error", "duplicate_id", request_id, "request")
        assert not protocol.answers(refusal, "request")

        service.answer(every("allow_once"))
        [answer] = replies(sock, protocol)
        assert answer["id"] == request_id and protocol.answers(answer, "request")
        decision = protocol.read_decision(answer)
        assert (decision.decision, decision.decided_by) == ("allow_once", "user")
    assert len(service.person.tickets) == 1


def test_the_async_client_refuses_an_id_still_waiting_and_the_first_request_keeps_its_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(service: ServiceThread) -> None:
        async with AsyncClient(service.socket_path, agent="tester", session="run-1") as client:
            monkeypatch.setattr(client.protocol, "new_id", lambda prefix="r": f"{prefix}1")  # every id the same
            first = asyncio.create_task(client.request(*WRITE, timeout=5))
            while not service.person.tickets:
                assert not first.done(), first
                await asyncio.sleep(0.005)
            with pytest.raises(ProtocolError) as refused:
                await client.request("Bash", {"command": "rm -rf ~"}, timeout=5)
            assert refused.value.code == "duplicate_id"
            service.answer(every("allow_once"))
            decision = await asyncio.wait_for(first, WAIT)
            assert (decision.decision, decision.decided_by) == ("allow_once", "user")

    with ServiceThread(tmp_path) as service:
        asyncio.run(scenario(service))
    assert [ticket.calls[0].tool for ticket in service.person.tickets] == ["write_file"]
