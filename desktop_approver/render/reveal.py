"""Make visible whatever in a text could hide from the person reading it.

A reviewer approves what they *see*; a command or a code line can look harmless while it does
something else: a right-to-left override reorders the glyphs, a zero-width space or a Cyrillic
``а`` splits or fakes a word, an ANSI escape rewrites the terminal, 40 spaces push ``; rm -rf ~``
off screen. :func:`reveal` replaces each such character (or run) with a visible *marker*:

=====================  ==========================  ===============================
what                   marker                      example
=====================  ==========================  ===============================
C0 / C1 / DEL control  ``\\xNN`` (``\\n \\t \\r``)  ``\\x1b[31m`` for an ANSI escape
bidi / zero-width /    ``<U+XXXX>``                ``<U+202E>``, ``<U+200B>``
invisible / odd space
look-alike letter      ``<U+XXXX>``                ``r<U+043C>`` (Cyrillic ``м``)
long or trailing run   ``⟨N spaces⟩``              ``ls⟨40 spaces⟩; rm -rf ~``
of spaces
=====================  ==========================  ===============================

The mapping stays 1:1: every segment records the span of the original text it stands for, and
:func:`unreveal` turns the segments back into the exact original, so what is shown is what runs.
Standard library only: the core and the renderers use it without Qt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# The hidden-character sets are defined once, with the reading of a call, so the risk badge and
# the markers shown always agree on what is hidden.
from ..core.calls.reading import BIDI, ODD_SPACES, ZERO_WIDTH

LONG_SPACE_RUN = 8


# Non-Latin letters that a reader takes for a Latin one (Cyrillic, Greek, a few Latin extensions).
LOOKALIKES: dict[str, str] = {
    # Cyrillic small
    "а": "a", "в": "b", "е": "e", "ё": "ë", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
    "ѕ": "s", "і": "i", "ї": "ï", "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "к": "k", "м": "m", "ү": "y",
    # Cyrillic capital
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y",
    "Ӏ": "I",
    # Greek
    "α": "a", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "υ": "u",
    "χ": "x", "ω": "w",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin letters outside ASCII that pass for ASCII ones
    "ı": "i", "ȷ": "j", "ɡ": "g", "ℓ": "l",
}
# Fullwidth forms of ASCII letters and digits (U+FF10..FF19, U+FF21..FF3A, U+FF41..FF5A).
for _fullwidth in [*range(0xFF10, 0xFF1A), *range(0xFF21, 0xFF3B), *range(0xFF41, 0xFF5B)]:
    LOOKALIKES[chr(_fullwidth)] = chr(_fullwidth - 0xFEE0)

# Order in which warnings are listed: the most deceptive first.
KINDS = ("bidi", "lookalike", "ansi", "control", "newline", "tab", "zero_width", "odd_space",
         "invisible", "spaces", "trailing")

# Kinds that are worth knowing but deceive nobody (a multi-line script, a tab): a yellow warning
# rather than a red one.
MILD_KINDS = frozenset({"newline", "tab", "trailing", "line_ending"})

_ESCAPE_NAMES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_WORD = re.compile(r"\w+")
# Where something may need a marker: everything but printable ASCII, and the space runs that
# matter. The loop jumps from one candidate to the next, so plain text costs almost nothing.
_CANDIDATES = {
    (False, True): re.compile(r"[^ !-~]| {" + str(LONG_SPACE_RUN) + r",}| +\Z"),
    (False, False): re.compile(r"[^ !-~]"),
    (True, True): re.compile(r"[^\t\n !-~]| {" + str(LONG_SPACE_RUN) + ",}"),
    (True, False): re.compile(r"[^\t\n !-~]"),
}
_MARKER = re.compile(r"\\x([0-9a-f]{2})|\\([ntr])|<U\+([0-9A-F]{4,6})>|⟨(\d+) spaces?⟩")


@dataclass(frozen=True)
class Revealed:
    """The display form of a text.

    ``segments`` are ``(text, is_marker)`` pairs; ``spans`` give, for each segment, the
    ``(start, end)`` slice of the original it stands for (renderers use it to lay syntax colours
    from the original under the markers). ``kinds`` names what was found (see :data:`KINDS`).
    """

    text: str
    warnings: tuple[str, ...]
    segments: list[tuple[str, bool]]
    spans: list[tuple[int, int]]
    kinds: frozenset[str]

    @property
    def has_markers(self) -> bool:
        return any(is_marker for _text, is_marker in self.segments)


def reveal(text: str, *, multiline: bool = False, lookalikes: bool = True,
           spaces: bool = True) -> Revealed:
    """Return ``text`` with every character or run that could hide replaced by a visible marker.

    ``multiline`` keeps ``\\n`` and ``\\t`` as they are (a file, a message); without it (a
    one-line shell command) they are shown as ``\\n`` and ``\\t`` too, because there a line
    break starts another command. ``lookalikes`` marks Cyrillic/Greek/fullwidth letters mixed
    into otherwise Latin words; ``spaces`` marks runs of :data:`LONG_SPACE_RUN` or more spaces
    (not a multi-line text's indentation) and, in one-line text, trailing spaces.
    """
    lookalike_at = _lookalike_positions(text) if lookalikes else {}
    segments: list[tuple[str, bool]] = []
    spans: list[tuple[int, int]] = []
    found: dict[str, list[str]] = {}
    seen: set[str] = set()  # kinds shown without a warning
    plain_start = 0
    i = 0
    n = len(text)

    def flush(upto: int) -> None:
        if upto > plain_start:
            segments.append((text[plain_start:upto], False))
            spans.append((plain_start, upto))

    candidates = _CANDIDATES[(multiline, spaces)]
    while i < n:
        jump = candidates.search(text, i)
        if jump is None:
            break
        i = jump.start()
        ch = text[i]
        kind: str | None = None
        end = i + 1
        if ch == " ":
            end = _run_end(text, i, " ")
            run = end - i
            indent = multiline and (i == 0 or text[i - 1] == "\n")
            if spaces and run >= LONG_SPACE_RUN and not indent:
                kind = "spaces"
                found.setdefault(kind, []).append(str(run))
            elif spaces and end == n and not multiline:
                kind = "trailing"
                found.setdefault(kind, []).append(str(run))
            else:
                i = end
                continue
            display = f"⟨{run} space{'s' if run != 1 else ''}⟩"
        elif ch in "\n\t" and multiline:
            i += 1
            continue
        elif ch == "\r" and multiline and (i + 1 == n or text[i + 1] == "\n"):
            # A CRLF line ending: shown (a change from LF to CRLF is otherwise invisible) but
            # not worth a warning.
            kind, display = "line_ending", "\\r"
            seen.add(kind)
        elif ch == "\x1b" and i + 1 < n and text[i + 1] in "[]()PX^_":
            kind, display = "ansi", "\\x1b"
            found.setdefault(kind, []).append("\\x1b")
        elif _is_control(ch):
            display = _ESCAPE_NAMES.get(ch, f"\\x{ord(ch):02x}")
            kind = {"\n": "newline", "\t": "tab"}.get(ch, "control")
            found.setdefault(kind, []).append(display)
        elif ch in BIDI:
            kind, display = "bidi", _code(ch)
            found.setdefault(kind, []).append(ch)
        elif ch in ZERO_WIDTH:
            kind, display = "zero_width", _code(ch)
            found.setdefault(kind, []).append(ch)
        elif ch in ODD_SPACES:
            kind, display = "odd_space", _code(ch)
            found.setdefault(kind, []).append(ch)
        elif i in lookalike_at:
            kind, display = "lookalike", _code(ch)
            found.setdefault(kind, []).append(f"{ch}\0{lookalike_at[i]}")
        elif _is_invisible(ch):
            kind, display = "invisible", _code(ch)
            found.setdefault(kind, []).append(ch)
        if kind is None:
            i = end
            continue
        flush(i)
        segments.append((display, True))
        spans.append((i, end))
        i = plain_start = end
    flush(n)
    display_text = "".join(part for part, _m in segments)
    return Revealed(display_text, _warnings(found), segments, spans, frozenset(found) | seen)


def has_hidden(text: str, *, multiline: bool = False) -> bool:
    """True when :func:`reveal` would warn about ``text``; quick for plain ASCII."""
    if not _CANDIDATES[(multiline, True)].search(text):
        return False
    return bool(reveal(text, multiline=multiline).warnings)


def unreveal(segments: Iterable[tuple[str, bool]]) -> str:
    """The original text of revealed segments: the inverse of :func:`reveal`."""
    return "".join(marker_text(part) if is_marker else part for part, is_marker in segments)


def marker_text(marker: str) -> str:
    """The original characters a single marker stands for."""
    match = _MARKER.fullmatch(marker)
    if match is None:
        raise ValueError(f"not a marker: {marker!r}")
    hex2, escape, code, count = match.groups()
    if hex2 is not None:
        return chr(int(hex2, 16))
    if escape is not None:
        return {"n": "\n", "t": "\t", "r": "\r"}[escape]
    if code is not None:
        return chr(int(code, 16))
    return " " * int(count)


# -- details ------------------------------------------------------------------------------------

def _run_end(text: str, start: int, ch: str) -> int:
    end = start
    while end < len(text) and text[end] == ch:
        end += 1
    return end


def _code(ch: str) -> str:
    return f"<U+{ord(ch):04X}>"


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F


def _is_invisible(ch: str) -> bool:
    """Format characters (tags, invisible operators, variation selectors), unassigned, private."""
    if ch.isascii():
        return False
    category = unicodedata.category(ch)
    return category in ("Cf", "Cn", "Co", "Cs", "Zl", "Zp") or "\ufe00" <= ch <= "\ufe0f"


def _lookalike_positions(text: str) -> dict[int, str]:
    """Positions of look-alike letters inside words that pretend to be Latin.

    A word is suspicious when it mixes ASCII letters with look-alikes (``rм``), or when every
    letter in it is a look-alike (``сат`` in Cyrillic reads as ``cat``). Words in another script
    with letters that look like nothing Latin (``привет``) are left alone.
    """
    if text.isascii():
        return {}
    positions: dict[int, str] = {}
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            continue
        letters = [c for c in word if c.isalpha()]
        fakes = [c for c in letters if c in LOOKALIKES]
        if not fakes:
            continue
        mixed = any(c.isascii() for c in letters)
        if mixed or len(fakes) == len(letters):
            for offset, c in enumerate(word):
                if c in LOOKALIKES:
                    positions[match.start() + offset] = word
    return positions


def _name(ch: str) -> str:
    return unicodedata.name(ch, "unnamed character")


def _codes(chars: Iterable[str]) -> str:
    unique = list(dict.fromkeys(chars))
    shown = ", ".join(f"U+{ord(c):04X}" for c in unique[:4])
    return shown + (", …" if len(unique) > 4 else "")


def _warnings(found: dict[str, list[str]]) -> tuple[str, ...]:
    lines = []
    for kind in KINDS:
        items = found.get(kind)
        if not items:
            continue
        lines.append(_WARNING_TEXT[kind](items))
    return tuple(lines)


def _bidi_warning(chars: list[str]) -> str:
    unique = list(dict.fromkeys(chars))
    if len(unique) == 1 and unique[0] == "\u202e":
        what = "a right-to-left override (U+202E)"
    elif len(unique) == 1:
        what = f"a bidirectional control, {_name(unique[0]).lower()} ({_codes(unique)})"
    else:
        what = f"bidirectional controls ({_codes(unique)})"
    return f"contains {what} that reorders what you see"


def _lookalike_warning(items: list[str]) -> str:
    by_word: dict[str, list[str]] = {}
    for item in dict.fromkeys(items):
        ch, word = item.split("\0")
        by_word.setdefault(word, []).append(ch)
    described = [
        f"'{word}' has " + ", ".join(f"U+{ord(ch):04X} {_name(ch)} in place of Latin '{LOOKALIKES[ch]}'"
                                     for ch in chars)
        for word, chars in by_word.items()
    ]
    more = f" (and {len(described) - 2} more words)" if len(described) > 2 else ""
    return "contains look-alike letters: " + "; ".join(described[:2]) + more


def _count(items: list[str], one: str, many: str) -> str:
    return one if len(items) == 1 else f"{len(items)} {many}"


_WARNING_TEXT: dict[str, Callable[[list[str]], str]] = {
    "bidi": _bidi_warning,
    "lookalike": _lookalike_warning,
    "ansi": lambda items: "contains ANSI escape sequences (shown as \\x1b) that can recolour, "
                          "hide or rewrite terminal text",
    "control": lambda items: "contains control characters ("
                             + ", ".join(dict.fromkeys(items)) + ") that a terminal may act on",
    "newline": lambda items: "contains " + _count(items, "a line break", "line breaks")
                             + " (shown as \\n): each line runs as its own command",
    "tab": lambda items: "contains " + _count(items, "a tab", "tabs") + " (shown as \\t)",
    "zero_width": lambda items: f"contains zero-width characters ({_codes(items)}) that are invisible",
    "odd_space": lambda items: f"contains unusual space characters ({_codes(items)}) that look "
                               "like ordinary spaces but are not",
    "invisible": lambda items: f"contains invisible or unassigned characters ({_codes(items)})",
    "spaces": lambda items: "contains " + _count(items, f"a run of {items[0]} spaces",
                                                 "long runs of spaces")
                            + " (shown as ⟨N spaces⟩) that can push the rest of a line off screen",
    "trailing": lambda items: f"ends with invisible trailing spaces (shown as ⟨{items[0]} "
                              f"space{'s' if items[0] != '1' else ''}⟩)",
}
