"""Whether a file a call writes in the project is proven not to run later without the person (issue 30).

A written file is read as understood only on proof, never because its name is missing from a list
of dangerous ones: the catalog's ``[project]`` table says which kinds of file are inert where.

- Documents and data (``inert_kinds``: ``*.md``, ``*.csv``, images...) and a few plain hidden names
  (``inert_names``: ``.gitignore``, ``.gitkeep``) are inert in any ordinary folder, the root too.
- The project's own source (``source_kinds``) is inert in an ordinary folder below the root, and at
  the root under a plain name (``app.py``, not ``vitest.workspace.ts``).
- Settings data (``settings_kinds``: JSON, YAML, TOML...) is inert only below the root: the root is
  where tools look for their settings (``nodemon.json``, ``lefthook.yml``, ``uv.toml``).
- An ordinary folder is neither hidden (``.husky``, ``.vscode``, ``.GIT``) nor installed code or a
  build's own scripts (``runs_later_dirs``: ``node_modules``, ``site-packages``, ``buildSrc``).
- Whatever its kind, a name a tool runs by convention (``runs_later``: ``conftest.py``, ``Makefile``)
  is not inert, and a Python file whose module name Python would import in place of a real module
  (the standard library's, or one the catalog knows as a program run with ``python -m``) is not.

A program that writes only its own output (``own_output``: a formatter rewriting the files it
formats, a compiler's object file, a test report) is judged by where it writes, not by kind.
Names are compared case-insensitively: on a case-insensitive file system (macOS, Windows)
``MAKEFILE`` is the Makefile. A program's or tool's folder of its own making (``mkdir``,
``python -m venv``: ``folder_makers``) holds nothing the agent wrote. The facts gathered from the
file system (:mod:`..facts`) add what spelling cannot know: a folder that is a virtual environment
whatever its name, a module an installed distribution provides.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from functools import lru_cache

from ..catalog import Catalog

__all__ = ["UNKNOWN_KIND", "python_shadow", "unproven_write"]

UNKNOWN_KIND = "a kind of file not known to be inert"
"""Why a file (or a folder: a name without a kind) is not proven; a copy of the project's own files
into an ordinary folder is proven by its sources instead (:func:`..understanding._copied`)."""

_PLAIN_ROOT_NAME = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9]+")
_PYTHON = (".py", ".pyi", ".pyc", ".pyw", ".pyx", ".so", ".pyd")


def unproven_write(resolved: str, project: str, cat: Catalog, maker: str = "") -> str | None:
    """Why the file ``resolved`` written inside ``project`` is not proven inert (None: it is).
    ``maker`` is the program or tool that writes it, for the catalog's ``folder_makers``."""
    rel = os.path.relpath(resolved, os.path.normpath(project))
    if rel == "." or rel.startswith(".."):
        return None     # the project itself, or outside it: judged by place (.places), not here
    parts = rel.split(os.sep)
    kinds = _kinds(cat)
    if maker in cat.folder_makers:
        return None     # an empty folder, a virtual environment: the program's own content
    for folder in parts[:-1]:
        why = _unordinary(folder, kinds)
        if why:
            return why
    name = parts[-1].casefold()
    root = len(parts) == 1
    if maker in cat.own_output:
        if name.startswith(".") and name not in kinds.names:
            return "a hidden name (hooks, CI, tools' settings)"
        if name in kinds.folders:
            return f"installed code or build scripts (`{parts[-1]}`)"
    elif not (name in kinds.names or kinds.documents.fullmatch(name)
            or kinds.sources.fullmatch(name) and (not root or _PLAIN_ROOT_NAME.fullmatch(name))
            or kinds.settings.fullmatch(name) and not root):
        if name.startswith("."):
            return "a hidden name (hooks, CI, tools' settings)"
        if root and (kinds.sources.fullmatch(name) or kinds.settings.fullmatch(name)):
            return "settings or source at the project root, where tools look for theirs"
        return UNKNOWN_KIND
    if kinds.runs_later.fullmatch(name):
        return "a file a tool runs by its name"
    return python_shadow(rel, cat)


def python_shadow(rel: str, cat: Catalog) -> str | None:
    """A Python module file (or package ``__init__``) named like a module Python or the catalog's
    ``python -m`` programs import: put first on ``sys.path`` (the project root, a test folder),
    it runs in place of the real one."""
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1].casefold()
    if not name.endswith(_PYTHON):
        return None
    stem = name.split(".", 1)[0]
    if stem == "__init__" and len(parts) > 1:
        stem = parts[-2].casefold()
    if stem in _module_names(tuple(cat.programs)):
        return f"a Python module named like one Python imports (`{stem}`)"
    return None


def _unordinary(folder: str, kinds: _Kinds) -> str | None:
    lowered = folder.casefold()
    if lowered.startswith("."):
        return f"a file in a hidden folder (`{folder}`: hooks, CI, tools' settings)"
    if lowered in kinds.folders:
        return f"a file in installed code or build scripts (`{folder}`)"
    return None


class _Kinds:
    """The catalog's kinds and names, each list as one case-insensitive pattern."""

    def __init__(self, cat: Catalog) -> None:
        self.documents = _one(cat.inert_kinds)
        self.sources = _one(cat.source_kinds)
        self.settings = _one(cat.settings_kinds)
        self.runs_later = _one(cat.runs_later)
        self.names = frozenset(name.casefold() for name in cat.inert_names)
        self.folders = frozenset(name.casefold() for name in cat.runs_later_dirs)


def _one(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(p.casefold())})" for p in patterns) or "(?!)")


_KINDS: dict[int, tuple[Catalog, _Kinds]] = {}


def _kinds(cat: Catalog) -> _Kinds:
    found = _KINDS.get(id(cat))
    if found is not None and found[0] is cat:
        return found[1]
    made = _Kinds(cat)
    if len(_KINDS) > 8:
        _KINDS.clear()
    _KINDS[id(cat)] = (cat, made)
    return made


@lru_cache(maxsize=8)
def _module_names(programs: tuple[str, ...]) -> frozenset[str]:
    """The standard library's top-level modules and the catalog's programs (any of which the
    reader understands as ``python -m NAME``), case-folded."""
    return frozenset(name.casefold() for name in (*sys.stdlib_module_names, *programs))
