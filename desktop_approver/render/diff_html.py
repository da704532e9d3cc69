"""HTML for Qt's rich text of a diff: its rows (a file header, notices, hunk headers, lines) as tables.

A diff is a list of *rows* (:func:`diff_rows`: cheap, nothing highlighted), drawn as tables by
ranges (:func:`render_diff_html`, :func:`render_diff_rows`), so a view paints the first screen at
once and appends the rest later; each range has the same column layout, so the tables line up.
Hunk headers link ``hunk:<file>:<hunk>`` (fold or unfold a hunk). The code is coloured lazily
(:class:`DiffHighlighter`): a file side is tokenised only as far as the last line someone asked for.
"""

from __future__ import annotations

import html
import weakref
from collections.abc import Iterator
from typing import Literal, NamedTuple

from . import highlight
from .diffs import DiffLine, FileDiff
from .reveal import reveal

Mode = Literal["unified", "split"]

LINE_SHOWN_CHARS = 2000  # a row draws this much of a line: Qt lays out one long line in quadratic time


class DiffHighlighter:
    """Lazy per-line tokens for both sides of one :class:`FileDiff`.

    When the diff carries the full old/new texts, each side is lexed as the whole file; a parsed
    unified diff only has its hunks, so each side is the hunks' lines joined in order.
    """

    def __init__(self, diff: FileDiff) -> None:
        lexer = highlight.lexer_for(diff.path or diff.old_path)
        self._index: dict[str, dict[tuple[int, int], int] | None] = {}
        self.sides: dict[str, highlight.LazyLines] = {}
        for side, full in (("old", diff.old_text), ("new", diff.new_text)):
            if full is not None:
                self.sides[side] = highlight.LazyLines(full, lexer)
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
            self.sides[side] = highlight.LazyLines("\n".join(texts), lexer)
            self._index[side] = index

    @property
    def lines_tokenised(self) -> int:
        return sum(side.lines_tokenised for side in self.sides.values())

    def tokens(self, hunk: int, position: int, line: DiffLine) -> highlight.LineTokens:
        side, at = self._where(hunk, position, line)
        return self.sides[side].line(at) if at is not None else []

    def is_lexed(self, hunk: int, position: int, line: DiffLine) -> bool:
        """Whether the line's tokens are there already (a side is lexed from its start, in order)."""
        side, at = self._where(hunk, position, line)
        return at is None or self.sides[side].is_lexed(at)

    def lex_until(self, hunk: int, position: int, line: DiffLine, deadline: float) -> bool:
        """Lex towards the line until ``deadline`` (``time.perf_counter()``); whether it is lexed."""
        side, at = self._where(hunk, position, line)
        return at is None or self.sides[side].lex_until(at, deadline)

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


class Row(NamedTuple):
    """One row of a rendered diff. ``left``/``right`` index lines of ``hunk`` (split view).

    A named tuple: a long diff lists ten thousand of them at once (a third the time of a frozen
    dataclass), and holding only strings and numbers, Python's collector stops tracking them."""

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
            f'font-family:{highlight.MONO};color:{highlight.INK};background-color:{highlight.PAPER}">{rows}</table>')


_digits: weakref.WeakKeyDictionary[FileDiff, int] = weakref.WeakKeyDictionary()  # of complete or streamed diffs


def _row_lines(diff: FileDiff, mode: Mode, folded: frozenset[int] | set[int], start: int,
               end: int) -> Iterator[tuple[int, int, DiffLine]]:
    """The lines (hunk, index, line) that rows ``start``–``end`` show, in row order."""
    for row in diff_rows(diff, mode, folded)[start:end]:
        if row.kind not in ("line", "pair"):
            continue
        hunk = diff.hunks[row.hunk]
        for at in (row.left, row.right):
            if at is not None:
                yield row.hunk, at, hunk.plain_lines[at]


