"""NATS ``.creds`` files (a user JWT and its nkey seed): a real decentralised setup (operator,
account, users, made with nkeys by ``jwt_setup.py``) works end to end; without the nkeys package
the agent is refused with the reason (``ApproverUnavailable``, never a ``ModuleNotFoundError``) and
the approver tells the person and keeps trying, never a dead task."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.relay.conftest import BLOCK_NKEYS, Approver, NatsServer, run_agent
from tests.relay.jwt_setup import decentralised


@pytest.fixture
def operator_server(tmp_path: Path) -> Iterator[tuple[NatsServer, dict[str, Path]]]:
    pytest.importorskip("nkeys")
    config, creds = decentralised(tmp_path, ["desk", "alice"])
    server = NatsServer(tmp_path, config=config).start()
    yield server, creds
    server.stop()


PLAN = [{"op": "request", "tool": "allow", "args": {}}, {"op": "request", "tool": "allow", "args": {}, "async": True}]


def test_creds_files_work_end_to_end(tmp_path: Path, operator_server: tuple[NatsServer, dict[str, Path]],
                                     approvers: list[Approver]) -> None:
    server, creds = operator_server
    approvers.append(Approver(tmp_path, server.url, "desk", creds=creds["desk"]))
    sync, in_loop = run_agent(server.url, PLAN, env={"DESKTOP_APPROVER_NATS_CREDS": str(creds["alice"])})
    assert sync["decision"]["decision"] == in_loop["decision"]["decision"] == "allow_once"


def test_without_nkeys_the_agent_is_approver_unavailable_with_the_reason(
        tmp_path: Path, operator_server: tuple[NatsServer, dict[str, Path]], approvers: list[Approver]) -> None:
    server, creds = operator_server
    approvers.append(Approver(tmp_path, server.url, "desk", creds=creds["desk"]))
    results = run_agent(server.url, PLAN, env={"DESKTOP_APPROVER_NATS_CREDS": str(creds["alice"])},
                        python=BLOCK_NKEYS)
    for result in results:  # the blocking client and the AsyncClient alike
        assert result["error"] == "ApproverUnavailable", result
        assert "need the Python package nkeys" in result["message"] and "desktop-approver[relay]" in result["message"]


def test_without_nkeys_the_approver_tells_the_person_and_keeps_trying(
        tmp_path: Path, operator_server: tuple[NatsServer, dict[str, Path]], approvers: list[Approver]) -> None:
    from desktop_approver import Client

    server, creds = operator_server
    approver = Approver(tmp_path, server.url, "desk", creds=creds["desk"], wait=False, python=BLOCK_NKEYS)
    approvers.append(approver)
    problem = approver.expect("problem relay")
    assert "nkeys is missing" in problem and "desktop-approver[relay]" in problem
    with Client(socket_path=approver.folder / "sock" / "approver.sock") as client:
        status = client.status()  # the app itself goes on, and says what its relay lacks
    assert any("nkeys is missing" in text for text in status["problems"]), status
    assert approver.process.poll() is None
    assert "trying again" in (approver.folder / "stderr").read_text()
