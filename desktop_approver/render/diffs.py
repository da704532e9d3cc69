"""A diff model built from a request's preview: hunks, numbered lines, changed words.

Three sources feed one model so the renderer has a single shape to draw:

* old and new text (a ``diff`` preview with ``old``/``new``, or a ``file_write``),
* a unified diff string (``git diff``, ``diff -u``, a patch; several files at once),
* nothing readable: binary content is detected and never turned into text lines.

The full old and new texts are kept when known (``FileDiff.old_text``/``new_text``) so the
highlighter can colour each line in the context of its whole file.

A long pair of texts can be diffed as it is read (``from_texts(..., streaming=True)``): the lines
are matched in order, so the first hunk's first lines exist long before the last line is diffed,
and ``FileDiff.diff_more`` goes on from there. A hunk still open says so (``Hunk.complete``);
its header's counts, the file's totals and the "No changes" note are final only once
``FileDiff.complete``. Every line produced is final: the streamed diff is the same as the whole one.
Qt-free, standard library only.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from difflib import Match, SequenceMatcher
from typing import Any, Literal

LineKind = Literal["context", "add", "del"]
Status = Literal["modified", "added", "deleted", "binary"]

CONTEXT_LINES = 3
# Pairs of lines that share less than this are simply different lines: marking "changed words"
# in them would colour everything and help nobody.
MIN_WORD_SIMILARITY = 0.35
# A region without unique lines (all blank, all ``}``) larger than this is matched with difflib's
# junk heuristic, which stays fast where an exact match would not.
EXACT_REGION_LIMIT = 2000

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_WORDS = re.compile(r"\w+")
_FUNCNAME = re.compile(r"^[A-Za-z_$]")
# Control characters that text does not hold (all but \b \t \n \f \r and ESC), and U+FFFD (a failed decode).
_BINARY_CHARACTER = re.compile("[\x00-\x07\x0b\x0e-\x1a\x1c-\x1f\ufffd]")


@dataclass
class DiffLine:
    """One line of a hunk; ``intraline`` holds ``(start, end)`` spans of changed words."""

    kind: LineKind
    old_no: int | None
    new_no: int | None
    text: str
    intraline: list[tuple[int, int]] = field(default_factory=list)
    missing_newline: bool = False  # last line of its side, with no newline after it


class Hunk:
    """A run of changed lines with their context.

    Changed words are marked the first time ``lines`` is read, so a 10,000-line diff only pays
    for the hunks someone looks at. ``old_start``/``new_start`` are the numbers of the header
    (``None`` when the header had no ranges).
    """

    def __init__(self, header: str, old_start: int | None, new_start: int | None,
                 lines: list[DiffLine], section: str = "", *, complete: bool = True) -> None:
        self.header = header
        self.old_start = old_start
        self.new_start = new_start
        self.section = section  # the text after the second ``@@`` (the enclosing function)
        self.complete = complete  # False while a streamed diff is still adding lines to it
        self._lines = lines
        self._marked = False
        self._marked_blocks: set[int] = set()  # starts of change blocks already marked
        self._marked_pairs: dict[int, set[int]] = {}  # in a large block (by its start): pairs marked
        self._blocks: list[int] | None = None  # the starts of the change blocks, once a line is asked for
        self._blocks_for = 0                   # (for this many lines: a streamed hunk grows)
        self._block_bounds: dict[int, tuple[int, int, int]] = {}

    def _extend(self, lines: list[DiffLine]) -> None:
        """Append whole change blocks (a streamed diff adds one opcode's lines at a time)."""
        if self._marked:
            add_intraline(lines)
        self._lines.extend(lines)

    @property
    def lines(self) -> list[DiffLine]:
        if not self._marked:
            add_intraline(self._lines)
            self._marked = True
            self._marked_blocks.clear()
            self._marked_pairs.clear()
        return self._lines

    def line(self, index: int) -> DiffLine:
        """Line ``index`` with its changed words marked: those of its own change block when the block
        is small, else of the one line it is paired with (by position, as large blocks are paired).

        A renderer drawing a screenful of a 10,000-line hunk pays for those lines only: a bounded
        amount of work a row, however long the block.
        """
        line = self._lines[index]
        if self._marked or line.kind == "context":
            return line
        start, middle, end = self._block_of(index)
        if start in self._marked_blocks:
            return line
        removed, added = middle - start, end - middle
        if removed * added <= PAIR_BY_SIMILARITY_OVER:
            add_intraline(self._lines[start:end])
            self._marked_blocks.add(start)
            return line
        offset = index - start if index < middle else index - middle
        if offset < min(removed, added) and offset not in self._marked_pairs.setdefault(start, set()):
            old, new = self._lines[start + offset], self._lines[middle + offset]
            old.intraline, new.intraline = word_spans(old.text, new.text)
            self._marked_pairs[start].add(offset)
        return line

    def _block_of(self, index: int) -> tuple[int, int, int]:
        """The change block holding line ``index``: its start, its first added line, its end."""
        if self._blocks is None or self._blocks_for != len(self._lines):
            starts: list[int] = []
            lines = self._lines
            for at in range(len(lines)):
                kind = lines[at].kind
                if kind != "context" and (at == 0 or lines[at - 1].kind == "context"
                                          or (kind == "del" and lines[at - 1].kind == "add")):
                    starts.append(at)
            self._blocks, self._blocks_for = starts, len(lines)
            self._block_bounds = {}
        start = self._blocks[bisect_right(self._blocks, index) - 1]
        bounds = self._block_bounds.get(start)
        if bounds is None:
            middle = start
            while middle < len(self._lines) and self._lines[middle].kind == "del":
                middle += 1
            end = middle
            while end < len(self._lines) and self._lines[end].kind == "add":
                end += 1
            bounds = self._block_bounds[start] = (start, middle, end)
        return bounds

    @property
    def plain_lines(self) -> list[DiffLine]:
        """The lines without computing changed words (for counting and layout)."""
        return self._lines

    def __len__(self) -> int:
        """The number of lines, without marking changed words."""
        return len(self._lines)

    @property
    def added(self) -> int:
        return sum(1 for line in self._lines if line.kind == "add")

    @property
    def removed(self) -> int:
        return sum(1 for line in self._lines if line.kind == "del")

    def __repr__(self) -> str:
        return f"Hunk({self.header!r}, {len(self._lines)} lines)"


@dataclass(eq=False)
class FileDiff:
    """The change to one file. Compared by identity, so renderers can cache per diff."""

    path: str | None
    status: Status
    hunks: list[Hunk] = field(default_factory=list)
    old_missing_newline: bool = False
    new_missing_newline: bool = False
    old_path: str | None = None  # set when the file was renamed
    notes: list[str] = field(default_factory=list)
    old_text: str | None = None
    new_text: str | None = None
    streamed: bool = False  # built with ``streaming=True`` (then ``_stream`` is set until complete)
    _stream: _DiffStream | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        """Whether every line is diffed (always, unless built with ``streaming=True``)."""
        return self._stream is None

    @property
    def lines_diffed(self) -> int:
        return sum(len(hunk) for hunk in self.hunks)

    def diff_more(self, lines: int) -> bool:
        """Diff at least ``lines`` more lines (fewer at the end); whether the diff is complete."""
        if self._stream is not None and self._stream.advance(lines):
            self._stream = None
        return self._stream is None

    def finish(self) -> None:
        """Diff whatever is left."""
        while not self.diff_more(1 << 30):
            pass

    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks)


