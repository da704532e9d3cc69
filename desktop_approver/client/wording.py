"""What the model reads when a call was not run: one wording for every way in.

The hook, every adapter, the MCP gate and ``mcp-permission`` tell the model the same sentence for
the same decision, so an agent's prompt (or a person reading a transcript) learns one form:

    The tool call was denied by the person at the desktop and was not run. Note: <note>
    The tool call was blocked by a policy rule (<rule>) and was not run. Note: <note>

A block names its rule; the note is the person's (or the rule's) words, quoted as theirs. The
exception a builder catches (:class:`~desktop_approver.client.errors.Blocked`) carries the same
rule and note. Standard library only, imported by the hook once per refused call.
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


def block_message(block: Blocked) -> str:
    """What the model reads when a call was blocked: :func:`deny_message` of the block's decision."""
    from .wire import Decision

    return deny_message(block.decision) if isinstance(block.decision, Decision) else str(block)
