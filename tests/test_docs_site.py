"""The documentation site (``mkdocs.yml``, ``docs/``) builds strictly, and every code block in it and
in the README is checked by a test: Python runs and JSON parses (``tests/test_docs_examples.py``),
shell commands of ours parse (the same file), TOML parses here, ``text`` is a listing; a block of
another language, or none, fails until a test checks it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED = {"python", "json", "bash", "toml", "text"}
"""``text`` is a listing (a tree of folders), not code: nothing to run."""


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line, language, code) of each fenced block of ``page``."""
    found, lines, index = [], page.read_text(encoding="utf-8").splitlines(), 0
    while index < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[index])
        if fence:
            end = lines.index("```", index + 1)
            found.append((index + 1, fence.group(1), "\n".join(lines[index + 1:end]) + "\n"))
            index = end
        index += 1
    return found


def test_every_code_block_has_a_language_a_test_checks() -> None:
    unchecked = [f"{page.relative_to(ROOT)}:{line} ({language or 'no language'})"
                 for page in PAGES for line, language, _ in blocks(page) if language not in CHECKED]
    assert unchecked == [], "mark the block's language, or check the language in a test: " + ", ".join(unchecked)


@pytest.mark.parametrize(("page", "line", "code"), [
    pytest.param(page, line, code, id=f"{page.name}:{line}")
    for page in PAGES for line, language, code in blocks(page) if language == "toml"])
def test_the_toml_example_parses(page: Path, line: int, code: str) -> None:
    tomllib.loads(code)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="the [docs] extra is not installed (pip install -e '.[docs]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "claude-code" / "index.html").is_file()
