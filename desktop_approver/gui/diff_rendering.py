"""Puts a diff's rows into a :class:`CodeBrowser`: the first screen at once, the rest a short step per loop turn.

A 10,000-line diff costs seconds to diff, lex, mark up and lay out, and a person needs the first
forty lines. So :meth:`DiffRendering.start` diffs (a streamed :class:`FileDiff`) and draws only the
first screen, and the rest waits for that screen's paint. Then each turn of the event loop gives
one step of at most :data:`STEP_BUDGET_S`, in this order: diff the rest (then every row and change
is known: ``navigable``), draw again what was drawn from the unfinished diff (the file's totals,
hunk headers) or without colours, and draw the next rows in order. Other work (requests, input)
runs between the steps.

Rows drawn in order reach the document in three turns of the loop: their HTML (in pieces that fit
the budget), Qt's parse of it, and its insertion as one table, at the start of a step of its own
and sized so that it costs about :data:`INSERT_BUDGET_S` (Qt lays out what is inserted at once, and
its cost per table grows with the tables already there). An insertion below what the view shows
does not repaint the view (Qt's layout would ask for all of it, every time): only the scroll bar
learns the new size.

The document is a row of tables, one per *segment* of consecutive rows, in row order; a jump to
rows not drawn yet (``n``/``p`` to the last change) draws a screen there at once, as a segment of
its own between the others, uncoloured if the lexer has not got that far (it is coloured when the
steps in order reach it). When the steps are done, the document holds every row exactly once, in
order: the same text as the whole diff drawn at one go.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QTextCursor, QTextDocumentFragment, QTextFrame, QTextTable

from ..render import diff_html
from ..render.diffs import FileDiff
from .code_browser import CodeBrowser

log = logging.getLogger(__name__)

FIRST_ROWS = 80          # drawn before the first paint: more than a screenful
SCREEN_ROWS = 40         # drawn at once where a jump lands
SEGMENT_ROWS = 20        # the first screen and a jump's screen are cut into tables this small: each is
                         # drawn again in one short step once the diff is complete or lexed that far
STEP_BUDGET_S = 0.008    # one step of the background work; the event loop turns between steps
FIRST_LEX_BUDGET_S = 0.02  # the first screen is coloured if the lexer gets there in this time (else later)
INSERT_BUDGET_S = 0.008  # what inserting one table should cost (its size follows)
DIFF_STEP_LINES = 200    # lines diffed between two looks at the clock
TABLE_ROWS = 30          # rows drawn in order go into tables of about this many rows (the first guess) ...
MIN_TABLE_ROWS = 20      # ... sized to what the last insertion cost. Inserting a table costs Qt a part
MAX_TABLE_ROWS = 60      # that grows with the tables already there (3 ms at 10,000 rows) and a part per
                         # row (0.25 ms): tables much smaller than 20 rows would not stall the loop much
                         # less (on a busy machine, where every insertion looks slow), only more often
END_OF_STEP = "end of step"  # what a piece of work returns when the loop should turn after it


@dataclass
class _Pending:
    """Rows ``start``–``end`` of one file drawn in order but not in the document yet (``html``: their rows;
    ``fragment``: the same parsed by Qt, once they are all drawn)."""

    start: int
    end: int
    html: list[str]
    fragment: QTextDocumentFragment | None = None


@dataclass
class _Segment:
    """Rows ``start``–``end`` (over all files) drawn as one table; ``final`` once from the complete,
    lexed diff (otherwise the steps draw it again)."""

    start: int
    end: int
    final: bool


class DiffRendering(QObject):
    """The rows of some diffs, drawn into one browser in segments (see the module docstring).

    Signals: ``navigable()`` when a streamed diff has been diffed to its end (every row and change
    is known; not emitted when the diffs were complete when :meth:`start` first saw them). It is
    emitted exactly once per list of diffs, whatever :meth:`start` calls (folds, a mode switch)
    come between: a pending one is never dropped. ``done()`` when every row is drawn from the
    complete, lexed diff.
    """

    navigable = Signal()
    done = Signal()

    def __init__(self, browser: CodeBrowser) -> None:
        super().__init__(browser)
        self.browser = browser
        self._files: list[FileDiff] = []
        self._mode: diff_html.Mode = "unified"
        self._folded: dict[int, set[int]] = {}
        self._rows: list[list[diff_html.Row]] | None = None  # per file, once every file is diffed
        self._offsets: list[int] = []                         # the first row of each file, likewise
        self._segments: list[_Segment] = []
        self._rendering = False
        self._waiting_for_paint = False
        self._chunk_rows = 20
        self._table_rows = TABLE_ROWS
        self._step_started = False  # nothing done yet in this step (an insertion waits for that)
        self._announce = False      # the rows are all known, and navigable() is still to be emitted
        self._announced: list[FileDiff] | None = None  # the diffs navigable() was emitted for (or needs not be)
        self._collect = False       # the rows are all known, and the collector has not run since
        self._pending: _Pending | None = None
        self._restore_scroll: int | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._step)
        browser.painted.connect(self._painted)

    def __repr__(self) -> str:
        state = "rendering" if self._rendering else "done"
        return (f"<DiffRendering {state}: {len(self._files)} files, {self.rows_rendered} of "
                f"{self.total_rows()} rows{'' if self.is_navigable() else ', still diffing'}>")

    # -- state ----------------------------------------------------------------------------------

    @property
    def rows_rendered(self) -> int:
        return sum(segment.end - segment.start for segment in self._segments)

    def is_rendering(self) -> bool:
        return self._rendering

    def is_navigable(self) -> bool:
        return self._rows is not None

    def rows(self, file_index: int) -> list[diff_html.Row]:
        """The rows of one file (so far, while it is still being diffed)."""
        if self._rows is not None:
            return self._rows[file_index]
        return diff_html.diff_rows(self._files[file_index], self._mode, self._folded.get(file_index, set()))

    def total_rows(self) -> int:
        if self._rows is not None:
            return sum(len(rows) for rows in self._rows)
        return sum(len(self.rows(index)) for index in range(len(self._files)))

    def file_offsets(self) -> list[int]:
        """The first row of each file (diffing what is left first)."""
        self.finish_diffing()
        return list(self._offsets)

    # -- starting and finishing -----------------------------------------------------------------

    def start(self, files: list[FileDiff], mode: diff_html.Mode, folded: dict[int, set[int]],
              keep_scroll: bool = False) -> None:
        """Draw the first screen of ``files`` now; the rest follows the first paint, a step a turn."""
        self._timer.stop()
        if files is not self._files:  # new content: whatever was to be said about the old is moot
            self._announce = False
            self._announced = files if all(diff.complete for diff in files) else None
        self._files, self._mode, self._folded = files, mode, folded
        self._restore_scroll = self.browser.verticalScrollBar().value() if keep_scroll else None
        self._rows, self._offsets, self._segments, self._pending = None, [], [], None
        self._collect = False
        for index, diff in enumerate(files):
            while not diff.complete and len(diff_html.diff_rows(diff, mode, folded.get(index, set()))) < FIRST_ROWS:
                diff.diff_more(FIRST_ROWS)
            if not diff.complete:
                break  # the files after it start after rows not known yet
        if all(diff.complete for diff in files):
            self._know_rows()
            self._announce = self._announced is not files  # (diffed to the end by this loop: said in a step)
        # A change at the end of a long file: lexing to it would delay the first paint by seconds.
        coloured = self._lex(0, FIRST_ROWS, time.perf_counter() + FIRST_LEX_BUDGET_S)
        html, self._segments = self._draw(0, FIRST_ROWS, syntax=coloured)
        self.browser.setHtml(html)
        self._after_step()
        self._rendering = True
        if self.browser.isVisible():
            self._waiting_for_paint = True  # the first screen is painted before anything else is done
        else:
            self._timer.start()

    def clear(self, html: str) -> None:
        """Show a message instead of rows (a diff that could not be read)."""
        self._timer.stop()
        self._files, self._rows, self._offsets, self._segments, self._pending = [], [], [], [], None
        self._announce, self._announced = False, None
        self._rendering = self._waiting_for_paint = False
        self.browser.setHtml(html)

    def finish_diffing(self) -> None:
        """Diff what is left now (a person asked for the next change before the steps got there)."""
        if self._rows is None:
            for diff in self._files:
                diff.finish()
            self._know_rows()
            self._announce = self._announced is not self._files
        self._emit_navigable()

    def _emit_navigable(self) -> bool:
        """Say ``navigable()`` if it is due (once per list of diffs); whether it was said."""
        if not self._announce:
            return False
        self._announce = False
        self._announced = self._files
        self.navigable.emit()
        return True

    def _know_rows(self) -> None:
        self._rows = [diff_html.diff_rows(diff, self._mode, self._folded.get(index, set()))
                      for index, diff in enumerate(self._files)]
        self._offsets = []
        total = 0
        for rows in self._rows:
            self._offsets.append(total)
            total += len(rows)

    # -- drawing --------------------------------------------------------------------------------

    def _file_at(self, row: int) -> tuple[int, int]:
        """The file holding global ``row`` and that file's first row (within the rows known so far)."""
        offset = 0
        for index in range(len(self._files)):
            count = len(self.rows(index))
            if row < offset + count or index == len(self._files) - 1:
                return index, offset
            offset += count
        return 0, 0

    def _draw(self, start: int, end: int, *, syntax: bool,
              segment_rows: int = SEGMENT_ROWS) -> tuple[str, list[_Segment]]:
        """HTML for rows ``start``–``end`` (clipped to the rows known), as tables of at most
        ``segment_rows`` rows that never span two files; and their segments."""
        parts: list[str] = []
        segments: list[_Segment] = []
        row = start
        while row < end:
            file_index, offset = self._file_at(row)
            diff = self._files[file_index]
            rows = self.rows(file_index)
            stop = min(end, offset + len(rows), row + segment_rows)
            if stop <= row:
                break
            folded = self._folded.get(file_index, set())
            coloured = syntax or diff_html.rows_lexed(diff, self._mode, folded, row - offset, stop - offset)
            parts.append(diff_html.render_diff_html(diff, mode=self._mode, folded=folded,
                                                    line_range=(row - offset, stop - offset),
                                                    file_index=file_index, syntax=coloured))
            segments.append(_Segment(row, stop, final=coloured and diff.complete))
            row = stop
        return "".join(parts), segments

    def _lex(self, start: int, end: int, deadline: float) -> bool:
        """Lex towards rows ``start``–``end`` until ``deadline``: whether they can be coloured now."""
        row = start
        while row < end:
            file_index, offset = self._file_at(row)
            stop = min(end, offset + len(self.rows(file_index)))
            if stop <= row:
                break
            if not diff_html.lex_rows(self._files[file_index], self._mode, self._folded.get(file_index, set()),
                                      row - offset, stop - offset, deadline):
                return False
            row = stop
        return True

    def _tables(self) -> list[QTextTable]:
        return [frame for frame in self.browser.document().rootFrame().childFrames() if isinstance(frame, QTextTable)]

    def _insert(self, content: str | QTextDocumentFragment, before: int) -> None:
        """Insert tables (HTML, or HTML parsed already) before segment ``before``'s table (at the end past the last)."""
        cursor = QTextCursor(self.browser.document())
        fragment = content if isinstance(content, QTextDocumentFragment) else \
            QTextDocumentFragment.fromHtml(content, self.browser.document())  # what insertHtml does
        if before >= len(self._segments):  # the usual case: no need to look for the table
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._out_of_sight(lambda: cursor.insertFragment(fragment))
            return
        table = self._tables()[before]
        cursor.setPosition(table.firstPosition() - 1)
        self._keeping_view(table, lambda: cursor.insertFragment(fragment))

    def _out_of_sight(self, append: Callable[[], None]) -> None:
        """Make ``append`` (rows added at the end of the document) without repainting the view when
        the end is below it. Qt's layout asks for a repaint of the whole view after every change
        (a few milliseconds a table, and far more on a busy machine); it is told only the
        document's new size, so the scroll bar grows."""
        layout = self.browser.document().documentLayout()
        bottom = self.browser.verticalScrollBar().value() + self.browser.viewport().height()
        if not self.browser.isVisible() or layout.documentSize().height() <= bottom:
            append()
            return
        layout.blockSignals(True)
        try:
            append()
        finally:
            layout.blockSignals(False)
        layout.documentSizeChanged.emit(layout.documentSize())

    def _replace(self, index: int, html: str) -> None:
        """Draw segment ``index``'s table again (from the complete, lexed diff)."""
        table = self._tables()[index]
        cursor = QTextCursor(self.browser.document())
        cursor.setPosition(table.firstPosition() - 1)
        cursor.setPosition(table.lastPosition() + 1, QTextCursor.MoveMode.KeepAnchor)
        following = self._tables()
        self._keeping_view(following[index + 1] if index + 1 < len(following) else None,
                           lambda: cursor.insertHtml(html))

    def _keeping_view(self, below: QTextFrame | None, change: object) -> None:
        """Make ``change`` (an insertion just above ``below``) without moving what the person looks
        at: when ``below`` starts above the bottom of a scrolled view (rows drawn above a jump's
        screen), scroll by as much as it moved, so it stays where it was on the screen."""
        bar = self.browser.verticalScrollBar()
        layout = self.browser.document().documentLayout()
        top = layout.frameBoundingRect(below).top() if below is not None and bar.value() > 0 else None
        assert callable(change)
        change()
        if top is not None and below is not None and top < bar.value() + self.browser.viewport().height():
            moved = layout.frameBoundingRect(below).top() - top
            layout.documentSize()  # lays the document out to its end, so the scroll bar's range has grown
            bar.setValue(bar.value() + int(moved))

    def ensure_rendered(self, row: int) -> tuple[QTextTable, int] | None:
        """The table and its row where global ``row`` is drawn, drawing a screen from it first if needed."""
        self.finish_diffing()
        self._flush()
        before = len(self._segments)
        for index, segment in enumerate(self._segments):
            if segment.start <= row < segment.end:
                return self._tables()[index], row - segment.start
            if segment.start > row:
                before = index
                break
        if row >= self.total_rows() or row < 0:
            return None
        gap_start = self._segments[before - 1].end if before else 0
        gap_end = self._segments[before].start if before < len(self._segments) else self.total_rows()
        start = max(gap_start, row - SCREEN_ROWS // 2)  # some rows above it too: the view can scroll there
        html, segments = self._draw(start, min(gap_end, row + SCREEN_ROWS), syntax=False)
        self._insert(html, before)
        self._segments[before:before] = segments
        if not self._rendering:  # drawn uncoloured: the steps colour it
            self._rendering = True
            self._timer.start()
        for index, segment in enumerate(segments, before):
            if segment.start <= row < segment.end:
                return self._tables()[index], row - segment.start
        return None

    # -- the steps ------------------------------------------------------------------------------

    def _painted(self) -> None:
        if self._waiting_for_paint:
            self._waiting_for_paint = False
            self._timer.start()

    def _step(self) -> None:
        if self._waiting_for_paint:
            return
        deadline = time.perf_counter() + STEP_BUDGET_S
        self._step_started = True
        while True:
            worked = self._work_once(deadline)
            self._step_started = False
            if not worked:
                self._rendering = False
                self._after_step()
                log.debug("%r", self)
                self.done.emit()
                return
            if worked == END_OF_STEP or time.perf_counter() >= deadline:
                break
        self._after_step()
        self._timer.start()

    def _work_once(self, deadline: float) -> bool | str:
        """One piece of the work left, in order: False when nothing is left, :data:`END_OF_STEP` when
        the step should end there (see :meth:`_fill`)."""
        for diff in self._files:
            if not diff.complete:
                while not diff.diff_more(DIFF_STEP_LINES) and time.perf_counter() < deadline:
                    pass
                return END_OF_STEP if diff.complete else True
        # Then, a step each: list the rows, run the collector, say so (the view counts the changes).
        if self._rows is None:
            self._know_rows()
            self._collect = True
            self._announce = self._announced is not self._files
            return END_OF_STEP
        if self._collect:
            # The rows and lines just made are some 20,000 long-lived objects: enough for Python to
            # start a full pass of its collector soon, wherever that falls (on an insertion: twice
            # that insertion's stall). It runs here, in a turn of its own.
            self._collect = False
            gc.collect()
            return END_OF_STEP
        if self._emit_navigable():
            return END_OF_STEP
        position = 0
        for index, segment in enumerate(self._segments):
            if segment.start > position:
                return self._fill(position, segment.start, index)
            if not segment.final:
                if not self._lex(segment.start, segment.end, deadline):
                    return True  # lexed a step's worth towards it: the loop turns
                html, segments = self._draw(segment.start, segment.end, syntax=True)
                self._replace(index, html)
                self._segments[index:index + 1] = segments
                return True
            position = segment.end
        if position < self.total_rows():
            return self._fill(position, self.total_rows(), len(self._segments))
        return False

    def _fill(self, start: int, end: int, before: int) -> bool | str:
        """The next piece of work on the gap ``start``–``end``: draw its next rows (as many as fit the
        budget, learnt as it goes); once a table's worth is drawn, or the gap or file ends, have Qt
        parse them, then insert them as one table at the start of a step of its own: each of the three
        is a few milliseconds, and the loop turns between them (:data:`END_OF_STEP`)."""
        file_index, offset = self._file_at(start)
        end = min(end, offset + len(self.rows(file_index)))
        pending = self._pending
        if pending is None or pending.start != start:
            pending = self._pending = _Pending(start, start, [])
        if pending.end >= end or pending.end - pending.start >= self._table_rows:
            if pending.fragment is None:
                self._parse(pending)
            elif self._step_started:
                self._flush(before)
            return END_OF_STEP  # (an insertion waits for the next step when this one has done something)
        count = min(self._chunk_rows, end - pending.end, self._table_rows - (pending.end - pending.start))
        started = time.perf_counter()
        pending.html.append(diff_html.render_diff_rows(
            self._files[file_index], mode=self._mode, folded=self._folded.get(file_index, set()),
            line_range=(pending.end - offset, pending.end + count - offset), file_index=file_index))
        pending.end += count
        spent = time.perf_counter() - started
        scale = STEP_BUDGET_S / 2 / spent if spent > 0 else 2.0  # two pieces a step at least
        self._chunk_rows = max(2, min(MAX_TABLE_ROWS, int(self._chunk_rows * min(2.0, max(0.5, scale)))))
        return True

    def _parse(self, pending: _Pending) -> None:
        """Have Qt parse the rows drawn in order so far (what ``insertHtml`` does before it inserts)."""
        pending.fragment = QTextDocumentFragment.fromHtml(diff_html.diff_table_html("".join(pending.html)),
                                                          self.browser.document())

    def _flush(self, before: int | None = None) -> None:
        """Put the rows drawn in order so far into the document (before segment ``before``), and size
        the next table so that inserting it costs about :data:`INSERT_BUDGET_S`."""
        pending, self._pending = self._pending, None
        if pending is None or pending.end == pending.start:
            return
        if pending.fragment is None:
            self._parse(pending)
        assert pending.fragment is not None
        if before is None:
            before = next((index for index, segment in enumerate(self._segments) if segment.start >= pending.end),
                          len(self._segments))
        started = time.perf_counter()
        self._insert(pending.fragment, before)
        spent = time.perf_counter() - started
        self._segments.insert(before, _Segment(pending.start, pending.end, final=True))
        rows = pending.end - pending.start
        if rows >= self._table_rows // 2:  # (a gap's or file's short last table says little)
            scale = min(1.5, max(0.5, INSERT_BUDGET_S / spent)) if spent > 0 else 1.5
            self._table_rows = max(MIN_TABLE_ROWS, min(MAX_TABLE_ROWS, int(rows * scale)))

    def _after_step(self) -> None:
        if self._restore_scroll is not None:
            bar = self.browser.verticalScrollBar()
            if bar.maximum() >= self._restore_scroll or not self._rendering:
                bar.setValue(self._restore_scroll)
                self._restore_scroll = None
