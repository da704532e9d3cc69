"""The risk levels on a large labelled table of realistic calls (``risk_calls.jsonl``).

The rows were labelled from the three levels in :mod:`desktop_approver.core.calls.risk`'s docstring,
without reading the classifier, in the argument shapes of Claude Code, Codex, MCP servers and
OpenAI's shell and apply_patch tools. Every row carries a one-line reason. The table also checks
that every consumer of a call (risk, policy, previews, the highlighter) reads it the same way,
and that the shell parser never calls safe a line that real bash rejects.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from desktop_approver.core import policy
from desktop_approver.core.calls.reading import read_call, shell_text
from desktop_approver.core.calls.risk import LEVELS, assess
from desktop_approver.render import command_html, highlight
from desktop_approver.render.autopreview import preview_for

# Three tables labelled independently of each other and of the classifier: risk_calls.jsonl (a
# project at /home/dev/proj), then risk_calls_second_set.jsonl (/home/dev/webapp) and
# risk_calls_third_set.jsonl (/home/ana/shop-api), each written later to measure the classifier
# on calls it had not seen, and part of the table since. A row whose author's label the
# classifier deliberately does not follow says so in its reason.
TABLES = ("risk_calls.jsonl", "risk_calls_second_set.jsonl", "risk_calls_third_set.jsonl")
ROWS: list[dict[str, Any]] = [json.loads(line) for name in TABLES
                              for line in Path(__file__).with_name(name).read_text(encoding="utf-8").splitlines()
                              if line.strip()]


@pytest.fixture(autouse=True)
def rows_home(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Each table's calls come from its own home directory (the parent of its project's)."""
    row = request.node.callspec.params.get("row") if hasattr(request.node, "callspec") else None
    parts = [part for part in (row or {}).get("cwd", "/home/dev").split("/") if part]
    home = "/" + "/".join(parts[:2]) if parts[:1] == ["home"] and len(parts) >= 2 else "/home/dev"
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("TMPDIR", raising=False)


def _id(row: dict[str, Any]) -> str:
    return f"{row['family']}:{row['tool']}:{json.dumps(row['args'], ensure_ascii=True)[:70]}"


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_row(row: dict[str, Any]) -> None:
    found = assess(row["tool"], row["args"], cwd=row["cwd"], hints=row.get("hints"))
    assert found.level == row["level"], (row["why"], found)
    if found.level != "safe":
        assert found.reasons, "a risky call must say why"


def test_the_table_is_large_balanced_and_explained() -> None:
    levels = Counter(row["level"] for row in ROWS)
    assert len(ROWS) >= 600 and all(levels[level] >= 150 for level in LEVELS), levels
    assert all(isinstance(row["why"], str) and len(row["why"]) > 5 for row in ROWS)
    families = {row["family"] for row in ROWS}
    for family in ("hidden-program", "interpreter", "reverse-shell", "git", "publish", "secret", "persistence",
                   "dryrun", "sql", "http", "message", "outside-workdir", "sibling-prefix", "hidden-chars",
                   "mcp-annotations", "unknown-tool", "patch", "fs-tool"):
        assert family in families, family
    tools = {row["tool"] for row in ROWS}
    for shape in ("Bash", "shell", "apply_patch", "local_shell", "Edit", "read_query", "slack_post_message",
                  "fetch", "git_status"):
        assert shape in tools, shape
    keys = Counter(key for row in ROWS for key in row if key not in ("hints",))
    distinct = {json.dumps([r["tool"], r["args"], r["cwd"], r.get("hints")], sort_keys=True) for r in ROWS}
    assert len(distinct) == len(ROWS)
    assert keys["why"] == len(ROWS)


def _shell_rows() -> list[dict[str, Any]]:
    return [row for row in ROWS if read_call(row["tool"], row["args"], row["cwd"]).commands]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for its syntax check")
def test_the_parser_never_calls_safe_what_bash_rejects() -> None:
    """``bash -n`` only parses (nothing runs). Where bash says no, the reading must not be safe."""
    checked = rejected = 0
    for row in _shell_rows():
        for run in read_call(row["tool"], row["args"], row["cwd"]).commands:
            result = subprocess.run(["bash", "-n", "-c", run.text], capture_output=True, timeout=10)
            checked += 1
            if result.returncode != 0:
                rejected += 1
                assert assess(row["tool"], row["args"], cwd=row["cwd"]).level != "safe", run.text
    assert checked >= 300


