"""``desktop-approver relay setup``: a NATS server for agents on other machines, in one command.

Writes, into one folder (0700):

- ``nats-server.conf``: listening on loopback unless told otherwise (``--listen``), TLS required
  and first (``handshake_first``: not even the server's ``INFO`` goes in clear),
  JetStream on disk, and the layout of ``packaging/nats/approver.conf``: the approvers in the account
  that holds JetStream, each agent user in an account of its own importing only its own subjects
  (accounts, not only permissions, keep agents apart); the JetStream account's disk limit is the
  sum of the users' own quotas and the bucket, so no user can fill it for another;
- ``tls/``: a private CA and a server certificate for the names agents use (``--name``), unless the
  person brings their own (``--cert``, ``--key``, ``--ca``); the keys 0600;
- ``creds/<user>.creds`` (0600), one per agent and approver user: an nkey seed and its user name,
  and the approvers' public keys (``approver:`` lines): each approver signs its answers with its
  seed, and agents act only on answers one of those keys signed (``relay/signing.py``).

Why nkeys rather than passwords: the server's configuration holds only public keys (nothing in it
is worth stealing, and it may be shared or committed), and the secret never crosses the network,
not even to the server: it signs the server's one-time nonce. Then prints the three commands to run.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import shlex
import sys
from pathlib import Path

DEFAULT_FOLDER = "approver-relay"
SERVER_CONF = "nats-server.conf"
APPROVER_PUBLISH = ('"$JS.API.>", "$JS.ACK.>", "$KV.approver_decisions.>"')
APPROVER_SUBSCRIBE = ('"_INBOX.>", "$KV.approver_decisions.>", "approver.alive.>"')
DIRECT_GET = "$JS.API.DIRECT.GET.KV_approver_decisions.$KV.approver_decisions"
FIRST_REQUEST = ["desktop-approver", "request", "--tool", "Bash", "--args", '{"command": "ls -l"}']


class SetupError(Exception):
    """What the person asked for cannot be set up (the message says why)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("setup",), help="setup: write a server configuration, certificates and "
                                                           "credentials, and print the commands to run")
    parser.add_argument("--dir", default=DEFAULT_FOLDER, metavar="FOLDER",
                        help=f"where to write it all (default: ./{DEFAULT_FOLDER}; made 0700)")
    parser.add_argument("--agent", action="append", metavar="USER",
                        help="an agent user, one account each (repeat for more; default: agent)")
    parser.add_argument("--approver", action="append", metavar="USER",
                        help="an approver user, a person at a desk (repeat for more; default: desk)")
    parser.add_argument("--listen", default="127.0.0.1", metavar="ADDRESS",
                        help="the address the server listens on (default: 127.0.0.1, this machine only; "
                             "0.0.0.0 for every interface, with --name)")
    parser.add_argument("--port", type=int, default=4222, help="the server's port (default: 4222)")
    parser.add_argument("--name", action="append", metavar="HOST",
                        help="a name or address agents reach the server by, put in its certificate (repeat for "
                             "more; the first is used in the printed commands; default: the --listen address)")
    parser.add_argument("--cert", metavar="FILE", help="your own server certificate (PEM), with --key and --ca")
    parser.add_argument("--key", metavar="FILE", help="the key of --cert (PEM)")
    parser.add_argument("--ca", metavar="FILE", help="the CA certificate that signed --cert (given to the clients)")
    parser.add_argument("--force", action="store_true", help="replace a setup already in the folder")


def run(args: argparse.Namespace) -> int:
    try:
        commands = setup(Path(args.dir), agents=args.agent or ["agent"], approvers=args.approver or ["desk"],
                         listen=args.listen, port=args.port, names=args.name, cert=args.cert, key=args.key,
                         ca=args.ca, force=args.force)
    except SetupError as exc:
        print(f"desktop-approver relay setup: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        print(f"desktop-approver relay setup: needs the relay extra (pip install 'desktop-approver[relay]'): {exc}",
              file=sys.stderr)
        return 2
    folder = Path(args.dir)
    print(f"Wrote {folder}/: the server's configuration ({SERVER_CONF}), TLS certificates (tls/) and one "
          "credentials file per user (creds/, 0600).\n")
    print("1. Start the NATS server:\n")
    print(f"   {commands[0]}\n")
    print("2. At your desk, let the tray answer relayed requests too:\n")
    print(f"   {commands[1]}\n")
    print("3. Ask from an agent (on another machine: copy its creds file and tls/ca.pem there, and use the\n"
          "   server's name instead):\n")
    print(f"   {commands[2]}")
    return 0


