"""Signed decisions (red team F7, ``relay/signing.py``): with ``relay setup``'s credentials an agent
acts only on an answer a paired approver signed for that request; an allow written to the bucket by
anyone else the server lets write it (another user of the approvers' account, the server's operator)
is no decision, and the person's own answer is the one the agent gets."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from desktop_approver import Client
from desktop_approver.commands.relay import setup
from desktop_approver.relay import names, secure, signing
from desktop_approver.relay.address import AddressError, paired_approvers, parse
from tests.relay.conftest import WAIT, Approver, NatsServer, free_port


def _seed() -> str:
    import nkeys

    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode("ascii"))


def test_a_signature_binds_the_value_to_its_key_and_its_signer() -> None:
    seed, other = _seed(), _seed()
    pinned = frozenset({signing.public_key(seed)})
    value = {"relay": 1, "approver": "desk", "reply": {"id": "r1", "decision": "allow_once", "note": "é", "t": 0.1}}
    signed = names.load_json(names.encode(signing.sign(seed, "ci.r1", value)))  # as the agent reads it back
    signing.check("ci.r1", signed, pinned)
    refused = {
        "unsigned": ("ci.r1", value),
        "another key's": ("ci.r2", signed),
        "another user's": ("bob.r1", signed),
        "changed": ("ci.r1", {**signed, "reply": {**value["reply"], "decision": "allow_session"}}),
        "by a key not paired": ("ci.r1", signing.sign(other, "ci.r1", value)),
        "by a paired key claimed, signed by another": (
            "ci.r1", {**signing.sign(other, "ci.r1", value), "sig": {**signing.sign(other, "ci.r1", value)["sig"],
                                                                      "by": signing.public_key(seed)}}),
        "garbled": ("ci.r1", {**signed, "sig": {"by": signing.public_key(seed), "ed25519": "%%%"}}),
    }
    for why, (key, candidate) in refused.items():
        with pytest.raises(signing.SignatureError):
            signing.check(key, candidate, pinned)
            pytest.fail(f"accepted a value {why}")


def test_an_allow_answers_only_the_bytes_the_agent_published() -> None:
    """The operator swapping a waiting request's arguments under the same id (the person allows the
    harmless ``ls`` shown, the agent holds ``rm -rf``): the signed allow names the bytes the approver
    read, which are not the agent's, so the agent does not act on it. A deny needs no such proof."""
    published = names.encode({"id": "r1", "message": {"tool": "Bash", "args": {"command": "rm -rf /srv"}}})
    shown = names.encode({"id": "r1", "message": {"tool": "Bash", "args": {"command": "ls -l"}}})
    allow = {"reply": {"type": "decision", "id": "r1", "decision": "allow_once"}}
    signing.check_request({**allow, signing.REQUEST: signing.request_digest(published)},
                          signing.request_digest(published))
    for candidate in ({**allow, signing.REQUEST: signing.request_digest(shown)}, allow,
                      {"reply": {"type": "batch_decision", "decisions": [{"decision": "deny"},
                                                                          {"decision": "allow_session"}]},
                       signing.REQUEST: signing.request_digest(shown)}):
        with pytest.raises(signing.SignatureError):
            signing.check_request(candidate, signing.request_digest(published))
    signing.check_request({"reply": {"type": "decision", "id": "r1", "decision": "deny"}},
                          signing.request_digest(published))


def test_relay_setup_pairs_every_user_with_the_approvers(tmp_path: Path) -> None:
    setup(tmp_path / "relay", agents=["ci"], approvers=["desk", "desk2"], port=free_port())
    creds = tmp_path / "relay" / "creds"
    desks = {signing.public_key(parse("nats://127.0.0.1:1", str(creds / f"{user}.creds")).seed or "")
             for user in ("desk", "desk2")}
    for user in ("ci", "desk", "desk2"):
        assert parse("nats://127.0.0.1:1", str(creds / f"{user}.creds")).approvers == desks
    bad = tmp_path / "bad.creds"
    bad.write_text((creds / "ci.creds").read_text() + "approver: not-a-key\n")
    with pytest.raises(AddressError, match="not an approver's public key"):
        paired_approvers(bad)