# -- building -----------------------------------------------------------------------------------

STREAM_OVER_LINES = 2000  # old and new texts longer than this together are diffed as they are read


def read_in_steps(preview: Mapping[str, Any] | None) -> bool:
    """Whether the dialog reads this preview's diff a step at a time (its warnings come when it is
    read to its end): such a call is approved only in the dialog, once it is read."""
    if not preview or preview.get("kind") not in ("diff", "file_write"):
        return False
    try:
        return not all(diff.complete for diff in from_preview(preview, stream_over=STREAM_OVER_LINES))
    except (ValueError, TypeError, AttributeError):
        return False


def from_preview(preview: Mapping[str, Any], *, stream_over: int | None = None) -> list[FileDiff]:
    """The diffs of a ``diff`` or ``file_write`` preview (a unified diff may hold several files).

    Old and new texts of more than ``stream_over`` lines together are diffed as they are read
    (``from_texts(streaming=True)``): the caller asks for more with ``FileDiff.diff_more``.
    """
    kind = preview.get("kind")
    path = preview.get("path")

    def streaming(*texts: Any) -> bool:
        lines = sum(text.count("\n") for text in texts if isinstance(text, str))
        return stream_over is not None and lines > stream_over

    if kind == "file_write":
        content = preview.get("content") or ""
        diff = from_texts(path, preview.get("old"), content, streaming=streaming(preview.get("old"), content))
        if preview.get("old") is None and diff.status != "binary":
            diff.notes.append("No current content was sent: the file is new, or it could not be read.")
        return [diff]
    if kind != "diff":
        raise ValueError(f"not a diff preview: {kind!r}")
    if preview.get("unified") is not None:
        return parse_unified(preview["unified"], path=path)
    old, new = preview.get("old"), preview.get("new")
    if old is None and new is None:
        return [FileDiff(path, "modified", notes=["The preview has neither old and new text nor a unified diff."])]
    return [from_texts(path, old, new, streaming=streaming(old, new))]


