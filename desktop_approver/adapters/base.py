"""What every adapter shares: ask the app, and turn its decision into what a framework needs.

:class:`Approver` wraps the thin clients (blocking and async) with the rules all adapters keep:

- a deny is an :class:`Answer` whose :attr:`Answer.message` is written for the model (the person's
  note in it), never an exception, so the run goes on and the model can adapt;
- a policy ``block`` raises :class:`~desktop_approver.client.errors.Blocked` (it ends the run) unless the
  adapter was built with ``stop_on_block=False``, when it is a deny like any other;
- edited arguments replace the call's arguments (:attr:`Answer.args`);
- the app not being reachable denies (fail closed) unless ``on_unavailable="allow"``; a
  ``timeout`` that is not a finite number of seconds above 0 is a ValueError here, at construction,
  never a wait that ends at once and reads as "not reachable";
- a protocol error (flood guard, malformed hints) denies, with the reason;
- ``transport=`` (e.g. :class:`desktop_approver.testing.FakeApprover`) replaces the app's socket,
  so an agent built on any adapter is tested end to end with no app running;
- a call that looks like a file write, an edit, a patch or a shell command carries a preview built
  here, in the agent's process (``render.autopreview``, standard library only): the agent may run
  on another machine or in a container, where the app cannot read the file being changed.

Standard library only, like the client: the framework is the adapter module's business.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..client import Client
from ..client.base import check_timeout, check_where
from ..client.errors import ApproverError, ApproverUnavailable, Blocked
from ..client.wire import Decision
from ..client.wording import allowed_unavailable_message, deny_message, refused_message, unavailable_message

if TYPE_CHECKING:
    from ..client.async_client import AsyncClient
    from ..client.transport import DualTransport

OnUnavailable = Literal["deny", "allow"]
MAX_PREVIEW_BYTES = 256 * 1024
"""A bigger preview is left out (the app derives a smaller one): the whole request line must stay
under the protocol's 1 MiB."""
HINT_NAMES = {  # MCP annotation / framework flag -> the wire's hint name
    "readOnlyHint": "readOnlyHint", "read_only_hint": "readOnlyHint", "read_only": "readOnlyHint",
    "destructiveHint": "destructiveHint", "destructive_hint": "destructiveHint", "destructive": "destructiveHint",
    "idempotentHint": "idempotentHint", "idempotent_hint": "idempotentHint", "idempotent": "idempotentHint",
    "openWorldHint": "openWorldHint", "open_world_hint": "openWorldHint", "open_world": "openWorldHint",
}


@dataclass(frozen=True)
class Answer:
    """One call's outcome, in the terms a framework needs."""

    allowed: bool
    args: dict[str, Any]
    """The arguments to run the tool with: the person's edit, else the call's own."""
    message: str
    """For the model: why it was denied (the person's note in it), or how it was approved."""
    decision: Decision | None = None
    """The app's decision; None when the app was not reachable."""
    edited: bool = False

    @property
    def note(self) -> str | None:
        return self.decision.note if self.decision is not None else None

    @property
    def for_session(self) -> bool:
        return self.decision is not None and self.decision.decision == "allow_session"


@dataclass
class Call:
    """A tool call as an adapter hands it over: name, arguments and what else the person sees."""

    tool: str
    args: Mapping[str, Any]
    hints: Mapping[str, Any] | None = None
    description: str | None = None
    preview: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"tool": self.tool, "args": dict(self.args)}
        if self.hints:
            entry["hints"] = dict(self.hints)
        if self.description:
            entry["description"] = self.description
        if self.preview:
            entry["preview"] = dict(self.preview)
        return entry


def hints_from(source: Any) -> dict[str, bool] | None:
    """MCP tool annotations, a framework's flags (dict or object) as wire hints; None when none."""
    if source is None:
        return None
    if not isinstance(source, Mapping):
        source = {name: getattr(source, name) for name in HINT_NAMES if hasattr(source, name)}
    hints: dict[str, bool] = {}
    for name, value in source.items():
        wire_name = HINT_NAMES.get(name)
        if wire_name is not None and isinstance(value, bool):
            hints[wire_name] = value
    return hints or None


