"""CrewAI: approve tool calls on the desktop (``pip install 'desktop-approver[crewai]'``).

One line, before ``crew.kickoff()``::

    DesktopApproval().install()        # or: with DesktopApproval(): crew.kickoff()

It registers a CrewAI before-tool-call hook: each tool call waits for the person. Allowed calls run
(with edited arguments written into the call's input in place, as CrewAI's hooks require); a deny
returns ``False``, which CrewAI answers to the model with its own "Tool execution blocked by hook".
CrewAI's hook cannot carry a reason, so the person's note goes to the agent through a
before-LLM-call hook of ours, as a user message on its next model call ("desktop-approver: ...").

CrewAI logs and ignores an exception raised by a hook and then runs the tool, so this hook never
raises: an unreachable app is a deny like any other (fail closed). A policy ``block`` denies the
call and then ends the run the one way CrewAI gives a hook: our before-LLM-call hook answers
``False`` for that crew, so CrewAI stops before its next model call ("LLM call blocked by
before_llm_call hook"; it retries the task, blocked again at once, then gives up). The block
ends that run only: the crew's next ``kickoff()`` asks again (a before-kickoff callback of ours,
added to the blocked crew, forgets the block as the next run starts; without a crew, the block
holds for the agent's executor that met it). Inside ``with DesktopApproval():`` the error that
leaves ``kickoff()`` is :class:`~desktop_approver.client.errors.Blocked`; after ``install()`` it is
CrewAI's own ``ValueError`` (CrewAI logs and drops whatever a hook raises, so no hook can raise
``Blocked`` through it), and the ``Blocked`` is kept as :attr:`DesktopApproval.blocked`.
``allow_session`` is kept per crew (its id), else per task; the agent's name is its ``role``.
CrewAI asks one tool call at a time, so there is no batch.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from crewai.hooks import (
    register_before_llm_call_hook,
    register_before_tool_call_hook,
    unregister_before_llm_call_hook,
    unregister_before_tool_call_hook,
)

from ..client.errors import Blocked
from ..client.wording import block_message, not_run_message
from .base import Answer, Approver, approver_or_default

__all__ = ["DesktopApproval"]
log = logging.getLogger("desktop_approver.adapters.crewai")


class DesktopApproval:
    """The before-tool-call hook (and the note-delivering before-LLM-call hook) for CrewAI."""

    def __init__(self, approver: Approver | None = None) -> None:
        self.approver = approver_or_default(approver, "crewai")
        self._notes: dict[int, list[str]] = {}  # id(agent) -> notes not yet shown to its model
        # session (crew, else task) -> the block that ends its run, and, without a crew, the agent
        # executor it ends (a crew's next kickoff forgets the block: see _forget_at_next_kickoff)
        self._blocked: dict[str | None, tuple[Blocked, object]] = {}
        self._lock = threading.Lock()
        self.installed = False
        self.blocked: Blocked | None = None
        """The last policy block, with its rule and reason: after a bare ``install()`` CrewAI's own
        ``ValueError`` leaves ``kickoff()`` (no hook can raise through CrewAI), and the block is here."""

    def __repr__(self) -> str:
        return f"DesktopApproval({self.approver!r}, installed={self.installed})"

    def install(self) -> DesktopApproval:
        if not self.installed:
            register_before_tool_call_hook(self.before_tool_call)
            register_before_llm_call_hook(self.before_llm_call)
            self.installed = True
        return self

    def uninstall(self) -> None:
        if self.installed:
            unregister_before_tool_call_hook(self.before_tool_call)
            unregister_before_llm_call_hook(self.before_llm_call)
            self.installed = False
        self.approver.close()

    def __enter__(self) -> DesktopApproval:
        return self.install()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self.uninstall()
        blocked = next((block for block, _ in self._blocked.values()), None)
        self._blocked.clear()
        if blocked is not None and isinstance(exc, Exception):
            raise blocked from exc  # CrewAI's "LLM call blocked" is our block: say so

    def before_tool_call(self, context: Any) -> bool | None:
        """``None`` lets the call run (with the person's edits); ``False`` stops it."""
        try:
            answer = self.approver.ask(context.tool_name, dict(context.tool_input or {}),
                                       session=_session_of(context), agent=_agent_name(context) or self.approver.agent,
                                       description=getattr(context.tool, "description", None) or None)
        except Blocked as exc:
            answer = Answer(False, dict(context.tool_input or {}), block_message(exc))
            self.blocked = exc
            self._block(context, exc)
        except Exception as exc:  # noqa: BLE001 - CrewAI would run the tool after a hook's exception
            log.exception("asking desktop-approver failed; denying %s", context.tool_name)
            answer = Answer(False, dict(context.tool_input or {}), not_run_message(str(exc)))
        if not answer.allowed:
            self._remember(context.agent, f"{context.tool_name} was not run. {answer.message}")
            return False
        if answer.edited:
            context.tool_input.clear()
            context.tool_input.update(answer.args)  # in place: CrewAI runs this very dict
        return None

    def before_llm_call(self, context: Any) -> bool | None:
        """Hands the model the notes of refused calls; ``False`` (ends the run) after a block."""
        with self._lock:
            blocked = self._blocked.get(_session_of(context))
            if blocked is not None and (blocked[1] is None or blocked[1] is getattr(context, "executor", None)):
                return False
            notes = self._notes.pop(id(context.agent), None)
        if notes:
            context.messages.append({"role": "user", "content": "desktop-approver: " + "\n".join(notes)})
        return None

    def _block(self, context: Any, block: Blocked) -> None:
        """End the run this call belongs to, and only that run."""
        session, crew = _session_of(context), context.crew
        executor = None if crew is not None else getattr(context.agent, "agent_executor", None)
        with self._lock:
            known = self._blocked.get(session)
            if known is not None and known[1] is executor:
                return  # this run is already ending
            self._blocked[session] = (block, executor)
        if crew is not None:
            self._forget_at_next_kickoff(crew, session)

    def _forget_at_next_kickoff(self, crew: Any, session: str | None) -> None:
        """CrewAI calls a crew's ``before_kickoff_callbacks`` as each kickoff starts, in its thread:
        the next run of the blocked crew starts unblocked (and asks again)."""
        callbacks = getattr(crew, "before_kickoff_callbacks", None)
        if not isinstance(callbacks, list):
            return

        def forget(inputs: Any) -> Any:
            with self._lock:
                self._blocked.pop(session, None)
            if forget in callbacks:
                callbacks.remove(forget)
            return inputs

        callbacks.append(forget)

    def _remember(self, agent: Any, note: str) -> None:
        with self._lock:
            self._notes.setdefault(id(agent), []).append(note)


def _session_of(context: Any) -> str | None:
    for owner in (context.crew, context.task):
        value = getattr(owner, "id", None)
        if value:
            return str(value)
    return None


def _agent_name(context: Any) -> str | None:
    role = getattr(context.agent, "role", None)
    return str(role) if role else None