def rows_lexed(diff: FileDiff, mode: Mode, folded: frozenset[int] | set[int], start: int, end: int) -> bool:
    """Whether rows ``start``–``end`` can be coloured without lexing anything more."""
    highlighter = highlighter_for(diff)
    return all(highlighter.is_lexed(hunk, at, line) for hunk, at, line in _row_lines(diff, mode, folded, start, end))


def lex_rows(diff: FileDiff, mode: Mode, folded: frozenset[int] | set[int], start: int, end: int,
             deadline: float) -> bool:
    """Lex towards rows ``start``–``end`` until ``deadline`` (``time.perf_counter()``): whether they
    can be coloured now. A view calls it again, a step at a time, rather than freeze on a long file."""
    highlighter = highlighter_for(diff)
    return all(highlighter.lex_until(hunk, at, line, deadline)
               for hunk, at, line in _row_lines(diff, mode, folded, start, end))


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
            return self._wide(html.escape(row.text), highlight.NOTICE_BG, italic=True)
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

    def _wide(self, content: str, background: str, *, italic: bool = False, colour: str = highlight.MUTED) -> str:
        style = f"color:{colour};padding:2px 6px;white-space:pre-wrap" + (";font-style:italic" if italic else "")
        return f'<tr><td colspan="{self.columns}" bgcolor="{background}" style="{style}">{content}</td></tr>'

    def _file_row(self) -> str:
        diff = self.diff
        name = _revealed_inline(diff.path or diff.old_path or "(no file name)")
        status = {"modified": "modified", "added": "new file", "deleted": "deleted",
                  "binary": "binary"}[diff.status]
        counts = "" if diff.status == "binary" else (
            f' <span style="color:#1a7f37">+{diff.added}</span> <span style="color:#cf222e">−{diff.removed}</span>'
            if diff.complete else f' <span style="color:{highlight.MUTED}">+… −…</span>')
        return self._wide(f'<b style="color:{highlight.INK}">{name}</b> '
                          f'<span style="color:{highlight.MUTED}">({status})</span>{counts}',
                          highlight.FILE_BG)

    def _hunk_row(self, h: int) -> str:
        hunk = self.diff.hunks[h]
        folded = h in self.folded
        arrow = "▸" if folded else "▾"
        tail = ""
        if folded:
            tail = f' <span style="color:{highlight.MUTED}">— {len(hunk)} lines folded, click to show</span>'
        link = (f'<a href="hunk:{self.file_index}:{h}" style="color:{highlight.HUNK_INK};text-decoration:none">'
                f'{arrow} {_revealed_inline(hunk.header)}</a>')
        return self._wide(link + tail, highlight.HUNK_BG, colour=highlight.HUNK_INK)

    def _no_newline_row(self, row: Row) -> str:
        note = "⊘ No newline at end of file"
        if self.mode == "unified" or row.side == "both":
            label = {"old": " (old)", "new": " (new)"}.get(row.side, "") if self.mode == "unified" else ""
            return self._wide(note + label, highlight.FILE_BG, italic=True)
        cell = (f'<td colspan="2" bgcolor="{highlight.FILE_BG}" '
                f'style="color:{highlight.MUTED};font-style:italic;padding:0 6px">')
        empty = f'<td colspan="2" bgcolor="{highlight.PAPER}"></td>'
        filled = cell + note + "</td>"
        return "<tr>" + (filled + empty if row.side == "old" else empty + filled) + "</tr>"

    def _numbers(self, numbers: tuple[int | None, ...], background: str) -> str:
        """One gutter cell (both numbers in the unified view: fewer cells lay out faster)."""
        text = "  ".join(str(n if n is not None else "").rjust(self.digits) for n in numbers)
        return f'<td bgcolor="{background}" style="color:{highlight.MUTED};padding:0 6px;white-space:pre">{text}</td>'

    def _code_cell(self, content: str, sign: str, background: str, width: str) -> str:
        return (f'<td width="{width}" bgcolor="{background}" style="white-space:pre-wrap;padding-right:6px">'
                f'<span style="color:{highlight.MUTED}">{sign}</span>{content}</td>')

    def _line_content(self, h: int, k: int, line: DiffLine) -> str:
        tokens = self.highlighter.tokens(h, k, line) if self.syntax else []
        word_bg = highlight.ADD_WORD if line.kind == "add" else highlight.DEL_WORD if line.kind == "del" else None
        text = line.text
        if len(text) <= LINE_SHOWN_CHARS:
            return highlight.code_html(text, tokens, words=line.intraline, word_bg=word_bg)
        # A long line: its start, then a note that cannot be missed and a link to all of it.
        shown = text[:LINE_SHOWN_CHARS]
        tokens = [(a, min(b, LINE_SHOWN_CHARS), t) for a, b, t in tokens if a < LINE_SHOWN_CHARS]
        words = [(a, min(b, LINE_SHOWN_CHARS)) for a, b in line.intraline if a < LINE_SHOWN_CHARS]
        return (highlight.code_html(shown, tokens, words=words, word_bg=word_bg)
                + long_line_note(text, f"line:{self.file_index}:{h}:{k}"))

    def _unified_line(self, h: int, k: int, line: DiffLine) -> str:
        background, gutter, sign = _line_colours(line.kind)
        return ("<tr>" + self._numbers((line.old_no, line.new_no), gutter)
                + self._code_cell(self._line_content(h, k, line), sign, background, "100%") + "</tr>")

    def _half(self, h: int, k: int | None, line: DiffLine | None, side: str) -> str:
        if line is None or k is None:
            return f'<td bgcolor="{highlight.EMPTY_BG}"></td><td width="50%" bgcolor="{highlight.EMPTY_BG}"></td>'
        background, gutter, sign = _line_colours(line.kind)
        number = line.old_no if side == "old" else line.new_no
        return self._numbers((number,), gutter) + self._code_cell(self._line_content(h, k, line), sign,
                                                                 background, "50%")


