"""The diff model: from old/new text, from real unified diffs, and binary content."""

from __future__ import annotations

import random

from desktop_approver.render.diffs import (
    FileDiff,
    LineMatcher,
    from_preview,
    from_texts,
    is_binary,
    pair_changed_lines,
    parse_unified,
    split_lines,
    word_spans,
)

# Real output of `git diff --cached --binary -M` (a modified file losing its final newline, a new
# file, a deleted file, a binary change, a rename).
GIT_DIFF = r'''diff --git a/app.py b/app.py
index 56fcf57..31bb192 100644
--- a/app.py
+++ b/app.py
@@ -1,5 +1,5 @@
-def greet(name):
-    return "Hello, " + name
+def greet(name: str) -> str:
+    return f"Hello, {name}!"
 
 
-print(greet("world"))
+print(greet("world"))
\ No newline at end of file
diff --git a/fresh.md b/fresh.md
new file mode 100644
index 0000000..fa49b07
--- /dev/null
+++ b/fresh.md
@@ -0,0 +1 @@
+new file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3367afd..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-old
diff --git a/logo.png b/logo.png
index 677273046bce3115f56c248238f3b83f77cfc239..2644ae276b0d4cc2a5d84751622ca22642c2120d 100644
GIT binary patch
literal 7
OcmZQzWlPG;GXekv6ajYt

literal 6
NcmZQzWJ=1+0{{Yf0X+Z!

diff --git a/move_me.txt b/moved.txt
similarity index 100%
rename from move_me.txt
rename to moved.txt
'''


def _by_path(files: list[FileDiff]) -> dict[str | None, FileDiff]:
    return {diff.path: diff for diff in files}


def test_git_diff_files_and_statuses() -> None:
    files = _by_path(parse_unified(GIT_DIFF))
    assert list(files) == ["app.py", "fresh.md", "gone.txt", "logo.png", "moved.txt"]
    assert files["app.py"].status == "modified"
    assert files["fresh.md"].status == "added"
    assert files["gone.txt"].status == "deleted"
    assert files["logo.png"].status == "binary"
    assert files["logo.png"].hunks == []
    assert files["moved.txt"].old_path == "move_me.txt"


def test_git_diff_lines_are_numbered_on_both_sides() -> None:
    app = _by_path(parse_unified(GIT_DIFF))["app.py"]
    (hunk,) = app.hunks
    kinds = [(line.kind, line.old_no, line.new_no) for line in hunk.lines]
    assert kinds == [("del", 1, None), ("del", 2, None), ("add", None, 1), ("add", None, 2),
                     ("context", 3, 3), ("context", 4, 4), ("del", 5, None), ("add", None, 5)]
    assert hunk.old_start == 1 and hunk.new_start == 1


def test_no_newline_marker_belongs_to_the_line_before_it() -> None:
    app = _by_path(parse_unified(GIT_DIFF))["app.py"]
    last = app.hunks[0].lines[-1]
    assert last.kind == "add" and last.missing_newline
    assert app.new_missing_newline and not app.old_missing_newline


def test_new_and_deleted_files_from_dev_null() -> None:
    files = _by_path(parse_unified(GIT_DIFF))
    (added,) = files["fresh.md"].hunks[0].lines
    assert (added.kind, added.new_no, added.text) == ("add", 1, "new file")
    (removed,) = files["gone.txt"].hunks[0].lines
    assert (removed.kind, removed.old_no, removed.text) == ("del", 1, "old")


def test_binary_files_differ_line() -> None:
    text = "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n"
    (diff,) = parse_unified(text)
    assert diff.status == "binary" and diff.path == "img.png"
    assert any("Binary" in note for note in diff.notes)


def test_plain_diff_u_with_timestamps_and_no_git_header() -> None:
    text = ("--- a.txt\t2024-01-01 10:00:00\n+++ b.txt\t2024-01-02 10:00:00\n"
            "@@ -1,2 +1,2 @@\n-one\n+uno\n two\n")
    (diff,) = parse_unified(text)
    assert diff.path == "b.txt" and diff.old_path == "a.txt"
    assert [line.kind for line in diff.hunks[0].lines] == ["del", "add", "context"]


def test_counts_keep_lines_that_look_like_headers_inside_a_hunk() -> None:
    text = "--- a/x.md\n+++ b/x.md\n@@ -1,2 +1,2 @@\n--- old rule\n+++ new rule\n-x\n+y\n"
    (diff,) = parse_unified(text)
    assert [(line.kind, line.text) for line in diff.hunks[0].lines] == [
        ("del", "-- old rule"), ("add", "++ new rule"), ("del", "x"), ("add", "y")]