def answer_from(decision: Decision, args: Mapping[str, Any]) -> Answer:
    if not decision.allowed:
        return Answer(False, dict(args), deny_message(decision), decision)
    edited = decision.updated_args is not None
    final = dict(decision.updated_args) if edited else dict(args)  # type: ignore[arg-type]
    message = f"approved ({decision.decision}, {decision.decided_by})" + (f": {decision.note}" if decision.note else "")
    return Answer(True, final, message, decision, edited)


def approver_or_default(approver: object, agent: str | None) -> Approver:
    """``approver``, or a new :class:`Approver` named ``agent`` when it is None.

    Anything else fails here, when the adapter is built, with what to pass instead: a wrong object
    would otherwise be found only at the first tool call, as an ``AttributeError`` in the middle of
    a run (a :class:`~desktop_approver.testing.FakeApprover` is a transport, not an approver).
    """
    if approver is None:
        return Approver(agent=agent)
    if isinstance(approver, Approver):
        return approver
    kind = type(approver).__name__
    hint = (f"a {kind} is a transport: pass Approver(transport=your_{kind.lower()})" if hasattr(approver, "connect")
            else "build one with desktop_approver.adapters.base.Approver(...), or pass nothing for the default")
    raise TypeError(f"expected a desktop_approver.adapters.base.Approver, not {kind}: {hint}")


