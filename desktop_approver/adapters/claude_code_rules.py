"""The rule that makes Claude Code keep an "Allow for session": for the hook and the Claude Agent SDK alike.

Claude Code asks again about a call unless one of its own permission rules allows it. The rules it
suggests with a question (``permission_suggestions``) are usually wider than the call: a prefix
(``Bash(npm test:*)``), a whole directory, ``acceptEdits``. Passing those on would let Claude Code
run what the person never saw; passing nothing makes it ask again. So the answer to
"Allow for session" carries one rule of our own making, exactly as wide as what the person
approved, kept to the session (``"destination": "session"``, never written to a settings file):

- ``Bash``: an allow rule whose content is the approved command itself (after the person's edit).
  Claude Code matches such a rule exactly; a ``*`` in it would be a wildcard, so a command holding
  one gets no rule. Claude Code itself strips a few process wrappers (``timeout``, ``nice``,
  ``nohup``) before it matches, and the rule names the command only, not the call's other fields
  (``description``, ``timeout``, ``run_in_background``).
- every other tool: no rule. A file tool's rule is a path pattern (any edit of that file), a web
  tool's a domain, an MCP tool's the whole tool: each wider than the one call approved. Claude Code
  asks again, and the app's session memory answers at once, without a dialog.

Standard library only: the hook imports it once per tool call that was allowed for the session.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag would cost the hook an import of typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

WILDCARD = "*"
"""Claude Code reads ``*`` anywhere in a Bash rule's content as "any words": no exact rule holds one."""


def exact_rule(tool: str, approved: Mapping[str, Any]) -> dict[str, Any] | None:
    """Claude Code's rule (``{"toolName", "ruleContent"}``) for exactly this call, or None when its
    rule syntax cannot say anything that narrow."""
    if tool != "Bash":
        return None
    command = approved.get("command")
    if not isinstance(command, str) or not command.strip() or WILDCARD in command:
        return None
    return {"toolName": "Bash", "ruleContent": command}


def session_update(tool: str, approved: Mapping[str, Any]) -> dict[str, Any] | None:
    """The permission update (control protocol form) that allows exactly ``approved`` for the rest
    of this Claude Code session, or None."""
    rule = exact_rule(tool, approved)
    if rule is None:
        return None
    return {"type": "addRules", "rules": [rule], "behavior": "allow", "destination": "session"}
