"""An agent for the relay tests, in a process of its own: the real client library over a URL.

``agent_proc.py URL PLAN``: PLAN (``-``: read from stdin) is a JSON list of steps, each ``{"op": "request", "tool": ...,
"args": {...}, "session": ..., "timeout": ...}``, ``{"op": "batch", "calls": [[tool, args], ...]}``,
``{"op": "status"}``, ``{"op": "notice", "text": ...}``, ``{"op": "sessions"}``,
``{"op": "end_session", "session": ...}``, with ``"async": true``
to use the AsyncClient. Prints one JSON line per step: the decision(s), or the error's class and text.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from desktop_approver import AsyncClient, Client
from desktop_approver.client.errors import ApproverError


def result(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"decisions": [decision.to_json() for decision in value]}
    if value is None:
        return {"ok": True}
    if isinstance(value, dict):
        return {"status": value}
    if isinstance(value, int):
        return {"count": value}
    return {"decision": value.to_json()}


def run_sync(client: Client, step: dict[str, Any]) -> Any:
    op = step["op"]
    if op == "request":
        return client.request(step["tool"], step.get("args", {}), session=step.get("session"),
                              timeout=step.get("timeout"))
    if op == "batch":
        return client.request_batch([tuple(call) for call in step["calls"]], session=step.get("session"),
                                    timeout=step.get("timeout"))
    if op == "status":
        return client.status()
    if op == "notice":
        return client.notice("info", step["text"])
    if op == "sessions":
        return client.sessions()
    if op == "end_session":
        return client.end_session(step["session"])
    raise ValueError(op)


async def run_async(url: str, step: dict[str, Any]) -> Any:
    async with AsyncClient(url=url, agent="async-agent") as client:
        if "give_up_after" in step:  # the agent's own task is cancelled while it waits
            asking = asyncio.ensure_future(client.request(step["tool"], step.get("args", {})))
            await asyncio.sleep(step["give_up_after"])
            asking.cancel()
            await asyncio.sleep(0.5)  # the cancel is published before the client closes
            try:
                return await asking
            except asyncio.CancelledError:
                return {"error": "CancelledError", "message": ""}
        if step["op"] == "request":
            return await client.request(step["tool"], step.get("args", {}), session=step.get("session"),
                                        timeout=step.get("timeout"))
        return await client.request_batch([tuple(call) for call in step["calls"]], session=step.get("session"),
                                          timeout=step.get("timeout"))


def main() -> None:
    url, plan = sys.argv[1], json.loads(sys.stdin.read() if sys.argv[2] == "-" else sys.argv[2])
    with Client(url=url or None, agent="relay-agent") as client:
        for step in plan:
            try:
                value = asyncio.run(run_async(url, step)) if step.get("async") else run_sync(client, step)
                out = value if isinstance(value, dict) and "error" in value else result(value)
            except ApproverError as exc:
                out = {"error": type(exc).__name__, "message": str(exc)}
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