class Approver:
    """Asks the app about tool calls for an adapter; one per agent run is typical, sharing is fine.

    ``session`` is the default session (adapters pass the framework's own id per call when there is
    one); without it one is made per Approver, so "Allow for session" lasts as long as this object.
    ``transport`` replaces the app's socket (``FakeApprover`` in an agent's tests), for the blocking
    and the async calls alike; ``url`` names the app elsewhere (``nats://host:4222`` through the
    relay, like ``DESKTOP_APPROVER_URL``).
    """

    def __init__(self, *, agent: str | None = None, session: str | None = None,
                 socket_path: str | os.PathLike[str] | None = None, timeout: float | None = None,
                 on_unavailable: OnUnavailable = "deny", stop_on_block: bool = True,
                 token: str | None = None, previews: bool = True, transport: DualTransport | None = None,
                 url: str | None = None) -> None:
        if on_unavailable not in ("deny", "allow"):
            raise ValueError(f"on_unavailable must be 'deny' or 'allow', not {on_unavailable!r}")
        if sum(given is not None for given in (transport, socket_path, url)) > 1:
            raise TypeError("give a socket_path, a url or a transport, not more than one")
        # wrong objects refused here, with what to pass, not at the first tool call (both calls: the
        # blocking and the async, since an Approver serves either)
        check_where("Approver", socket_path, url, transport, "connect")
        check_where("Approver", None, None, transport, "connect_async")
        self.transport = transport
        self.url = url
        self.agent = agent
        self.session = session or f"{agent or 'agent'}-{os.getpid()}-{os.urandom(4).hex()}"
        self.socket_path = socket_path
        self.timeout = check_timeout(timeout)  # NaN or <= 0 would read as "unreachable": an allow, with "allow"
        self.on_unavailable = on_unavailable
        self.stop_on_block = stop_on_block
        self.token = token
        self.previews = previews
        self._local = threading.local()  # blocking clients: one per thread, so waits do not queue
        self._all_clients: list[Client] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Approver(agent={self.agent!r}, session={self.session!r}, on_unavailable={self.on_unavailable!r})"

    # -- blocking ----------------------------------------------------------------------------

    def ask(self, tool: str, args: Mapping[str, Any], *, session: str | None = None, agent: str | None = None,
            hints: Mapping[str, Any] | None = None, description: str | None = None,
            preview: Mapping[str, Any] | None = None) -> Answer:
        """Block until the person (or a rule, memory, the mode) decides one call."""
        client = self._client(agent)
        try:
            decision = client.request(tool, args, session=session or self.session, description=description,
                                      preview=preview or self.preview(tool, args), timeout=self.timeout,
                                      hints=hints)
        except ApproverError as exc:
            return self._failed(exc, args)
        return self._settle(decision, args)

    def ask_batch(self, calls: Sequence[Call], *, session: str | None = None,
                  agent: str | None = None) -> list[Answer]:
        """One prompt for several calls; one answer per call, in order (partial approval)."""
        if not calls:
            return []
        client = self._client(agent)
        try:
            decisions = client.request_batch(self._wire(calls), session=session or self.session,
                                             timeout=self.timeout)
        except ApproverError as exc:
            return [self._failed(exc, call.args) for call in calls]
        return self._settle_all(decisions, calls)

    # -- async -------------------------------------------------------------------------------

    async def ask_async(self, tool: str, args: Mapping[str, Any], *, session: str | None = None,
                        agent: str | None = None, hints: Mapping[str, Any] | None = None,
                        description: str | None = None, preview: Mapping[str, Any] | None = None) -> Answer:
        # A connection per call: frameworks run and close event loops of their own (run_sync), and
        # a connection must not outlive its loop. Session memory is keyed by session, not connection.
        try:
            async with self._async_client(agent) as client:
                decision = await client.request(tool, args, session=session or self.session, description=description,
                                                preview=preview or self.preview(tool, args), timeout=self.timeout,
                                                hints=hints)
        except ApproverError as exc:
            return self._failed(exc, args)
        return self._settle(decision, args)

    async def ask_batch_async(self, calls: Sequence[Call], *, session: str | None = None,
                              agent: str | None = None) -> list[Answer]:
        if not calls:
            return []
        try:
            async with self._async_client(agent) as client:
                decisions = await client.request_batch(self._wire(calls), session=session or self.session,
                                                       timeout=self.timeout)
        except ApproverError as exc:
            return [self._failed(exc, call.args) for call in calls]
        return self._settle_all(decisions, calls)

    def preview(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The call's preview as seen from here (a diff against the file on this machine), or None."""
        if not self.previews:
            return None
        from ..render.autopreview import preview_for

        try:
            preview = preview_for(tool, args, cwd=os.getcwd())
            if preview is None or len(json.dumps(preview, ensure_ascii=False).encode()) > MAX_PREVIEW_BYTES:
                return None
        except (OSError, TypeError, ValueError):
            return None
        return preview

    def _wire(self, calls: Sequence[Call]) -> list[dict[str, Any]]:
        entries = []
        for call in calls:
            entry = call.to_wire()
            if "preview" not in entry and (preview := self.preview(call.tool, call.args)) is not None:
                entry["preview"] = preview
            entries.append(entry)
        return entries

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the blocking connections (async calls close theirs as they finish)."""
        with self._lock:
            clients, self._all_clients = self._all_clients, []
        for client in clients:
            client.close()

    # -- inside ------------------------------------------------------------------------------

    def _client(self, agent: str | None) -> Client:
        name = agent or self.agent
        clients: dict[str | None, Client] = getattr(self._local, "clients", None) or {}
        self._local.clients = clients
        client = clients.get(name)
        if client is None:
            client = clients[name] = Client(self.socket_path, agent=name, session=self.session, token=self.token,
                                            transport=self.transport, url=self.url)
            with self._lock:
                self._all_clients.append(client)
        return client

    def _async_client(self, agent: str | None) -> AsyncClient:
        from ..client.async_client import AsyncClient

        return AsyncClient(self.socket_path, agent=agent or self.agent, session=self.session, token=self.token,
                           transport=self.transport, url=self.url)

    def _settle(self, decision: Decision, args: Mapping[str, Any]) -> Answer:
        if decision.blocked and self.stop_on_block:
            raise Blocked(decision)
        return answer_from(decision, args)

    def _settle_all(self, decisions: Sequence[Decision], calls: Sequence[Call]) -> list[Answer]:
        if self.stop_on_block:
            for decision in decisions:
                if decision.blocked:
                    raise Blocked(decision)
        return [answer_from(decision, call.args) for decision, call in zip(decisions, calls, strict=True)]

    def _failed(self, exc: ApproverError, args: Mapping[str, Any]) -> Answer:
        if isinstance(exc, ApproverUnavailable):
            if self.on_unavailable == "allow":
                return Answer(True, dict(args), allowed_unavailable_message(exc))
            return Answer(False, dict(args), unavailable_message(exc))
        return Answer(False, dict(args), refused_message(exc))

