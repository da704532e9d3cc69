"""A message sent just as the app closed the idle connection (issue 34: the flaky
``test_clients_reconnect_after_an_idle_close``), against the real app process.

The agent's event loop is held (busy) while the app closes its idle connection, so the async
client's transport has not yet seen the close when the next ``status`` is written: the write fails
at once (EPIPE) with none of its bytes sent. Provably never read by the app, it is sent again on a
new connection; the agent gets its answer instead of "Connection lost".
"""

from __future__ import annotations

import asyncio
import select
from pathlib import Path

import pytest

from desktop_approver import AsyncClient
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT


def held_until_the_app_hangs_up(agent: AsyncClient) -> None:
    """Blocks the agent's loop (no callback runs) until the app has closed the connection."""
    connection = agent._connection
    assert connection is not None
    sock = connection.writer.get_extra_info("socket")  # type: ignore[attr-defined]
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLHUP)
    events = poller.poll(WAIT * 1000)
    assert any(event & select.POLLHUP for _, event in events), "the app did not close the idle connection"


@pytest.mark.timeout(120)
def test_a_status_written_into_a_connection_the_app_closed_as_idle_is_sent_again(tmp_path: Path) -> None:
    with AppProcess(tmp_path, "never", limits={"idle_seconds": 1.0}) as app:

        async def main() -> None:
            async with AsyncClient(app.socket_path) as agent:
                for _ in range(3):
                    assert (await agent.status())["type"] == "status_reply"
                    held_until_the_app_hangs_up(agent)
                assert (await agent.status())["type"] == "status_reply"

        asyncio.run(main())
    assert "Traceback" not in app.stderr()
