"""One short line about a call with its dangerous part first, and names cut to fit (Qt-free).

A window title, a notification or a list row has room for some 60 characters. A 5,000-character
command cut at 60 shows its harmless start and hides ``; rm -rf ~/`` at the end, so the line
starts with what the risk reader found dangerous instead. The dialog's title and the desktop
notifications both call :func:`headline`, so they name the same part. Every text goes through
:func:`~desktop_approver.render.reveal.reveal` first: a line break or a bidi override in an
agent's text is shown as a marker, never acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.calls.reading import read_call, read_command, summary_of
from ..core.calls.risk import assess_command
from .reveal import reveal

RANK = {"destructive": 0, "moderate": 1, "safe": 2}


def one_line(text: str) -> str:
    """``text`` with control, bidi and zero-width characters (line breaks too) shown as markers."""
    return reveal(text).text


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (the whole text goes in a tooltip)."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


@dataclass(frozen=True)
class DangerousPart:
    """One simple command of a command line that the risk reader finds risky on its own."""

    start: int
    end: int
    level: str
    text: str


def dangerous_parts(command: str, cwd: str | None = None) -> list[DangerousPart]:
    """The parts of ``command`` the risk reader finds moderate or destructive, with where they are written.

    The spans are offsets into ``command``: a destructive command's whole text (its program and
    its paths, ``rm -rf ~/``), a moderate one's program name only (a long ``./configure ...``
    would otherwise mark the whole line). A program inside quotes (``bash -c 'rm -rf x'``) is
    found where its text stands, else only its name is marked. A pipeline that is destructive
    only as a whole (``curl -fsSL URL | bash``: a download into a shell) is one destructive part
    spanning the pipeline, wherever it stands in the command.
    """
    parts: list[DangerousPart] = []
    pipelines: dict[int, list[tuple[int, int, str]]] = {}
    spans: list[tuple[int, int]] = []  # every program's place, for findings about several of them
    for program in read_command(command).programs:
        if not program.argv or program.span is None:
            continue
        level = assess_command(program.text or " ".join(program.argv), cwd).level
        start = program.span[0]
        text = program.text
        written = bool(text) and command.startswith(text, start)
        spans.append((start, start + len(text) if written else program.span[1]))
        if program.piped_from or program.pipes_to:
            pipelines.setdefault(program.pipeline, []).append(
                (start, start + len(text) if written else program.span[1], level))
        if level == "safe":
            continue
        end = start + len(text) if level == "destructive" and written else program.span[1]
        parts.append(DangerousPart(start, end, level, command[start:end]))
    for members in pipelines.values():
        if len(members) < 2 or any(level == "destructive" for _start, _end, level in members):
            continue  # a destructive member is already marked on its own
        start, end = min(m[0] for m in members), max(m[1] for m in members)
        if start < end and assess_command(command[start:end], cwd).level == "destructive":
            parts = [part for part in parts if not start <= part.start < end]
            parts.append(DangerousPart(start, end, "destructive", command[start:end]))
    if not any(part.level == "destructive" for part in parts) and len(spans) > 1:
        found = _destructive_run(command, spans, cwd)  # e.g. ``curl -o x.sh URL && bash x.sh``
        if found is not None:
            start, end = found
            parts = [part for part in parts if not start <= part.start < end]
            parts.append(DangerousPart(start, end, "destructive", command[start:end]))
    return sorted(parts, key=lambda part: part.start)


def _destructive_run(command: str, spans: list[tuple[int, int]], cwd: str | None) -> tuple[int, int] | None:
    """The shortest run of consecutive programs that the reader finds destructive together, when
    no program alone is (a download, then running what was downloaded); None when the whole is not."""
    spans = sorted(spans)
    last = max(end for _start, end in spans)
    if assess_command(command[spans[0][0]:last], cwd).level != "destructive":
        return None
    first = 0
    for index in range(len(spans) - 1, -1, -1):  # the latest start from which the rest is destructive
        if assess_command(command[spans[index][0]:last], cwd).level == "destructive":
            first = index
            break
    start = spans[first][0]
    for _start, end in spans[first:]:  # and the earliest end
        if end > start and assess_command(command[start:end], cwd).level == "destructive":
            return start, end
    return start, last


FIRST_VIEW_LINES = 4      # a part starting below this many lines is out of the first view
FIRST_VIEW_CHARS = 300    # ... or past this many characters (one long wrapped line)


def further_down(command: str, cwd: str | None = None) -> DangerousPart | None:
    """The first destructive part that starts out of a command's first view, or None.

    Out of view is past :data:`FIRST_VIEW_LINES` lines (200 line breaks, then ``rm -rf ~/``) or
    past :data:`FIRST_VIEW_CHARS` characters; the person must be told it is there.
    """
    for part in dangerous_parts(command, cwd):
        if part.level == "destructive" and (command.count("\n", 0, part.start) >= FIRST_VIEW_LINES
                                            or part.start > FIRST_VIEW_CHARS):
            return part
    return None


def headline(tool: str, args: Mapping[str, Any] | Any, limit: int = 60) -> str:
    """What the call does in at most ``limit`` characters, the most dangerous part first.

    ``rm -rf ~/ … (in a 5,000-character command)`` for a long command whose danger is in its
    tail; the whole command when it fits, the summary cut at the end when nothing in it is risky.
    """
    summary = one_line(summary_of(args, tool))
    reading = read_call(tool, args)
    command = reading.commands[0].text if reading.commands else None
    if command:
        parts = sorted(dangerous_parts(command), key=lambda part: (RANK.get(part.level, 1), part.start))
        whole = one_line(command)
        if parts and len(whole) > limit and parts[0].start > 0:
            worst = one_line(command[parts[0].start:])  # from the worst part on
            tail = f" (in a {len(command):,}-character command)"
            shown = shorten(worst, max(12, limit - len(tail) - 2))
            return shown + ("" if shown.endswith("…") else " …") + tail
    return shorten(summary, limit)
