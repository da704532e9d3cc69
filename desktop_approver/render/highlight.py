"""Colours for Qt's rich text: the palette, Pygments styles and lexers, and one line of code as HTML.

The other renderers (:mod:`.diff_html`, :mod:`.command_html`, :mod:`.text_html`) build on this.
Qt renders a subset of HTML 4 and CSS, so everything uses inline styles, ``bgcolor`` on table
cells and plain ``<table>``/``<span>``/``<a>``; no classes, no external CSS. The palette's names
(``INK``, ``ADD_BG``, ...) change with :func:`set_dark`, so the other renderers read them from
this module when they draw (``highlight.INK``), never import them by value.

A hidden character is a ``<span data-marker="1" ...>`` whose text is a :mod:`.reveal` marker.

Highlighting is lazy: :class:`LazyLines` tokenises a text with a Pygments generator only as far
as the last line someone asked for. Pygments itself is imported by the first call that colours
something: the idle app (theme, dialog built, nothing shown) never loads it.
"""

from __future__ import annotations

import html
import itertools
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from .reveal import Revealed, reveal

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from pygments.style import StyleMeta
    from pygments.token import _TokenType

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


NEEDS_REVEAL = re.compile(r"[^\t\n\x20-\x7e]")

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
    A line's tokens are kept as one flat tuple of numbers (a token type by its number in
    :data:`_TOKEN_TYPES`): a long file has a hundred thousand tokens, and tuples of numbers are not
    tracked by Python's collector, whose full passes would otherwise walk them all (tens of
    milliseconds of a frozen app, every few seconds while a long diff is drawn).
    """

    def __init__(self, text: str, lexer: Lexer) -> None:
        self._text = text
        self._tokens: Iterator[tuple[int, _TokenType, str]] | None = lexer.get_tokens_unprocessed(text)
        self._done: list[tuple[int, ...]] = []
        self._current: list[int] = []
        self._line_start = 0

    @property
    def lines_tokenised(self) -> int:
        return len(self._done)

    def is_lexed(self, index: int) -> bool:
        """Whether line ``index`` has its tokens already (asking for it costs nothing)."""
        return index < len(self._done) or self._tokens is None

    def lex_until(self, index: int, deadline: float) -> bool:
        """Lex towards line ``index`` until ``time.perf_counter()`` passes ``deadline``; whether it is lexed."""
        while len(self._done) <= index and self._tokens is not None:
            for _ in range(200):  # (a look at the clock every 200 tokens)
                self._advance()
                if len(self._done) > index or self._tokens is None:
                    break
            if time.perf_counter() >= deadline:
                break
        return self.is_lexed(index)

    def line(self, index: int) -> LineTokens:
        while len(self._done) <= index and self._tokens is not None:
            self._advance()
        if index >= len(self._done):
            return []
        flat = self._done[index]
        return [(flat[at], flat[at + 1], _TOKEN_TYPES[flat[at + 2]]) for at in range(0, len(flat), 3)]

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
        number = _TOKEN_NUMBERS.get(ttype)
        if number is None:
            number = _token_number(ttype)
        while True:
            newline = self._text.find("\n", position, end)
            stop = end if newline < 0 else newline
            if stop > position:
                self._current += (position - self._line_start, stop - self._line_start, number)
            if newline < 0:
                return
            self._done.append(tuple(self._current))
            self._current = []
            self._line_start = position = newline + 1

    def _finish(self) -> None:
        self._tokens = None
        self._done.append(tuple(self._current))
        self._current = []


_TOKEN_TYPES: list[_TokenType] = []      # every token type a LazyLines met, by its number
_TOKEN_NUMBERS: dict[_TokenType, int] = {}
_TOKEN_LOCK = threading.Lock()


def _token_number(ttype: _TokenType) -> int:
    """A new token type's number (once per type; listed before it is handed out)."""
    with _TOKEN_LOCK:
        number = _TOKEN_NUMBERS.get(ttype)
        if number is None:
            _TOKEN_TYPES.append(ttype)
            number = _TOKEN_NUMBERS[ttype] = len(_TOKEN_TYPES) - 1
        return number


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
        if NEEDS_REVEAL.search(text):
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