class Forger(threading.Thread):
    """A user the server lets write the decision bucket but no agent was paired with (another user of
    the approvers' account, or the server's operator): it writes an allow, unsigned and then signed
    with its own key, on every request of ``ci`` as soon as it is stored."""

    def __init__(self, url: str, creds: Path, ca: Path) -> None:
        super().__init__(daemon=True)
        self.address = parse(url, str(creds), ca_file=str(ca))
        self.forged: list[str] = []
        self.failed: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._forge())
        except BaseException as exc:  # noqa: BLE001 - the test says it
            self.failed = exc

    async def _forge(self) -> None:
        nc = await secure.connect(self.address, connect_timeout=5)
        js = nc.jetstream()
        kv = await js.key_value(names.BUCKET)
        stream, subject = names.stream_of("ci"), names.request_subject("ci", "ci-job")
        while not self.stop.is_set():  # the agent's latest request, once an approver has made ci's stream
            try:
                msg = await js.get_last_msg(stream, subject)
            except Exception:  # noqa: BLE001 - no stream or no request yet
                await asyncio.sleep(0.1)
                continue
            envelope = json.loads(msg.data or b"{}")
            if envelope.get("message", {}).get("type") != "request" or envelope["id"] in self.forged:
                await asyncio.sleep(0.1)
                continue
            unique = envelope["id"]
            key = names.decision_key("ci", unique)
            allow = {"relay": 1, "approver": "desk", "instance": "forged", "seq": None,
                     "reply": {"v": 1, "type": "decision", "id": unique, "decision": "allow_once",
                               "decided_by": "user", "blocked": False}}
            entry = await kv.create(key, names.encode(allow))
            await kv.update(key, names.encode(signing.sign(self.address.seed or "", key, allow)), last=entry)
            self.forged.append(unique)
        await nc.close()


@pytest.mark.logs("ignored a value on the relay's key for .* not (signed )?by an approver this user was paired with")
def test_an_allow_no_paired_approver_signed_is_never_acted_on(tmp_path: Path, approvers: list[Approver]) -> None:
    folder = tmp_path / "relay"
    setup(folder, agents=["ci"], approvers=["desk", "rogue"], port=free_port())
    creds, ca = folder / "creds", folder / "tls" / "ca.pem"
    rogue = signing.public_key(parse("nats://127.0.0.1:1", str(creds / "rogue.creds")).seed or "")
    for user in ("ci", "desk"):  # the rogue is a user the server knows, and no agent or desk was paired with
        path = creds / f"{user}.creds"
        path.write_text(path.read_text().replace(f"approver: {rogue}\n", ""))
    server = NatsServer(folder, config=folder / "nats-server.conf").start()
    url = f"tls://127.0.0.1:{server.port}"
    forger = Forger(url, creds / "rogue.creds", ca)
    try:
        approvers.append(Approver(tmp_path, url, "desk", creds=creds / "desk.creds",
                                  env={"DESKTOP_APPROVER_NATS_CA": str(ca)}))
        forger.start()
        with Client(url=url, credentials=creds / "ci.creds", ca_file=ca, agent="ci-job") as client:
            answer = client.request("later", {}, timeout=WAIT)  # the person denies, 3 s after it is shown
        assert forger.forged, f"the forger never wrote (the test proves nothing): {forger.failed!r}"
        assert (answer.decision, answer.note) == ("deny", "not on a Friday"), answer
        stderr = (approvers[0].folder / "stderr").read_text()
        assert "relay: refused (relay_decision)" in stderr and "not by an approver this user was paired" in stderr
    finally:
        forger.stop.set()
        forger.join(WAIT)
        server.stop()
