"""The rules that make Claude Code keep an "Allow for session": for the hook and the Claude Agent SDK alike.

Claude Code asks again about a call unless one of its own permission rules allows it. The rules it
suggests with a question (``permission_suggestions``) are usually wider than the call: a prefix
(``Bash(npm test:*)``), a whole directory, ``acceptEdits``. Passing those on would let Claude Code
run what the person never saw; passing nothing makes it ask again. So the answer to
"Allow for session" carries rules of our own making, as wide as what the person approved, kept to
the session (``"destination": "session"``, never written to a settings file):

- ``Bash``: an allow rule whose content is the approved command itself (after the person's edit),
  and an ask rule ``* COMMAND`` beside it. Claude Code matches an allow rule after stripping what
  it deems harmless in front of a command (``NODE_ENV=production``, ``CI=1``, ``LANG=C`` and other
  environment assignments; ``time``, ``timeout 5``, ``nice``, ``nohup``), so the allow rule alone
  would also run ``GOOS=windows go build`` after ``go build`` was approved. It matches ask rules
  against the command as written, and an ask rule outranks an allow rule, so ``* COMMAND`` (any
  words, then a space, then the command) sends every such prefixed form back to the app, which
  asks the person; the command alone has nothing in front and runs. What Claude Code still strips
  behind a command, for every rule, changes nothing the command does: a trailing comment
  (``# ...``), a trailing ``;``, and ``2>&1`` / ``1>&2`` (where its own output goes). Redirections
  to files and pipes are kept, and ask. A rule names the command only, not the call's other
  fields (``description``, the time limit ``timeout``, ``run_in_background``). A ``*`` in a rule is
  Claude Code's wildcard, so a command holding one gets no rule.
  ``tests/adapters/test_claude_code_cli.py`` pins all of this against the real CLI.
- every other tool: no rule. A file tool's rule is a path pattern (any edit of that file), a web
  tool's a domain, an MCP tool's the whole tool: each wider than the one call approved. Claude Code
  asks again, and the app's session memory answers at once, without a dialog.

A rule given to Claude Code is Claude Code's until its session ends: revoking the approval in the
app (or the app forgetting an idle session) does not reach it.

Standard library only: the hook imports it once per tool call that was allowed for the session.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag would cost the hook an import of typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

RULE_TOOL = "Bash"
"""The one tool "Allow for session" gives Claude Code a rule for."""
CLAUDE_CODE_AGENTS = ("claude-code", "claude-agent-sdk")
"""The names the hook and the Claude Agent SDK adapter give the app by default (a subagent's adds
`` (ID)``)."""
REVOKE_NOTE = ("Claude Code also keeps its own copy of a Bash command approved for the session, until that "
               "Claude Code session ends: revoking here stops the app's answers, not Claude Code's. "
               "Restart Claude Code to take it back there too.")
"""What the person reads where they revoke (the Remembered approvals window, ``desktop-approver revoke``)."""

WILDCARD = "*"
"""Claude Code reads ``*`` anywhere in a Bash rule's content as "any words": no exact rule holds one."""


def exact_rule(tool: str, approved: Mapping[str, Any]) -> dict[str, Any] | None:
    """Claude Code's rule (``{"toolName", "ruleContent"}``) for exactly this call, or None when its
    rule syntax cannot say anything that narrow."""
    if tool != RULE_TOOL:
        return None
    command = approved.get("command")
    if not isinstance(command, str) or not command.strip() or WILDCARD in command:
        return None
    return {"toolName": RULE_TOOL, "ruleContent": command}


def session_updates(tool: str, approved: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The permission updates (control protocol form) that allow exactly ``approved`` for the rest of
    this Claude Code session, and ask again about it behind anything Claude Code would strip in
    front of it; none when no rule is that narrow."""
    rule = exact_rule(tool, approved)
    if rule is None:
        return []
    prefixed = {"toolName": RULE_TOOL, "ruleContent": f"{WILDCARD} {rule['ruleContent']}"}
    return [{"type": "addRules", "rules": [rule], "behavior": "allow", "destination": "session"},
            {"type": "addRules", "rules": [prefixed], "behavior": "ask", "destination": "session"}]
