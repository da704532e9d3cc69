"""Client and AsyncClient against the real service over a real socket, with a scripted person.

Whatever goes wrong (no app, the app killed or quitting mid-request), the client raises
ApproverUnavailable: never an allow, never a hang.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_approver import Blocked, Client
from desktop_approver.client import wire
from desktop_approver.client.async_client import AsyncClient
from desktop_approver.client.errors import ApproverUnavailable
from desktop_approver.core.decisions.tickets import Ticket, Verdict
from tests.support.service import ServiceThread

ROOT = Path(__file__).resolve().parent.parent
WAIT = 20.0


def every(decision: str, **fields: Any) -> Callable[[Ticket], list[Verdict]]:
    return lambda ticket: [Verdict(decision, "user", **fields) for _ in ticket.calls]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceThread]:
    with ServiceThread(tmp_path) as running:
        yield running


@pytest.fixture(params=["sync", "async"])
def ask(request: pytest.FixtureRequest, service: ServiceThread) -> Iterator[Callable[..., Any]]:
    """``ask(method, *args, **kwargs)`` on one Client or one AsyncClient (each call run to completion)."""
    if request.param == "sync":
        client = Client(service.socket_path, agent="tester", session="run-1")
        yield lambda method, *args, **kwargs: getattr(client, method)(*args, **kwargs)
        client.close()
        return
    loop = asyncio.new_event_loop()
    async_client = AsyncClient(service.socket_path, agent="tester", session="run-1")

    def call(method: str, *args: Any, **kwargs: Any) -> Any:
        return loop.run_until_complete(asyncio.wait_for(getattr(async_client, method)(*args, **kwargs), WAIT))

    yield call
    loop.run_until_complete(async_client.aclose())
    loop.close()


def test_allow_once(ask: Callable[..., Any], service: ServiceThread) -> None:
    service.answer(every("allow_once"))
    decision = ask("request", "write_file", {"path": "a.txt", "content": "hi"}, description="notes",
                   preview={"kind": "file_write", "path": "a.txt", "content": "hi", "old": None},
                   hints={"readOnlyHint": False})
    assert (decision.decision, decision.allowed, decision.decided_by, decision.blocked) == \
        ("allow_once", True, "user", False)
    ticket = service.person.tickets[0]
    assert ticket.identity.agent == "tester" and ticket.identity.pid_verified and ticket.session == "run-1"
    assert ticket.calls[0].preview == {"kind": "file_write", "path": "a.txt", "content": "hi"}
    assert ticket.calls[0].hints == {"read_only": False}


def test_allow_session_then_a_session_hit(ask: Callable[..., Any], service: ServiceThread) -> None:
    service.answer(every("allow_session"))
    first = ask("request", "Bash", {"command": "npm test"})
    second = ask("request", "Bash", {"command": "npm test"})
    assert (first.decision, first.decided_by) == ("allow_session", "user")
    assert (second.decision, second.decided_by, second.allowed) == ("allow_session", "session", True)
    assert len(service.person.tickets) == 1
    service.answer(every("deny"))
    other_args = ask("request", "Bash", {"command": "npm publish"})
    assert (other_args.decision, other_args.decided_by) == ("deny", "user")
    assert [entry["tool"] for entry in ask("sessions")] == ["Bash"]
    assert ask("end_session") == 1
    assert ask("revoke") == 0


def test_deny_with_a_note(ask: Callable[..., Any], service: ServiceThread) -> None:
    service.answer(every("deny", note="use make clean"))
    decision = ask("request", "Bash", {"command": "rm -rf build"})
    assert (decision.decision, decision.allowed, decision.note, decision.blocked) == \
        ("deny", False, "use make clean", False)


def test_updated_args_come_back(ask: Callable[..., Any], service: ServiceThread) -> None:
    service.answer(every("allow_once", updated_args={"command": "pytest -x"}))
    decision = ask("request", "Bash", {"command": "pytest"})
    assert decision.allowed and decision.updated_args == {"command": "pytest -x"}


def test_batch_decisions_come_in_call_order(ask: Callable[..., Any], service: ServiceThread) -> None:
    service.answer(lambda ticket: [Verdict("deny" if call.tool == "b" else "allow_once", "user", note=call.tool)
                                   for call in ticket.calls])
    decisions = ask("request_batch", [("a", {"n": 1}), {"tool": "b", "args": {"n": 2}, "description": "second"},
                                      ("c", {"n": 3})])
    assert [(d.decision, d.note) for d in decisions] == [("allow_once", "a"), ("deny", "b"), ("allow_once", "c")]
    assert [call.tool for call in service.person.tickets[0].calls] == ["a", "b", "c"]


def test_timeout_is_a_deny_by_timeout(ask: Callable[..., Any], service: ServiceThread) -> None:
    decision = ask("request", "deploy", {"env": "prod"}, timeout=0.2)
    assert (decision.decision, decision.decided_by, decision.allowed) == ("deny", "timeout", False)


def test_status(ask: Callable[..., Any], service: ServiceThread) -> None:
    status = ask("status")
    assert status["type"] == "status_reply" and status["socket"] == str(service.socket_path)
    assert status["pid"] == os.getpid() and status["mode"] == "interactive"


def test_blocked_is_not_a_persons_deny(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('version = 1\n[[rule]]\naction = "block"\ntool = "deploy"\nnote = "deploys go through CI"\n'
                      '[[rule]]\naction = "deny"\ntool = "curl"\n', encoding="utf-8")
    with ServiceThread(tmp_path, policy_path=policy) as service, Client(service.socket_path) as client:
        blocked = client.request("deploy", {"env": "prod"})
        assert (blocked.decision, blocked.decided_by, blocked.blocked, blocked.allowed) == \
            ("deny", "policy", True, False)
        assert blocked.note == "deploys go through CI" and blocked.rule
        with pytest.raises(Blocked) as raised:
            client.request("deploy", {"env": "prod"}, raise_on_block=True)
        assert raised.value.decision.blocked  # type: ignore[attr-defined]
        denied = client.request("curl", {"url": "x"}, raise_on_block=True)
        assert (denied.decision, denied.decided_by, denied.blocked) == ("deny", "policy", False)
        assert service.person.tickets == []

        async def async_blocked() -> None:
            async with AsyncClient(service.socket_path) as async_client:
                assert (await async_client.request("deploy", {})).blocked
                with pytest.raises(Blocked):
                    await async_client.request("deploy", {}, raise_on_block=True)

        asyncio.run(asyncio.wait_for(async_blocked(), WAIT))


def test_socket_path_from_the_environment(service: ServiceThread, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKTOP_APPROVER_SOCKET", str(service.socket_path))
    service.answer(every("allow_once"))
    with Client() as client:
        assert client.socket_path == service.socket_path
        assert client.request("t", {}).allowed
    assert AsyncClient().socket_path == service.socket_path


# -- failing closed --------------------------------------------------------------------------------

def test_no_app_is_unavailable(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.sock"
    with pytest.raises(ApproverUnavailable):
        Client(missing).request("t", {})
    with pytest.raises(ApproverUnavailable):
        asyncio.run(AsyncClient(missing).request("t", {}))


def test_a_dead_apps_socket_file_is_unavailable(tmp_path: Path) -> None:
    import socket

    stale = tmp_path / "stale.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(stale))
    listener.close()  # the file stays, nobody listens
    with pytest.raises(ApproverUnavailable):
        Client(stale).request("t", {})


def test_app_quitting_mid_request_is_unavailable(tmp_path: Path) -> None:
    service = ServiceThread(tmp_path).__enter__()
    outcome: list[BaseException | wire.Decision] = []

    def ask() -> None:
        try:
            outcome.append(Client(service.socket_path).request("deploy", {}))
        except BaseException as exc:
            outcome.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        while not service.person.tickets and asker.is_alive():
            asker.join(0.02)
    finally:
        service.__exit__()
    asker.join(WAIT)
    assert len(outcome) == 1 and isinstance(outcome[0], ApproverUnavailable), outcome


KILLABLE_APP = """
import asyncio, sys
from pathlib import Path
from desktop_approver.core.service import ApproverService, ServiceOptions
from tests.support.deciders import ScriptedPerson

