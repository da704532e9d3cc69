"""``desktop-approver hook claude-code``: answer Claude Code's hooks from the desktop.

Claude Code runs the hook with one JSON event on stdin (``hook_event_name``, ``session_id``,
``cwd``, ``tool_name``, ``tool_input``, ...) and reads a JSON object on stdout. Four events:

- ``PermissionRequest`` (recommended): fires only when Claude Code itself would ask. The answer is
  ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior":
  "allow", "updatedInput": {...}, "updatedPermissions": [...]}}}`` or ``{"behavior": "deny",
  "message": "...", "interrupt": false}``. "Allow for session" adds rules of our own making,
  as wide as the call the person approved and kept to the session
  (:mod:`desktop_approver.adapters.claude_code_rules`: the ``Bash`` command allowed, and asked
  again behind any prefix), so Claude Code stops asking about that call; Claude Code's own
  suggestions (``permission_suggestions``) are wider and never passed on. A ``block`` rule denies
  with ``interrupt`` so Claude stops.
- ``PreToolUse``: fires before every call; answers ``permissionDecision`` allow / deny with the
  note as the reason and edited arguments as ``updatedInput``; a ``block`` rule adds
  ``"continue": false`` with the reason as ``stopReason``, which ends Claude's run.

Any other event (``PostToolUse``, ``UserPromptSubmit``, ...: a hook wired to the wrong event)
is left alone: exit 0, nothing on stdout, one line on stderr. Exit 2 would mean "block" to
Claude Code.
- ``Notification`` and ``Stop``: nothing to decide; the person sees "<agent> is waiting for you" /
  "<agent> finished" as a desktop notification that never takes focus (``notify-send``, when
  installed), so with several agents running they know which one needs them.

``--install [--project]`` merges the hooks into ``~/.claude/settings.json`` (or the project's
``.claude/settings.json``), keeping what is there, and prints the diff. In the person's own settings
the hook command is the absolute path of the ``desktop-approver`` that ran ``--install`` (as
``install --systemd`` writes it): Claude Code runs hooks with its own PATH, where a venv's command
may be missing. The project's settings are shared with everyone who checks the project out, so
``--project`` writes the bare ``desktop-approver hook claude-code`` (each person's PATH finds it),
never this machine's path, and says so on stderr.

When the app is unreachable the call is denied (fail closed); ``--when-unavailable ask`` hands
the question back to Claude Code's own terminal prompt instead. Claude Code kills a hook after its
``timeout`` and then runs a ``PreToolUse`` call, so the hook denies shortly before its
``--deadline`` (that timeout, which ``--install`` writes into the command).
"""

from __future__ import annotations

import json
import os
import sys

from .argv import Option, add_to

TYPE_CHECKING = False  # typing's own flag costs the hook an import of typing (it runs once per tool call)
if TYPE_CHECKING:
    import argparse
    import signal
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ..client.wire import Decision
else:
    try:  # the C module that ``signal`` wraps: the same calls and constants, without the enums that
        import _signal as signal  # ``signal`` builds when imported (about 1 ms of every hook's start)
    except ImportError:  # an interpreter without it
        import signal

AGENTS = ("claude-code",)
AGENT_NAME = "claude-code"
HOOK_ARGUMENTS = ("hook", "claude-code")
HOOK_COMMAND = "desktop-approver hook claude-code"
"""The bare form, as earlier versions installed it: ``--install`` recognises it as ours."""
INSTALLED_TIMEOUTS: dict[str, tuple[str | None, int]] = {
    # event: the matcher and a timeout long enough for a person to answer.
    "PermissionRequest": ("*", 600),
    "Notification": ("", 10),
    "Stop": (None, 10),
}
DECISION_EVENTS = ("PermissionRequest", "PreToolUse")
"""The events the hook answers with a person's decision; their hooks carry ``--deadline``."""
DEFAULT_DEADLINE = 600.0
"""Claude Code's own timeout for a command hook that sets none (and what ``--install`` writes)."""


