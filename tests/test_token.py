"""The socket token: kept in the keyring, checked by the server, refused and audited when wrong.

The keyring is keyrings.alt's PlaintextKeyring in each test's private HOME (see conftest.py).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest

from desktop_approver.cli import build_parser
from desktop_approver.client import Client
from desktop_approver.client.errors import Unauthorized
from desktop_approver.core.service import ServiceOptions
from desktop_approver.core.store.audit import AuditLog
from desktop_approver.core.transport import tokens
from desktop_approver.core.transport.tokens import (
    SERVICE,
    USERNAME,
    TokenStore,
    TokenStoreUnavailable,
    make_token_check,
)
from tests.support.service import ScriptedPerson, ServiceThread
from tests.test_cli import cli, every


@pytest.fixture
def no_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.backends.fail.Keyring())


def test_token_is_created_once_kept_in_the_keyring_and_rotated() -> None:
    store = TokenStore()
    assert store.get() is None
    token = store.get_or_create()
    assert len(token) >= 40 and store.get_or_create() == token
    assert keyring.get_password(SERVICE, USERNAME) == token
    rotated = store.rotate()
    assert rotated != token and store.get() == rotated == keyring.get_password(SERVICE, USERNAME)


def test_no_keyring_is_a_typed_error(no_keyring: None) -> None:
    with pytest.raises(TokenStoreUnavailable, match="keyring"):
        TokenStore().get_or_create()
    with pytest.raises(TokenStoreUnavailable):
        TokenStore().rotate()


def test_token_check_accepts_only_the_expected_token() -> None:
    check = make_token_check("s3cret-token")
    assert check("s3cret-token")
    for presented in ("s3cret-toke", "S3CRET-TOKEN", "", None, "s3cret-token "):
        assert not check(presented)
    assert not make_token_check("")("")


@pytest.mark.logs("keeping the last known token")
def test_reader_picks_up_a_rotation_and_survives_a_keyring_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    store = TokenStore()
    current = store.reader(max_age=10.0, clock=lambda: now[0])
    first = current()
    check = make_token_check(current)
    new = store.rotate()
    assert check(first) and not check(new)  # within max_age the app still holds its copy
    may_answer = threading.Event()          # the keyring read ends when the test says, not when the scheduler does
    read = TokenStore.get
    monkeypatch.setattr(TokenStore, "get", lambda self: may_answer.wait(30) and read(self))
    now[0] = 10.0
    try:
        assert check(first)                 # a stale copy is still answered at once: the keyring is read in a thread
    finally:
        may_answer.set()
    refreshed()
    assert check(new) and not check(first)
    monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.backends.fail.Keyring())
    now[0] = 20.0
    assert check(new)  # a broken keyring later on does not lock everyone out
    refreshed()
    assert check(new)


def refreshed() -> None:
    """Wait for the reader's refresh thread to end (it never runs on the caller's thread)."""
    for thread in threading.enumerate():
        if thread.name == "keyring-token":
            thread.join(30)


def test_a_keyring_that_never_answers_fails_the_start_not_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    monkeypatch.setattr(tokens, "KEYRING_TIMEOUT", 0.2)
    monkeypatch.setattr(TokenStore, "get_or_create", lambda self: release.wait() and "never")
    try:
        with pytest.raises(TokenStoreUnavailable, match="did not answer"):
            TokenStore().reader()
    finally:
        release.set()


def test_a_stale_token_never_waits_for_a_blocked_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    current = TokenStore().reader(max_age=10.0, clock=lambda: now[0])
    first = current()
    release = threading.Event()
    monkeypatch.setattr(TokenStore, "get", lambda self: release.wait() and "rotated")
    now[0] = 10.0
    try:
        assert current() == first           # before: the loop waited here for the keyring, for good
        assert current() == first
    finally:
        release.set()
    refreshed()
    assert current() == "rotated"


@pytest.mark.logs("the keyring does not answer")
def test_a_keyring_read_that_hangs_once_does_not_stop_rotations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team: one hung read held the refresh lock for good; a later `token rotate` never took effect."""
    now = [0.0]
    store = TokenStore()
    reader = store.reader(max_age=10.0, clock=lambda: now[0])
    check = make_token_check(reader)
    first = reader()
    told: list[str | None] = []
    reader.health_listeners.append(told.append)
    monkeypatch.setattr(tokens, "KEYRING_TIMEOUT", 0.2)
    hung = threading.Event()
    monkeypatch.setattr(TokenStore, "get", lambda self: hung.wait() and None)  # this read never returns
    try:
        now[0] = 10.0
        assert check(first)
        refreshed()
        assert reader.problem is not None and "the keyring does not answer" in reader.problem
        assert told == [reader.problem] and check(first)  # the last known token stays accepted, the person told
        monkeypatch.undo()  # the keyring answers again, given the app's own deadline (0.2 s was for the hung read)
        new = store.rotate()
        now[0] = 20.0
        reader()
        refreshed()
        assert check(new) and not check(first)
        assert reader.problem is None and told[-1] is None
    finally:
        hung.set()


