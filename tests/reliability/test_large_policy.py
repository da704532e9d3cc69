"""Rules at any size (issue 34, item 3), against the real app process.

50,000 rules (about 3.5 MB, under the 4 MiB cap): a burst of rule-answered calls from 50 agents at
once is answered by the rule, ``status`` answers while the file is read again after an edit, and
the edit takes effect without a restart.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from desktop_approver import Client
from tests.bench.bench_policy_size import policy_text
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


def decided_by(app: AppProcess, command: str) -> str:
    with Client(app.socket_path, agent="large-policy") as client:
        return client.request("Bash", {"command": command}, timeout=WAIT).decided_by


@pytest.mark.timeout(400)
def test_fifty_thousand_rules_answer_a_burst_and_an_edit_is_read_beside_the_work(
        tmp_path: Path, figures: dict[str, str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(policy_text(50_000))
    with AppProcess(tmp_path, "deny", policy=policy) as app:
        answers: list[str] = []

        def agent() -> None:
            answers.append(decided_by(app, "ls -la"))

        burst = [threading.Thread(target=agent) for _ in range(50)]
        started = time.monotonic()
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join(WAIT * 2)
        figures["50,000 rules: a burst of 50 rule-answered calls"] = f"{time.monotonic() - started:.2f} s"
        assert answers == ["policy"] * 50

        policy.write_text(policy_text(50_000).replace('command = "ls *"', 'command = "cat *"'))
        edited = time.monotonic()
        statuses = 0
        while decided_by(app, "cat x") != "policy":  # the edit is read in a thread: the app answers meanwhile
            with Client(app.socket_path) as client:
                assert client.status()["pending"] == 0
            statuses += 1
            assert time.monotonic() - edited < WAIT * 2, "the edit was not taken up"
        figures["50,000 rules: an edit in force after"] = f"{time.monotonic() - edited:.1f} s ({statuses} statuses)"
        wait_for(lambda: decided_by(app, "ls -la") == "user", "the old rule to be gone")
    assert "Traceback" not in app.stderr()
