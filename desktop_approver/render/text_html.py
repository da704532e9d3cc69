"""HTML for Qt's rich text of JSON (a call's arguments) and of plain text, hidden characters revealed.

Long JSON is clipped to limits, and a notice says how much is hidden with a ``json:show-all`` link.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import highlight
from .reveal import Revealed, reveal


def pretty_json(value: Any) -> str:
    """Indented JSON that keeps non-ASCII text readable (hidden characters are revealed later)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=repr)


@dataclass(frozen=True)
class Clipped:
    text: str
    hidden_lines: int
    hidden_chars: int
    partial: bool = False  # the last shown line is cut short

    @property
    def clipped(self) -> bool:
        return bool(self.hidden_lines or self.hidden_chars)


def clip_text(text: str, *, max_lines: int | None, max_chars: int | None) -> Clipped:
    """The first lines of ``text`` within both limits; what is left out is counted, never lost.

    A line longer than what is left of ``max_chars`` is shown up to the limit (one enormous
    line, such as a file's content in a JSON string, must not hide entirely).
    """
    if max_lines is None and max_chars is None:
        return Clipped(text, 0, 0)
    lines = text.split("\n")
    kept: list[str] = []
    used = 0
    partial = False
    for line in lines:
        if max_lines is not None and len(kept) >= max_lines:
            break
        if max_chars is not None and used + len(line) > max_chars:
            room = max(max_chars - used, 200)
            if room < len(line):
                kept.append(line[:room])
                partial = True
            break
        kept.append(line)
        used += len(line) + 1
    shown = "\n".join(kept)
    return Clipped(shown, len(lines) - len(kept), len(text) - len(shown), partial)


def render_json_html(value: Any, *, max_lines: int | None = None, max_chars: int | None = None) -> str:
    """Pretty, highlighted JSON; past the limits a notice says how much is hidden, with a
    ``json:show-all`` link."""
    clipped = clip_text(pretty_json(value), max_lines=max_lines, max_chars=max_chars)
    from pygments.lexers import JsonLexer

    lazy = highlight.LazyLines(clipped.text, JsonLexer(stripnl=False, ensurenl=False))
    lines = clipped.text.split("\n")
    body = "\n".join(highlight.code_html(line, lazy.line(n), revealed=_json_line_reveal(line))
                     for n, line in enumerate(lines))
    notice = ""
    if clipped.clipped:
        more_lines = f"{clipped.hidden_lines:,} more line{'s' if clipped.hidden_lines != 1 else ''}"
        what = more_lines
        if clipped.partial:
            what = f"{clipped.hidden_chars:,} more characters" + (f" ({more_lines})" if clipped.hidden_lines else "")
        notice = (f'<p style="color:{highlight.MUTED};font-style:italic">… {what} hidden — '
                  f'<a href="json:show-all">Show all</a></p>')
    return (f'<pre style="font-family:{highlight.MONO};color:{highlight.INK};white-space:pre-wrap;margin:0">'
            f'{body}</pre>' + notice)


_SUSPICIOUS_JSON_SPACES = re.compile(r"(?<!\\n) {8,}| {40,}")
"""A run of spaces worth marking in JSON: long, and not the indentation of code inside a string
(spaces right after an escaped newline), unless it is long enough to push text out of sight."""


def _json_line_reveal(line: str) -> Revealed | None:
    """Reveal a line of pretty JSON: long space runs count, indentation (its own, or of code
    inside a string value) does not."""
    indent = len(line) - len(line.lstrip(" "))
    body = line[indent:]
    spaces = bool(_SUSPICIOUS_JSON_SPACES.search(body))
    if not highlight.NEEDS_REVEAL.search(line) and not spaces:
        return None
    found = reveal(body, spaces=spaces)
    if indent:
        found = Revealed(" " * indent + found.text, found.warnings, [(" " * indent, False), *found.segments],
                         [(0, indent), *((a + indent, b + indent) for a, b in found.spans)], found.kinds)
    return found


def json_warnings(value: Any) -> tuple[str, ...]:
    """Hidden characters anywhere in the arguments (keys and string values)."""
    text = pretty_json(value)
    if not highlight.NEEDS_REVEAL.search(text):
        return ()
    return tuple(f"arguments: {w}" for w in reveal(text, multiline=True).warnings)


def render_text_html(text: str) -> tuple[str, tuple[str, ...]]:
    """Plain text with hidden characters revealed, and the warnings."""
    revealed = reveal(text, multiline=True, spaces=False)
    return (f'<pre style="font-family:{highlight.MONO};color:{highlight.INK};white-space:pre-wrap;margin:0">'
            f'{highlight.code_html(text, [], revealed=revealed)}</pre>'), revealed.warnings
