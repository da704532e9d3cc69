"""A client the agent never closes prints nothing at exit (no traceback, no "Task was destroyed"),
the blocking client and the AsyncClient alike, under the interpreter's default warning filters; the
blocking one says goodbye to the server before the interpreter stops its thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.relay.conftest import WAIT, Approver, NatsServer, child_env

SCRIPTS = {
    "blocking": "from desktop_approver import Client\nclient = Client(url=URL)\n"
                "print(client.request('allow', {}).decision)\n",
    "async": "import asyncio\nfrom desktop_approver import AsyncClient\n"
             "async def main():\n    client = AsyncClient(url=URL)\n"
             "    print((await client.request('allow', {})).decision)\n"
             "asyncio.run(main())\n",
    "async closed": "import asyncio\nfrom desktop_approver import AsyncClient\n"
                    "async def main():\n    async with AsyncClient(url=URL) as client:\n"
                    "        print((await client.request('allow', {})).decision)\nasyncio.run(main())\n",
}


def test_an_unclosed_client_exits_quietly(tmp_path: Path, nats_server: NatsServer, approvers: list[Approver]) -> None:
    approvers.append(Approver(tmp_path, nats_server.user_url("desk", "x"), "desk"))
    for name, script in SCRIPTS.items():
        done = subprocess.run([sys.executable, "-c",
                               f"URL = {nats_server.user_url('alice', 'pw')!r}\n" + script],
                              capture_output=True, text=True, timeout=WAIT, env=child_env())
        assert done.returncode == 0 and done.stdout.strip() == "allow_once", (name, done.stdout, done.stderr)
        assert done.stderr == "", (name, done.stderr)
