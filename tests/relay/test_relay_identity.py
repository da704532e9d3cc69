"""Who asks over the relay: the NATS user the server vouches for, and what the agent claims.

Session memory is the asking agent's own, and for a relayed request the claimed host is part of
whose it is: a session allowed for an agent on one machine never answers the same agent name and
session id on another.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from desktop_approver import Client
from tests.relay.conftest import Approver, NatsServer


def test_a_session_allowed_on_one_host_does_not_answer_another(tmp_path: Path, nats_server: NatsServer,
                                                               approvers: list[Approver]) -> None:
    approver = Approver(tmp_path, nats_server.user_url("desk", "x"), "desk")
    approvers.append(approver)
    url = nats_server.user_url("alice", "pw")

    def ask(host: str) -> str:
        with mock.patch("socket.gethostname", return_value=host), \
                Client(url=url, agent="claude", session="S1") as client:
            return client.request("session", {"path": "x"}).decided_by

    assert ask("host-a") == "user"
    assert ask("host-b") == "user"  # the person is asked again: another machine's session
    assert ask("host-a") == "session"
    assert [approver.expect("asked").split()[3] for _ in range(2)] == ["host-a", "host-b"]
    assert not [line for line in approver.lines if line.startswith("asked")]  # the third: not asked
