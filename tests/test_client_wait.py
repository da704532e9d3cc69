"""How long the clients wait for a decision: always past the app's latest possible answer.

The app answers a request within its timeout stretched by the pause allowance
(``timeout * (1 + PAUSE_ALLOWANCE)``); a client that gives up sooner reports the app unavailable
while the person may still deny, and an agent built with ``on_unavailable="allow"`` then runs the
call. Timeouts that would make a wait over before it starts are refused where they are given.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Client
from desktop_approver.client.async_client import AsyncClient
from desktop_approver.client.base import REPLY_GRACE, ClientProtocol
from desktop_approver.core.decisions.tickets import PAUSE_ALLOWANCE
from desktop_approver.testing import FakeApprover, allow_once
from tests.support.service import ServiceThread

APP_TIMEOUT = 1000.0  # over DEFAULT_WAIT: a wait guessed before the welcome would end too soon


class EnoughSeen(Exception):
    """Ends the request once the client has shown how long it would wait."""


class RecordingConnection:
    """The real socket connection, noting the wait the client gives each read."""

    def __init__(self, connection: Any, client: Client, waits: list[float]) -> None:
        self.connection, self.client, self.waits = connection, client, waits

    def send(self, data: bytes) -> None:
        self.connection.send(data)

    def receive(self, timeout: float) -> bytes:
        if self.client.protocol.welcome is not None:
            self.waits.append(timeout)  # the app said its timeout: this is the wait that counts
            raise EnoughSeen
        return bytes(self.connection.receive(timeout))

    def finished(self) -> bool:
        return bool(self.connection.finished())

    def close(self) -> None:
        self.connection.close()


def test_the_blocking_client_waits_past_the_apps_latest_answer(tmp_path: Path) -> None:
    with ServiceThread(tmp_path, default_timeout=APP_TIMEOUT) as service:  # nobody answers
        client = Client(service.socket_path, agent="tester")
        waits: list[float] = []
        connect = client.transport.connect
        client.transport.connect = lambda timeout: RecordingConnection(connect(timeout), client, waits)  # type: ignore[method-assign]
        with pytest.raises(EnoughSeen):
            client.request("write_file", {"path": "a.txt"})
        client.close()
    assert waits and waits[0] > APP_TIMEOUT * (1 + PAUSE_ALLOWANCE)


def test_the_async_client_waits_past_the_apps_latest_answer(tmp_path: Path) -> None:
    async def wait_given() -> float:
        with ServiceThread(tmp_path, default_timeout=APP_TIMEOUT) as service:
            client = AsyncClient(service.socket_path, agent="tester")
            seen: list[float] = []
            wait_for = asyncio.wait_for

            async def recording(awaitable: Any, timeout: float | None) -> Any:
                seen.append(timeout or 0.0)
                return await wait_for(awaitable, timeout)

            asyncio.wait_for = recording  # type: ignore[assignment]
            try:
                with pytest.raises(TimeoutError):
                    await wait_for(client.request("write_file", {"path": "a.txt"}), 2.0)
            finally:
                asyncio.wait_for = wait_for
                await client.aclose()
            return max(seen)

    assert asyncio.run(wait_given()) > APP_TIMEOUT * (1 + PAUSE_ALLOWANCE)


@pytest.mark.parametrize("announced", [math.nan, -20.0, 0, math.inf, "300", True])
def test_a_nonsense_default_in_the_welcome_is_not_believed(announced: object) -> None:
    protocol = ClientProtocol(agent="tester")
    protocol.welcome = {"type": "welcome", "default_timeout": announced}
    assert protocol.reply_wait(None) == protocol.reply_wait(300.0) > 300 * (1 + PAUSE_ALLOWANCE) + REPLY_GRACE


BAD_TIMEOUTS = [math.nan, math.inf, -math.inf, 0.0, -1.0, -6.0, -1e9]


@pytest.mark.parametrize("timeout", BAD_TIMEOUTS)
def test_a_timeout_that_cannot_be_waited_is_refused_not_sent(timeout: float) -> None:
    fake = FakeApprover(lambda request: allow_once())
    client = Client(transport=fake)
    with pytest.raises(ValueError, match="finite number of seconds above 0"):
        client.request("write_file", {"path": "a.txt"}, timeout=timeout)
    with pytest.raises(ValueError, match="finite number of seconds above 0"):
        client.request_batch([("write_file", {"path": "a.txt"})], timeout=timeout)
    client.close()

    async def ask() -> None:
        async with AsyncClient(transport=fake) as async_client:
            await async_client.request("write_file", {"path": "a.txt"}, timeout=timeout)

    with pytest.raises(ValueError, match="finite number of seconds above 0"):
        asyncio.run(ask())
    assert fake.requests == []


SLOW_WELCOME = 0.6  # seconds the app below takes to answer a hello: over the connect timeout given


class SlowToWelcome:
    """An app that answers each hello late, as a just-started one loading its protocol does."""

    def __init__(self) -> None:
        self.writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        while line := await reader.readline():
            message = json.loads(line)
            if message["type"] == "hello":
                await asyncio.sleep(SLOW_WELCOME)
                writer.write(b'{"v": 1, "type": "welcome", "default_timeout": 60}\n')
            elif message["type"] == "request":
                writer.write(json.dumps({"v": 1, "type": "decision", "id": message["id"], "decision": "deny",
                                         "decided_by": "user"}).encode() + b"\n")

    def close(self) -> None:
        for writer in self.writers:
            writer.close()


def test_a_welcome_slower_than_the_connect_timeout_is_waited_for(tmp_path: Path) -> None:
    """The connect timeout bounds reaching the socket, not the app's first answer: both clients
    wait for a late welcome (a just-started app on a loaded machine) instead of failing closed."""
    socket_path = tmp_path / "approver.sock"

    async def ask_both() -> list[str]:
        app = SlowToWelcome()
        server = await asyncio.start_unix_server(app.serve, path=str(socket_path))
        socket_path.chmod(0o600)  # the clients connect only to a socket nobody else may use
        agent = AsyncClient(socket_path, connect_timeout=SLOW_WELCOME / 3)
        blocking = Client(socket_path, connect_timeout=SLOW_WELCOME / 3)
        try:
            answers = [await asyncio.get_running_loop().run_in_executor(None, blocking.request, "Bash", {}),
                       await agent.request("Bash", {})]
        finally:
            await agent.aclose()
            blocking.close()
            server.close()
            app.close()
            await server.wait_closed()
        return [answer.decision for answer in answers]

    assert asyncio.run(ask_both()) == ["deny", "deny"]
