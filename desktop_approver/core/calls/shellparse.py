"""Cut a shell command line into the simple commands it would run.

The risk classifier and the policy engine both need to know *every* program a command line
starts, not just its first word: ``npm test && curl x | sh`` runs three programs, and
``sudo bash -c 'rm -rf ~'`` runs ``rm``. Grepping the string cannot tell ``echo "rm -rf /"``
from ``rm -rf /``, so this module tokenises the way a POSIX shell (bash) does: quotes,
backslashes, ``$'...'`` strings, comments, operators, redirections and here-documents.

Public API (stable; the policy engine relies on it):

``split_commands(command: str) -> list[SimpleCommand]``
    Never raises on odd input. Each :class:`SimpleCommand` is one program invocation, in the
    order the shell would start them (the commands of a ``$(...)`` come just before the command
    that holds it). It descends into subshells ``( ... )``, groups ``{ ...; }``, ``$( ... )``,
    backticks, process substitutions ``<( ... )`` / ``>( ... )``, ``if`` / ``while`` / ``for``
    / ``case`` bodies, function bodies, ``bash|sh|zsh|dash|ksh -c 'script'``, ``su -c``,
    ``eval``, here-documents fed to a shell, and ``find -exec ... ;``.

``SimpleCommand`` fields:
    ``argv``        the words after quote removal and after unwrapping prefixes (``sudo``,
                    ``doas``, ``pkexec``, ``env``, ``VAR=x``, ``xargs``, ``nohup``, ``time``,
                    ``nice``, ``ionice``, ``timeout``, ``stdbuf``, ``setsid``, ``exec``,
                    ``command``, ``builtin``); expansions stay literal (``$DIR/``).
                    Empty for a bare redirection such as ``> file``.
    ``wrappers``    what was unwrapped, outermost first: ``("sudo", "bash -c")``; each option
                    given to a wrapper follows it (``("time", "time -o")``).
    ``assignments`` ``NAME=value`` words in front of the command or given to ``env``; a
                    ``for``/``select`` loop's variable is one (``NAME=``), on a command of its own.
    ``redirects``   :class:`Redirect` items; ``cmd | tee f`` gives the ``tee`` command a
                    ``Redirect("tee", "f")`` (``"tee -a"`` when appending).
    ``piped_from`` / ``pipes_to``  whether stdin comes from / stdout goes to a pipe;
    ``pipeline``    an id shared by the commands of one pipeline (``curl x | sh``).
    ``construct``   where the command was found: ``""`` (top level), ``"("``, ``"{"``,
                    ``"$("``, ``"`"``, ``"<("``, ``">("``, ``"-c"``, ``"eval"``, ``"<<"``
                    (a here-document fed to a shell) or ``"-exec"``.
    ``parent``      for ``$(``/`````/``<(``/``>(``/``-exec``: the program whose word holds it
                    (``bash`` in ``bash <(curl x)``); ``""`` otherwise.
    ``function``    the name of the shell function whose body holds it, else ``""``.
    ``depth``       how deeply nested (0 at top level).
    ``text``        the source text of this command (of the inner script when nested).
    ``parse_error`` ``None``, or why the input could not be parsed cleanly (an unbalanced
                    quote or parenthesis, a stray operator, too deep a nesting). The result is
                    then a best effort: callers should treat the whole line as suspicious,
                    e.g. ``any(c.parse_error for c in commands)``.
    ``span``        ``(start, end)`` of the program's word in the *top-level* command text,
                    quotes included (``rm`` in ``timeout 5 bash -c 'rm -rf x'``), so a
                    highlighter marks exactly the programs found here; ``None`` when the word
                    is not written literally there (``$'\x72m'`` is, an escaped backtick
                    body is not).

``words(command: str) -> list[tuple[int, int, bool]]``
    The top-level words and operators of a command line as ``(start, end, is_operator)``, with
    the same tokenizer (quotes, substitutions and here-documents stay inside their word), for
    laying a long command out one argument per line.
"""

from __future__ import annotations

import bisect
import itertools
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

__all__ = ["Redirect", "SimpleCommand", "ReadBudget", "split_commands", "over_budget", "words", "SHELLS",
           "MAX_READ_CHARS", "MAX_READ_WORDS", "READ_SECONDS"]

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
MAX_DEPTH = 12

MAX_READ_CHARS = 64 * 1024
"""Characters of command line one call may give to be read (all its command lines together). A
longer call is not read at all: it is "not understood" (``parse_error``), so the person decides."""
MAX_READ_WORDS = 2_000
"""Words and operators one call's reading may take, nested scripts included (``bash -c`` re-reads
its script): every one costs the risk reading and the rules some tens of microseconds, on the
app's event loop, so this keeps one call's reading to tens of milliseconds (issue 34)."""
READ_SECONDS = 0.25
"""The time one call's parse may take before it is given up as "not understood": the last bound,
for an input the two above let through that is still slow to read on a busy machine."""


class ReadBudget:
    """What one call's reading may spend, shared by every command line of the call and every
    script nested in them; the first step past it ends the reading (:class:`_OverBudget`)."""

    __slots__ = ("chars", "words", "deadline", "_spent")

    def __init__(self, *, chars: int = MAX_READ_CHARS, words: int = MAX_READ_WORDS,
                 seconds: float = READ_SECONDS) -> None:
        self.chars = chars
        self.words = words
        self.deadline = time.monotonic() + seconds
        self._spent = 0

    def take_chars(self, count: int) -> None:
        """Take ``count`` characters of top-level command text, or end the reading."""
        self.chars -= count
        if self.chars < 0:
            raise _OverBudget(f"too long to read (more than {MAX_READ_CHARS // 1024} KiB of command line)")

    def spend(self) -> None:
        """One word or operator read (at any depth)."""
        self._spent += 1
        if self._spent > self.words:
            raise _OverBudget(f"too long to read (more than {self.words:,} words and operators)")
        if not self._spent & 63 and time.monotonic() > self.deadline:
            raise _OverBudget("too slow to read within its budget")


class _OverBudget(Exception):
    """The reading went past its :class:`ReadBudget`: the call is not read (never half read)."""


_OVER_BUDGET = ("too long to read", "too slow to read")