def test_hunk_headers_without_ranges_are_accepted_without_numbers() -> None:
    (diff,) = parse_unified("--- a/a.py\n+++ b/a.py\n@@ def f():\n-    return 1\n+    return 2\n", path="a.py")
    (hunk,) = diff.hunks
    assert hunk.section == "def f():"
    assert [(line.kind, line.old_no, line.new_no) for line in hunk.lines] == [("del", None, None), ("add", None, None)]


def test_bare_hunks_take_the_preview_path() -> None:
    (diff,) = parse_unified("@@ -3 +3 @@\n-a\n+b\n", path="notes.txt")
    assert diff.path == "notes.txt"
    assert diff.hunks[0].lines[0].old_no == 3


def test_from_texts_numbers_context_and_marks_the_changed_word() -> None:
    old = "def f(x):\n    return x + 1\n\nprint(f(2))\n"
    new = "def f(x):\n    return x + 2\n\nprint(f(2))\n"
    diff = from_texts("a.py", old, new)
    (hunk,) = diff.hunks
    removed = next(line for line in hunk.lines if line.kind == "del")
    added = next(line for line in hunk.lines if line.kind == "add")
    assert (removed.old_no, added.new_no) == (2, 2)
    assert [removed.text[a:b] for a, b in removed.intraline] == ["1"]
    assert [added.text[a:b] for a, b in added.intraline] == ["2"]
    assert hunk.header.startswith("@@ -1,4 +1,4 @@")
    assert diff.old_text == old and diff.new_text == new


def test_from_texts_shows_a_lost_final_newline_as_a_change() -> None:
    diff = from_texts("a.txt", "a\nb\n", "a\nb")
    lines = diff.hunks[0].lines
    assert [(line.kind, line.text, line.missing_newline) for line in lines] == [
        ("context", "a", False), ("del", "b", False), ("add", "b", True)]
    assert diff.new_missing_newline and not diff.old_missing_newline


def test_from_texts_new_and_deleted_files() -> None:
    added = from_texts("n.py", None, "x = 1\ny = 2\n")
    assert added.status == "added"
    assert [(line.kind, line.new_no) for line in added.hunks[0].lines] == [("add", 1), ("add", 2)]
    deleted = from_texts("d.py", "x = 1\n", None)
    assert deleted.status == "deleted"
    assert [line.kind for line in deleted.hunks[0].lines] == ["del"]


def test_identical_texts_say_so() -> None:
    diff = from_texts("a", "same\n", "same\n")
    assert diff.hunks == [] and any("identical" in note for note in diff.notes)


