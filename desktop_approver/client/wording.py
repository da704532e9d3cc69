"""What the model reads when a call was not run: one wording for every way in.

The hook, every adapter, the MCP gate and ``mcp-permission`` tell the model the same sentence for
the same outcome, so an agent's prompt (or a person reading a transcript) learns one form:

    The tool call was denied by the person at the desktop and was not run. Note: <note>
    The tool call was blocked by a policy rule (<rule>) and was not run. Note: <note>
    The tool call was not run: desktop-approver is not reachable at <where>: <why>.
    The tool call was not run: desktop-approver refused the request (<why>).
    The tool call was not run: <what failed>.

A block names its rule; the note is the person's (or the rule's) words, quoted as theirs. The
exception a builder catches (:class:`~desktop_approver.client.errors.Blocked`) carries the same
rule and note. Standard library only, and small: the hook imports it once per tool call.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag would cost the hook an import of typing
if TYPE_CHECKING:
    from .errors import Blocked
    from .wire import Decision

WHO_DENIED = {
    "user": "by the person at the desktop",
    "policy": "by a policy rule",
    "mode": "by the approver's deny-everything mode",
    "timeout": "because nobody answered in time",
    "cancelled": "because the request was cancelled",
    "session": "by a remembered decision",
}


def deny_message(decision: Decision) -> str:
    """What the model reads when ``decision`` refused a call."""
    if decision.blocked:
        rule = f" ({decision.rule})" if decision.rule else ""
        text = f"The tool call was blocked by a policy rule{rule} and was not run"
    else:
        text = f"The tool call was denied {WHO_DENIED.get(decision.decided_by, 'by the approver')} and was not run"
    if decision.note:
        return f"{text}. Note: {decision.note}"
    return text + "."


NOT_RUN = "The tool call was not run"


def not_run_message(reason: str) -> str:
    """What the model reads when a call was not run for ``reason`` (no decision was made)."""
    return f"{NOT_RUN}: {reason.rstrip('.')}."


def unavailable_reason(exc: BaseException) -> str:
    """Why the app could not be asked, as the client's ``ApproverUnavailable`` says it (it names
    the app and where it was looked for)."""
    return str(exc) or "desktop-approver is not reachable"


def unavailable_message(exc: BaseException) -> str:
    """What the model reads when the app could not be asked (fail closed)."""
    return not_run_message(unavailable_reason(exc))


def allowed_unavailable_message(exc: BaseException) -> str:
    """What the model reads when the app could not be asked and the builder chose to run the call."""
    reason = unavailable_reason(exc).rstrip(".")
    return f"The tool call was allowed without asking (on_unavailable=\"allow\"): {reason}."


def refused_message(exc: BaseException) -> str:
    """What the model reads when the app refused the request itself (a protocol error such as
    ``too_many_pending``), so nobody decided about the call."""
    return not_run_message(f"desktop-approver refused the request ({exc})")


def block_message(block: Blocked) -> str:
    """What the model reads when a call was blocked: :func:`deny_message` of the block's decision."""
    from .wire import Decision

    return deny_message(block.decision) if isinstance(block.decision, Decision) else str(block)