OPTIONS = (
    Option("agent", kind="positional", choices=AGENTS, help="which agent's hook format to speak"),
    Option("--when-unavailable", choices=("deny", "ask"), default="deny",
           help="what to answer when the app is not reachable (default: deny)"),
    Option("--timeout", convert=float, metavar="SECONDS",
           help="the app denies if nobody answers in time (default: the app's own)"),
    Option("--deadline", convert=float, metavar="SECONDS",
           help="Claude Code's timeout for this hook (its `timeout`; default 600, Claude Code's own): the hook "
                "denies shortly before it, because Claude Code runs the call when it kills a hook"),
    Option("--socket", metavar="PATH", help="the app's socket"),
    Option("--install", kind="flag",
           help="add the PermissionRequest, Notification and Stop hooks to Claude Code's settings "
                "(keeps what is there) and print the change"),
    Option("--project", kind="flag",
           help="with --install: the project's .claude/settings.json instead of ~/.claude/settings.json"),
)
"""Declared once (:mod:`.argv`): argparse for ``--help`` and errors, a plain reader for each tool call."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_to(parser, OPTIONS)


def run(args: argparse.Namespace) -> int:
    if args.install:
        return install(project=args.project)
    if args.project:
        print("desktop-approver: --project only goes with --install", file=sys.stderr)
        return 2
    try:
        from ..client.base import check_timeout

        check_timeout(args.timeout, "--timeout")
        check_timeout(args.deadline, "--deadline")
        event = json.loads(sys.stdin.read() or "{}")
        if not isinstance(event, dict):
            raise ValueError("expected a JSON object")
        kind = event.get("hook_event_name") or "PreToolUse"
        if kind in ("Notification", "Stop", "SubagentStop"):
            return announce(kind, event, args.socket)
        if kind not in ("PreToolUse", "PermissionRequest"):
            # Exit 2 would block the event (a prompt, a tool's result): leave it to Claude Code.
            print(f"desktop-approver: ignoring hook event {str(kind)[:80]!r} (it answers PreToolUse, "
                  "PermissionRequest, Notification and Stop)", file=sys.stderr)
            return 0
        if not isinstance(event.get("tool_name"), str) or not event["tool_name"]:
            raise ValueError(f"expected a {kind} event with a tool_name")
        tool_input = event.get("tool_input")
        if not isinstance(tool_input, dict):  # null, [], a string: not a call anyone could approve
            raise ValueError(f"tool_input must be an object, not {type(tool_input).__name__}")
    except (TypeError, ValueError) as exc:
        print(f"desktop-approver: bad hook input: {exc}", file=sys.stderr)
        return 2  # Claude Code treats exit 2 as "block", with stderr shown to the model
    return ask(kind, event, tool_input, args)


class HookDeadline(Exception):
    """Claude Code's timeout for the hook is near: answer now, or Claude Code kills the hook and,
    for ``PreToolUse``, runs the call."""


def answer_within(deadline: float | None) -> float:
    """Seconds the hook may wait: ``deadline`` less a margin for its own start and its answer."""
    seconds = deadline if deadline is not None else DEFAULT_DEADLINE
    return seconds - min(5.0, seconds * 0.1)


def ask(kind: str, event: dict[str, Any], tool_input: dict[str, Any], args: argparse.Namespace) -> int:
    from ..client import Client
    from ..client.errors import ApproverError, ApproverUnavailable
    from ..client.wording import deny_message, not_run_message, refused_message, unavailable_message, unavailable_reason

    answer = _permission_request_answer if kind == "PermissionRequest" else _pre_tool_use_answer
    session = event.get("session_id") or None
    client = None
    try:
        client = Client(args.socket, agent=AGENT_NAME, session=session)
        client.protocol.cwd = event.get("cwd") or client.protocol.cwd
        decision = _within_deadline(args.deadline, lambda: client.request(
            event["tool_name"], tool_input, session=session, timeout=args.timeout))
    except HookDeadline:
        deadline = args.deadline if args.deadline is not None else DEFAULT_DEADLINE
        answer("deny", not_run_message(
            f"nobody answered within this hook's {deadline:g} s timeout (Claude Code's). Raise the hook's "
            "timeout and --deadline, or lower the app's --timeout"))
        return 0
    except ApproverUnavailable as exc:
        if args.when_unavailable == "ask":
            if kind == "PreToolUse":
                answer("ask", unavailable_reason(exc))  # the person reads it in Claude Code's own prompt
            # PermissionRequest: no answer at all lets Claude Code show its own prompt.
            return 0
        answer("deny", unavailable_message(exc))
        return 0
    except ApproverError as exc:
        answer("deny", refused_message(exc))
        return 0
    except Exception as exc:  # noqa: BLE001 - an exit 1 is "non-blocking" to Claude Code: it would go on unasked
        import traceback

        traceback.print_exc(file=sys.stderr)
        answer("deny", not_run_message(f"desktop-approver failed before an answer ({type(exc).__name__}: {exc})"))
        return 0
    finally:
        if client is not None:
            client.close()
    if decision.allowed:
        reason = f"approved on the desktop ({decision.decided_by})" + (f": {decision.note}" if decision.note else "")
        rules = None
        if decision.decision == "allow_session":
            from ..adapters.claude_code_rules import session_updates

            approved = decision.updated_args if decision.updated_args is not None else tool_input
            rules = session_updates(event["tool_name"], approved) or None
        answer("allow", reason, decision.updated_args, rules)
    else:
        answer("deny", deny_message(decision), interrupt=decision.blocked)
    return 0


def _within_deadline(deadline: float | None, request: Callable[[], Decision]) -> Decision:
    """``request()``, or :class:`HookDeadline` when Claude Code's hook timeout is near.

    The app may answer later than Claude Code waits for the hook (its timeout stretched by a pause,
    up to 1.5 times): an alarm ends the wait first. The client closes its connection as it unwinds,
    so the app withdraws the question (logged as cancelled). The alarm is off again before anything
    is printed, so the hook never answers twice.
    """

    def expire(signum: int, frame: object) -> None:
        raise HookDeadline

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread (an embedding caller): no alarm to set
        return request()
    try:
        signal.setitimer(signal.ITIMER_REAL, answer_within(deadline))
        try:
            return request()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _pre_tool_use_answer(choice: str, reason: str, updated: dict[str, Any] | None = None,
                         rules: list[dict[str, Any]] | None = None, interrupt: bool = False) -> None:
    output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": choice,
                              "permissionDecisionReason": reason}
    if updated is not None:
        output["updatedInput"] = updated
    answer: dict[str, Any] = {"hookSpecificOutput": output}
    if interrupt:  # a policy block: the documented way for a hook to end Claude's run
        answer = {"continue": False, "stopReason": reason, **answer}
    print(json.dumps(answer, ensure_ascii=False))


def _permission_request_answer(choice: str, reason: str, updated: dict[str, Any] | None = None,
                               rules: list[dict[str, Any]] | None = None, interrupt: bool = False) -> None:
    decision: dict[str, Any] = {"behavior": choice}
    if choice == "allow":
        if updated is not None:
            decision["updatedInput"] = updated
        if rules:
            decision["updatedPermissions"] = rules
    else:
        decision["message"] = reason
        decision["interrupt"] = interrupt
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}},
                     ensure_ascii=False))


# -- Notification / Stop ---------------------------------------------------------------------------

def announce(kind: str, event: dict[str, Any], socket_path: str | None = None) -> int:
    """Tell the person which agent needs them or is done; never fails the hook."""
    import shutil
    import subprocess

    where = os.path.basename(str(event.get("cwd") or "").rstrip("/")) or AGENT_NAME
    agent = f"Claude Code ({where})"
    if kind == "Notification":
        title, body = f"{agent} is waiting for you", str(event.get("message") or "")
    else:
        title, body = f"{agent} finished", ""
    print(f"desktop-approver: {title}" + (f": {body}" if body else ""), file=sys.stderr)
    try:
        # The app shows it in the tray and as its own notification (grouped with the agent's
        # requests, quiet in do-not-disturb); notify-send only when the app is not there.
        from ..client import Client
        from ..client.errors import ApproverError

        with Client(socket_path, agent=agent, session=str(event.get("session_id") or "") or None,
                    connect_timeout=2.0) as client:
            client.notice("waiting" if kind == "Notification" else "finished", title + (f": {body}" if body else ""))
        return 0
    except (ApproverError, OSError, ValueError):
        pass
    notify_send = shutil.which("notify-send")
    if notify_send is None:
        return 0
    try:
        # A notification never takes keyboard focus; --app-name groups them under ours.
        subprocess.run([notify_send, "--app-name=desktop-approver", "--urgency=normal", title, body],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass
    return 0


# -- --install -------------------------------------------------------------------------------------

def settings_path(project: bool) -> Path:
    from pathlib import Path

    if project:
        return Path.cwd() / ".claude" / "settings.json"
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "settings.json"


def hook_command() -> str:
    """The hook's command line, starting with the absolute path of the command running now."""
    import shlex

    from .install import app_command

    return shlex.join([*app_command(), *HOOK_ARGUMENTS])