def over_budget(command: SimpleCommand) -> bool:
    """Whether ``command`` stands for a line that was past its :class:`ReadBudget` (not read)."""
    return not command.argv and command.parse_error is not None and command.parse_error.startswith(_OVER_BUDGET)

_OPERATORS = ("&>>", ";;&", "<<<", "<<-", "&&", "||", ";;", ";&", "|&", "&>", ">>", ">&", ">|",
              "<<", "<&", "<>", "|", "&", ";", "<", ">", "(", ")")
_REDIRECT_OPS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", ">&", ">|", "<<", "<&", "<>", "<", ">"})
_LIST_OPS = frozenset({";", "&", "&&", "||", ";;", ";&", ";;&"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_METACHARS = frozenset(" \t\n|&;<>()")
_SKIPPED_WORDS = frozenset({"!", "if", "then", "else", "elif", "do", "while", "until", "fi", "done"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_HEREDOC_START = re.compile(r"<<(-?)[ \t]*('[^'\n]*'|\"[^\"\n]*\"|[^\s;&|<>()]+)")
_PLAIN = re.compile(r"[^ \t\n|&;<>()\\'\"$`]+")
"""A run of characters a word takes as they are (the first one is always taken: see ``_Lexer._word``)."""
_PLAIN_QUOTED = re.compile(r"[^\\$`\"]+")
_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


@dataclass(frozen=True)
class Redirect:
    """One redirection: ``op`` keeps any file-descriptor prefix (``"2>"``, ``"2>&"``)."""

    op: str
    target: str
    body: str | None = None   # the text of a here-document (``<<``)

    @property
    def writes(self) -> bool:
        """Whether the redirection writes to a file named by ``target`` (not a fd copy)."""
        if self.op in ("tee", "tee -a"):
            return True
        if ">" not in self.op:
            return False
        return not (self.op.endswith("&") and (self.target.isdigit() or self.target == "-"))

    @property
    def appends(self) -> bool:
        return self.op.endswith(">>") or self.op == "tee -a"


@dataclass(frozen=True)
class SimpleCommand:
    """One program the command line runs; see the module docstring for each field."""

    argv: tuple[str, ...]
    text: str = ""
    wrappers: tuple[str, ...] = ()
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    piped_from: bool = False
    pipes_to: bool = False
    pipeline: int = 0
    construct: str = ""
    parent: str = ""
    function: str = ""
    depth: int = 0
    parse_error: str | None = None
    span: tuple[int, int] | None = None

    @property
    def name(self) -> str:
        """The program's base name (``/usr/bin/rm`` -> ``rm``), or ``""``."""
        return self.argv[0].rsplit("/", 1)[-1] if self.argv else ""


def split_commands(command: str, budget: ReadBudget | None = None) -> list[SimpleCommand]:
    """Every simple command ``command`` would run; see the module docstring.

    The reading is bounded (``budget``, a fresh :class:`ReadBudget` when not given: the caller's
    when one call gives several command lines). Past it, the result is one command with no
    ``argv`` and the ``parse_error`` saying why: nothing of a line that was not read is guessed.
    """
    if not isinstance(command, str):
        raise TypeError(f"command must be a str, not {type(command).__name__}")
    budget = budget if budget is not None else ReadBudget()
    try:
        budget.take_chars(len(command))
        return _parse_script(command, _Scope(where=_at_itself), _Context(itertools.count(1), budget))
    except _OverBudget as over:
        return [SimpleCommand((), command, parse_error=str(over))]


def words(command: str) -> list[tuple[int, int, bool]]:
    """Top-level words and operators (``start, end, is_operator``); see the module docstring."""
    lexer = _Lexer(command)
    out: list[tuple[int, int, bool]] = []
    while (token := lexer.next()).kind != "eof":
        if token.kind != "newline":
            out.append((token.start, token.end, token.kind == "op"))
    return out


# ---------------------------------------------------------------------------------------------
# tokens


@dataclass
class _Sub:
    """A piece of code inside a word that the shell runs: ``$(...)``, backticks, ``<(...)``."""

    construct: str
    source: str
    offset: int | None = None     # where ``source`` starts in the lexer's text, if verbatim


@dataclass
class _Token:
    kind: str                 # "word" | "op" | "newline" | "eof"
    value: str
    start: int
    end: int
    raw: str = ""
    subs: list[_Sub] = field(default_factory=list)
    positions: _Positions | None = None   # where each character of ``value`` is written


class _Positions:
    """Where each character of a word's value is written in the source, kept as runs (a piece
    written verbatim, or one decoded escape): memory and time in the pieces, not the characters."""

    __slots__ = ("starts", "sources", "verbatim", "length")

    def __init__(self) -> None:
        self.starts: list[int] = []      # where each run starts in the value
        self.sources: list[int] = []     # where it starts in the source
        self.verbatim: list[bool] = []   # False: every character of the run comes from one escape
        self.length = 0

    def add(self, length: int, at: int, verbatim: bool) -> None:
        if verbatim and self.verbatim and self.verbatim[-1] \
                and self.sources[-1] + (self.length - self.starts[-1]) == at:
            self.length += length        # continues the previous run
            return
        self.starts.append(self.length)
        self.sources.append(at)
        self.verbatim.append(verbatim)
        self.length += length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < self.length:
            raise IndexError(index)
        run = bisect.bisect_right(self.starts, index) - 1
        return self.sources[run] + (index - self.starts[run] if self.verbatim[run] else 0)


class _Out:
    """A word's value as it is built, with the source position each character comes from (a
    decoded escape points at its backslash), so a script inside a quoted word maps back."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.positions = _Positions()

    def append(self, text: str, at: int, verbatim: bool = True) -> None:
        if text:
            self.parts.append(text)
            self.positions.add(len(text), at, verbatim)

    def __bool__(self) -> bool:
        return bool(self.parts)

    def last(self) -> str:
        """The last character added."""
        return self.parts[-1][-1]

    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool
    body: str | None = None
    subs: list[_Sub] = field(default_factory=list)
    start: int | None = None      # where the body starts in the source, if verbatim


class _Lexer:
    """Reads tokens one at a time; the parser tells it when a here-document starts."""

    def __init__(self, src: str, budget: ReadBudget | None = None) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.errors: list[str] = []
        self._heredocs: list[_Heredoc] = []
        self.budget = budget

    def error(self, message: str) -> None:
        if message not in self.errors:
            self.errors.append(message)

    def add_heredoc(self, delimiter: _Token, strip_tabs: bool) -> _Heredoc:
        quoted = any(c in delimiter.raw for c in "'\"\\")
        heredoc = _Heredoc(delimiter.value, strip_tabs, expands=not quoted)
        self._heredocs.append(heredoc)
        return heredoc

    def next(self) -> _Token:
        if self.budget is not None:
            self.budget.spend()
        src, n = self.src, self.n
        while self.pos < n:
            c = src[self.pos]
            if c in " \t":
                self.pos += 1
            elif c == "\\" and src.startswith("\\\n", self.pos):
                self.pos += 2
            elif c == "#":
                end = src.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                break
        start = self.pos
        if start >= n:
            if self._heredocs:
                self._read_heredocs()
            return _Token("eof", "", n, n)
        c = src[start]
        if c == "\n":
            self.pos += 1
            self._read_heredocs()
            return _Token("newline", "\n", start, start + 1)
        if c in "<>" and src.startswith("(", start + 1):
            return self._word()
        if c in _METACHARS:
            for op in _OPERATORS:
                if src.startswith(op, start):
                    self.pos = start + len(op)
                    return _Token("op", op, start, self.pos, op)
        word = self._word()
        if word.raw.isdigit() and self.pos < n and src[self.pos] in "<>" and not src.startswith("(", self.pos + 1):
            for op in _OPERATORS:
                if op in _REDIRECT_OPS and not op.startswith("&") and src.startswith(op, self.pos):
                    self.pos += len(op)
                    return _Token("op", word.raw + op, start, self.pos, src[start:self.pos])
        return word

    # -- words ----------------------------------------------------------------------------------

    def _word(self) -> _Token:
        src, n = self.src, self.n
        start = self.pos
        out = _Out()
        subs: list[_Sub] = []
        i = start
        while i < n:
            c = src[i]
            if c in "<>" and i == start and src.startswith("(", i + 1):
                end = self._find_close(i + 2)
                subs.append(_Sub(c + "(", src[i + 2:end], i + 2))
                out.append(src[i:end + 1], i)
                i = end + 1
                continue
            if c == "(" and out and (out.last() in ("@", "!", "+", "*", "?") or _ASSIGNMENT.fullmatch(out.text())):
                end = self._find_close(i + 1)             # name=(array) or an extglob @(...)
                self._scan_code(src[i + 1:end], subs, i + 1)
                out.append(src[i:end + 1], i)
                i = end + 1
                continue
            if c in _METACHARS:
                break
            if c == "\\":
                if src.startswith("\n", i + 1):
                    i += 2
                elif i + 1 < n:
                    out.append(src[i + 1], i + 1)
                    i += 2
                else:
                    out.append("\\", i)
                    i += 1
            elif c == "'":
                end = src.find("'", i + 1)
                if end < 0:
                    self.error("unbalanced single quote")
                    end = n
                out.append(src[i + 1:end], i + 1)
                i = end + 1
            elif c == '"':
                i = self._double_quoted(i + 1, out, subs, terminator='"')
            elif c == "$" and src.startswith("'", i + 1):
                i = self._ansi_c(i + 2, out)
            elif c == "$" and src.startswith('"', i + 1):
                i = self._double_quoted(i + 2, out, subs, terminator='"')
            elif c == "$" or c == "`":
                i = self._expansion(i, out, subs)
            else:
                plain = _PLAIN.match(src, i)            # a run of plain characters at once, not one by one
                end = plain.end() if plain is not None else i + 1
                out.append(src[i:end], i)
                i = end
        self.pos = max(i, start + 1) if i == start else i
        if i == start:                       # a lone character no rule took: keep it as a word
            out.append(src[start], start)
        return _Token("word", out.text(), start, self.pos, src[start:self.pos], subs, out.positions)

    def _double_quoted(self, i: int, out: _Out, subs: list[_Sub], terminator: str | None) -> int:
        """Read a ``"..."`` body (or a here-document body when ``terminator`` is None)."""
        src, n = self.src, self.n
        while i < n:
            c = src[i]
            if terminator is not None and c == terminator:
                return i + 1
            if c == "\\" and i + 1 < n:
                nxt = src[i + 1]
                if nxt == "\n":
                    pass
                elif nxt in '$`"\\':
                    out.append(nxt, i + 1)
                else:
                    out.append(c + nxt, i)
                i += 2
            elif c == "$" or c == "`":
                i = self._expansion(i, out, subs)
            else:
                plain = _PLAIN_QUOTED.match(src, i)     # None: a quote in a here-document, or a last backslash
                end = plain.end() if plain is not None else i + 1
                out.append(src[i:end], i)
                i = end
        if terminator is not None:
            self.error("unbalanced double quote")
        return n

    def _ansi_c(self, i: int, out: _Out) -> int:
        """``$'...'``: decode the escapes, so ``$'\\x72m'`` reads as ``rm``."""
        src, n = self.src, self.n
        while i < n:
            c = src[i]
            if c == "'":
                return i + 1
            if c != "\\" or i + 1 >= n:
                out.append(c, i)
                i += 1
                continue
            e = src[i + 1]
            if e in _ANSI_C:
                out.append(_ANSI_C[e], i, verbatim=False)
                i += 2
                continue
            match = (re.compile(r"x([0-9a-fA-F]{1,2})").match(src, i + 1)
                     or re.compile(r"u([0-9a-fA-F]{1,4})").match(src, i + 1)
                     or re.compile(r"U([0-9a-fA-F]{1,8})").match(src, i + 1)
                     or re.compile(r"([0-7]{1,3})").match(src, i + 1))
            if match:
                base = 8 if match.group(0)[0] in "01234567" else 16
                code = int(match.group(1), base)
                out.append(chr(code) if code <= 0x10FFFF else "\ufffd", i, verbatim=False)
                i = match.end()
            elif e == "c" and i + 2 < n:
                out.append(chr(ord(src[i + 2]) & 0x1F), i, verbatim=False)
                i += 3
            else:
                out.append("\\" + e, i)
                i += 2
        self.error("unbalanced single quote")
        return n

    def _expansion(self, i: int, out: _Out, subs: list[_Sub]) -> int:
        """``$(...)``, ``$((...))``, ``${...}``, backticks, or a plain ``$``: kept literal."""
        src = self.src
        if src.startswith("$((", i):
            end = self._find_close(i + 2)
            out.append(src[i:end + 1], i)
            self._scan_code(src[i + 3:end], subs, i + 3)
            return end + 1
        if src.startswith("$(", i):
            end = self._find_close(i + 2)
            subs.append(_Sub("$(", src[i + 2:end], i + 2))
            out.append(src[i:end + 1], i)
            return end + 1
        if src.startswith("${", i):
            end = self._find_brace(i + 2, subs)
            out.append(src[i:end + 1], i)
            return end + 1
        if src[i] == "`":
            j, body = i + 1, []
            while j < self.n and src[j] != "`":
                if src[j] == "\\" and j + 1 < self.n and src[j + 1] in "`$\\":
                    body.append(src[j + 1])
                    j += 2
                else:
                    body.append(src[j])
                    j += 1
            if j >= self.n:
                self.error("unbalanced backquote")
            verbatim = "".join(body) == src[i + 1:j]
            subs.append(_Sub("`", "".join(body), i + 1 if verbatim else None))
            out.append(src[i:j + 1], i)
            return j + 1
        out.append("$", i)
        return i + 1

    def _find_close(self, i: int) -> int:
        """The index of the ``)`` that closes a ``(`` opened just before ``i``.

        Quotes, comments and here-document bodies inside are skipped, so the ``)`` in
        ``$(cat <<'EOF' ... :) ... EOF)`` does not end the substitution early.
        """
        src, n, depth = self.src, self.n, 1
        at_word_start = True
        delimiters: list[tuple[str, bool]] = []
        while i < n:
            c = src[i]
            if c == "\\":
                i += 2
                at_word_start = False
                continue
            if c == "'":
                end = src.find("'", i + 1)
                if end < 0:
                    break
                i = end + 1
            elif c == '"':
                i = self._skip_double(i + 1)
            elif c == "`":
                end = src.find("`", i + 1)
                if end < 0:
                    break
                i = end + 1
            elif c == "#" and at_word_start:
                end = src.find("\n", i)
                i = n if end < 0 else end
            elif c == "<" and src.startswith("<<", i) and not src.startswith("<<<", i):
                match = _HEREDOC_START.match(src, i)
                if match:
                    word = match.group(2).replace("'", "").replace('"', "").replace("\\", "")
                    delimiters.append((word, bool(match.group(1))))
                    i = match.end()
                else:
                    i += 2
            elif c == "\n" and delimiters:
                i = self._skip_heredoc_bodies(i + 1, delimiters)
                delimiters = []
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i
                i += 1
            else:
                i += 1
            at_word_start = c in " \t\n;|&("
        self.error("unbalanced parenthesis")
        return n

    def _skip_heredoc_bodies(self, i: int, delimiters: list[tuple[str, bool]]) -> int:
        src, n = self.src, self.n
        for word, strip_tabs in delimiters:
            while i < n:
                end = src.find("\n", i)
                line = src[i:n if end < 0 else end]
                i = n if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == word:
                    break
        return i

    def _skip_double(self, i: int) -> int:
        src, n = self.src, self.n
        while i < n:
            c = src[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif src.startswith("$(", i):
                i = self._find_close(i + 2) + 1
            else:
                i += 1
        return n

    def _find_brace(self, i: int, subs: list[_Sub]) -> int:
        """The ``}`` closing ``${``; commands hidden in ``${x:-$(cmd)}`` are recorded."""
        src, n, depth = self.src, self.n, 1
        while i < n:
            c = src[i]
            if c == "\\":
                i += 2
            elif c == "'":
                end = src.find("'", i + 1)
                i = n if end < 0 else end + 1
            elif c in "$`" and (src.startswith("$(", i) or c == "`"):
                i = self._expansion(i, _Out(), subs)
            elif c == "{":
                depth += 1
                i += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i
                i += 1
            else:
                i += 1
        self.error("unbalanced brace in ${...}")
        return n

    def _scan_code(self, text: str, subs: list[_Sub], at: int | None) -> None:
        """Record the substitutions inside arithmetic, array or here-document text (which the
        shell expands); ``at`` is where ``text`` starts in this lexer's source, if verbatim."""
        inner = _Lexer(text, self.budget)
        found: list[_Sub] = []
        inner._double_quoted(0, _Out(), found, terminator=None)
        for sub in found:
            sub.offset = None if at is None or sub.offset is None else at + sub.offset
        subs.extend(found)
        for message in inner.errors:
            self.error(message)

    # -- here-documents -------------------------------------------------------------------------

    def _read_heredocs(self) -> None:
        src, n = self.src, self.n
        for heredoc in self._heredocs:
            lines: list[str] = []
            heredoc.start = self.pos
            while self.pos < n:
                end = src.find("\n", self.pos)
                line = src[self.pos:n if end < 0 else end]
                self.pos = n if end < 0 else end + 1
                check = line.lstrip("\t") if heredoc.strip_tabs else line
                if check == heredoc.delimiter:
                    break
                lines.append(check)
            heredoc.body = "\n".join(lines) + ("\n" if lines else "")
            verbatim = src.startswith(heredoc.body, heredoc.start)
            if heredoc.expands:
                self._scan_code(heredoc.body, heredoc.subs, heredoc.start if verbatim else None)
            if not verbatim:
                heredoc.start = None
        self._heredocs = []


# ---------------------------------------------------------------------------------------------
# parsing


_Map = Callable[[int], "int | None"]


def _at_itself(position: int) -> int | None:
    return position


def _shift(base: _Map | None, offset: int | None) -> _Map | None:
    """Positions of a text written verbatim at ``offset`` in the text ``base`` maps."""
    if base is None or offset is None:
        return None
    return lambda position: base(offset + position)


def _through(base: _Map | None, positions: _Positions | None) -> _Map | None:
    """Positions of a word's value (``positions[i]``: where its character ``i`` is written)."""
    if base is None or positions is None:
        return None
    return lambda position: base(positions[position]) if 0 <= position < len(positions) else None


@dataclass
class _Scope:
    """Where a script being parsed sits: inherited by every command found in it."""

    construct: str = ""
    parent: str = ""
    depth: int = 0
    wrappers: tuple[str, ...] = ()
    where: _Map | None = None     # where each character of this script is written in the top-level text


@dataclass
class _Context:
    pipelines: itertools.count[int]
    budget: ReadBudget | None = None


@dataclass
class _Builder:
    """A simple command while it is being read."""

    start: int
    construct: str
    function: str
    pipeline: int
    piped_from: bool = False
    pipes_to: bool = False
    end: int = 0
    words: list[_Token] = field(default_factory=list)
    assignments: list[_Token] = field(default_factory=list)
    redirects: list[tuple[str, _Token, _Heredoc | None]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    hidden: bool = False          # a for/case header: only its substitutions run


@dataclass
class _Group:
    kind: str                     # "(" | "{" | "case"
    function: str = ""


class _Parser:
    def __init__(self, src: str, context: _Context) -> None:
        self.lexer = _Lexer(src, context.budget)
        self.src = src
        self.context = context
        self.builders: list[_Builder] = []
        self.stack: list[_Group] = []
        self.cur: _Builder | None = None
        self.pipeline = next(context.pipelines)
        self.next_piped = False
        self.pending_function = ""
        self.case_pattern = False
        self.closed_group = False     # the last token closed a ( ) or { } group
        self._peeked: _Token | None = None
        self.blocks: list[str] = []   # open if / loop bodies, to find an unclosed or stray fi / done
        self.after_list_op = False    # the last token was ; & && || (two in a row are an error)

    # -- token helpers --------------------------------------------------------------------------

    def next(self) -> _Token:
        if self._peeked is not None:
            token, self._peeked = self._peeked, None
            return token
        return self.lexer.next()

    def peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self.lexer.next()
        return self._peeked

    def error(self, message: str) -> None:
        self.lexer.error(message)

    def construct(self) -> str:
        for group in reversed(self.stack):
            if group.kind in "({":
                return group.kind
        return ""

    def function(self) -> str:
        return next((g.function for g in reversed(self.stack) if g.function), "")

    def builder(self, start: int) -> _Builder:
        if self.cur is None:
            self.cur = _Builder(start, self.construct(), self.function(), self.pipeline, piped_from=self.next_piped)
            self.next_piped = False
        return self.cur

    def finish(self, end: int | None = None) -> None:
        cur = self.cur
        if cur is None:
            return
        cur.end = end if end is not None else max(
            [t.end for t in cur.words + cur.assignments] + [t.end for _o, t, _h in cur.redirects] + [cur.start])
        if cur.words or cur.assignments or cur.redirects:
            self.builders.append(cur)
        self.cur = None

    def new_pipeline(self) -> None:
        self.finish()
        if self.next_piped:
            self.error("a pipe leads nowhere")
        self.next_piped = False
        self.pipeline = next(self.context.pipelines)

    # -- the loop -------------------------------------------------------------------------------

    def parse(self) -> list[_Builder]:
        while True:
            token = self.next()
            if token.kind == "eof":
                break
            if self.case_pattern and self.cur is None and self._case_pattern(token):
                continue
            closed_group, self.closed_group = self.closed_group, False
            if closed_group and token.kind == "op" and token.value in ("|", "|&"):
                self.closed_group = True
            if token.kind == "newline":
                self.new_pipeline()
            elif token.kind == "op":
                self._operator(token)
            else:
                self._word(token)
            self.after_list_op = token.kind == "op" and token.value in _LIST_OPS or (
                self.after_list_op and token.kind == "newline")
        self.finish()
        if self.next_piped:
            self.error("a pipe leads nowhere")
        for group in self.stack:
            self.error("unclosed " + {"(": "parenthesis", "{": "brace group", "case": "case"}[group.kind])
        for block in self.blocks:
            self.error(f"missing '{block}'")
        if self.lexer.errors:
            target = self.builders[-1] if self.builders else _Builder(0, "", "", self.pipeline, end=len(self.src))
            if not self.builders:
                self.builders.append(target)
            target.errors.extend(self.lexer.errors)
        return self.builders

    def _operator(self, token: _Token) -> None:
        op = token.value
        if op in _LIST_OPS:
            if self.cur is None and op in ("&&", "||") and (not self.builders or self.after_list_op):
                self.error(f"unexpected '{op}'")
            self.new_pipeline()
            if op in _CASE_ENDS:
                if self.stack and self.stack[-1].kind == "case":
                    self.case_pattern = True
                else:
                    self.error(f"unexpected '{op}'")
        elif op in ("|", "|&"):
            if self.cur is not None:
                self.cur.pipes_to = True
                self.finish()
            elif self.closed_group and self.builders:       # ( ... ) | sh
                self.builders[-1].pipes_to = True
            else:
                self.error(f"unexpected '{op}'")
                return
            self.next_piped = True
        elif op == "(":
            self._open_paren(token)
        elif op == ")":
            self.finish()
            if self.stack and self.stack[-1].kind == "(":
                self.stack.pop()
                self.closed_group = True
                return
            else:
                self.error("unexpected ')'")
        else:
            self._redirect(token)

    def _open_paren(self, token: _Token) -> None:
        cur = self.cur
        if cur is not None:
            if len(cur.words) == 1 and not cur.redirects and self.peek().value == ")":
                self.next()
                self.pending_function = cur.words[0].value
                self.cur = None                     # a function definition runs nothing itself
            else:
                self.error("unexpected '('")
            return
        if self.src.startswith("(", token.end):     # (( arithmetic ))
            self.lexer.pos = token.end + 1
            end = self.lexer._find_close(token.end + 1)
            subs: list[_Sub] = []
            self.lexer._scan_code(self.src[token.end + 1:end], subs, token.end + 1)
            self.lexer.pos = min(len(self.src), end + 2 if self.src.startswith("))", end) else end + 1)
            if subs:
                holder = self.builder(token.start)
                holder.hidden = True
                holder.words.append(_Token("word", "((", token.start, self.lexer.pos, "((", subs))
                self.finish()
            return
        self.stack.append(_Group("(", self.pending_function))
        self.pending_function = ""

    def _redirect(self, token: _Token) -> None:
        target = self.next()
        if target.kind != "word":
            self.error(f"no target after '{token.value}'")
            if target.kind != "eof":
                self._peeked = target
            return
        heredoc = None
        if token.value.lstrip("0123456789") in ("<<", "<<-"):
            heredoc = self.lexer.add_heredoc(target, strip_tabs=token.value.endswith("-"))
        self.builder(token.start).redirects.append((token.value, target, heredoc))

    def _word(self, token: _Token) -> None:
        if self.cur is None and self._reserved(token):
            return
        cur = self.builder(token.start)
        if not cur.words and _ASSIGNMENT.match(token.raw):
            cur.assignments.append(token)
        else:
            cur.words.append(token)

    def _reserved(self, token: _Token) -> bool:
        """Handle a word at the start of a command that is shell syntax rather than a program."""
        word = token.raw
        if word in _SKIPPED_WORDS:
            self._block_word(word)
            return True
        if word == "{":
            self.stack.append(_Group("{", self.pending_function))
            self.pending_function = ""
            return True
        if word == "}":
            if self.stack and self.stack[-1].kind == "{":
                self.stack.pop()
                self.closed_group = True
                return True
            else:
                self.error("unexpected '}'")
            return True
        if word == "esac":
            if self.stack and self.stack[-1].kind == "case":
                self.stack.pop()
                self.case_pattern = False
            else:
                self.error("unexpected 'esac'")
            return True
        if word in ("for", "select", "case"):
            self._header(token)
            return True
        if word == "function":
            name = self.next()
            self.pending_function = name.value
            if self.peek().value == "(":
                self.next()
                if self.next().value != ")":
                    self.error("bad function definition")
            return True
        if word == "[[":
            cur = self.builder(token.start)
            cur.words.append(token)
            while True:
                part = self.next()
                if part.kind in ("eof", "newline"):
                    self.error("unclosed '[['")
                    self._peeked = part
                    break
                cur.words.append(_Token("word", part.value, part.start, part.end, part.raw, part.subs))
                if part.kind == "word" and part.raw == "]]":
                    break
            return True
        return False

    def _block_word(self, word: str) -> None:
        """Keep count of ``if ... fi`` and ``do ... done``, as bash would insist."""
        if word == "if":
            self.blocks.append("fi")
        elif word in ("while", "until"):
            self.blocks.append("done")
        elif word == "do" and (not self.blocks or self.blocks[-1] != "done"):
            self.blocks.append("done")          # for / select: their header opened no block
        elif word in ("fi", "done"):
            if self.blocks and self.blocks[-1] == word:
                self.blocks.pop()
            else:
                self.error(f"unexpected '{word}'")

    def _header(self, token: _Token) -> None:
        """``for x in words``, ``select ...``, ``case word in``: only their substitutions run."""
        holder = self.builder(token.start)
        holder.hidden = True
        holder.words.append(token)
        is_case = token.raw == "case"
        while True:
            part = self.peek()
            if part.kind != "word" or (not is_case and part.raw == "do"):
                break
            self.next()
            holder.words.append(part)
            if is_case and part.raw == "in":
                break
        self.finish()
        if is_case:
            self.stack.append(_Group("case"))
            self.case_pattern = True

    def _case_pattern(self, token: _Token) -> bool:
        """Skip a case pattern up to its ``)``; return whether the token was consumed."""
        if token.kind == "newline" or (token.kind == "op" and token.value == ";"):
            return True
        if token.kind == "word" and token.raw == "esac":
            self.case_pattern = False
            return False
        self.case_pattern = False
        part = token
        while not (part.kind == "op" and part.value == ")"):
            if part.kind in ("eof", "newline"):
                self.error("unfinished case pattern")
                self._peeked = part
                return True
            part = self.next()
        return True


# ---------------------------------------------------------------------------------------------
# from builders to simple commands


def _parse_script(src: str, scope: _Scope, context: _Context) -> list[SimpleCommand]:
    if scope.depth > MAX_DEPTH:
        return [SimpleCommand((), src, scope.wrappers, construct=scope.construct, parent=scope.parent,
                              depth=scope.depth, parse_error="nested too deeply")]
    parser = _Parser(src, context)
    out: list[SimpleCommand] = []
    for builder in parser.parse():
        out.extend(_freeze(builder, src, scope, context))
    return out


def _freeze(b: _Builder, src: str, scope: _Scope, context: _Context) -> list[SimpleCommand]:
    text = src[b.start:b.end].strip(" \t\n")
    error = "; ".join(b.errors) or None
    construct = b.construct or scope.construct
    depth = scope.depth + (1 if b.construct else 0)
    base = scope.where

    def nest(subs: list[_Sub], parent: str, wrappers: tuple[str, ...]) -> list[SimpleCommand]:
        return _nested(subs, parent, depth, wrappers, context, base)

    if b.hidden:
        inside = [c for token in b.words for c in nest(token.subs, b.words[0].value, scope.wrappers)]
        if b.words[0].value in ("for", "select") and len(b.words) > 1 and re.fullmatch(r"[A-Za-z_]\w*",
                                                                                      b.words[1].value):
            # the loop sets its variable each time round: an assignment like NAME=value
            inside.append(SimpleCommand((), text, scope.wrappers, (f"{b.words[1].value}=",), construct=construct,
                                        depth=depth))
        if error:
            inside.append(SimpleCommand((), text, scope.wrappers, construct=construct, depth=depth, parse_error=error))
        return inside

    unwrapped = _unwrap([t.value for t in b.words])
    argv, wrappers = unwrapped.argv, list(unwrapped.wrappers)
    all_wrappers = scope.wrappers + tuple(wrappers)
    parent = argv[0].rsplit("/", 1)[-1] if argv else ""

    nested: list[SimpleCommand] = []
    redirects: list[Redirect] = []
    script, inner_construct = unwrapped.script, ("eval" if wrappers[-1:] == ["eval"] else "-c")
    script_at = _script_at(b, unwrapped, src, base)
    for op, target, heredoc in b.redirects:
        redirects.append(Redirect(op, target.value, heredoc.body if heredoc else None))
        nested += nest(target.subs, parent, all_wrappers)
        if heredoc is not None:
            nested += nest(heredoc.subs, parent, all_wrappers)
            if heredoc.body is not None and script is None and parent in SHELLS and _reads_stdin_script(argv):
                script, inner_construct = heredoc.body, "<<"
                script_at = _shift(base, heredoc.start)
                wrappers.append(f"{parent} <<")
        elif op == "<<<" and script is None and parent in SHELLS and _reads_stdin_script(argv):
            script, inner_construct = target.value, "<<"
            script_at = _through(base, target.positions) if target.value == script else None
            wrappers.append(f"{parent} <<<")
    if parent == "tee":
        append = any(a in ("-a", "--append") for a in argv[1:])
        redirects += [Redirect("tee -a" if append else "tee", word) for word in _operands(argv[1:])]
    for token in b.assignments:
        nested += nest(token.subs, parent, all_wrappers)
    for index, token in enumerate(b.words):
        if index not in unwrapped.script_words:
            nested += nest(token.subs, parent, all_wrappers)

    if script is not None:
        inner_scope = _Scope(inner_construct, parent if inner_construct == "<<" else "", depth + 1,
                             scope.wrappers + tuple(wrappers), script_at)
        kept = [r for r in redirects if r.body is None and not (r.op == "<<<" and r.target == script)]
        inner = [_inherit_io(c, b, kept, depth + 1) for c in _parse_script(script, inner_scope, context)]
        if error:
            inner.append(SimpleCommand((), text, inner_scope.wrappers, construct=construct, depth=depth,
                                       parse_error=error))
        return nested + inner

    command = SimpleCommand(
        argv=tuple(argv), text=text, wrappers=all_wrappers,
        assignments=tuple(t.value for t in b.assignments) + tuple(unwrapped.assignments),
        redirects=tuple(redirects), piped_from=b.piped_from, pipes_to=b.pipes_to, pipeline=b.pipeline,
        construct=construct, parent="" if b.construct else scope.parent, function=b.function, depth=depth,
        parse_error=error, span=_word_span(b, unwrapped.program, base))
    return nested + [command] + _find_exec(argv, depth, all_wrappers, context, b, unwrapped.program, base)


def _word_span(b: _Builder, index: int | None, base: _Map | None) -> tuple[int, int] | None:
    """The top-level offsets of ``b``'s word number ``index``, when both are known."""
    if base is None or index is None or not 0 <= index < len(b.words):
        return None
    token = b.words[index]
    start, last = base(token.start), base(token.end - 1)
    if start is None or last is None or last < start:
        return None
    return start, last + 1


def _script_at(b: _Builder, unwrapped: _Unwrapped, src: str, base: _Map | None) -> _Map | None:
    """Where the script of ``bash -c SCRIPT`` / ``eval WORDS`` is written, character by character."""
    if unwrapped.script is None or not unwrapped.script_words or base is None:
        return None
    indexes = sorted(unwrapped.script_words)
    if indexes[-1] >= len(b.words) or indexes[0] < 0:
        return None
    if len(indexes) == 1:
        word = b.words[indexes[0]]
        return _through(base, word.positions) if word.value == unwrapped.script else None
    first, last = b.words[indexes[0]], b.words[indexes[-1]]
    return _shift(base, first.start) if src[first.start:last.end] == unwrapped.script else None


def _inherit_io(inner: SimpleCommand, b: _Builder, redirects: list[Redirect], depth: int) -> SimpleCommand:
    """The top-level commands of an unwrapped ``bash -c`` keep the outer pipe and redirections."""
    if inner.depth != depth or not (b.piped_from or b.pipes_to or redirects):
        return inner
    return replace(inner, piped_from=inner.piped_from or b.piped_from, pipes_to=inner.pipes_to or b.pipes_to,
                   pipeline=b.pipeline if (b.piped_from or b.pipes_to) else inner.pipeline,
                   redirects=inner.redirects + tuple(redirects))


def _nested(subs: list[_Sub], parent: str, depth: int, wrappers: tuple[str, ...],
            context: _Context, base: _Map | None = None) -> list[SimpleCommand]:
    out: list[SimpleCommand] = []
    for sub in subs:
        scope = _Scope(sub.construct, parent, depth + 1, wrappers, _shift(base, sub.offset))
        out += _parse_script(sub.source, scope, context)
    return out


def _find_exec(argv: list[str], depth: int, wrappers: tuple[str, ...], context: _Context,
               b: _Builder | None = None, program: int | None = None,
               base: _Map | None = None) -> list[SimpleCommand]:
    """``find ... -exec cmd {} ;`` runs ``cmd``: return it as a command of its own."""
    if not argv or argv[0].rsplit("/", 1)[-1] not in ("find", "gfind"):
        return []
    out: list[SimpleCommand] = []
    i = 1
    while i < len(argv):
        if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            inner = argv[i + 1:j]
            if inner:
                unwrapped = _unwrap(inner)
                word = None if program is None or unwrapped.program is None else program + i + 1 + unwrapped.program
                out.append(SimpleCommand(tuple(unwrapped.argv), shlex.join(inner),
                                         wrappers + tuple(unwrapped.wrappers), tuple(unwrapped.assignments),
                                         pipeline=next(context.pipelines), construct="-exec", parent="find",
                                         depth=depth + 1,
                                         span=_word_span(b, word, base) if b is not None else None))
                if unwrapped.script is not None:
                    out += _parse_script(unwrapped.script, _Scope("-c", "", depth + 2, wrappers +
                                                                  tuple(unwrapped.wrappers)), context)
            i = j + 1
        else:
            i += 1
    return out


# ---------------------------------------------------------------------------------------------
# unwrapping prefixes


@dataclass
class _Unwrapped:
    argv: list[str]
    wrappers: list[str]
    assignments: list[str]
    script: str | None = None        # a shell script the command runs (bash -c, eval, su -c)
    script_words: frozenset[int] = frozenset()   # which of the original words hold that script
    program: int | None = None       # which of the original words names the program, if known


# Options that take a value, for each wrapper; every other option is a flag.
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset("-u -g -h -p -C -U -r -t -T -D --user --group --host --prompt --close-from "
                      "--other-user --role --type --command-timeout --chdir --chroot".split()),
    "doas": frozenset("-u -C".split()),
    "pkexec": frozenset("--user".split()),
    "run0": frozenset("-u --user -g --group -D --chdir --setenv --unit --property --description "
                      "--slice --nice".split()),
    "env": frozenset("-u --unset -C --chdir -S --split-string".split()),
    "xargs": frozenset("-I -i -n -L -l -P -d -E -e -s -a --max-args --max-lines --max-procs --delimiter "
                       "--eof --max-chars --arg-file --replace --process-slot-var".split()),
    "nice": frozenset("-n --adjustment".split()),
    "ionice": frozenset("-c -n --class --classdata".split()),
    "timeout": frozenset("-s -k --signal --kill-after".split()),
    "stdbuf": frozenset("-i -o -e --input --output --error".split()),
    "time": frozenset("-f -o --format --output".split()),
    "exec": frozenset("-a".split()),
    "watch": frozenset("-n --interval -q --equexit".split()),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "command": frozenset(),
    "builtin": frozenset(),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
    "busybox": frozenset(),         # multi-call binaries: ``busybox rm -rf x`` runs rm
    "toybox": frozenset(),
}
_NO_UNWRAP_FLAGS = {
    "command": ("-v", "-V"),          # lookups: nothing runs
    "sudo": ("-l", "--list", "-v", "--validate", "-k", "-K", "-e", "--edit", "-h", "--help", "-V"),
    "pkexec": ("--version", "--help"),
}


def _unwrap(argv: list[str]) -> _Unwrapped:
    """Strip ``sudo``, ``env`` and friends; find the script of ``bash -c`` / ``eval`` / ``su -c``."""
    wrappers: list[str] = []
    assignments: list[str] = []
    offset = 0          # how many of the original words were stripped (unknown after env -S)
    for _round in range(16):
        if not argv:
            break
        name = argv[0].rsplit("/", 1)[-1]
        if name in ("nice", "ionice") and len(argv) > 2 and re.fullmatch(r"-\d+", argv[1]):
            argv, offset = argv[2:], offset + 2
            wrappers.append(name)
            continue
        if name in _VALUE_OPTIONS:
            rest, assigned = _after_options(name, argv)
            if not rest:
                break
            # each option given to the wrapper, as ``"time -o"``: the reader judges the wrapper's
            # options too (``time -o FILE`` writes FILE), so none may vanish with the unwrapping
            options = argv[1:len(argv) - len(rest)]
            given = [f"{name} {word.split('=', 1)[0]}" for word in options
                     if word.startswith("-") and len(word) > 1 and word != "--"]
            if name == "watch" and not {"-x", "--exec"} & set(options):
                # watch runs its words joined by spaces through ``sh -c``: they are read as that line
                at = offset + len(options) + 1
                return _Unwrapped([], [*wrappers, "watch -c", *given], assignments, " ".join(rest),
                                  frozenset(range(at, at + len(rest))))
            wrappers += [name, *given]
            split_string = name == "env" and any(w in ("-S", "--split-string") or w.startswith("--split-string=")
                                                 for w in argv[1:len(argv) - len(rest) + 2])
            offset = -10 ** 6 if split_string else offset + len(argv) - len(rest)
            assignments += assigned
            argv = rest
            continue
        script: tuple[int, str] | None = None
        if name in SHELLS:
            script = _shell_script(argv)
            label = f"{name} -c"
        elif name == "eval" and len(argv) > 1:
            script, label = (1, " ".join(argv[1:])), "eval"
        elif name == "su":
            script, label = _su_script(argv), "su"
        if script is not None:
            index, text = script
            words = range(offset + index, offset + (len(argv) if label == "eval" else index + 1))
            return _Unwrapped([], wrappers + [label], assignments, text, frozenset(words))
        break
    return _Unwrapped(argv, wrappers, assignments, program=offset if offset >= 0 else None)


def _su_script(argv: list[str]) -> tuple[int, str] | None:
    for i, word in enumerate(argv[1:], 1):
        if word in ("-c", "--command") and i + 1 < len(argv):
            return i + 1, argv[i + 1]
        if word.startswith("--command="):
            return i, word.split("=", 1)[1]
    return None


def _after_options(name: str, argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """The words after a wrapper's options (and, for sudo / env, its ``VAR=x`` words).

    ``None`` when the wrapper runs no command (``sudo -l``, ``command -v x``).
    """
    values = _VALUE_OPTIONS[name]
    assigned: list[str] = []
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in _NO_UNWRAP_FLAGS.get(name, ()):
            return None, []
        if word == "--":
            i += 1
            break
        if name == "env" and word in ("-S", "--split-string") and i + 1 < len(argv):
            return _split(argv[i + 1]) + argv[i + 2:], assigned
        if name == "env" and word.startswith("--split-string="):
            return _split(word.split("=", 1)[1]) + argv[i + 1:], assigned
        if name == "env" and word == "-":
            i += 1
        elif word.startswith("-") and len(word) > 1:
            i += 2 if word in values else 1     # "-u root" vs "-uroot", "--user=root", "-E"
        elif name == "timeout":
            i += 1                              # the duration
            break
        elif name in ("sudo", "env", "doas", "run0") and _ASSIGNMENT.match(word):
            assigned.append(word)
            i += 1
        else:
            break
    return argv[i:], assigned


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _shell_script(argv: list[str]) -> tuple[int, str] | None:
    """For ``bash [options] -c SCRIPT``: SCRIPT's index and text."""
    has_c = False
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word.startswith("--"):
            if word == "--command":
                has_c = True
            i += 1
            continue
        if word[:1] in "-+" and len(word) > 1:
            if "c" in word[1:]:
                has_c = True
            i += 1
            continue
        break
    if has_c and i < len(argv):
        return i, argv[i]
    return None


def _reads_stdin_script(argv: list[str]) -> bool:
    """A shell with no script file reads its script from stdin (``bash``, ``bash -s arg``)."""
    for word in argv[1:]:
        if word == "-s" or (word.startswith("-") and not word.startswith("--") and "s" in word[1:]):
            return True
        if not word.startswith(("-", "+")):
            return False
    return True


def _operands(words: list[str]) -> list[str]:
    out, done = [], False
    for word in words:
        if not done and word == "--":
            done = True
        elif done or not word.startswith("-") or word == "-":
            out.append(word)
    return out