def silent(ticket):
    print("ticket", flush=True)  # and never answers

async def main():
    folder = Path(sys.argv[1])
    options = ServiceOptions(socket_path=folder / "sock" / "approver.sock", audit_path=folder / "audit.sqlite3",
                             policy_path=None, state_path=None)
    await ApproverService(options, ScriptedPerson(silent)).start()
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_app_killed_mid_request_is_unavailable(tmp_path: Path, flavour: str) -> None:
    app = subprocess.Popen([sys.executable, "-c", KILLABLE_APP, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    outcome: list[BaseException | wire.Decision] = []
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "ready"
        path = tmp_path / "sock" / "approver.sock"

        def ask() -> None:
            try:
                if flavour == "sync":
                    outcome.append(Client(path).request("deploy", {}, timeout=600))
                else:
                    outcome.append(asyncio.run(AsyncClient(path).request("deploy", {}, timeout=600)))
            except BaseException as exc:
                outcome.append(exc)

        asker = threading.Thread(target=ask)
        asker.start()
        assert app.stdout.readline().strip() == "ticket"
        app.kill()
        asker.join(WAIT)
    finally:
        app.kill()
        app.wait(WAIT)
        app.stdout.close()
    assert len(outcome) == 1 and isinstance(outcome[0], ApproverUnavailable), outcome


# -- what importing costs -------------------------------------------------------------------------

THIRD_PARTY = ("pydantic", "PySide6", "qasync", "pygments", "keyring", "jeepney")


def imported_after(code: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
                            capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return {name.split(".")[0] for name in result.stdout.split()}


def test_thin_client_and_cli_import_no_third_party_module() -> None:
    loaded = imported_after("import desktop_approver, desktop_approver.client, desktop_approver.client.async_client, "
                            "desktop_approver.cli")
    assert "desktop_approver" in loaded
    assert not loaded & set(THIRD_PARTY), sorted(loaded & set(THIRD_PARTY))


def test_core_imports_no_qt() -> None:
    base = ROOT / "desktop_approver"
    core = sorted(".".join(path.relative_to(base).with_suffix("").parts)
                  for path in (base / "core").rglob("*.py") if path.stem != "__init__")
    assert "core.transport.server" in core and "core.messages.schema" in core
    loaded = imported_after("\n".join(f"import desktop_approver.{name}" for name in core))
    assert "pydantic" in loaded  # the imports really happened
    assert not loaded & {"PySide6", "qasync", "shiboken6"}


def test_a_notice_reaches_the_app_and_decides_nothing(ask: Callable[..., Any], service: ServiceThread) -> None:
    told: list[tuple[str, str]] = []
    service.service.broker.notice_listeners.append(lambda who, kind, text: told.append((kind, text)))
    assert ask("notice", "waiting", "tester is waiting for you") is None
    assert told == [("waiting", "tester is waiting for you")]
    assert service.person.tickets == []                   # nobody was asked anything
    from desktop_approver.client.errors import ProtocolError
    with pytest.raises(ProtocolError) as refused:
        ask("notice", "approved", "let me through")       # only waiting / finished / info
    assert refused.value.code == "invalid_message"
    with pytest.raises(ProtocolError):
        ask("notice", "info", "")                         # an empty notice says nothing