def _program_length(words: list[str]) -> int:
    """How many leading words run desktop-approver (``.../desktop-approver`` or ``python -m
    desktop_approver``); 0 when they do not."""
    if words and os.path.basename(words[0]) == "desktop-approver":
        return 1
    if len(words) >= 3 and words[1] == "-m" and words[2] == "desktop_approver":
        return 3
    return 0


def _ours(command: Any) -> list[str] | None:
    """A hook command of ours (bare or with any path, with any options) as its words; else None."""
    import shlex

    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    program = _program_length(words)
    return words if program and words[program:program + 2] == list(HOOK_ARGUMENTS) else None


def merged_settings(settings: dict[str, Any], command: str = HOOK_COMMAND) -> dict[str, Any]:
    """``settings`` with our hooks added to each event that does not run them yet; nothing removed.

    A hook of ours with another path (the bare name of earlier versions, another venv) is pointed
    at ``command``'s program, keeping its own options: one desktop-approver answers, the one that
    ran ``--install``.
    """
    import shlex

    command_words = shlex.split(command)
    program = command_words[:_program_length(command_words)]
    merged: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("its \"hooks\" is not an object")
    others = [event for event in hooks if event not in INSTALLED_TIMEOUTS]
    for event in [*INSTALLED_TIMEOUTS, *others]:  # ours wherever the person wired it (PreToolUse too)
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"its hooks.{event} is not a list")
        present = False
        for group in groups:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                words = _ours(hook.get("command")) if isinstance(hook, dict) else None
                if words is not None:
                    words = [*program, *words[_program_length(words):]]
                    timeout = hook.get("timeout")
                    if event in DECISION_EVENTS and isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
                        words = with_deadline(words, timeout)
                    hook["command"] = shlex.join(words)
                    present = True
        if event not in INSTALLED_TIMEOUTS or present:
            continue
        matcher, timeout = INSTALLED_TIMEOUTS[event]
        added: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        words = with_deadline(command_words, timeout) if event in DECISION_EVENTS else command_words
        added["hooks"] = [{"type": "command", "command": shlex.join(words), "timeout": timeout}]
        groups.append(added)
    return merged


