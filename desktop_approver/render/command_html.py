"""HTML for Qt's rich text of a shell command: highlighted, its programs bold, its risky parts marked.

Conventions the view and the tests rely on:

* a hidden character is a ``<span data-marker="1" ...>`` whose text is a :mod:`.reveal` marker;
* what is layout only (the line breaks that start each command of a long command line on a
  line of its own, the ``cwd`` line) sits between ``<!--not-command-->`` and
  ``<!--/not-command-->`` comments, so stripping those parts, the tags and the markers gives
  back the exact command;
* a part of a command the risk reader finds risky on its own is wrapped in a
  ``<span data-danger="destructive|moderate" ...>`` (:func:`.headline.dangerous_parts`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..core.calls.reading import read_command
from ..core.calls.shellparse import words as shell_words
from . import highlight
from .reveal import Revealed, reveal

LONG_COMMAND = 80
_NOT_COMMAND_START, _NOT_COMMAND_END = "<!--not-command-->", "<!--/not-command-->"


def render_command_html(command: str | Sequence[str], cwd: str | None = None) -> tuple[str, tuple[str, ...]]:
    """A shell command (string or argv) as highlighted HTML, plus warnings about hidden parts.

    An argv is shown shell-quoted (``shlex.join``): the string a shell would split back into the
    same argv. A command longer than :data:`LONG_COMMAND` without line breaks starts each
    command of it (after ``|``, ``&&``, ``;``) on a new line and lets the arguments wrap by words;
    the added breaks are layout only (see the module docstring). The parts the risk reader finds
    destructive (or moderate) on their own are marked (``data-danger``), so a dangerous tail does
    not look like the rest. Line breaks that are part of the command show as a ``\\n`` marker
    before the break.
    """
    text = command if isinstance(command, str) else shlex.join([str(part) for part in command])
    revealed = reveal(text)
    layout = _layout_breaks(text) if len(text) > LONG_COMMAND and "\n" not in text else {}
    from pygments.lexers import BashLexer

    tokens = [(start, start + len(value), ttype)
              for start, ttype, value in BashLexer().get_tokens_unprocessed(text)]
    names = _program_styles(text, tokens)
    body = _command_body(text, revealed, tokens, names, layout, _danger_spans(text))
    warnings = list(revealed.warnings)
    header = ""
    if cwd is not None:
        cwd_revealed = reveal(cwd)
        warnings.extend(f"working directory {w}" for w in cwd_revealed.warnings)
        header = (f'{_NOT_COMMAND_START}<div style="color:{highlight.MUTED};font-family:{highlight.MONO}">in '
                  f'{highlight.code_html(cwd, [], revealed=cwd_revealed)}</div>{_NOT_COMMAND_END}')
    page = (f'{header}<pre style="font-family:{highlight.MONO};color:{highlight.INK};white-space:pre-wrap;'
            f'margin:4px 0 4px 0">{body}</pre>')
    return page, tuple(warnings)


def _danger_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, level) of the parts of a command the risk reader finds risky on their own."""
    from .headline import dangerous_parts

    try:
        return [(part.start, part.end, part.level) for part in dangerous_parts(text)]
    except (ValueError, RecursionError):  # a line the parser cannot take is shown unmarked, never dropped
        return []


def _command_body(text: str, revealed: Revealed, tokens: highlight.LineTokens, names: dict[int, str],
                  layout: dict[int, int], danger: Sequence[tuple[int, int, str]] = ()) -> str:
    """Render ``text`` piece by piece, inserting layout breaks at the offsets in ``layout``.

    The text is cut at the layout offsets, at real newlines and where a risky part starts or ends;
    each piece is rendered with its own slice of the reveal segments, so markers, colours and
    command names stay exact, and a piece inside a risky part is wrapped in its mark.
    """
    edges = {at for start, end, _level in danger for at in (start, end) if 0 < at < len(text)}
    newlines = {i + 1 for i, ch in enumerate(text) if ch == "\n"}
    cuts = sorted(set(layout) | edges | newlines)
    out: list[str] = []
    start = 0
    for cut in [*cuts, len(text)]:
        if cut <= start and cut != len(text):
            continue
        piece = _slice_html(text, revealed, tokens, names, start, cut)
        levels = [level for a, b, level in danger if a <= start < b]
        if levels and piece:
            level = "destructive" if "destructive" in levels else "moderate"
            style = highlight.DANGER_STYLE if level == "destructive" else highlight.CAUTION_STYLE
            piece = f'<span style="{style}" data-danger="{level}">{piece}</span>'
        out.append(piece)
        if cut in layout:
            out.append(f"{_NOT_COMMAND_START}<br/>{'&nbsp;' * layout[cut]}{_NOT_COMMAND_END}")
        elif cut in newlines and cut < len(text):
            out.append(f"{_NOT_COMMAND_START}<br/>{_NOT_COMMAND_END}")
        start = cut
    return "".join(out)


def _slice_html(text: str, revealed: Revealed, tokens: highlight.LineTokens, names: dict[int, str],
                start: int, end: int) -> str:
    segments: list[tuple[str, bool]] = []
    spans: list[tuple[int, int]] = []
    for segment, (a, b) in zip(revealed.segments, revealed.spans, strict=False):
        if b <= start or a >= end:
            continue
        if segment[1]:
            segments.append(segment)
            spans.append((a - start, b - start))
        else:
            lo, hi = max(a, start), min(b, end)
            segments.append((text[lo:hi], False))
            spans.append((lo - start, hi - start))
    piece = text[start:end]
    local_tokens = [(max(a, start) - start, min(b, end) - start, t) for a, b, t in tokens if a < end and b > start]
    local_names = {a - start: css for a, css in names.items() if start <= a < end}
    sliced = Revealed(piece, (), segments, spans, frozenset())
    return highlight.code_html(piece, local_tokens, extra_css=local_names, revealed=sliced)


def _program_styles(text: str, tokens: highlight.LineTokens) -> dict[int, str]:
    """Bold exactly the programs the shell parser finds (``rm`` in ``timeout 5 bash -c 'rm x'``,
    not ``timeout`` or ``bash``): the same reading risk and policy judge."""
    styles: dict[int, str] = {}
    for start, end in program_spans(text):
        styles[start] = highlight.COMMAND_STYLE
        for token_start, _token_end, _type in tokens:
            if start < token_start < end:
                styles[token_start] = highlight.COMMAND_STYLE
        styles.setdefault(end, "")
    return styles


def program_spans(text: str) -> list[tuple[int, int]]:
    """Where the programs of a command line are written, merged where one holds another
    (``$(echo rm)`` is a program whose name another program computes)."""
    spans = sorted(c.span for c in read_command(text).programs if c.argv and c.span)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _layout_breaks(text: str) -> dict[int, int]:
    """Where to break a long command for display, and how far to indent the next line.

    Each operator (``|``, ``&&``, ``;``) starts a new line and keeps the next command on it; the
    arguments wrap by words (one argument a line made a 2,000-character command 170 lines long).
    The words are the shell parser's own; a line it cannot parse (an open quote) is not re-laid out.
    """
    if read_command(text).parse_error:
        return {}
    return {start: 0 for start, _end, is_operator in shell_words(text) if is_operator and start > 0}