def from_texts(path: str | None, old: str | None, new: str | None, *,
               context: int = CONTEXT_LINES, streaming: bool = False) -> FileDiff:
    """Diff two texts; ``old=None`` is a new file and ``new=None`` a deleted one.

    With ``streaming`` only what the first :meth:`FileDiff.diff_more` asks for is diffed; the
    rest follows as more is asked for.
    """
    status: Status = "added" if old is None else "deleted" if new is None else "modified"
    if (old is not None and is_binary(old)) or (new is not None and is_binary(new)):
        notes = [_binary_note(old, new)]
        if status != "modified":
            notes.insert(0, "New file." if status == "added" else "Deleted file.")
        return FileDiff(path, "binary", notes=notes)
    diff = FileDiff(path, status, old_text=old, new_text=new, streamed=streaming)
    diff._stream = _DiffStream(diff, old, new, context)
    if not streaming:
        diff.finish()
    return diff


class _DiffStream:
    """The hunks of two texts, produced in order, a change block at a time.

    Opcodes come from :meth:`LineMatcher.iter_opcodes`; they are grouped into hunks as difflib's
    ``get_grouped_opcodes`` does (``context`` lines around each change, a gap of more than twice
    that starts a new hunk), but without waiting for the last one.
    """

    def __init__(self, diff: FileDiff, old: str | None, new: str | None, context: int) -> None:
        self.diff = diff
        self.context = context
        self.old_lines, old_missing = split_lines(old or "")
        self.new_lines, new_missing = split_lines(new or "")
        old_missing = old_missing and old is not None
        new_missing = new_missing and new is not None
        diff.old_missing_newline, diff.new_missing_newline = old_missing, new_missing
        self.old_last = len(self.old_lines) if old_missing else None
        self.new_last = len(self.new_lines) if new_missing else None
        # The last line without a newline must not match the same text with one.
        old_keys = self.old_lines[:-1] + [self.old_lines[-1] + "\0"] if old_missing else self.old_lines
        new_keys = self.new_lines[:-1] + [self.new_lines[-1] + "\0"] if new_missing else self.new_lines
        self.opcodes = LineMatcher(old_keys, new_keys).iter_opcodes()
        self.ahead: tuple[str, int, int, int, int] | None = next(self.opcodes, None)
        self.first = True
        self.hunk: Hunk | None = None  # the open hunk
        self.hunk_from = (0, 0)  # where the open hunk starts in the old and new lines

    def advance(self, lines: int) -> bool:
        """Add at least ``lines`` diff lines (or all that are left); True when done."""
        target = self.diff.lines_diffed + lines
        while self.ahead is not None:
            tag, i1, i2, j1, j2 = self.ahead
            self.ahead = next(self.opcodes, None)
            if tag == "equal":
                if self.first:
                    i1, j1 = max(i1, i2 - self.context), max(j1, j2 - self.context)
                if self.ahead is None:
                    i2, j2 = min(i2, i1 + self.context), min(j2, j1 + self.context)
            self.first = False
            if tag == "equal" and i2 - i1 > 2 * self.context:
                if self.hunk is not None:  # context after the change, then a gap
                    self._add("equal", i1, i1 + self.context, j1, j1 + self.context)
                    self._close()
                i1, j1 = max(i1, i2 - self.context), max(j1, j2 - self.context)
            if tag == "equal" and self.hunk is None and self.ahead is None:
                break  # only context left: no change follows
            self._add(tag, i1, i2, j1, j2)
            if self.diff.lines_diffed >= target and self.ahead is not None:
                return False
        if self.hunk is not None:
            self._close()
        if not self.diff.hunks and self.diff.status == "modified":
            self.diff.notes.append("No changes: the old and new text are identical.")
        return True

    def _add(self, tag: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if self.hunk is None:
            section = _section(self.old_lines, i1)
            self.hunk = Hunk(f"@@ -{i1 + 1},… +{j1 + 1},… @@" + (f" {section}" if section else ""),
                             i1 + 1, j1 + 1, [], section, complete=False)
            self.hunk_from = (i1, j1)
            self.diff.hunks.append(self.hunk)
        old_lines, new_lines = self.old_lines, self.new_lines
        if tag == "equal":
            lines = [DiffLine("context", i + 1, j1 + (i - i1) + 1, old_lines[i]) for i in range(i1, i2)]
        else:
            lines = [DiffLine("del", i + 1, None, old_lines[i]) for i in range(i1, i2)]
            lines.extend(DiffLine("add", None, j + 1, new_lines[j]) for j in range(j1, j2))
        _mark_missing_newlines(lines, self.old_last, self.new_last)
        self.hunk._extend(lines)

    def _close(self) -> None:
        hunk = self.hunk
        assert hunk is not None
        i1, j1 = self.hunk_from
        lines = hunk.plain_lines
        old_count = sum(1 for line in lines if line.kind != "add")
        new_count = sum(1 for line in lines if line.kind != "del")
        hunk.old_start = i1 + 1 if old_count else i1
        hunk.new_start = j1 + 1 if new_count else j1
        header = f"@@ -{_range(hunk.old_start, old_count)} +{_range(hunk.new_start, new_count)} @@"
        hunk.header = header + (f" {hunk.section}" if hunk.section else "")
        hunk.complete = True
        self.hunk = None


def parse_unified(text: str, *, path: str | None = None) -> list[FileDiff]:
    """Parse a unified diff (git or plain ``diff -u``; one or more files; lenient about counts).

    Understands ``/dev/null`` (new and deleted files), ``new file mode``/``deleted file mode``,
    renames, ``\\ No newline at end of file``, ``Binary files ... differ`` and ``GIT binary patch``
    (whose data is skipped). Hunk headers without line ranges (``@@`` alone, as some agents write
    them) are accepted; their lines then carry no numbers.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[FileDiff] = []
    current: FileDiff | None = None
    seen_file_header = False  # whether ``current`` already got its ``---``/``+++`` pair
    i = 0

    def start(file_path: str | None) -> FileDiff:
        nonlocal current, seen_file_header
        current = FileDiff(file_path, "modified")
        files.append(current)
        seen_file_header = False
        return current

    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            old_name, new_name = _git_header_paths(line[len("diff --git "):])
            diff = start(new_name or path)
            if old_name and new_name and old_name != new_name:
                diff.old_path = old_name
            i += 1
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is None or seen_file_header or current.hunks:
                start(None)
            assert current is not None
            old_name = _patch_path(line[4:])
            new_name = _patch_path(lines[i + 1][4:])
            if old_name is None:
                current.status = "added"
            elif new_name is None:
                current.status = "deleted"
            if current.path is None:
                current.path = new_name or old_name or path
            if old_name and new_name and old_name != new_name and current.old_path is None:
                current.old_path = old_name
            seen_file_header = True
            i += 2
        elif line.startswith("@@"):
            diff = current if current is not None else start(path)
            hunk, i = _parse_hunk(lines, i)
            diff.hunks.append(hunk)
            for hunk_line in hunk.plain_lines:
                if hunk_line.missing_newline:
                    diff.old_missing_newline |= hunk_line.kind in ("del", "context")
                    diff.new_missing_newline |= hunk_line.kind in ("add", "context")
        elif current is not None and not current.hunks and _apply_extended_header(current, line):
            i += 1
        elif line.startswith("Binary files ") and line.endswith(" differ"):
            diff = current if current is not None and not current.hunks else start(path)
            _make_binary(diff, line[len("Binary files "):-len(" differ")])
            i += 1
        elif line == "GIT binary patch":
            diff = current if current is not None else start(path)
            _make_binary(diff, None)
            i += 1
            while i < len(lines) and not lines[i].startswith("diff --git "):
                i += 1
        else:
            i += 1  # commit message, ``index`` line, trailing noise
    return files


def split_lines(text: str) -> tuple[list[str], bool]:
    """Lines of ``text`` split on ``\\n`` only, and whether the last one lacks a newline.

    Only ``\\n`` ends a line here: ``str.splitlines`` would also break on ``\\x0b``, ``\\x1c``
    or U+2028, which would hide those characters instead of showing them.
    """
    if not text:
        return [], False
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return lines, False
    return lines, True


def is_binary(text: str) -> bool:
    """Whether text is really binary data: a NUL byte, or mostly control characters."""
    if "\0" in text:
        return True
    sample = text[:8192]
    if not sample:
        return False
    return len(_BINARY_CHARACTER.findall(sample)) / len(sample) > 0.1


# -- matching lines -----------------------------------------------------------------------------

class LineMatcher(SequenceMatcher[str]):
    """difflib's opcodes over a patience-style matching of lines.

    Plain ``SequenceMatcher`` looks for the longest common block again and again, which turns
    quadratic on a long file with many small changes (10,000 lines, a change every 10: seconds).
    Anchoring on lines that occur once on each side, in order (the longest increasing run),
    and matching only the gaps between anchors stays near-linear and aligns code on its
    distinctive lines (``def``s) rather than on blank lines and braces.
    """

    # SequenceMatcher's own attributes, which typeshed leaves out (they are not documented API).
    a: list[str]
    b: list[str]
    matching_blocks: list[Match] | None

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, [], [], autojunk=False)
        # Set directly: ``set_seqs`` would index every line of ``b`` for difflib's own matching,
        # which this class replaces (a few milliseconds before a long diff's first line).
        self.a, self.b = a, b

    def get_matching_blocks(self) -> list[Match]:
        if self.matching_blocks is None:
            self.matching_blocks = [*self.iter_blocks(), Match(len(self.a), len(self.b), 0)]
        return self.matching_blocks

    def iter_blocks(self) -> Iterator[Match]:
        """The matching blocks in order (without the final empty one), each as soon as it ends."""
        block: Match | None = None
        for i, j in _match_region(self.a, self.b, 0, len(self.a), 0, len(self.b)):
            if block is not None and block.a + block.size == i and block.b + block.size == j:
                block = Match(block.a, block.b, block.size + 1)
                continue
            if block is not None:
                yield block
            block = Match(i, j, 1)
        if block is not None:
            yield block

    def iter_opcodes(self) -> Iterator[tuple[str, int, int, int, int]]:
        """``get_opcodes`` as a generator: each opcode as soon as the lines up to its end are matched."""
        i = j = 0
        for ai, bj, size in self.iter_blocks():
            if i < ai and j < bj:
                yield "replace", i, ai, j, bj
            elif i < ai:
                yield "delete", i, ai, j, bj
            elif j < bj:
                yield "insert", i, ai, j, bj
            i, j = ai + size, bj + size
            yield "equal", ai, i, bj, j
        if i < len(self.a) and j < len(self.b):
            yield "replace", i, len(self.a), j, len(self.b)
        elif i < len(self.a):
            yield "delete", i, len(self.a), j, len(self.b)
        elif j < len(self.b):
            yield "insert", i, len(self.a), j, len(self.b)


def _match_region(a: list[str], b: list[str], alo: int, ahi: int, blo: int,
                  bhi: int) -> Iterator[tuple[int, int]]:
    """The matched (i, j) line pairs of a[alo:ahi] and b[blo:bhi], in order, as they are found."""
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        yield alo, blo
        alo, blo = alo + 1, blo + 1
    tail = 0
    while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    ahi, bhi = ahi - tail, bhi - tail
    if alo < ahi and blo < bhi:
        anchors = _unique_anchors(a, b, alo, ahi, blo, bhi)
        if anchors:
            i0, j0 = alo, blo
            for i, j in anchors:
                yield from _match_region(a, b, i0, i, j0, j)
                yield i, j
                i0, j0 = i + 1, j + 1
            yield from _match_region(a, b, i0, ahi, j0, bhi)
        else:
            region = SequenceMatcher(None, a[alo:ahi], b[blo:bhi],
                                     autojunk=max(ahi - alo, bhi - blo) > EXACT_REGION_LIMIT)
            for block in region.get_matching_blocks():
                for k in range(block.size):
                    yield alo + block.a + k, blo + block.b + k
    for k in range(tail):
        yield ahi + k, bhi + k


def _unique_anchors(a: list[str], b: list[str], alo: int, ahi: int, blo: int,
                    bhi: int) -> list[tuple[int, int]]:
    """Lines unique on both sides, as the longest run whose positions increase on both."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if count_b[b[j]] == 1}
    candidates = [(i, where_b[a[i]]) for i in range(alo, ahi)
                  if count_a[a[i]] == 1 and a[i] in where_b]
    if all(j < k for (_i, j), (_h, k) in itertools.pairwise(candidates)):
        return candidates  # already in order on both sides (the usual edit): the run is all of them
    # Longest increasing subsequence of the b positions (patience sorting).
    tops: list[int] = []
    top_index: list[int] = []
    previous: list[int] = []
    for n, (_i, j) in enumerate(candidates):
        k = bisect_left(tops, j)
        previous.append(top_index[k - 1] if k else -1)
        if k == len(tops):
            tops.append(j)
            top_index.append(n)
        else:
            tops[k] = j
            top_index[k] = n
    chain = []
    n = top_index[-1] if top_index else -1
    while n >= 0:
        chain.append(candidates[n])
        n = previous[n]
    return chain[::-1]


# -- changed words ------------------------------------------------------------------------------

def add_intraline(lines: list[DiffLine]) -> None:
    """Pair removed and added lines in each change block and mark their changed words."""
    i = 0
    while i < len(lines):
        if lines[i].kind != "del":
            i += 1
            continue
        dels_start = i
        while i < len(lines) and lines[i].kind == "del":
            i += 1
        adds_start = i
        while i < len(lines) and lines[i].kind == "add":
            i += 1
        for old, new in pair_changed_lines(lines[dels_start:adds_start], lines[adds_start:i]):
            old.intraline, new.intraline = word_spans(old.text, new.text)


PAIR_BY_SIMILARITY_OVER = 1600  # removed × added lines of a block: more are paired by position


def pair_changed_lines(removed: list[DiffLine], added: list[DiffLine]) -> list[tuple[DiffLine, DiffLine]]:
    """Which removed line became which added line, in order, by shared words.

    Pairing by position alone would match ``if name.endswith(...)`` with an unrelated line that
    happens to sit at the same index and mark half of both as changed. Large blocks (where the
    quadratic search would cost) fall back to pairing by position.
    """
    if len(removed) * len(added) > PAIR_BY_SIMILARITY_OVER:
        return list(zip(removed, added, strict=False))  # by position; the longer side's tail stays unpaired
    pairs = []
    next_add = 0
    for old in removed:
        best, best_score = None, MIN_WORD_SIMILARITY
        for j in range(next_add, len(added)):
            score = line_similarity(old.text, added[j].text)
            if score > best_score:
                best, best_score = j, score
        if best is not None:
            pairs.append((old, added[best]))
            next_add = best + 1
    return pairs


INTRALINE_MAX_CHARS = 4000  # longer lines are shown as changed lines, their changed words not marked:
                            # comparing word by word costs more than quadratic time in the words


def line_similarity(old: str, new: str) -> float:
    """How much two lines share, by their words (punctuation alone makes no kinship); long lines
    by their first :data:`INTRALINE_MAX_CHARS` characters."""
    old, new = old[:INTRALINE_MAX_CHARS], new[:INTRALINE_MAX_CHARS]
    old_words, new_words = _WORDS.findall(old), _WORDS.findall(new)
    if not old_words and not new_words:
        old_words, new_words = list(old.strip()), list(new.strip())
    if not old_words or not new_words:
        return 0.0
    return SequenceMatcher(None, old_words, new_words, autojunk=False).ratio()


def word_spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Spans of the words that differ between two versions of a line (empty if unrelated)."""
    if old == new or len(old) > INTRALINE_MAX_CHARS or len(new) > INTRALINE_MAX_CHARS:
        return [], []
    old_tokens = [m.span() for m in _TOKEN.finditer(old)]
    new_tokens = [m.span() for m in _TOKEN.finditer(new)]
    matcher = SequenceMatcher(None, [old[a:b] for a, b in old_tokens],
                              [new[a:b] for a, b in new_tokens], autojunk=False)
    if line_similarity(old, new) < MIN_WORD_SIMILARITY:
        return [], []
    old_spans: list[tuple[int, int]] = []
    new_spans: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            _append_span(old_spans, old_tokens[i1][0], old_tokens[i2 - 1][1])
        if j2 > j1:
            _append_span(new_spans, new_tokens[j1][0], new_tokens[j2 - 1][1])
    return old_spans, new_spans


def _append_span(spans: list[tuple[int, int]], start: int, end: int) -> None:
    if spans and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end)
    else:
        spans.append((start, end))


# -- details ------------------------------------------------------------------------------------

def _parse_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    header = lines[i]
    match = _HUNK_HEADER.match(header)
    i += 1
    hunk_lines: list[DiffLine] = []
    if match:
        old_no, new_no = int(match.group(1)), int(match.group(3))
        old_left = int(match.group(2)) if match.group(2) is not None else 1
        new_left = int(match.group(4)) if match.group(4) is not None else 1
        section = match.group(5).strip()
        hunk = Hunk(header, old_no, new_no, hunk_lines, section)
        # A zero count means the range sits *after* line N: a line there would be N + 1.
        old_at = old_no if old_left else old_no + 1
        new_at = new_no if new_left else new_no + 1
    else:
        old_left = new_left = -1  # unknown: read while lines look like hunk lines
        hunk = Hunk(header, None, None, hunk_lines, header.strip("@ "))
        old_at = new_at = 0
    numbered = match is not None
    while i < len(lines):
        line = lines[i]
        if numbered and old_left <= 0 and new_left <= 0:
            if line.startswith("\\") and hunk_lines:
                hunk_lines[-1].missing_newline = True
                i += 1
                continue
            break
        if not numbered and _ends_lenient_hunk(lines, i):
            break
        marker, body = line[:1], line[1:]
        if marker == "\\":
            if hunk_lines:
                hunk_lines[-1].missing_newline = True
        elif marker in (" ", "") and (numbered or i + 1 < len(lines)):
            hunk_lines.append(DiffLine("context", old_at if numbered else None,
                                       new_at if numbered else None, body))
            old_at, new_at, old_left, new_left = old_at + 1, new_at + 1, old_left - 1, new_left - 1
        elif marker == "-":
            hunk_lines.append(DiffLine("del", old_at if numbered else None, None, body))
            old_at, old_left = old_at + 1, old_left - 1
        elif marker == "+":
            hunk_lines.append(DiffLine("add", None, new_at if numbered else None, body))
            new_at, new_left = new_at + 1, new_left - 1
        else:
            break  # a malformed hunk: stop rather than swallow the next file
        i += 1
    return hunk, i


def _ends_lenient_hunk(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith(("diff --git ", "@@")):
        return True
    if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
        return True
    return line[:1] not in (" ", "-", "+", "\\", "")


def _apply_extended_header(diff: FileDiff, line: str) -> bool:
    """Git's extended header lines between ``diff --git`` and the first hunk."""
    if line.startswith("new file mode"):
        diff.status = "added"
    elif line.startswith("deleted file mode"):
        diff.status = "deleted"
    elif line.startswith("rename from "):
        diff.old_path = line[len("rename from "):]
    elif line.startswith("rename to "):
        diff.path = line[len("rename to "):]
    elif line.startswith("old mode "):
        diff.notes.append(f"File mode changes from {line[len('old mode '):]}")
    elif line.startswith("new mode ") and diff.notes and diff.notes[-1].startswith("File mode"):
        diff.notes[-1] += f" to {line[len('new mode '):]}."
    elif not line.startswith(("index ", "similarity index", "dissimilarity index", "copy from",
                              "copy to")):
        return False
    return True


def _make_binary(diff: FileDiff, names: str | None) -> None:
    if diff.status == "added":
        diff.notes.append("New file.")
    elif diff.status == "deleted" or (names is not None and names.endswith(" and /dev/null")):
        diff.notes.append("Deleted file.")
    elif names is not None and names.startswith("/dev/null and "):
        diff.notes.append("New file.")
    diff.status = "binary"
    diff.hunks = []
    diff.notes.append("Binary content: not shown as text.")


def _binary_note(old: str | None, new: str | None) -> str:
    sizes = " → ".join(_size(len(t.encode("utf-8", "surrogatepass"))) for t in (old, new) if t is not None)
    return f"Binary content ({sizes}): not shown as text."


def _size(count: int) -> str:
    return f"{count} bytes" if count < 1024 else f"{count / 1024:.1f} KiB"


def _mark_missing_newlines(lines: list[DiffLine], old_last: int | None, new_last: int | None) -> None:
    for line in lines:
        if old_last is not None and line.kind in ("del", "context") and line.old_no == old_last:
            line.missing_newline = True
        if new_last is not None and line.kind in ("add", "context") and line.new_no == new_last:
            line.missing_newline = True


def _range(start: int, count: int) -> str:
    return str(start) if count == 1 else f"{start},{count}"


def _section(old_lines: list[str], first: int) -> str:
    """Like git: the nearest line above the hunk that starts a definition (a letter, _ or $)."""
    for index in range(first - 1, max(-1, first - 400), -1):
        if _FUNCNAME.match(old_lines[index]):
            return old_lines[index].strip()[:80]
    return ""


def _patch_path(name: str) -> str | None:
    name = name.split("\t", 1)[0].rstrip()
    name = _unquote(name)
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def _git_header_paths(rest: str) -> tuple[str | None, str | None]:
    if rest.startswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        if len(parts) == 2:
            return _patch_path(parts[0]), _patch_path(parts[1])
        return None, None
    middle = rest.find(" b/")
    if rest.startswith("a/") and middle > 0:
        return rest[2:middle], rest[middle + 3:]
    return None, None


def _unquote(name: str) -> str:
    """Git quotes unusual paths C-style: ``"a/sp\\303\\251cial"``."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("latin-1", "backslashreplace")
    try:
        return raw.decode("unicode_escape").encode("latin-1").decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return name[1:-1]
