"""Round trips through a real NATS server: an agent process, an approver process (the app's core
with a scripted person), and every kind of answer the socket gives."""

from __future__ import annotations

from pathlib import Path

from tests.relay.conftest import Approver, NatsServer, run_agent


def test_a_request_goes_through_nats_and_back(tmp_path: Path, nats_server: NatsServer,
                                              approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    results = run_agent(nats_server.user_url("alice", "pw"), [
        {"op": "request", "tool": "allow", "args": {"n": 1}},
        {"op": "request", "tool": "deny", "args": {}},
        {"op": "request", "tool": "edit", "args": {"command": "rm -rf /"}},
        {"op": "batch", "calls": [["allow", {}], ["deny", {}], ["edit", {"command": "x"}]]},
    ])
    print(results)
    single, denied, edited, batch = results
    assert single["decision"]["decision"] == "allow_once" and single["decision"]["decided_by"] == "user"
    assert denied["decision"]["decision"] == "deny" and denied["decision"]["note"] == "not on a Friday"
    assert edited["decision"]["updated_args"] == {"command": "ls -l"}
    assert [d["decision"] for d in batch["decisions"]] == ["allow_once", "deny", "allow_once"]
    asked = approvers[0].expect("asked").split()
    assert asked[2] == "alice/relay-agent"  # the NATS user from the subject, the agent's claimed name