def with_deadline(words: list[str], timeout: float) -> list[str]:
    """The hook's words with ``--deadline`` set to its Claude Code ``timeout`` (replacing any)."""
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--deadline":
            skip = True
        elif not word.startswith("--deadline="):
            kept.append(word)
    return [*kept, "--deadline", f"{timeout:g}"]


def install(*, project: bool) -> int:
    import difflib

    path = settings_path(project)
    try:
        before_text = path.read_text(encoding="utf-8") if path.exists() else ""
        settings = json.loads(before_text) if before_text.strip() else {}
        if not isinstance(settings, dict):
            raise ValueError("it is not a JSON object")
        # The project's settings are shared (committed, read by every teammate's Claude Code): no
        # path of this machine's venv goes there, only the bare command each person's PATH finds.
        merged = merged_settings(settings, HOOK_COMMAND if project else hook_command())
    except (OSError, ValueError) as exc:
        print(f"desktop-approver: cannot update {path}: {exc}", file=sys.stderr)
        return 2
    after_text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    if merged == settings:
        print(f"{path}: the hooks are already installed; nothing changed")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".desktop-approver.tmp")
    temporary.write_text(after_text, encoding="utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o777)
    os.replace(temporary, path)
    if project:
        print(f"desktop-approver: {path} is shared with the project: its hooks run `{HOOK_COMMAND}` from each "
              "person's PATH (install it with pipx, or run --install without --project for your own settings, "
              "which get this installation's absolute path)", file=sys.stderr)
    sys.stdout.writelines(difflib.unified_diff(before_text.splitlines(keepends=True),
                                               after_text.splitlines(keepends=True),
                                               fromfile=f"{path} (before)", tofile=f"{path} (after)"))
    return 0