@pytest.mark.parametrize("line", ["echo 'unterminated", "ls && && ls", "cat <(ls", "if true; then ls", "ls )"])
def test_lines_bash_rejects_are_never_safe(line: str) -> None:
    assert subprocess.run(["bash", "-n", "-c", line], capture_output=True).returncode != 0
    assert assess("Bash", {"command": line}, cwd="/home/dev/proj").level != "safe"


def _bold(page: str) -> list[str]:
    """The bold runs of a rendered command: characters drawn in the command style, adjacent ones
    making one run, whatever other spans (the danger marks) wrap them."""
    from html.parser import HTMLParser

    class Runs(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.stack: list[bool] = []
            self.runs: list[str] = []
            self.open = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "span":
                self.stack.append(dict(attrs).get("style") == highlight.COMMAND_STYLE)

        def handle_endtag(self, tag: str) -> None:
            if tag == "span" and self.stack:
                self.stack.pop()

        def handle_data(self, data: str) -> None:
            if any(self.stack):
                if self.open:
                    self.runs[-1] += data
                else:
                    self.runs.append(data)
                self.open = True
            else:
                self.open = False

    parser = Runs()
    parser.feed(page)
    return parser.runs


def test_every_consumer_reads_the_same_command_paths_and_programs() -> None:
    """One reading: the policy's parts, the automatic preview and the highlighter's bold words are
    the reading module's commands, paths and programs, for every row of the table."""
    compared = 0
    for row in ROWS:
        reading = read_call(row["tool"], row["args"], row["cwd"])
        context = policy._Context(policy.PolicyCall(tool=row["tool"], args=row["args"], cwd=row["cwd"]))
        if reading.commands:
            programs = [" ".join(" ".join(c.argv).split()) for run in reading.commands for c in run.programs
                        if c.argv]
            assert [part.command for part in context.parts if part.command is not None and part.parsed] == \
                programs or any(run.parse_error for run in reading.commands), row
            preview = preview_for(row["tool"], row["args"], cwd=row["cwd"])
            assert preview is not None and preview["kind"] == "command", row
            shown = preview["command"] if "command" in preview else shell_text(preview["argv"])[0]  # type: ignore[index]
            assert reading.commands[0].text == shown, row
            text = reading.commands[0].text
            if reading.commands[0].argv is None and not reading.hidden:
                page, _ = command_html.render_command_html(text)
                spans = [text[a:b] for a, b in command_html.program_spans(text)]
                assert len(spans) >= len({c.span for c in reading.commands[0].programs if c.argv and c.span
                                          and not any(o.span and o.span[0] < c.span[0] < o.span[1]
                                                      for o in reading.commands[0].programs)}), row
                assert sorted(_bold(page)) == sorted(spans), row
        else:
            touched = sorted(t.path or "" for part in context.parts for t in part.touches if t.path)
            assert touched == sorted(use.path for use in reading.paths), row
        compared += 1
    assert compared == len(ROWS)


def test_argv_script_and_command_forms_read_alike() -> None:
    """The same line given as a string, an argv, a script or Codex's bash -lc gets the same level,
    the same rule match and the same programs."""
    rules = policy.Policy.parse('version = 1\n[[rule]]\naction = "block"\ntool = "Bash"\ncommand = "rm *"\n')
    for args in ({"command": "rm -rf /home/me"}, {"argv": ["rm", "-rf", "/home/me"]},
                 {"script": "rm -rf /home/me"}, {"command": ["rm", "-rf", "/home/me"]},
                 {"command": ["bash", "-lc", "rm -rf /home/me"]}, {"cmd": "rm -rf /home/me"},
                 {"action": {"type": "exec", "command": ["rm", "-rf", "/home/me"]}}):
        assert assess("Bash", args, cwd="/home/dev/proj").level == "destructive", args
        verdict = rules.evaluate(policy.PolicyCall("Bash", args, cwd="/home/dev/proj"))
        assert verdict is not None and verdict.action == "block", args
        assert read_call("Bash", args).programs[0].argv == ("rm", "-rf", "/home/me"), args
