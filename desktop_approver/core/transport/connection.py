"""One client's conversation with the app, apart from the socket it runs on.

:class:`Connection` is the protocol object (as in pygls): the server hands it each line it read;
it answers through the ``send`` callable it was given and asks to be hung up on through ``close``.
It never touches a socket, so every protocol rule is tested by feeding it lines
(``tests/core/test_connection.py``). Each message type has one handler, registered under its
``type`` in :data:`HANDLERS` with :func:`handles`; registering a type twice is an error, and every
type a client may send (``models.INCOMING``) has a handler.

The rules kept here, per connection: when the app requires a token, a client gets one answer and
no conversation until its ``hello`` carries the right one; a request id is pending at most once;
a request the agent withdraws (``cancel``) is still answered (``deny``, decided by ``cancelled``);
a request answered at once is answered when its audit record is committed (at the end of the loop
turn, :class:`~desktop_approver.core.store.audit.GroupCommit`), and what the connection says after
it waits its turn, so the client hears its replies in the order it asked;
a client that goes away takes its requests with it (their prompts disappear); when the app quits,
each pending request is told ``shutting_down``. Across connections (:class:`Context`): one peer
process has at most ``max_pending_per_client`` calls waiting for the person, and refusals are
written to the audit log within a rate budget.

Sockets, peer credentials, the read loop and the limits on the stream stay in ``core/transport/server.py``.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import functools
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from ...client import wire
from ...client.vocabulary import AskKind
from ...version import __version__
from ..decisions.broker import Triage
from ..decisions.tickets import Identity, Verdict
from ..messages import models
from ..messages.protocol import Refusal, encode, encode_decision, message_type, read, readable_id, validate
from ..store.audit import AgentGone, Delivery, GroupCommit
from ..store.logsafe import Printable, printable
from .context import DEFAULT_MAX_PENDING_PER_CLIENT as DEFAULT_MAX_PENDING_PER_CLIENT
from .context import Context
from .context import TokenCheck as TokenCheck
from .peercred import PeerCredentials, process_cwd, process_exe, same_directory

log = logging.getLogger(__name__)

Send = Callable[[bytes], None]
Handler = Callable[["Connection", Any], None]
_H = TypeVar("_H", bound=Callable[..., None])

HANDLERS: dict[str, Handler] = {}
"""Message ``type`` → the :class:`Connection` method that handles it."""


def handles(*kinds: str) -> Callable[[_H], _H]:
    """Register the decorated method as the handler of ``kinds``; each type has exactly one."""
    def register(handler: _H) -> _H:
        for kind in kinds:
            if kind in HANDLERS:
                raise RuntimeError(f"a second handler for {kind!r}: {handler.__qualname__}")
            HANDLERS[kind] = handler
        return handler
    return register


class _Outgoing:
    """A place in the order of a connection's replies; an answer waiting for its commit has none yet.
    ``rows``: the decision rows the reply answers (for the look at its delivery)."""

    __slots__ = ("payload", "rows")

    def __init__(self, payload: bytes | None = None, rows: Sequence[int] = ()) -> None:
        self.payload = payload
        self.rows = rows


AnswerSent = Callable[[Sequence[int], int], None]
"""The transport's look right after an answer was handed to it: the decision ``rows`` it answers and
its size in bytes (the server's ``_Link.answered``: did it reach the agent's socket?)."""


class Connection:
    """One client's conversation: who it is, what it waits for, and a handler per message type."""

    def __init__(self, context: Context, peer: PeerCredentials, send: Send, close: Callable[[], None],
                 gone: AgentGone | None = None, answer_sent: AnswerSent | None = None) -> None:
        self.context = context
        self.peer = peer
        self._send = send
        self._close = close
        self.answer_sent = answer_sent
        """Told after each answer is written (see :data:`AnswerSent`); None: written is delivered."""
        self.gone = gone
        """Why the client can no longer receive an answer (the transport's look at its socket), or
        None; without one (in memory, the relay's own delivery) it is taken as there."""
        self.identity = Identity(peer_pid=peer.pid, peer_uid=peer.uid, peer_exe=process_exe(peer.pid),
                                 peer_cwd=process_cwd(peer.pid))
        self.pending_key: Hashable = peer.pid
        """Whose calls waiting for the person these are, for ``too_many_pending``: the peer process;
        a relayed request's connection sets its NATS user and agent (they have no pid here)."""
        self.pending_owner = "this client"
        """Who :attr:`pending_key` is, as the refusal (and its audit row) says it."""
        self.authenticated = context.token_check is None
        self.no_requests: str | None = None
        """Why this connection may not ask (accepted beyond the cap of connections), or None."""
        self.tasks: dict[str, asyncio.Task[list[Verdict]]] = {}  # pending id -> Broker.ask under way
        self.kinds: dict[str, AskKind] = {}         # pending id -> "request" | "batch" (for errors about it)
        self.last_active = context.event_loop.time()
        """When the client last sent something or was last answered (loop time): the server's idle clock."""
        self.half_closed = False
        """The client has said all it will say (it shut its writing side) and waits for its answers."""
        self.closed = False
        self._outbox: collections.deque[_Outgoing] = collections.deque()
        """Replies held behind an answer waiting for its commit (empty nearly always: then sent at once)."""

    def __repr__(self) -> str:
        states = [name for name, on in (("half-closed", self.half_closed), ("closed", self.closed),
                                        ("unauthenticated", not self.authenticated)) if on]
        held = f" held={len(self._outbox)}" if self._outbox else ""
        return (f"<Connection pid={self.peer.pid} uid={self.peer.uid} agent={printable(self.identity.label, 40)!r} "
                f"pending={len(self.tasks)}{held}{''.join(' ' + state for state in states)}>")

    @property
    def owes_answers(self) -> bool:
        """Something the client asked is not answered yet: a person decides, or a commit is under way."""
        return bool(self.tasks or self._outbox)

    # -- what the transport calls -----------------------------------------------------------------

    def received(self, line: bytes | wire.Oversized) -> None:
        """Act on one line the client sent (its newline removed); a closed connection acts on nothing."""
        if self.closed:
            return
        data = read(line)
        if not isinstance(data, Refusal) and self.context.token_check is not None and (
                not self.authenticated or message_type(data) == "hello"):
            data = self._authenticate(data)
        message = data if isinstance(data, Refusal) else validate(data)
        if isinstance(message, Refusal):
            self.refuse(message)
            if not self.authenticated:  # a client without a token gets one answer, not a conversation
                self.close()
            return
        try:
            HANDLERS[message.type](self, message)
        except Exception as exc:  # our failure: a typed answer, and the connection (and what waits on it) stays
            log.exception("handling a %s from %r failed", message.type, self)
            self.send(encode(models.ErrorMessage(id=getattr(message, "id", None), code="internal",
                                                 in_reply_to=message.type,
                                                 message=f"desktop-approver failed: {exc or type(exc).__name__}")))

    def _authenticate(self, data: dict[str, Any]) -> dict[str, Any] | Refusal:
        """The token check, between the line's reading (up to its version) and its fields: a client
        that has not shown the token hears ``unauthorized`` whatever else is wrong with the line, and
        nothing about the fields it sent (PROTOCOL.md, "For implementers"). Every ``hello`` must carry
        the token; one that does not ends the connection, even after an accepted one."""
        kind = message_type(data)
        if kind != "hello":
            return Refusal("unauthorized", "a valid token is required: send it in hello", readable_id(data), kind)
        token, token_check = data.get("token"), self.context.token_check
        self.authenticated = token_check is not None and isinstance(token, str) and token_check(token)
        return data if self.authenticated else Refusal("unauthorized", "missing or wrong token", None, "hello")

    def send(self, payload: bytes, rows: Sequence[int] = ()) -> None:
        """Write to the client, unless the connection is closed (then the words go nowhere); behind
        an answer that waits for its commit, when there is one. ``rows``: the decisions an answer
        carries: one that cannot be written, or does not reach the agent, is recorded so."""
        if self.closed:
            self.not_delivered(rows, "its connection was closed before the answer was written")
            return
        if self._outbox:
            self._outbox.append(_Outgoing(payload, rows))
        else:
            self._write(payload, rows)

    def _write(self, payload: bytes, rows: Sequence[int]) -> None:
        self._send(payload)
        if rows and self.answer_sent is not None:
            self.answer_sent(rows, len(payload))

    def not_delivered(self, rows: Sequence[int], why: str) -> None:
        """Answers recorded as given that never reached the agent: the log says so (an event naming them)."""
        if rows:
            log.info("answers %s were recorded but not delivered: %s", list(rows), why)
            self.context.broker.audit.record_undelivered(rows, why, self.peer.pid, self.peer.uid)

    def close(self) -> None:
        """Hang up (once). Answers held for this turn's commit get it first and go out before the
        line closes (the refusal that closes it, too): an agent is never left without its answer."""
        if self.closed:
            return
        if self._outbox:
            self.context.broker.audit.commit_turn()
        self.closed = True
        self._close()

    def close_when_idle(self) -> None:
        """A half-closed client has had every answer: nothing more can happen on this connection."""
        if self.half_closed and not self.owes_answers:
            self.close()

    def connection_lost(self) -> None:
        """The client is gone: its requests are withdrawn (their prompts disappear, nobody is answered)."""
        self.close()
        for task in list(self.tasks.values()):
            task.cancel()

    def shutdown(self) -> None:
        """The app is quitting: every pending request hears ``shutting_down``, then the line is closed."""
        for request_id, kind in self.kinds.items():
            self.send(encode(models.ErrorMessage(id=request_id, code="shutting_down", in_reply_to=kind,
                                                 message="desktop-approver is shutting down")))
        self.connection_lost()

    def refuse(self, refusal: Refusal) -> None:
        """A typed error for a message we will not act on, written to the audit log (within its budget).
        The refusal is answered even when the log cannot take it (a full disk): it decides nothing."""
        try:
            relayed = self.identity.relay_user
            self.context.audit_refusal(refusal.code, refusal.message, self.peer.pid, self.peer.uid, refusal.id,
                                       who=f"NATS user {relayed}" if relayed is not None else None)
        except Exception:
            log.exception("the audit log could not record a refusal (%s) for %r", refusal.code, self)
        self.send(encode(refusal.reply()))

    # -- handlers ---------------------------------------------------------------------------------

    @handles("hello")
    def _hello(self, hello: models.Hello) -> None:
        info, peer = hello.client, self.peer  # the token, when one is required, was checked in received()
        real_cwd = process_cwd(peer.pid)  # now, not at connect: the client may have moved
        self.identity = Identity(agent=info.agent, pid=info.pid, cwd=info.cwd, host=info.host,
                                 git_branch=info.git_branch, peer_pid=peer.pid, peer_uid=peer.uid,
                                 peer_exe=self.identity.peer_exe, peer_cwd=real_cwd,
                                 cwd_agrees=same_directory(info.cwd, real_cwd))
        log.debug("hello from %r", self)
        self.send(encode(models.Welcome(server="desktop-approver", version=__version__,
                                        default_timeout=self.context.broker.default_timeout,
                                        max_line_bytes=wire.MAX_LINE_BYTES, peer={"pid": peer.pid, "uid": peer.uid})))

    @handles("request", "batch")
    def _ask(self, message: models.Asking) -> None:
        if self.no_requests is not None:
            self.refuse(Refusal("too_many_connections", self.no_requests, message.id, message.type))
            return
        if message.id in self.tasks:
            self.refuse(Refusal("duplicate_id", f"request id {message.id!r} is already pending", message.id,
                                message.type))
            return
        calls = message.calls() if isinstance(message, models.Request) else message.calls
        session = message.session or f"{self.identity.label}-{self.peer.pid}"
        pid = self.pending_key
        try:
            triage = self.context.broker.take(
                self.identity, session, message.id, message.type, calls, timeout=message.timeout,
                admit=functools.partial(self.context.reserve, pid), loop=self.context.event_loop, gone=self.gone)
        except Exception as exc:  # never leave an agent hanging, never take the app down
            self._internal_error(message, exc)
            return
        if triage.undeliverable is not None:  # read after its agent had gone: recorded so, nobody to answer
            return
        if triage.answered is not None:  # a rule, the mode or session memory: answered in this very turn
            if triage.commit is None:
                self._reply(message, triage.answered)
            else:
                self._answer_when_committed(message, triage.answered, triage.commit, triage.delivery)
            return
        if triage.asking is None:  # over the limit of calls waiting for the person
            self.refuse(Refusal(
                "too_many_pending", f"{self.pending_owner} already has {self.context.pending_by_peer[pid]} calls "
                f"waiting for the person; {triage.waiting} more would pass the limit of "
                f"{self.context.max_pending_per_client}", message.id, message.type))
            return
        self.tasks[message.id] = triage.asking
        self.kinds[message.id] = message.type
        triage.asking.add_done_callback(functools.partial(self._finished, message, triage, triage.waiting))

    @handles("cancel")
    def _cancel(self, message: models.Cancel) -> None:
        task = self.tasks.get(message.id)
        if task is None:
            self.refuse(Refusal("unknown_id", f"no pending request {message.id!r}", message.id, "cancel"))
            return
        log.debug("cancel of %s from %r", Printable(message.id), self)
        task.cancel()

    @handles("status")
    def _status(self, message: models.Status) -> None:
        state = self.context.broker.status()
        self.send(encode(models.StatusReply(
            id=message.id, version=__version__, pid=os.getpid(), socket=self.context.socket_path,
            pending=state["pending"], mode=state["mode"], mode_until=state["mode_until"], sessions=state["sessions"],
            uptime=time.monotonic() - self.context.started, problems=state.get("problems") or None,
            relay=models.RelayState(**relay()) if (relay := self.context.broker.relay_state) is not None else None)))

    # Session memory over the socket is the asking agent's own: keyed by the agent's name from hello.

    @handles("end_session")
    def _end_session(self, message: models.EndSession) -> None:
        forgotten = self.context.broker.memory.forget_session(message.session, agent=self.identity.memory_agent)
        self.send(encode(models.SessionEnded(id=message.id, forgotten=forgotten)))

    @handles("sessions")
    def _sessions(self, message: models.ListSessions) -> None:
        entries = [models.MemoryEntryInfo(**entry.as_dict())
                   for entry in self.context.broker.memory.entries(agent=self.identity.memory_agent)]
        self.send(encode(models.SessionsReply(id=message.id, entries=entries)))

    @handles("revoke")
    def _revoke(self, message: models.Revoke) -> None:
        broker, who = self.context.broker, self.identity
        count = broker.memory.revoke(session=message.session, tool=message.tool, agent=who.memory_agent)
        try:
            broker.audit.record_event("revoke", None, f"agent={who.agent} session={message.session} "
                                      f"tool={message.tool} count={count}", self.peer.pid, self.peer.uid)
        except Exception:  # the approvals are gone either way: the agent hears the truth
            log.exception("the audit log could not record a revoke from %r", self)
        self.send(encode(models.Revoked(id=message.id, count=count)))

    @handles("notice")
    def _notice(self, message: models.Notice) -> None:
        broker, who = self.context.broker, self.identity
        broker.tell(who, message.kind, message.text)
        try:
            broker.audit.record_event("notice", message.kind, f"agent={who.agent} {message.text}", self.peer.pid,
                                      self.peer.uid)
        except Exception as exc:  # shown to the person, not recorded: the agent is told so, and stays connected
            log.error("the audit log could not record a notice from %r: %s", self, exc)
            self.send(encode(models.ErrorMessage(id=message.id, code="internal", in_reply_to="notice",
                                                 message=f"the notice was shown but could not be recorded: {exc}")))
            return
        self.send(encode(models.Noticed(id=message.id)))

    @handles("show")
    def _show(self, message: models.Show) -> None:
        # Raises a window and decides nothing, so any process of the person's uid may ask (the peer
        # check refused every other uid before this line was read).
        shown = self.context.broker.show(message.what)
        log.debug("show %s from %r: %s", message.what, self, "shown" if shown else "no windows")
        self.send(encode(models.Shown(id=message.id, what=message.what, shown=shown)))

    # -- a request's answer -----------------------------------------------------------------------

    def _finished(self, message: models.Asking, triage: Triage, waiting: int,
                  done: asyncio.Task[list[Verdict]]) -> None:
        """The person's answer (or the withdrawal, or our failure) goes to the agent."""
        self.tasks.pop(message.id, None)
        self.kinds.pop(message.id, None)
        self.context.release(self.pending_key, waiting)
        self.last_active = self.context.event_loop.time()
        if done.cancelled():
            # A task cancelled before its first step (request and cancel in one read) never ran
            # Broker.ask: the withdrawal is recorded and answered here. A closed connection (the
            # client went away, or the app is quitting) sends nothing.
            self._reply(message, self.context.broker.withdrawn(triage))
        elif (failure := done.exception()) is not None:  # never leave an agent hanging, never take the app down
            self._internal_error(message, failure)
        else:
            delivery = triage.delivery
            self._reply(message, done.result(), delivery.rows if delivery is not None and delivery.why is None else ())
        self.close_when_idle()

    def _reply(self, message: models.Asking, verdicts: list[Verdict], rows: Sequence[int] = ()) -> None:
        """The verdicts as the agent's answer; if they cannot be put into one, a typed error (never silence)."""
        try:
            payload = _answer_line(message, verdicts)
        except Exception as exc:
            self._internal_error(message, exc)
            return
        self.send(payload, rows)

    def _answer_when_committed(self, message: models.Asking, verdicts: list[Verdict], commit: GroupCommit,
                               delivery: Delivery | None = None) -> None:
        """Answered at once, recorded in this turn's commit: the answer takes its place in the order
        of replies now, and goes out when the commit is made (if it fails: a typed error, a deny;
        if the agent was gone by then, nothing: the log says it was never delivered)."""
        place = _Outgoing()
        self._outbox.append(place)
        commit.when_done(functools.partial(self._committed, message, verdicts, place, delivery))

    def _committed(self, message: models.Asking, verdicts: list[Verdict], place: _Outgoing,
                   delivery: Delivery | None, error: BaseException | None) -> None:
        if error is None and delivery is not None and delivery.why is not None:
            place.payload = b""  # recorded as never delivered: the place in the order is given up
            self._send_ready()
            return
        failure = error
        if failure is None:
            try:
                place.payload = _answer_line(message, verdicts)
                place.rows = delivery.rows if delivery is not None else ()
            except Exception as exc:
                failure = exc
        if failure is not None:
            place.payload = self._failure_line(message, failure)
        self.last_active = self.context.event_loop.time()
        self._send_ready()
        if failure is not None:
            self._audit_failure(message, failure)
        self.close_when_idle()

    def _send_ready(self) -> None:
        """Send the held replies whose turn has come (all of them, up to the next answer without its commit)."""
        outbox = self._outbox
        while outbox and outbox[0].payload is not None:
            place = outbox.popleft()
            if not place.payload:
                continue
            if self.closed:
                self.not_delivered(place.rows, "its connection was closed before the answer was written")
            else:
                self._write(place.payload, place.rows)

    def _internal_error(self, message: models.Asking, exc: BaseException) -> None:
        """Our failure, not the client's: logged with its traceback, answered (a deny), audited.

        Answered first: the failure may be the audit log's own, and the agent must hear either way.
        """
        self.send(self._failure_line(message, exc))
        self._audit_failure(message, exc)

    def _failure_line(self, message: models.Asking, exc: BaseException) -> bytes:
        if isinstance(exc, sqlite3.Error):  # the audit log's: its health signal says so, once per change
            log.debug("request %s refused: the audit log cannot be written (%s)", printable(message.id), exc)
        elif isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):  # a known state, not a bug
            log.error("request %s refused: the app is out of file descriptors (%s)", printable(message.id), exc)
        else:
            log.error("request %s failed", printable(message.id), exc_info=exc)
        text = str(exc) or type(exc).__name__
        return encode(models.ErrorMessage(id=message.id, code="internal", in_reply_to=message.type,
                                          message=f"desktop-approver failed: {text}"))

    def _audit_failure(self, message: models.Asking, exc: BaseException) -> None:
        text = str(exc) or type(exc).__name__
        try:
            self.context.broker.audit.record_event("refused", "internal", f"{message.type} {message.id!r}: {text}",
                                                   self.peer.pid, self.peer.uid)
        except sqlite3.Error as failed:  # told to the person by the log's health signal, once per change
            log.debug("the audit log could not record the failure of request %s: %s", printable(message.id), failed)
        except Exception:
            log.exception("the audit log could not record the failure of request %s", printable(message.id))


def _answer_line(message: models.Asking, verdicts: list[Verdict]) -> bytes:
    """The verdicts as the agent's answer, encoded: a ``decision`` for a request, a ``batch_decision`` for a batch."""
    if isinstance(message, models.Request):
        return encode_decision(message.id, verdicts[0])
    return encode(models.BatchDecision(id=message.id, decisions=[
        models.CallDecision.of(verdict, index=index) for index, verdict in enumerate(verdicts)]))


_unhandled = set(models.INCOMING) ^ set(HANDLERS)
if _unhandled:  # pragma: no cover - caught by the import in any test
    raise RuntimeError(f"message types without exactly one handler: {sorted(_unhandled)}")
