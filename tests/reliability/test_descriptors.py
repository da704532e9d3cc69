"""Out of file descriptors, and full of connections (issue 34, items 4 and the 512-connection point),
against the real app process.

Under ``prlimit --nofile=40`` (the hard limit too: the app cannot raise it) 230 agents ask at once:
each gets an answer or a typed refusal (never a hang, never a traceback in the app), the person is
told while the app runs out of descriptors, and once the crowd is gone the app serves and says
nothing is wrong.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.client.errors import ApproverError
from tests.reliability.app import AppProcess
from tests.support.waiting import WAIT, wait_for


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_230_agents_against_40_descriptors_are_each_answered_or_refused_with_a_type(
        tmp_path: Path, figures: dict[str, str]) -> None:
    with AppProcess(tmp_path, "allow", prefix=["prlimit", "--nofile=40:40"]) as app:
        outcomes: list[str] = []

        def agent(number: int) -> None:
            try:
                with Client(app.socket_path, agent=f"agent-{number}") as client:
                    outcomes.append(client.request("Bash", {"command": f"echo {number}"}, timeout=WAIT).decision)
            except ApproverError as exc:
                outcomes.append(type(exc).__name__)

        crowd = [threading.Thread(target=agent, args=(number,)) for number in range(230)]
        for thread in crowd:
            thread.start()
        for thread in crowd:
            thread.join(WAIT * 3)
        assert len(outcomes) == 230  # nobody was left hanging
        figures["230 agents, 40 descriptors: allowed / refused"] = \
            f"{outcomes.count('allow_once')} / {230 - outcomes.count('allow_once')}"
        assert outcomes.count("allow_once") > 0
        with Client(app.socket_path) as client:  # the crowd is gone: served, and nothing is wrong any more
            assert client.request("Bash", {"command": "echo after"}, timeout=WAIT).decision == "allow_once"
            wait_for(lambda: "problems" not in client.status(), "the app to have descriptors again")
    stderr = app.stderr()
    assert "Traceback" not in stderr, stderr[-3000:]