def test_binary_content_is_never_split_into_lines() -> None:
    diff = from_texts("logo.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "\x89PNG\r\n\x1a\n\0\0\0\rIHDX")
    assert diff.status == "binary" and diff.hunks == []
    assert any("Binary content" in note for note in diff.notes)
    assert is_binary("a\0b")
    assert is_binary("".join(chr(c) for c in range(1, 32)) * 3)
    assert not is_binary("text with\ttabs\nand \x1b[1mcolour\x1b[0m\n")


def test_file_write_preview_with_unknown_old_is_a_new_file() -> None:
    (diff,) = from_preview({"kind": "file_write", "path": "a.py", "content": "print(1)\n", "old": None})
    assert diff.status == "added"
    assert diff.notes and "new" in diff.notes[0]
    (diff,) = from_preview({"kind": "file_write", "path": "a.py", "content": "print(2)\n", "old": "print(1)\n"})
    assert diff.status == "modified"


def test_diff_preview_kinds() -> None:
    assert len(from_preview({"kind": "diff", "unified": GIT_DIFF})) == 5
    (diff,) = from_preview({"kind": "diff", "path": "a", "old": "1\n", "new": "2\n"})
    assert diff.path == "a"
    (empty,) = from_preview({"kind": "diff", "path": "a"})
    assert empty.notes and empty.hunks == []


def test_lines_split_only_on_newline() -> None:
    assert split_lines("a\x0bb\u2028c\x1cd\n") == (["a\x0bb\u2028c\x1cd"], False)
    assert split_lines("a\nb") == (["a", "b"], True)
    assert split_lines("") == ([], False)


def test_changed_lines_pair_with_their_counterpart_not_their_position() -> None:
    diff = from_texts("c.py", "for name in items:\n    total += 1\n",
                      "removed = 0\nfor item in items:\n    total += 2\n")
    lines = diff.hunks[0].lines
    pairs = pair_changed_lines([ln for ln in lines if ln.kind == "del"], [ln for ln in lines if ln.kind == "add"])
    assert [(old.text, new.text) for old, new in pairs] == [
        ("for name in items:", "for item in items:"), ("    total += 1", "    total += 2")]
    unrelated_line = next(line for line in lines if line.text == "removed = 0")
    assert unrelated_line.intraline == []


def test_unrelated_lines_get_no_word_marks() -> None:
    assert word_spans("import os", "x = compute(42)") == ([], [])
    assert word_spans("same", "same") == ([], [])


def test_reading_one_line_marks_only_its_change_block() -> None:
    old = "a = 1\nkeep\nkeep\nkeep\nkeep\nkeep\nkeep\nkeep\nb = 1\n"
    diff = from_texts("x.py", old, old.replace("= 1", "= 2"), context=10)
    (hunk,) = diff.hunks
    first_add = hunk.line(1)
    assert first_add.kind == "add" and first_add.intraline
    last_del = next(line for line in hunk.plain_lines if line.kind == "del" and line.text == "b = 1")
    assert last_del.intraline == []
    assert next(line for line in hunk.lines if line.text == "b = 1").intraline  # all of them now


# -- a long diff, diffed as it is read ---------------------------------------------------------

def _shape(diff: FileDiff) -> tuple[object, ...]:
    hunks = [(hunk.header, hunk.old_start, hunk.new_start,
              [(line.kind, line.old_no, line.new_no, line.text, line.missing_newline) for line in hunk.plain_lines])
             for hunk in diff.hunks]
    return hunks, diff.notes, diff.old_missing_newline, diff.new_missing_newline


def _grouped_by_difflib(old: str, new: str, context: int) -> list[list[str]]:
    """The kinds of each hunk's lines as difflib groups the same matching (the reference)."""
    old_lines, old_missing = split_lines(old)
    new_lines, new_missing = split_lines(new)
    matcher = LineMatcher(old_lines[:-1] + [old_lines[-1] + "\0"] if old_missing else old_lines,
                          new_lines[:-1] + [new_lines[-1] + "\0"] if new_missing else new_lines)
    kinds = []
    for group in matcher.get_grouped_opcodes(context):
        hunk: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            hunk += ["context"] * (i2 - i1) if tag == "equal" else ["del"] * (i2 - i1) + ["add"] * (j2 - j1)
        kinds.append(hunk)
    return kinds


def test_a_streamed_diff_is_the_whole_diff_whatever_the_steps() -> None:
    chance = random.Random(23)
    for _ in range(600):
        words = [f"w{k}" for k in range(chance.randint(1, 25))] + ["", "}"]
        old = "\n".join(chance.choice(words) for _ in range(chance.randint(0, 50))) + chance.choice(["", "\n"])
        lines = [line for line in old.split("\n") if chance.random() > 0.15]
        for _ in range(chance.randint(0, 8)):
            lines.insert(chance.randint(0, len(lines)), chance.choice(words))
        new = "\n".join(lines) + chance.choice(["", "\n"])
        context = chance.choice([0, 1, 3])
        whole = from_texts("a.py", old, new, context=context)
        streamed = from_texts("a.py", old, new, context=context, streaming=True)
        while not streamed.diff_more(chance.randint(1, 6)):
            assert not streamed.complete
        assert _shape(streamed) == _shape(whole), (old, new)
        assert [[line.kind for line in hunk.plain_lines] for hunk in whole.hunks] == \
            _grouped_by_difflib(old, new, context), (old, new)


def test_a_long_diff_is_read_only_as_far_as_asked() -> None:
    old = "".join(f"line {n}\n" for n in range(20_000))
    new = old.replace("line 3\n", "line three\n").replace("line 19990\n", "line nineteen thousand\n")
    diff = from_texts("big.txt", old, new, streaming=True)
    assert not diff.complete and diff.hunks == []
    assert not diff.diff_more(5)
    (first,) = diff.hunks
    assert not first.complete and first.header == "@@ -1,… +1,… @@"  # its counts are not known yet
    assert diff.lines_diffed < 20
    diff.finish()
    assert diff.complete
    assert [hunk.header for hunk in diff.hunks] == ["@@ -1,7 +1,7 @@", "@@ -19988,7 +19988,7 @@ line 19986"]
    assert all(hunk.complete for hunk in diff.hunks) and (diff.added, diff.removed) == (2, 2)


def test_only_long_previews_are_streamed() -> None:
    short = {"kind": "diff", "path": "a", "old": "a\n" * 10, "new": "b\n" * 10}
    long = {"kind": "diff", "path": "a", "old": "a\n" * 3000, "new": "b\n" * 3000}
    assert from_preview(short, stream_over=2000)[0].complete
    assert not from_preview(long, stream_over=2000)[0].complete
    assert from_preview(long)[0].complete
