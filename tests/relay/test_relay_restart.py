"""An approver killed with ``kill -9`` and started again records the answer that stands for every
relayed request it had open, on the rows it wrote before, once: asked again when the request is still
waiting, the other approver's answer when one answered meanwhile; never the local "the agent got
ApproverUnavailable" (the agent did not: its request waited on the server)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, start_agent

FAST = ["--ack-wait", "3"]  # what a killed approver held comes again 3 s later, not 30


def rows_of(approver: Approver, request_id: str) -> list[tuple[str, str]]:
    return [(row["decision"], row["decided_by"]) for row in approver.decisions() if row["request_id"] == request_id]


def requests_in_log(approver: Approver, request_id: str) -> int:
    import sqlite3

    with sqlite3.connect(approver.audit) as db:
        return int(db.execute("SELECT COUNT(*) FROM requests WHERE request_id = ?", (request_id,)).fetchone()[0])


def test_killed_while_asking_then_asked_again_on_the_same_rows(tmp_path: Path, nats_server: NatsServer,
                                                               approvers: list[Approver]) -> None:
    url = nats_server.user_url("desk", "x")
    first = Approver(tmp_path, url, "desk", race="wait", extra=FAST)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "race", "args": {}, "timeout": 60}])
    request_id = first.expect("asked").split()[1]
    first.kill()
    again = Approver(tmp_path, url, "desk", race="allow", extra=FAST)  # the same folder: the same app, restarted
    approvers.append(again)
    assert again.expect("asked", timeout=WAIT).split()[1] == request_id  # still waiting: the person is asked again
    out, err = agent.communicate(timeout=WAIT)
    assert '"allow_once"' in out, (out, err)
    assert requests_in_log(again, request_id) == 1  # no second row
    assert rows_of(again, request_id) == [("allow_once", "user")]  # and no "ApproverUnavailable" deny


def test_killed_while_asking_then_answered_elsewhere_records_that_answer(tmp_path: Path, nats_server: NatsServer,
                                                                          approvers: list[Approver]) -> None:
    url = nats_server.user_url("desk", "x")
    first = Approver(tmp_path, url, "desk", race="wait", extra=FAST)
    other = Approver(tmp_path, nats_server.user_url("desk2", "x"), "desk2", race="wait", extra=FAST)
    approvers.append(other)
    agent = start_agent(nats_server.user_url("alice", "pw"),
                        [{"op": "request", "tool": "race", "args": {}, "timeout": 60}])
    request_id = first.expect("asked").split()[1]
    other.expect("asked")
    first.kill()
    other.stop()  # stopping answers nothing; then, restarted to allow, it answers
    approvers.remove(other)
    approvers.append(Approver(tmp_path, nats_server.user_url("desk2", "x"), "desk2", race="allow", extra=FAST))
    out, err = agent.communicate(timeout=WAIT)
    assert '"allow_once"' in out, (out, err)
    again = Approver(tmp_path, url, "desk", race="wait", extra=FAST)
    approvers.append(again)
    deadline = time.monotonic() + WAIT
    while not rows_of(again, request_id):
        assert time.monotonic() < deadline, again.events()
        time.sleep(0.1)
    assert requests_in_log(again, request_id) == 1
    assert rows_of(again, request_id) == [("allow_once", "user")]
    assert any("answered by approver desk2" in event["detail"] for event in again.events("relay"))