def long_line_note(text: str, link: str) -> str:
    """What a row says past the first :data:`LINE_SHOWN_CHARS` characters of a long line: how much
    more there is (hidden characters and carriage returns named), and a link to the whole line."""
    rest = text[LINE_SHOWN_CHARS:]
    parts = [f"… {len(rest):,} more characters on this line"]
    returns = text.count("\r")
    if returns:
        parts.append(f"{returns:,} carriage returns (\\r) in it: a terminal or an old Mac editor shows them "
                     f"as line breaks")
    if highlight.NEEDS_REVEAL.search(rest.replace("\r", "")):
        parts.append("hidden characters among those not shown (see the warnings)")
    return (f'<br/><span style="{highlight.MARKER_STYLE}">{html.escape(" · ".join(parts))}</span> '
            f'<a href="{html.escape(link)}">show the whole line</a>')


def _line_colours(kind: str) -> tuple[str, str, str]:
    if kind == "add":
        return highlight.ADD_BG, highlight.ADD_GUTTER, "+"
    if kind == "del":
        return highlight.DEL_BG, highlight.DEL_GUTTER, "−"
    return highlight.PAPER, highlight.PAPER, " "


def _revealed_inline(text: str) -> str:
    """Escape a one-line label (a path, a hunk header), showing hidden characters as markers."""
    if not highlight.NEEDS_REVEAL.search(text):
        return html.escape(text, quote=False)
    return highlight.code_html(text, [], revealed=reveal(text, multiline=False))


def diff_warnings(diff: FileDiff) -> tuple[str, ...]:
    """Warnings about hidden characters in a diff's path and lines, each with where it was found."""
    found: dict[str, str] = {}
    name = diff.path or diff.old_path or ""
    for warning in reveal(name).warnings if highlight.NEEDS_REVEAL.search(name) else ():
        found.setdefault(f"file name {warning}", "")
    for hunk in diff.hunks:
        for line in hunk.plain_lines:
            if not highlight.NEEDS_REVEAL.search(line.text):
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
