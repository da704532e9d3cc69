"""Previews derived from the arguments of recognisable tools."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from desktop_approver.render import autopreview
from desktop_approver.render.autopreview import preview_for, read_text
from desktop_approver.render.diffs import from_preview


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text("def greet():\n    return 'hi'\n\n\nprint(greet())\n")
    return path


def test_write_reads_the_current_file_for_a_real_diff(source: Path) -> None:
    preview = preview_for("Write", {"file_path": str(source), "content": "print('new')\n"})
    assert preview == {"kind": "file_write", "path": str(source), "content": "print('new')\n",
                       "old": source.read_text()}


def test_write_finds_relative_paths_only_through_the_agent_cwd(source: Path) -> None:
    args = {"path": "app.py", "content": "x\n"}
    assert preview_for("write_file", args, cwd=str(source.parent))["old"] == source.read_text()
    assert preview_for("write_file", args)["old"] is None


def test_write_to_a_new_file_has_no_old_text(tmp_path: Path) -> None:
    preview = preview_for("create_file", {"path": str(tmp_path / "new.txt"), "content": "hello"})
    assert preview is not None and preview["old"] is None
    (diff,) = from_preview(preview)
    assert diff.status == "added"


@pytest.mark.timeout(10)
def test_special_big_and_binary_files_are_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert read_text(str(fifo), None) is None  # would block forever if opened for a plain read
    assert read_text("/dev/zero", None) is None
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (autopreview.MAX_READ_BYTES + 1))
    assert read_text(str(big), None) is None
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x89PNG\0\0\x01")
    assert read_text(str(blob), None) is None
    latin = tmp_path / "latin.txt"
    latin.write_bytes("café".encode("latin-1"))
    assert read_text(str(latin), None) is None
    assert read_text(str(tmp_path), None) is None  # a directory


def test_edit_applies_to_the_current_file(source: Path) -> None:
    preview = preview_for("Edit", {"file_path": str(source), "old_string": "'hi'", "new_string": "'hello'"})
    assert preview is not None and preview["kind"] == "diff"
    assert preview["old"] == source.read_text()
    assert preview["new"] == source.read_text().replace("'hi'", "'hello'")
    (diff,) = from_preview(preview)
    changed = [line for line in diff.hunks[0].lines if line.kind != "context"]
    assert [(line.kind, line.old_no or line.new_no) for line in changed] == [("del", 2), ("add", 2)]


def test_edit_replace_all(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("a a a\n")
    preview = preview_for("edit", {"path": str(path), "old_str": "a", "new_str": "b", "replace_all": True})
    assert preview["new"] == "b b b\n"
    once = preview_for("edit", {"path": str(path), "old_str": "a", "new_str": "b"})
    assert once["new"] == "b a a\n"


def test_edit_of_text_not_in_the_file_shows_the_fragment(source: Path) -> None:
    preview = preview_for("Edit", {"file_path": str(source), "old_string": "absent", "new_string": "present"})
    assert preview == {"kind": "diff", "path": str(source), "old": "absent", "new": "present"}


def test_multi_edit_with_and_without_the_file(source: Path) -> None:
    edits = [{"old_string": "def greet", "new_string": "def welcome"},
             {"old_string": "print(greet())", "new_string": "print(welcome())"}]
    applied = preview_for("MultiEdit", {"file_path": str(source), "edits": edits})
    assert "def welcome" in applied["new"] and "print(welcome())" in applied["new"]
    unknown = preview_for("MultiEdit", {"file_path": "elsewhere.py", "edits": edits})
    (diff,) = from_preview(unknown)
    assert len(diff.hunks) == 2
    assert diff.hunks[1].header.endswith("edit 2 of 2")


def test_mcp_filesystem_edit_file_uses_camel_case_names(source: Path) -> None:
    preview = preview_for("mcp__filesystem__edit_file", {
        "path": str(source), "edits": [{"oldText": "'hi'", "newText": "'yo'"}]})
    assert "'yo'" in preview["new"]


def test_text_editor_commands(source: Path, tmp_path: Path) -> None:
    created = preview_for("str_replace_based_edit_tool", {
        "command": "create", "path": str(tmp_path / "n.py"), "file_text": "x = 1\n"})
    assert created["kind"] == "file_write" and created["old"] is None
    assert preview_for("str_replace_editor", {"command": "view", "path": str(source)}) is None
    inserted = preview_for("str_replace_editor", {"command": "insert", "path": str(source),
                                                  "insert_line": 1, "new_str": "    # comment"})
    assert inserted["new"].split("\n")[:3] == ["def greet():", "    # comment", "    return 'hi'"]


def test_apply_patch_with_a_unified_diff() -> None:
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    assert preview_for("apply_patch", {"patch": patch}) == {"kind": "diff", "unified": patch}
    assert preview_for("apply_patch", {"patch": "not a diff at all"}) is None


def test_apply_patch_in_codex_format() -> None:
    patch = ("*** Begin Patch\n*** Add File: hello.txt\n+Hello\n+world\n*** Update File: src/app.py\n"
             "*** Move to: src/main.py\n@@ def greet():\n-print(\"Hi\")\n+print(\"Hello\")\n"
             "*** Delete File: old.txt\n*** End Patch\n")
    files = {diff.path: diff for diff in from_preview(preview_for("apply_patch", {"input": patch}))}
    assert files["hello.txt"].status == "added"
    assert [line.new_no for line in files["hello.txt"].hunks[0].lines] == [1, 2]
    assert files["src/main.py"].old_path == "src/app.py"
    assert [line.kind for line in files["src/main.py"].hunks[0].lines] == ["del", "add"]
    assert files["old.txt"].status == "deleted"


@pytest.mark.parametrize("tool, args, expected", [
    ("Bash", {"command": "ls -la"}, {"kind": "command", "command": "ls -la", "cwd": "/agent"}),
    ("shell", {"command": ["bash", "-lc", "ls"], "workdir": "/w"},
     {"kind": "command", "argv": ["bash", "-lc", "ls"], "cwd": "/w"}),
    ("run_command", {"cmd": "make", "cwd": "/c"}, {"kind": "command", "command": "make", "cwd": "/c"}),
    ("mcp__desktop__execute_command", {"command": "whoami"},
     {"kind": "command", "command": "whoami", "cwd": "/agent"}),
    ("terminal", {"command": 42}, None),
    ("search_web", {"query": "x"}, None),
])
def test_commands(tool: str, args: dict, expected: dict | None) -> None:
    assert preview_for(tool, args, cwd="/agent") == expected


def test_arguments_of_the_wrong_shape_give_no_preview() -> None:
    assert preview_for("Write", {"file_path": 3, "content": "x"}) is None
    assert preview_for("Edit", {"file_path": "a"}) is None
    assert preview_for("Write", ["not", "a", "mapping"]) is None  # type: ignore[arg-type]


def test_recognised_list_is_published_and_current() -> None:
    published = Path(autopreview.__file__).with_name("RECOGNISED.md").read_text()
    assert published == autopreview.recognised_markdown()
    for spec in autopreview.RECOGNISED.values():
        for tool in spec["tools"]:
            assert f"`{tool}`" in published