@pytest.mark.logs("the socket token was missing from the keyring")
def test_an_emptied_keyring_entry_is_remade_loudly(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    reader = TokenStore().reader(max_age=10.0, clock=lambda: now[0])
    check = make_token_check(reader)
    old = reader()
    keyring.delete_password(SERVICE, USERNAME)
    now[0] = 10.0
    reader()
    refreshed()
    new = keyring.get_password(SERVICE, USERNAME)
    assert new and new != old and not check(old)
    assert reader.problem == tokens.MISSING and "desktop-approver token" in tokens.MISSING
    assert any(r.levelname == "WARNING" and "missing from the keyring" in r.getMessage() for r in caplog.records)
    now[0] = 20.0
    reader()
    refreshed()
    assert reader.problem == tokens.MISSING  # still told until a client has the new token
    assert check(new) and reader.problem is None


def test_service_options_build_the_check_only_when_asked(tmp_path: Path) -> None:
    def options(*extra: str) -> ServiceOptions:
        args = build_parser(with_module_commands=False).parse_args(
            ["tray", "--socket", str(tmp_path / "s.sock"), "--audit-db", str(tmp_path / "a.db"), *extra])
        return ServiceOptions.from_args(args)

    assert options().token_check is None and options().history_days is None
    required = options("--require-token", "--history-days", "30")
    assert required.history_days == 30.0 and required.token_check is not None
    assert required.token_check(TokenStore().get())
    assert not required.token_check("guess")


def test_require_token_without_keyring_fails_at_start(no_keyring: None, tmp_path: Path) -> None:
    args = argparse.Namespace(socket=str(tmp_path / "s.sock"), audit_db=None, policy=None, timeout=None,
                              require_token=True)
    with pytest.raises(TokenStoreUnavailable):
        ServiceOptions.from_args(args)


@pytest.mark.parametrize("bad", ["0", "-3", "soon"])
def test_history_days_must_be_positive(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(with_module_commands=False).parse_args(["tray", "--history-days", bad])
    assert "--history-days" in capsys.readouterr().err


def _token_service(tmp_path: Path) -> ServiceThread:
    service = ServiceThread(tmp_path, ScriptedPerson(every("allow_once")))
    service.options.token_check = make_token_check(TokenStore().reader())
    return service.__enter__()


def test_server_refuses_wrong_and_missing_tokens_and_audits_them(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    service = _token_service(tmp_path)
    try:
        path = service.options.socket_path
        with Client(path, token=TokenStore().get()) as good:
            assert good.request("deploy", {"env": "prod"}).allowed
        # A client elsewhere (no keyring with the token) that sends a wrong token or none:
        monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.backends.fail.Keyring())
        for token in ("wrong-token", None):
            with Client(path, token=token) as bad, pytest.raises(Unauthorized) as refused:
                bad.request("deploy", {"env": "prod"})
            assert refused.value.code == "unauthorized"
        assert [call.calls[0].tool for call in service.person.seen] == ["deploy"]  # only the good one asked
    finally:
        service.__exit__()
    audit = AuditLog(service.options.audit_path, read_only=True)
    try:
        refusals = [event for event in audit.events(kind="refused") if event["code"] == "unauthorized"]
        assert len(refusals) == 2 and all(event["peer_pid"] == os.getpid() for event in refusals)
        assert audit.count() == 1
    finally:
        audit.close()


def test_cli_token_show_creates_and_rotate_replaces() -> None:
    shown = cli("token", "show")
    assert shown.returncode == 0, shown.stderr
    token = TokenStore().get()
    assert token and shown.stdout.splitlines()[0] == token
    assert f"export DESKTOP_APPROVER_TOKEN={token}" in shown.stdout
    assert cli("token").stdout.splitlines()[0] == token  # show is the default and does not change it
    rotated = cli("token", "rotate", "--json")
    assert rotated.returncode == 0, rotated.stderr
    payload = json.loads(rotated.stdout)
    assert payload["rotated"] is True and payload["token"] == TokenStore().get() != token
    assert payload["env"] == "DESKTOP_APPROVER_TOKEN"


def test_cli_token_without_keyring_exits_2_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    result = cli("token", "show")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "keyring" in result.stderr


def test_remote_style_client_uses_the_env_token_and_local_commands_use_the_keyring(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = _token_service(tmp_path)
    try:
        path = str(service.options.socket_path)
        args = ("request", "--socket", path, "--tool", "deploy", "--args", "{}")
        assert cli(*args).returncode == 0  # on the desktop, without the variable: the keyring's token
        monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # elsewhere: none
        assert cli(*args).returncode == 2  # no token: refused, treated as not allowed
        monkeypatch.delenv("PYTHON_KEYRING_BACKEND")
        monkeypatch.setenv("DESKTOP_APPROVER_TOKEN", "not-the-token")
        refused = cli(*args)
        assert refused.returncode == 2 and "unauthorized" in refused.stderr
        monkeypatch.setenv("DESKTOP_APPROVER_TOKEN", TokenStore().get() or "")
        assert cli(*args).returncode == 0
        monkeypatch.delenv("DESKTOP_APPROVER_TOKEN")
        # on the desktop: falls back to the keyring
        listed = cli("sessions", "--agent", "deployer", "--socket", path, "--json")
        assert listed.returncode == 0, listed.stderr
    finally:
        service.__exit__()


def test_tray_with_require_token_and_no_keyring_exits_1_with_a_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    result = cli("tray", "--require-token", "--no-notifications", "--socket", str(tmp_path / "s.sock"),
                 "--audit-db", str(tmp_path / "a.db"), timeout=60)
    assert result.returncode == 1
    assert "--require-token" in result.stderr and "keyring" in result.stderr
    assert not (tmp_path / "s.sock").exists()  # refused before listening


def test_a_client_on_the_desktop_without_the_variable_uses_the_keyring(tmp_path: Path) -> None:
    import asyncio

    from desktop_approver.client.async_client import AsyncClient

    service = _token_service(tmp_path)
    try:
        path = service.options.socket_path
        assert "DESKTOP_APPROVER_TOKEN" not in os.environ
        with Client(path) as desktop:
            assert desktop.request("deploy", {"env": "prod"}).allowed
            assert desktop.protocol.token == TokenStore().get()

        async def asynchronous() -> bool:
            client = AsyncClient(path)
            try:
                return (await client.request("deploy", {"env": "prod"})).allowed
            finally:
                await client.aclose()

        assert asyncio.run(asynchronous())
        with Client(path, token="stale-token") as wrong, pytest.raises(Unauthorized):
            wrong.request("deploy", {"env": "prod"})          # an explicit token is never replaced
    finally:
        service.__exit__()


def test_the_async_client_waits_for_the_welcome_before_sending_a_request(tmp_path: Path) -> None:
    """The app closes a connection whose hello it refuses; a request written into that closing
    socket broke the transport before the refusal was read, so the keyring retry never ran (it
    failed about one run in eight under load). The client now sends nothing after its hello until
    the app answers it."""
    import asyncio
    import socket
    import threading

    from desktop_approver.client.async_client import AsyncClient

    path = tmp_path / "fake.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    path.chmod(0o600)  # like the app's socket: clients refuse one open to others
    listener.listen(1)
    early: list[bytes] = []

    def refuse_then_welcome() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(2.0)
            buffered = b""
            while b"\n" not in buffered:
                buffered += conn.recv(65536)
            conn.settimeout(0.3)
            try:
                early.append(buffered.split(b"\n", 1)[1] + conn.recv(65536))
            except TimeoutError:
                early.append(buffered.split(b"\n", 1)[1])
            conn.sendall(b'{"v":1,"type":"error","code":"unauthorized","message":"missing or wrong token"}\n')

    server = threading.Thread(target=refuse_then_welcome, daemon=True)
    server.start()

    async def ask() -> None:
        client = AsyncClient(path, token="given")  # an explicit token: no keyring retry
        try:
            await client.request("deploy", {})
        finally:
            await client.aclose()

    with pytest.raises(Unauthorized):
        asyncio.run(ask())
    server.join(5)
    listener.close()
    assert early == [b""]  # nothing followed the hello before the app answered it


def test_status_with_an_old_token_says_refused_not_not_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = _token_service(tmp_path)
    try:
        monkeypatch.setenv("DESKTOP_APPROVER_TOKEN", "an-old-token")
        result = cli("status", "--socket", str(service.options.socket_path))
        assert result.returncode == 2
        assert "is running" in result.stdout and "refused this client" in result.stdout
        assert "not running" not in result.stdout
        shown = json.loads(cli("status", "--json", "--socket", str(service.options.socket_path)).stdout)
        assert shown["running"] is True and shown["authorized"] is False
    finally:
        service.__exit__()


@pytest.mark.logs("the keyring does not answer")
def test_a_keyring_that_never_answers_does_not_grow_a_thread_every_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    for thread in threading.enumerate():  # reads released by earlier tests, ending now
        if thread.name == "keyring":
            thread.join(30)
    now = [0.0]
    reader = TokenStore().reader(max_age=10.0, clock=lambda: now[0])
    monkeypatch.setattr(tokens, "KEYRING_TIMEOUT", 0.05)
    monkeypatch.setattr(tokens, "MAX_STUCK_READS", 2)
    hung = threading.Event()
    monkeypatch.setattr(TokenStore, "get", lambda self: hung.wait() and None)
    try:
        for step in range(1, 6):
            now[0] = 10.0 * step
            reader()
            refreshed()
        assert tokens._stuck_reads() == 2 and reader.problem is not None
    finally:
        hung.set()
