"""Two approver apps with one name (the default ``<user>@<host>``, two desks of one NATS user on
machines of one name): each knows its own answers by its own id, so both logs hold what the agent got."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, run_agent


def test_two_apps_of_one_name_each_record_the_answer_the_agent_got(
        tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    url = nats_server.user_url("desk", "x")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    yes = Approver(tmp_path / "a", url, "desk@ubuntu", race="allow")
    no = Approver(tmp_path / "b", url, "desk@ubuntu", race="deny")
    approvers += [yes, no]
    results = run_agent(nats_server.user_url("alice", "pw"), [{"op": "request", "tool": "race", "args": {"n": n}}
                                                               for n in range(6)])
    got = {n: result["decision"]["decision"] for n, result in enumerate(results)}
    deadline = time.monotonic() + WAIT  # the agent has its answers; the other app may still be recording
    while min(len(yes.decisions()), len(no.decisions())) < len(got) and time.monotonic() < deadline:
        time.sleep(0.05)
    for approver in (yes, no):
        with sqlite3.connect(approver.audit) as db:
            rows = db.execute("SELECT r.args, d.decision FROM decisions d JOIN requests r ON r.id = d.request"
                              ).fetchall()
        logged = {json.loads(args)["n"]: decision for args, decision in rows}
        assert logged == got, (approver.folder, logged, got)