def setup(folder: Path, *, agents: list[str], approvers: list[str], listen: str = "127.0.0.1", port: int = 4222,
          names: list[str] | None = None, cert: str | None = None, key: str | None = None, ca: str | None = None,
          force: bool = False) -> list[str]:
    """Write the setup into ``folder``; the three commands to run (server, tray, an agent's request)."""
    from ..relay.names import is_token

    users = [*agents, *approvers]
    for user in users:
        if not is_token(user):
            raise SetupError(f"the user name {user!r} is not 1 to 64 letters, digits, '_' or '-'")
    if len(set(users)) != len(users):
        raise SetupError("each user name may be given once (an agent and an approver are different users)")
    if not 0 < port < 65536:
        raise SetupError(f"the port {port} is not between 1 and 65535")
    wildcard = listen in ("0.0.0.0", "::")
    if not names and wildcard:
        raise SetupError(f"--listen {listen} needs --name: the name or address agents reach this machine by")
    hosts = list(dict.fromkeys(names or [listen, *(["localhost"] if _is_loopback(listen) else [])]))
    own = (cert, key, ca)
    if any(own) and not all(own):
        raise SetupError("give --cert, --key and --ca together (or none: a private CA is made)")
    folder = folder.resolve()  # every path printed is absolute: each command runs in a terminal of its own
    conf = folder / SERVER_CONF
    if conf.exists() and not force:
        raise SetupError(f"{conf} exists: a setup is there already (--force replaces it, and every credential)")
    for sub in ("", "tls", "creds"):
        (folder / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        (folder / sub).chmod(0o700)
    tls = folder / "tls"
    if cert and key and ca:
        server_cert, server_key, ca_file = Path(cert).resolve(), Path(key).resolve(), Path(ca).resolve()
        for given in (server_cert, server_key, ca_file):
            if not given.is_file():
                raise SetupError(f"{given} is not a file")
    else:
        from ..relay.certs import make_ca, make_server_certificate

        authority = make_ca()
        server = make_server_certificate(authority, hosts)
        ca_file, server_cert, server_key = tls / "ca.pem", tls / "server-cert.pem", tls / "server-key.pem"
        _write(ca_file, authority.certificate, 0o644)
        _write(tls / "ca-key.pem", authority.key, 0o600)
        _write(server_cert, server.certificate, 0o644)
        _write(server_key, server.key, 0o600)
    seeds, public = {}, {}
    for user in users:
        seeds[user], public[user] = _nkey()
    paired = "".join(f"approver: {public[approver]}\n" for approver in approvers)
    for user in users:
        _write(folder / "creds" / f"{user}.creds",
               f"# desktop-approver relay credentials: NATS user {user} (an nkey seed: keep it secret)\n"
               f"user: {user}\nseed: {seeds[user]}\n"
               "# The approvers this user was paired with: only answers one of them signed count.\n"
               f"{paired}".encode(), 0o600)
    _write(conf, server_config(folder, listen, port, agents, approvers, public, server_cert, server_key).encode(),
           0o600)
    url = f"tls://{_url_host(hosts[0])}:{port}"
    return [
        shlex.join(["nats-server", "-c", str(conf)]),
        shlex.join(["desktop-approver", "tray", "--relay", url, "--relay-creds",
                    str(folder / "creds" / f"{approvers[0]}.creds"), "--relay-ca", str(ca_file)]),
        " ".join([f"DESKTOP_APPROVER_URL={url}",
                  f"DESKTOP_APPROVER_NATS_CREDS={shlex.quote(str(folder / 'creds' / f'{agents[0]}.creds'))}",
                  f"DESKTOP_APPROVER_NATS_CA={shlex.quote(str(ca_file))}", shlex.join(FIRST_REQUEST)]),
    ]


def server_config(folder: Path, listen: str, port: int, agents: list[str], approvers: list[str],
                  public: dict[str, str], cert: Path, key: Path) -> str:
    """The server's configuration (see the module docstring)."""
    from ..relay.approver import BUCKET_MAX_BYTES, STREAM_MAX_BYTES

    accounts = {agent: f"AGENT_{index}" for index, agent in enumerate(agents, 1)}
    listed = ", ".join(accounts.values())
    mebibytes = (len(agents) * STREAM_MAX_BYTES + BUCKET_MAX_BYTES) // 1024 ** 2 + 64
    approver_users = "\n".join(f"      {{ nkey: {public[user]}, permissions: $APPROVER }}  # {user}"
                               for user in approvers)
    blocks = []
    for agent, account in accounts.items():
        blocks.append(f"""  # NATS user {agent}: its own account, importing only its own subjects.
  {account} {{
    users: [
      {{ nkey: {public[agent]}, permissions: {{
          publish: {{ allow: ["approver.req.{agent}.>", "approver.alive.{agent}.>", "{DIRECT_GET}.{agent}.>"] }}
          subscribe: {{ allow: ["_INBOX_{agent}.>", "$KV.approver_decisions.{agent}.>"] }}
      }} }}
    ]
    imports: [
      {{ service: {{ account: APPROVALS, subject: "approver.req.{agent}.>" }} }}
      {{ service: {{ account: APPROVALS, subject: "approver.alive.{agent}.>" }} }}
      {{ service: {{ account: APPROVALS, subject: "{DIRECT_GET}.{agent}.>" }} }}
      {{ stream: {{ account: APPROVALS, subject: "$KV.approver_decisions.{agent}.>" }} }}
    ]
  }}""")
    agent_blocks = "\n".join(blocks)
    return f"""# Written by `desktop-approver relay setup`: a NATS server for desktop-approver's relay.
#
#   nats-server -c {folder / SERVER_CONF}
#
# The layout is packaging/nats/approver.conf's (read it for why): approvers in APPROVALS, which holds
# JetStream; each agent user in an account of its own that imports only its own subjects. Users are
# nkeys: this file holds only public keys; each user's seed is in creds/<user>.creds (0600).
# To add an agent user: run the setup again with every user and --force (every credential is new), or
# copy an AGENT block with the public key of a new user's creds file and add its account to the four
# exports below.

listen: "{_url_host(listen)}:{port}"

tls {{
  cert_file: "{cert}"
  key_file: "{key}"
  timeout: 5
  # TLS before anything else, the server's INFO included: nothing goes in clear, and the clients
  # (which insist on it) are refused by a server without it rather than talk to it in clear.
  handshake_first: true
}}

jetstream {{
  store_dir: "{folder / 'jetstream'}"
}}

APPROVER = {{
  publish: {{ allow: [{APPROVER_PUBLISH}] }}
  subscribe: {{ allow: [{APPROVER_SUBSCRIBE}] }}
}}

accounts {{
  APPROVALS {{
    # Every agent user's stream has its own quota ({STREAM_MAX_BYTES // 1024 ** 2} MiB); this is their sum, the
    # decision bucket's and some room: no user can fill it for another.
    jetstream: {{ max_file: {mebibytes}M, max_mem: 64M }}
    users: [
{approver_users}
    ]
    exports: [
      {{ service: "approver.req.>", accounts: [{listed}] }}
      {{ service: "approver.alive.>", accounts: [{listed}] }}
      {{ service: "{DIRECT_GET}.>", accounts: [{listed}] }}
      {{ stream: "$KV.approver_decisions.>", accounts: [{listed}] }}
    ]
  }}

{agent_blocks}
}}
"""


def _nkey() -> tuple[str, str]:
    """A new user nkey: (seed, public key)."""
    import nkeys

    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    pair = nkeys.from_seed(bytearray(seed))
    return seed.decode("ascii"), pair.public_key.decode("ascii")


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` into ``path`` with ``mode`` from its first byte (never readable by others on the way)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.chmod(path, mode)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
