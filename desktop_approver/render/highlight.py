"""HTML for Qt's rich text: syntax-highlighted diffs, shell commands and JSON.

Qt renders a subset of HTML 4 and CSS, so everything here uses inline styles, ``bgcolor`` on
table cells and plain ``<table>``/``<span>``/``<a>``; no classes, no external CSS.

Three conventions the view and the tests rely on:

* a hidden character is a ``<span data-marker="1" ...>`` whose text is a :mod:`reveal` marker;
* what is layout only (the line breaks that start each command of a long command line on a
  line of its own, the ``cwd`` line) sits between ``<!--not-command-->`` and
  ``<!--/not-command-->`` comments, so stripping those parts, the tags and the markers gives
  back the exact command;
* a part of a command the risk reader finds risky on its own is wrapped in a
  ``<span data-danger="destructive|moderate" ...>`` (:func:`.headline.dangerous_parts`);
* links use ``hunk:<file>:<hunk>`` (fold or unfold a hunk) and ``json:show-all``.

Highlighting is lazy: a file side is tokenised by a Pygments generator only as far as the last
line someone asked for, and only the requested rows are turned into HTML, so the first screen of
a 10,000-line diff costs about as much as a 50-line one. Pygments itself is imported by the
first call that colours something: the idle app (theme, dialog built, nothing shown) never
loads it.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import shlex
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ..core.calls.reading import read_command
from ..core.calls.shellparse import words as shell_words
from .diffs import DiffLine, FileDiff
from .reveal import Revealed, reveal

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from pygments.style import StyleMeta
    from pygments.token import _TokenType

Mode = Literal["unified", "split"]

_style_name = "default"  # the Pygments style in use (``STYLE``, looked up when first needed)
MONO = "'DejaVu Sans Mono','Menlo','Consolas','Liberation Mono',monospace"
INK = "#1f2328"
MUTED = "#6e7781"
PAPER = "#ffffff"
ADD_BG, ADD_GUTTER, ADD_WORD = "#e6ffec", "#ccffd8", "#abf2bc"
DEL_BG, DEL_GUTTER, DEL_WORD = "#ffebe9", "#ffd7d5", "#ffb3b8"
HUNK_BG, HUNK_INK = "#ddf4ff", "#0550ae"
FILE_BG, EMPTY_BG, NOTICE_BG = "#f6f8fa", "#f6f8fa", "#fff8c5"
MARKER_STYLE = "color:#ffffff;background-color:#cf222e;font-weight:bold"
SOFT_MARKER_STYLE = "color:#8c959f"
COMMAND_STYLE = "color:#0550ae;font-weight:bold"
DANGER_STYLE = "background-color:#ffd7d5;text-decoration:underline"   # a destructive part of a command
CAUTION_STYLE = "background-color:#fff1c2"                            # a moderate one

LIGHT_PALETTE = dict(
    STYLE="default", INK=INK, MUTED=MUTED, PAPER=PAPER, ADD_BG=ADD_BG, ADD_GUTTER=ADD_GUTTER, ADD_WORD=ADD_WORD,
    DEL_BG=DEL_BG, DEL_GUTTER=DEL_GUTTER, DEL_WORD=DEL_WORD, HUNK_BG=HUNK_BG, HUNK_INK=HUNK_INK, FILE_BG=FILE_BG,
    EMPTY_BG=EMPTY_BG, NOTICE_BG=NOTICE_BG, MARKER_STYLE=MARKER_STYLE, SOFT_MARKER_STYLE=SOFT_MARKER_STYLE,
    COMMAND_STYLE=COMMAND_STYLE, DANGER_STYLE=DANGER_STYLE, CAUTION_STYLE=CAUTION_STYLE)
DARK_PALETTE = dict(  # GitHub's dark diff colours; the Pygments style is made for dark paper
    STYLE="github-dark", INK="#e6edf3", MUTED="#8d96a0", PAPER="#0d1117", ADD_BG="#12261e", ADD_GUTTER="#1a4a2e",
    ADD_WORD="#2e6b3f", DEL_BG="#2d1517", DEL_GUTTER="#542426", DEL_WORD="#7d2c30", HUNK_BG="#152238",
    HUNK_INK="#79c0ff", FILE_BG="#161b22", EMPTY_BG="#161b22", NOTICE_BG="#3b2e05",
    MARKER_STYLE="color:#ffffff;background-color:#da3633;font-weight:bold", SOFT_MARKER_STYLE="color:#8d96a0",
    COMMAND_STYLE="color:#79c0ff;font-weight:bold",
    DANGER_STYLE="background-color:#5c1d20;text-decoration:underline", CAUTION_STYLE="background-color:#3b2e05")


def set_dark(dark: bool) -> None:
    """Render with the dark (or light) colours and Pygments style from now on (the GUI's theme)."""
    global _style_name
    palette = DARK_PALETTE if dark else LIGHT_PALETTE
    module = globals()
    for name, value in palette.items():
        if name == "STYLE":
            _style_name = value
        else:
            module[name] = value
    token_css.cache_clear()


@cache
def _pygments_style(name: str) -> StyleMeta:
    from pygments.styles import get_style_by_name

    return get_style_by_name(name)


def __getattr__(name: str) -> Any:
    if name == "STYLE":  # the Pygments style class in use
        return _pygments_style(_style_name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


LONG_COMMAND = 80
_NEEDS_REVEAL = re.compile(r"[^\t\n\x20-\x7e]")
_NOT_COMMAND_START, _NOT_COMMAND_END = "<!--not-command-->", "<!--/not-command-->"

# A line's tokens: (start, end, token type) with offsets relative to the line.
LineTokens = list[tuple[int, int, "_TokenType"]]


# -- styles and lexers --------------------------------------------------------------------------

@cache
def token_css(ttype: _TokenType) -> str:
    """The inline CSS for a token type (``""`` when it is plain text)."""
    style = _pygments_style(_style_name).style_for_token(ttype)
    parts = []
    if style["color"]:
        parts.append(f"color:#{style['color'].lower()}")
    if style["bold"]:
        parts.append("font-weight:bold")
    if style["italic"]:
        parts.append("font-style:italic")
    return ";".join(parts)


def lexer_for(path: str | None) -> Lexer:
    """The Pygments lexer for a file name, plain text when unknown."""
    from pygments.lexers import TextLexer, get_lexer_by_name, get_lexer_for_filename
    from pygments.util import ClassNotFound

    if path:
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        alias = _alias_by_extension().get(os.path.splitext(name)[1])
        if alias:
            return get_lexer_by_name(alias, stripnl=False, ensurenl=False)
        try:
            return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
        except ClassNotFound:
            pass
    return TextLexer(stripnl=False, ensurenl=False)


@lru_cache(maxsize=1)
def _alias_by_extension() -> dict[str, str]:
    """Extensions that exactly one lexer claims (``.py`` → python).

    ``get_lexer_for_filename`` compiles a regex for each of Pygments' ~900 file patterns on
    first use (a third of a second before the first diff can paint); a plain ``*.ext`` claimed
    by one lexer needs none of that. Ambiguous ones (``.h``) still go the careful way.
    """
    from pygments.lexers import get_all_lexers

    claims: dict[str, set[str]] = {}
    for _name, aliases, patterns, _mimetypes in get_all_lexers(plugins=False):
        if not aliases:
            continue
        for pattern in patterns:
            if pattern.startswith("*.") and not any(c in pattern[2:] for c in "*?[]"):
                claims.setdefault(pattern[1:], set()).add(aliases[0])
    return {ext: next(iter(names)) for ext, names in claims.items() if len(names) == 1}


class LazyLines:
    """Tokenises a text on demand and hands out the tokens of one line at a time.

    Pygments' regex lexers are generators, so asking for line 120 only lexes lines 1 to 120;
    lexing keeps the state of the whole file (a line inside a docstring is coloured as one).
    """

    def __init__(self, text: str, lexer: Lexer) -> None:
        self._text = text
        self._tokens: Iterator[tuple[int, _TokenType, str]] | None = lexer.get_tokens_unprocessed(text)
        self._done: list[LineTokens] = []
        self._current: LineTokens = []
        self._line_start = 0

    @property
    def lines_tokenised(self) -> int:
        return len(self._done)

    def is_lexed(self, index: int) -> bool:
        """Whether line ``index`` has its tokens already (asking for it costs nothing)."""
        return index < len(self._done) or self._tokens is None

    def line(self, index: int) -> LineTokens:
        while len(self._done) <= index and self._tokens is not None:
            self._advance()
        return self._done[index] if index < len(self._done) else []

    def _advance(self) -> None:
        assert self._tokens is not None
        try:
            position, ttype, value = next(self._tokens)
        except StopIteration:
            self._finish()
            return
        except Exception:  # a lexer bug must not break the review: the rest stays uncoloured
            self._finish()
            return
        end = position + len(value)
        while True:
            newline = self._text.find("\n", position, end)
            stop = end if newline < 0 else newline
            if stop > position:
                self._current.append((position - self._line_start, stop - self._line_start, ttype))
            if newline < 0:
                return
            self._done.append(self._current)
            self._current = []
            self._line_start = position = newline + 1

    def _finish(self) -> None:
        self._tokens = None
        self._done.append(self._current)
        self._current = []


class DiffHighlighter:
    """Lazy per-line tokens for both sides of one :class:`FileDiff`.

    When the diff carries the full old/new texts, each side is lexed as the whole file; a parsed
    unified diff only has its hunks, so each side is the hunks' lines joined in order.
    """

    def __init__(self, diff: FileDiff) -> None:
        lexer = lexer_for(diff.path or diff.old_path)
        self._index: dict[str, dict[tuple[int, int], int] | None] = {}
        self.sides: dict[str, LazyLines] = {}
        for side, full in (("old", diff.old_text), ("new", diff.new_text)):
            if full is not None:
                self.sides[side] = LazyLines(full, lexer)
                self._index[side] = None
                continue
            keep = ("context", "del") if side == "old" else ("context", "add")
            index: dict[tuple[int, int], int] = {}
            texts: list[str] = []
            for h, hunk in enumerate(diff.hunks):
                for k, line in enumerate(hunk.plain_lines):
                    if line.kind in keep:
                        index[(h, k)] = len(texts)
                        texts.append(line.text)
            self.sides[side] = LazyLines("\n".join(texts), lexer)
            self._index[side] = index

    @property
    def lines_tokenised(self) -> int:
        return sum(side.lines_tokenised for side in self.sides.values())

    def tokens(self, hunk: int, position: int, line: DiffLine) -> LineTokens:
        side, at = self._where(hunk, position, line)
        return self.sides[side].line(at) if at is not None else []

    def is_lexed(self, hunk: int, position: int, line: DiffLine) -> bool:
        """Whether the line's tokens are there already (a side is lexed from its start, in order)."""
        side, at = self._where(hunk, position, line)
        return at is None or self.sides[side].is_lexed(at)

    def _where(self, hunk: int, position: int, line: DiffLine) -> tuple[str, int | None]:
        side = "old" if line.kind == "del" else "new"
        index = self._index[side]
        if index is None:
            number = line.old_no if side == "old" else line.new_no
            return side, number - 1 if number else None
        return side, index.get((hunk, position))


_highlighters: weakref.WeakKeyDictionary[FileDiff, DiffHighlighter] = weakref.WeakKeyDictionary()


def highlighter_for(diff: FileDiff) -> DiffHighlighter:
    """The (cached) highlighter of a diff: one per diff, reused by every chunk and re-render."""
    found = _highlighters.get(diff)
    if found is None:
        found = _highlighters[diff] = DiffHighlighter(diff)
    return found


# -- one line of code ---------------------------------------------------------------------------

def code_html(text: str, tokens: LineTokens, *, words: Sequence[tuple[int, int]] = (),
              word_bg: str | None = None, extra_css: dict[int, str] | None = None,
              revealed: Revealed | None = None) -> str:
    """One line as HTML: token colours, changed-word backgrounds, hidden characters as markers.

    ``extra_css`` adds a style at given start offsets (command names); an empty style only cuts
    there, so the style before it ends inside a token (``rm`` in ``'rm -rf x'``). Markers are atomic: a
    token boundary inside ``⟨40 spaces⟩`` does not split it.
    """
    if revealed is None:
        if _NEEDS_REVEAL.search(text):
            revealed = reveal(text, multiline=True, spaces=False)
        else:
            revealed = None
    segments = revealed.segments if revealed else [(text, False)]
    spans = revealed.spans if revealed else [(0, len(text))]
    cuts = {0, len(text)}
    for start, end, _t in tokens:
        cuts.add(start)
        cuts.add(end)
    for start, end in words:
        cuts.add(start)
        cuts.add(end)
    if extra_css:
        cuts.update(extra_css)
    ordered = sorted(cuts)
    out: list[str] = []
    token_at = _TokenLookup(tokens)
    for (part, is_marker), (start, end) in zip(segments, spans, strict=False):
        if is_marker:
            soft = part == "\\r" and end == len(text)
            style = SOFT_MARKER_STYLE if soft else MARKER_STYLE
            out.append(f'<span data-marker="1" style="{style}">{html.escape(part)}</span>')
            continue
        pieces = [c for c in ordered if start < c < end]
        bounds = [start, *pieces, end]
        for a, b in itertools.pairwise(bounds):
            chunk = text[a:b]
            if extra_css and extra_css.get(a):
                css = [extra_css[a]]
            elif chunk.isspace():
                css = []  # a colour on spaces paints nothing
            else:
                css = [token_css(token_at(a))]
            if word_bg and any(s <= a < e for s, e in words):
                css.append(f"background-color:{word_bg}")
            style = ";".join(c for c in css if c)
            chunk = html.escape(chunk, quote=False)
            out.append(f'<span style="{style}">{chunk}</span>' if style else chunk)
    return "".join(out)


class _TokenLookup:
    """Finds the token type at an offset; offsets arrive in increasing order."""

    def __init__(self, tokens: LineTokens) -> None:
        self._tokens = tokens
        self._at = 0

    def __call__(self, offset: int) -> _TokenType:
        tokens = self._tokens
        while self._at < len(tokens) and tokens[self._at][1] <= offset:
            self._at += 1
        if self._at < len(tokens) and tokens[self._at][0] <= offset:
            return tokens[self._at][2]
        return _plain_text()


@cache
def _plain_text() -> _TokenType:
    from pygments.token import Token

    return Token.Text


# -- diff rows ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One row of a rendered diff. ``left``/``right`` index lines of ``hunk`` (split view)."""

    kind: Literal["file", "notice", "hunk", "line", "pair", "no_newline"]
    hunk: int = -1
    left: int | None = None
    right: int | None = None
    text: str = ""
    side: str = ""


_row_cache: weakref.WeakKeyDictionary[FileDiff, dict[tuple[str, frozenset[int]], list[Row]]] = \
    weakref.WeakKeyDictionary()


def diff_rows(diff: FileDiff, mode: Mode = "unified", folded: frozenset[int] | set[int] = frozenset()) -> list[Row]:
    """The rows a diff shows in a mode with some hunks folded (cheap: nothing is highlighted).

    The rows of a diff still being streamed are those of its lines so far, and are not cached;
    they are the first rows of the complete diff's.
    """
    key = (mode, frozenset(folded))
    cache = _row_cache.setdefault(diff, {}) if diff.complete else {}
    if key in cache:
        return cache[key]
    rows = [Row("file")]
    rows.extend(Row("notice", text=note) for note in _notices(diff))
    for h, hunk in enumerate(diff.hunks):
        rows.append(Row("hunk", h))
        if h in folded:
            continue
        lines = hunk.plain_lines
        if mode == "unified":
            for k, line in enumerate(lines):
                rows.append(Row("line", h, k))
                if line.missing_newline:
                    rows.append(Row("no_newline", h, k, side=_missing_side(line)))
        else:
            rows.extend(_split_rows(h, lines))
    if len(cache) > 8:
        cache.clear()
    cache[key] = rows
    return rows


def row_count(diff: FileDiff, mode: Mode = "unified", folded: frozenset[int] | set[int] = frozenset()) -> int:
    return len(diff_rows(diff, mode, folded))


def _split_rows(h: int, lines: list[DiffLine]) -> list[Row]:
    rows: list[Row] = []
    k = 0
    while k < len(lines):
        if lines[k].kind == "context":
            rows.append(Row("pair", h, k, k))
            if lines[k].missing_newline:
                rows.append(Row("no_newline", h, k, k, side=_missing_side(lines[k])))
            k += 1
            continue
        dels = []
        while k < len(lines) and lines[k].kind == "del":
            dels.append(k)
            k += 1
        adds = []
        while k < len(lines) and lines[k].kind == "add":
            adds.append(k)
            k += 1
        for n in range(max(len(dels), len(adds))):
            left = dels[n] if n < len(dels) else None
            right = adds[n] if n < len(adds) else None
            rows.append(Row("pair", h, left, right))
            sides = [s for s, at in (("old", left), ("new", right))
                     if at is not None and lines[at].missing_newline]
            if sides:
                rows.append(Row("no_newline", h, left, right, side="both" if len(sides) == 2 else sides[0]))
    return rows


def _missing_side(line: DiffLine) -> str:
    return {"del": "old", "add": "new"}.get(line.kind, "both")


def _notices(diff: FileDiff) -> list[str]:
    notices = []
    if diff.status == "added":
        notices.append("New file")
    elif diff.status == "deleted":
        notices.append("Deleted file")
    if diff.old_path and diff.path and diff.old_path != diff.path:
        notices.append(f"Renamed from {diff.old_path}")
    notices.extend(diff.notes)
    return notices


# -- diff HTML ----------------------------------------------------------------------------------

def render_diff_html(diff: FileDiff, *, mode: Mode = "unified",
                     folded: frozenset[int] | set[int] = frozenset(),
                     line_range: tuple[int, int] | None = None, file_index: int = 0, syntax: bool = True) -> str:
    """A table of the diff's rows, or of rows ``line_range`` (start, end) of :func:`diff_rows`.

    Rendering by ranges lets a view paint the first screen at once and append the rest later;
    each range is its own table with the same column layout, so appended tables line up.
    Without ``syntax`` the code is not coloured (nothing is lexed): the same text and diff
    colours, for a view that jumps far ahead of the lexer and colours the rows later.
    """
    return diff_table_html(render_diff_rows(diff, mode=mode, folded=folded, line_range=line_range,
                                            file_index=file_index, syntax=syntax))


def render_diff_rows(diff: FileDiff, *, mode: Mode = "unified", folded: frozenset[int] | set[int] = frozenset(),
                     line_range: tuple[int, int] | None = None, file_index: int = 0, syntax: bool = True) -> str:
    """The ``<tr>`` rows of :func:`render_diff_html` without their table: a view can draw a
    long range in several pieces and put them into one table (Qt lays out few large tables
    much faster than many small ones)."""
    rows = diff_rows(diff, mode, folded)
    start, end = line_range if line_range is not None else (0, len(rows))
    digits = _digits.get(diff) or _digits.setdefault(diff, len(str(max(_largest_line_number(diff), 1))))
    painter = _RowPainter(diff, mode, frozenset(folded), digits, file_index, syntax)
    return "".join(painter.row(row) for row in rows[start:end])


def diff_table_html(rows: str) -> str:
    """The table around rows from :func:`render_diff_rows` (nothing for no rows)."""
    if not rows:
        return ""
    return (f'<table width="100%" cellspacing="0" cellpadding="0" style="border-collapse:collapse;'
            f'font-family:{MONO};color:{INK};background-color:{PAPER}">{rows}</table>')


_digits: weakref.WeakKeyDictionary[FileDiff, int] = weakref.WeakKeyDictionary()  # of complete or streamed diffs


def rows_lexed(diff: FileDiff, mode: Mode, folded: frozenset[int] | set[int], start: int, end: int) -> bool:
    """Whether rows ``start``–``end`` can be coloured without lexing anything more."""
    highlighter = highlighter_for(diff)
    for row in diff_rows(diff, mode, folded)[start:end]:
        if row.kind not in ("line", "pair"):
            continue
        hunk = diff.hunks[row.hunk]
        for at in (row.left, row.right):
            if at is not None and not highlighter.is_lexed(row.hunk, at, hunk.plain_lines[at]):
                return False
    return True


def _largest_line_number(diff: FileDiff) -> int:
    if diff.streamed:  # the same width before and after the last hunk is known: the file's length
        return max((text or "").count("\n") + 1 for text in (diff.old_text, diff.new_text))
    largest = 0
    for hunk in diff.hunks:
        for line in reversed(hunk.plain_lines):
            largest = max(largest, line.old_no or 0, line.new_no or 0)
            if largest:
                break
    return largest


class _RowPainter:
    def __init__(self, diff: FileDiff, mode: Mode, folded: frozenset[int], digits: int, file_index: int,
                 syntax: bool = True) -> None:
        self.syntax = syntax
        self.diff = diff
        self.mode = mode
        self.folded = folded
        self.digits = digits
        self.file_index = file_index
        self.columns = 2 if mode == "unified" else 4
        self._highlighter: DiffHighlighter | None = None

    @property
    def highlighter(self) -> DiffHighlighter:
        if self._highlighter is None:
            self._highlighter = highlighter_for(self.diff)
        return self._highlighter

    def row(self, row: Row) -> str:
        if row.kind == "file":
            return self._file_row()
        if row.kind == "notice":
            return self._wide(html.escape(row.text), NOTICE_BG, italic=True)
        if row.kind == "hunk":
            return self._hunk_row(row.hunk)
        if row.kind == "no_newline":
            return self._no_newline_row(row)
        hunk = self.diff.hunks[row.hunk]
        if row.kind == "line":
            assert row.left is not None
            return self._unified_line(row.hunk, row.left, hunk.line(row.left))
        left = hunk.line(row.left) if row.left is not None else None
        right = hunk.line(row.right) if row.right is not None else None
        return ("<tr>" + self._half(row.hunk, row.left, left, "old")
                + self._half(row.hunk, row.right, right, "new") + "</tr>")

    def _wide(self, content: str, background: str, *, italic: bool = False, colour: str = MUTED) -> str:
        style = f"color:{colour};padding:2px 6px;white-space:pre-wrap" + (";font-style:italic" if italic else "")
        return f'<tr><td colspan="{self.columns}" bgcolor="{background}" style="{style}">{content}</td></tr>'

    def _file_row(self) -> str:
        diff = self.diff
        name = _revealed_inline(diff.path or diff.old_path or "(no file name)")
        status = {"modified": "modified", "added": "new file", "deleted": "deleted",
                  "binary": "binary"}[diff.status]
        counts = "" if diff.status == "binary" else (
            f' <span style="color:#1a7f37">+{diff.added}</span> <span style="color:#cf222e">−{diff.removed}</span>'
            if diff.complete else f' <span style="color:{MUTED}">+… −…</span>')
        return self._wide(f'<b style="color:{INK}">{name}</b> <span style="color:{MUTED}">({status})</span>{counts}',
                          FILE_BG)

    def _hunk_row(self, h: int) -> str:
        hunk = self.diff.hunks[h]
        folded = h in self.folded
        arrow = "▸" if folded else "▾"
        tail = ""
        if folded:
            tail = f' <span style="color:{MUTED}">— {len(hunk)} lines folded, click to show</span>'
        link = (f'<a href="hunk:{self.file_index}:{h}" style="color:{HUNK_INK};text-decoration:none">'
                f'{arrow} {_revealed_inline(hunk.header)}</a>')
        return self._wide(link + tail, HUNK_BG, colour=HUNK_INK)

    def _no_newline_row(self, row: Row) -> str:
        note = "⊘ No newline at end of file"
        if self.mode == "unified" or row.side == "both":
            label = {"old": " (old)", "new": " (new)"}.get(row.side, "") if self.mode == "unified" else ""
            return self._wide(note + label, FILE_BG, italic=True)
        cell = f'<td colspan="2" bgcolor="{FILE_BG}" style="color:{MUTED};font-style:italic;padding:0 6px">'
        empty = f'<td colspan="2" bgcolor="{PAPER}"></td>'
        filled = cell + note + "</td>"
        return "<tr>" + (filled + empty if row.side == "old" else empty + filled) + "</tr>"

    def _numbers(self, numbers: tuple[int | None, ...], background: str) -> str:
        """One gutter cell (both numbers in the unified view: fewer cells lay out faster)."""
        text = "  ".join(str(n if n is not None else "").rjust(self.digits) for n in numbers)
        return f'<td bgcolor="{background}" style="color:{MUTED};padding:0 6px;white-space:pre">{text}</td>'

    def _code_cell(self, content: str, sign: str, background: str, width: str) -> str:
        return (f'<td width="{width}" bgcolor="{background}" style="white-space:pre-wrap;padding-right:6px">'
                f'<span style="color:{MUTED}">{sign}</span>{content}</td>')

    def _line_content(self, h: int, k: int, line: DiffLine) -> str:
        tokens = self.highlighter.tokens(h, k, line) if self.syntax else []
        word_bg = ADD_WORD if line.kind == "add" else DEL_WORD if line.kind == "del" else None
        return code_html(line.text, tokens, words=line.intraline, word_bg=word_bg)

    def _unified_line(self, h: int, k: int, line: DiffLine) -> str:
        background, gutter, sign = _line_colours(line.kind)
        return ("<tr>" + self._numbers((line.old_no, line.new_no), gutter)
                + self._code_cell(self._line_content(h, k, line), sign, background, "100%") + "</tr>")

    def _half(self, h: int, k: int | None, line: DiffLine | None, side: str) -> str:
        if line is None or k is None:
            return f'<td bgcolor="{EMPTY_BG}"></td><td width="50%" bgcolor="{EMPTY_BG}"></td>'
        background, gutter, sign = _line_colours(line.kind)
        number = line.old_no if side == "old" else line.new_no
        return self._numbers((number,), gutter) + self._code_cell(self._line_content(h, k, line), sign,
                                                                 background, "50%")


def _line_colours(kind: str) -> tuple[str, str, str]:
    if kind == "add":
        return ADD_BG, ADD_GUTTER, "+"
    if kind == "del":
        return DEL_BG, DEL_GUTTER, "−"
    return PAPER, PAPER, " "


def _revealed_inline(text: str) -> str:
    """Escape a one-line label (a path, a hunk header), showing hidden characters as markers."""
    if not _NEEDS_REVEAL.search(text):
        return html.escape(text, quote=False)
    return code_html(text, [], revealed=reveal(text, multiline=False))


def diff_warnings(diff: FileDiff) -> tuple[str, ...]:
    """Warnings about hidden characters in a diff's path and lines, each with where it was found."""
    found: dict[str, str] = {}
    name = diff.path or diff.old_path or ""
    for warning in reveal(name).warnings if _NEEDS_REVEAL.search(name) else ():
        found.setdefault(f"file name {warning}", "")
    for hunk in diff.hunks:
        for line in hunk.plain_lines:
            if not _NEEDS_REVEAL.search(line.text):
                continue
            where = f"old line {line.old_no}" if line.kind == "del" else f"new line {line.new_no}"
            if line.new_no is None and line.old_no is None:
                where = "a line"
            for warning in reveal(line.text, multiline=True, spaces=False).warnings:
                found.setdefault(warning, where)
    # A hidden character in the name must not reorder the warning that reports it.
    label = reveal(diff.path).text if diff.path else "the diff"
    return tuple(f"{label}: {warning}" + (f" (first at {where})" if where else "")
                 for warning, where in found.items())


# -- commands -----------------------------------------------------------------------------------

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
        header = (f'{_NOT_COMMAND_START}<div style="color:{MUTED};font-family:{MONO}">in '
                  f'{code_html(cwd, [], revealed=cwd_revealed)}</div>{_NOT_COMMAND_END}')
    page = (f'{header}<pre style="font-family:{MONO};color:{INK};white-space:pre-wrap;'
            f'margin:4px 0 4px 0">{body}</pre>')
    return page, tuple(warnings)


def _danger_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, level) of the parts of a command the risk reader finds risky on their own."""
    from .headline import dangerous_parts

    try:
        return [(part.start, part.end, part.level) for part in dangerous_parts(text)]
    except (ValueError, RecursionError):  # a line the parser cannot take is shown unmarked, never dropped
        return []


def _command_body(text: str, revealed: Revealed, tokens: LineTokens, names: dict[int, str],
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
            style = DANGER_STYLE if level == "destructive" else CAUTION_STYLE
            piece = f'<span style="{style}" data-danger="{level}">{piece}</span>'
        out.append(piece)
        if cut in layout:
            out.append(f"{_NOT_COMMAND_START}<br/>{'&nbsp;' * layout[cut]}{_NOT_COMMAND_END}")
        elif cut in newlines and cut < len(text):
            out.append(f"{_NOT_COMMAND_START}<br/>{_NOT_COMMAND_END}")
        start = cut
    return "".join(out)


def _slice_html(text: str, revealed: Revealed, tokens: LineTokens, names: dict[int, str],
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
    return code_html(piece, local_tokens, extra_css=local_names, revealed=sliced)


def _program_styles(text: str, tokens: LineTokens) -> dict[int, str]:
    """Bold exactly the programs the shell parser finds (``rm`` in ``timeout 5 bash -c 'rm x'``,
    not ``timeout`` or ``bash``): the same reading risk and policy judge."""
    styles: dict[int, str] = {}
    for start, end in program_spans(text):
        styles[start] = COMMAND_STYLE
        for token_start, _token_end, _type in tokens:
            if start < token_start < end:
                styles[token_start] = COMMAND_STYLE
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


# -- JSON and text ------------------------------------------------------------------------------

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

    lazy = LazyLines(clipped.text, JsonLexer(stripnl=False, ensurenl=False))
    lines = clipped.text.split("\n")
    body = "\n".join(code_html(line, lazy.line(n), revealed=_json_line_reveal(line))
                     for n, line in enumerate(lines))
    notice = ""
    if clipped.clipped:
        more_lines = f"{clipped.hidden_lines:,} more line{'s' if clipped.hidden_lines != 1 else ''}"
        what = more_lines
        if clipped.partial:
            what = f"{clipped.hidden_chars:,} more characters" + (f" ({more_lines})" if clipped.hidden_lines else "")
        notice = (f'<p style="color:{MUTED};font-style:italic">… {what} hidden — '
                  f'<a href="json:show-all">Show all</a></p>')
    return (f'<pre style="font-family:{MONO};color:{INK};white-space:pre-wrap;margin:0">{body}</pre>'
            + notice)


_SUSPICIOUS_JSON_SPACES = re.compile(r"(?<!\\n) {8,}| {40,}")
"""A run of spaces worth marking in JSON: long, and not the indentation of code inside a string
(spaces right after an escaped newline), unless it is long enough to push text out of sight."""


def _json_line_reveal(line: str) -> Revealed | None:
    """Reveal a line of pretty JSON: long space runs count, indentation (its own, or of code
    inside a string value) does not."""
    indent = len(line) - len(line.lstrip(" "))
    body = line[indent:]
    spaces = bool(_SUSPICIOUS_JSON_SPACES.search(body))
    if not _NEEDS_REVEAL.search(line) and not spaces:
        return None
    found = reveal(body, spaces=spaces)
    if indent:
        found = Revealed(" " * indent + found.text, found.warnings, [(" " * indent, False), *found.segments],
                         [(0, indent), *((a + indent, b + indent) for a, b in found.spans)], found.kinds)
    return found


def json_warnings(value: Any) -> tuple[str, ...]:
    """Hidden characters anywhere in the arguments (keys and string values)."""
    text = pretty_json(value)
    if not _NEEDS_REVEAL.search(text):
        return ()
    return tuple(f"arguments: {w}" for w in reveal(text, multiline=True).warnings)


def render_text_html(text: str) -> tuple[str, tuple[str, ...]]:
    """Plain text with hidden characters revealed, and the warnings."""
    revealed = reveal(text, multiline=True, spaces=False)
    return (f'<pre style="font-family:{MONO};color:{INK};white-space:pre-wrap;margin:0">'
            f'{code_html(text, [], revealed=revealed)}</pre>'), revealed.warnings
