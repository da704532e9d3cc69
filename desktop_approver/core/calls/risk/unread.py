"""Values no reader reads, looked at for what is destructive in them.

An argument without a role (``options``, a look-alike ``cоmmand``), values nested where one plain
value is read (``{"options": {"post_hook": "rm -rf ~/"}}``), and a command argument no shell
parser can read make a call not understood (:mod:`.roles` finds them, :mod:`.understanding` names
them), so no automatic answer covers it. The badge is still the reader's best estimate, and an
agent's tool may run such a value: each string in them is read as a command line and, when it
looks like one, as a path, and only what the readers find **destructive** is kept.

Why only destructive: ordinary nested data (a colour, a note, a list of names, a message) read as
a command line is a program nobody heard of, at most moderate, and saying "runs note" would teach
the person to click through. A string that reads as deleting the home, piping a download into a
shell or reading a private key says so wherever it sits. Strings in an argument the readers do
read (a ``description``, a message ``body``) are not looked at here: prose is not a command.

Bounded: at most :data:`MAX_STRINGS` strings and :data:`MAX_CHARS` characters in all; what lies
beyond is left unread (the call is not understood anyway, so the person decides).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

from ..catalog import catalog
from ..reading import CallReading, PathUse, read_command, resolve_path, strings_in
from .findings import DESTRUCTIVE, Findings
from .places import judge_use
from .programs import command_findings
from .roles import shown_name, tool_entry, unread_arguments

__all__ = ["MAX_CHARS", "MAX_STRINGS", "unread_findings"]

MAX_STRINGS = 200
MAX_CHARS = 64_000
_PATH_LIKE = re.compile(r"^(~|\$HOME|\$\{HOME\}|\.\.?)?/\S*$|^~$")


def unread_findings(reading: CallReading, workspace: str | None, findings: Findings) -> None:
    """Add the destructive findings of every string in the call's unread values to ``findings``."""
    budget_strings, budget_chars = MAX_STRINGS, MAX_CHARS
    cwd = reading.cwd
    for key, value, _why in unread_arguments(reading, tool_entry(catalog(), reading.tool, reading.args)):
        for where, text in _strings(value, shown_name(key)):
            text = text[:budget_chars]
            if budget_strings <= 0 or not text.strip():
                continue
            budget_strings -= 1
            budget_chars -= len(text)
            for reason in _destructive_in(text, cwd, workspace):
                findings.add(DESTRUCTIVE, f"{reason} (in `{where}`, which nothing reads)")


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """The strings in ``value``, and those of JSON text in it (``"{\"post_hook\": \"rm -rf ~\"}"``), once."""
    for place, text in strings_in(value, where, limit=MAX_STRINGS):
        yield place, text
        if text.lstrip()[:1] in ("{", "["):
            try:
                decoded = json.loads(text)
            except ValueError:
                continue
            yield from strings_in(decoded, place, limit=MAX_STRINGS)


def _destructive_in(text: str, cwd: str | None, workspace: str | None) -> list[str]:
    """What the readers find destructive in ``text``, read as a command line and, when it looks
    like one, as a path that is read."""
    scratch = Findings()
    command_findings(read_command(text), cwd, workspace, scratch)
    word = text.strip()
    if _PATH_LIKE.match(word):
        judge_use(PathUse(word, resolve_path(word, cwd if cwd and os.path.isabs(cwd) else None), "read"),
                  workspace, scratch)
    return [reason for level, reason in scratch.items if level == DESTRUCTIVE]
