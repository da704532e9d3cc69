"""An approver app for the relay tests, in a process of its own: the app's Qt-free service (its
socket, audit log, broker) with a :class:`RelayApprover` and a scripted person.

``approver_proc.py URL FOLDER NAME [--creds FILE] [--race allow|deny|wait] [--silence SECONDS]
[--policy FILE] [--no-wait]``

Prints ``ready`` once the relay reads the stream (``started`` at once with ``--no-wait``);
``problem <what> <text>`` / ``fixed <what>`` as the app's health changes; ``asked <request id>
<agent> <host> <tools>`` for each ticket the person sees; ``withdrawn <request id>`` when a ticket
goes away unanswered. The person answers by tool name: ``allow``, ``deny`` (with a note), ``edit``
(allowed with edited arguments), ``session`` (allow for the session), ``race`` (``--race``),
``slow`` (allow, 3 s later), ``later`` (deny, 3 s later), ``wait`` (never).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from desktop_approver.core.decisions.broker import Triage
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from desktop_approver.core.service import ApproverService, ServiceOptions
from desktop_approver.relay import approver as approver_module
from desktop_approver.relay.address import parse
from desktop_approver.relay.approver import RelayApprover


class Person:
    def __init__(self, race: str) -> None:
        self.race = race

    async def decide(self, ticket: Ticket) -> list[Verdict]:
        who = ticket.identity
        print(f"asked {ticket.request_id} {who.agent} {who.host} {','.join(c.tool for c in ticket.calls)}",
              flush=True)
        try:
            if any(call.tool in ("slow", "later") for call in ticket.calls):
                await asyncio.sleep(3.0)
            verdicts = [self.answer(call.tool) for call in ticket.calls]
            if any(verdict is None for verdict in verdicts):
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            print(f"withdrawn {ticket.request_id}", flush=True)
            raise
        return [verdict for verdict in verdicts if verdict is not None]

    def answer(self, tool: str) -> Verdict | None:
        if tool == "race":
            tool = self.race
        if tool in ("allow", "slow"):
            return Verdict("allow_once")
        if tool in ("deny", "later"):
            return Verdict("deny", note="not on a Friday")
        if tool == "edit":
            return Verdict("allow_once", updated_args={"command": "ls -l"})
        if tool == "session":
            return Verdict("allow_session")
        if tool == "wait":
            return None
        return Verdict("deny", note=f"the test person does not know {tool}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("folder", type=Path)
    parser.add_argument("name")
    parser.add_argument("--creds")
    parser.add_argument("--race", default="allow")
    parser.add_argument("--silence", type=float, default=20.0)
    parser.add_argument("--policy", type=Path)
    parser.add_argument("--no-wait", action="store_true")
    parser.add_argument("--stream-max-bytes", type=int, help="a smaller request stream (to fill it in a test)")
    parser.add_argument("--bucket-max-bytes", type=int, help="a smaller decision bucket (to fill it in a test)")
    parser.add_argument("--stream-max-msgs", type=int, help="fewer requests per user's stream (to fill it in a test)")
    parser.add_argument("--ack-wait", type=float, default=30.0, help="the consumer's ack wait (a crash's requests "
                                                                     "come again after it)")
    args = parser.parse_args()
    if args.bucket_max_bytes:
        approver_module.BUCKET_MAX_BYTES = args.bucket_max_bytes
    if args.stream_max_bytes:
        approver_module.STREAM_MAX_BYTES = args.stream_max_bytes
    if args.stream_max_msgs:
        approver_module.STREAM_MAX_MSGS = args.stream_max_msgs
    options = ServiceOptions(socket_path=args.folder / "sock" / "approver.sock",
                             audit_path=args.folder / "audit.sqlite3", policy_path=args.policy, state_path=None)
    service = ApproverService(options, Person(args.race))
    service.health_listeners.append(
        lambda what, problem: print(f"problem {what} {problem}" if problem else f"fixed {what}", flush=True))
    service.audit.close_abandoned(leave_relayed=True)  # as the app with --relay does (its service knows the relay)
    await service.start()
    relay = RelayApprover(service.broker, parse(args.url, args.creds), name=args.name, agent_silence=args.silence,
                          on_problem=service.set_problem, ack_wait=args.ack_wait)
    settle = relay.settle

    async def settling(triage: Triage, verdicts: list[Verdict]) -> list[Verdict]:
        print(f"settling {triage.request_id}", flush=True)  # the answer is being written now
        return await settle(triage, verdicts)

    relay.settle = settling  # type: ignore[method-assign]
    await relay.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    if args.no_wait:
        print("started", flush=True)
    else:
        await asyncio.wait_for(relay.ready.wait(), 30)
        print("ready", flush=True)
    await stop.wait()
    await relay.close()
    await service.close()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
