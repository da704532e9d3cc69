"""``desktop-approver run [--tool NAME] [--session ID] -- CMD ARGS...``: ask, then become the command.

The call goes to the app as tool ``Bash`` (or ``--tool``) with the command as an argv list and a
command preview. When it is allowed this process ``exec``s the command (the arguments the person
edited, if any), so the command keeps our pid, stdin, stdout, signals and exit code. Otherwise
nothing runs, and the exit code says why (:data:`CODES`, ``run --codes``). They are high and
distinct, so a command's usual 1, 2 or 3 is never mistaken for a deny; but a command may exit with
any code, so ``--status-file FILE`` is the exact answer: one word (:data:`STATUSES`) written
before the command starts or ``run`` exits (``waiting`` while the person decides; the file is
replaced atomically and never through a symbolic link).

Standard library only: a wrapper like this runs once per command.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from typing import Any

EXIT_DENIED, EXIT_UNAVAILABLE, EXIT_BLOCKED, EXIT_BAD_INPUT = 241, 242, 243, 244
EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE = 127, 126  # what a shell answers for a missing / unrunnable program
CODES: dict[int, tuple[str, str]] = {  # exit code: (the --status-file word, what happened)
    EXIT_DENIED: ("denied", "denied (the person, a rule, the mode or a timeout); the note is on stderr"),
    EXIT_UNAVAILABLE: ("unavailable", "the app is not reachable or refused the request (fail closed)"),
    EXIT_BLOCKED: ("blocked", "a policy rule blocked the command"),
    EXIT_BAD_INPUT: ("bad-input", "no command, a bad option, or edited arguments that cannot run"),
    EXIT_NOT_EXECUTABLE: ("not-executable", "allowed, but the program cannot be run"),
    EXIT_NOT_FOUND: ("not-found", "allowed, but the program was not found"),
}
ALLOWED = "allowed"
WAITING = "waiting"
"""Written before asking: if ``run`` is killed while the person decides, the file says so, never
the word of an earlier run."""
STATUSES = (WAITING, ALLOWED, *(word for word, _ in CODES.values()))


def codes_table() -> str:
    lines = [f"  {code:>3}  {word:<15} {meaning}" for code, (word, meaning) in sorted(CODES.items())]
    return "\n".join(["  any  allowed         the command ran: its own exit code", *lines])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "desktop-approver run [--tool NAME] [--session ID] [options] -- CMD [ARGS...]"
    parser.add_argument("--tool", default="Bash", help="the tool name the person sees (default: Bash)")
    parser.add_argument("--session", metavar="ID",
                        help="the agent's session id (allow_session is remembered per session)")
    parser.add_argument("--description", metavar="TEXT", help="what the command is for, shown to the person")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="deny if nobody answers in time")
    parser.add_argument("--agent", metavar="NAME", help="the agent's name shown to the person")
    parser.add_argument("--socket", metavar="PATH", help="the app's socket")
    parser.add_argument("--status-file", metavar="FILE",
                        help="write the outcome there as one word (allowed, denied, blocked, unavailable, bad-input, "
                             "not-found, not-executable) before the command starts: exact whatever it exits with; "
                             "'waiting' while the person decides. Replaced atomically; a symbolic link is refused")
    parser.add_argument("--codes", action="store_true", help="print the exit codes and exit")
    parser.add_argument("command", nargs="*", metavar="CMD", help="the command and its arguments, after --")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "exit codes (also --status-file words):\n" + codes_table()


def run(args: argparse.Namespace) -> int:
    from ..client import Client, previews
    from ..client.base import check_timeout
    from ..client.errors import ApproverError, ApproverUnavailable

    if args.codes:
        print(codes_table())
        return 0
    status = StatusFile(args.status_file)
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        return status.fail("bad input: no command given after --", EXIT_BAD_INPUT)
    try:
        check_timeout(args.timeout, "--timeout")
    except ValueError as exc:
        return status.fail(f"bad input: {exc}", EXIT_BAD_INPUT)
    try:
        status.write(WAITING)  # a run killed while waiting must not leave an earlier run's word
    except OSError as exc:
        return _fail(f"cannot write --status-file {args.status_file}: {exc.strerror or exc} (not asking)",
                     EXIT_BAD_INPUT)
    cwd = os.getcwd()
    client = Client(args.socket, agent=args.agent, session=args.session)
    try:
        decision = client.request(args.tool, {"command": argv}, session=args.session,
                                  description=args.description, preview=previews.command(argv, cwd),
                                  timeout=args.timeout)
    except ApproverUnavailable as exc:
        return status.fail(f"{exc} (not running the command)", EXIT_UNAVAILABLE)
    except ApproverError as exc:
        return status.fail(f"the app refused the request: {exc}", EXIT_UNAVAILABLE)
    finally:
        client.close()
    if decision.blocked:
        return status.fail("blocked by policy" + (f": {decision.note}" if decision.note else ""), EXIT_BLOCKED)
    if not decision.allowed:
        return status.fail(f"denied ({decision.decided_by})" + (f": {decision.note}" if decision.note else ""),
                           EXIT_DENIED)
    try:
        final = command_to_run(decision.updated_args, argv)
    except ValueError as exc:
        return status.fail(f"the edited arguments cannot be run: {exc}", EXIT_BAD_INPUT)
    try:
        status.write(ALLOWED)
    except OSError as exc:
        # Nobody could tell this command's exit code from ours: do not run it.
        return _fail(f"cannot write --status-file {args.status_file}: {exc.strerror or exc}", EXIT_BAD_INPUT)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(final[0], final)
    except FileNotFoundError:
        return status.fail(f"{final[0]}: command not found", EXIT_NOT_FOUND)
    except OSError as exc:
        return status.fail(f"{final[0]}: {exc.strerror or exc}", EXIT_NOT_EXECUTABLE)
    return EXIT_NOT_EXECUTABLE  # not reached: execvp returns only by raising


class StatusFile:
    """``--status-file``: the outcome as one word, for a caller that cannot trust an exit code."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def write(self, word: str) -> None:
        """Replace the file with ``word``: written to a new file beside it, then renamed over it, so
        a reader sees the old word or the new one, never half of one. A symbolic link (or anything
        but a regular file) at the path is refused: another user's link in a shared directory must
        not make us write wherever it points."""
        if self.path is None:
            return
        try:
            existing = os.lstat(self.path)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(existing.st_mode) else "not a regular file"
            raise OSError(errno.EPERM, f"refusing it: it is {kind}")
        folder, name = os.path.split(os.path.abspath(self.path))
        temporary = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(word + "\n")
            os.replace(temporary, self.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise

    def fail(self, message: str, code: int) -> int:
        try:
            self.write(CODES[code][0])
        except OSError as exc:
            print(f"desktop-approver: cannot write --status-file {self.path}: {exc.strerror or exc}", file=sys.stderr)
        return _fail(message, code)


def command_to_run(updated_args: dict[str, Any] | None, asked: list[str]) -> list[str]:
    """The argv to exec: the asked one, or the person's edit (a list as argv, a string through sh)."""
    if updated_args is None:
        return asked
    edited = updated_args.get("command")
    if isinstance(edited, list) and edited and all(isinstance(part, str) for part in edited):
        return list(edited)
    if isinstance(edited, str) and edited.strip():
        # The person typed a shell line: run it the way they read it, through the shell.
        return ["/bin/sh", "-c", edited]
    raise ValueError(f"'command' must be a non-empty list of strings or a string, not {edited!r}")


def _fail(message: str, code: int) -> int:
    print(f"desktop-approver: {message}", file=sys.stderr)
    return code

