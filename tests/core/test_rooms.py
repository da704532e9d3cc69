"""The package's rooms: each module has one name, and no two modules import each other in a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "desktop_approver"

# The flat paths the core's modules had before they moved into rooms; no longer importable.
FORMER_FLAT_NAMES = ("activation", "audit", "broker", "connection", "limits", "logsafe", "memory", "models", "modes",
                     "peercred", "protocol", "queue", "reading", "risk", "schema", "server", "shellparse",
                     "statistics", "tickets", "tokens")


@pytest.mark.parametrize("old", FORMER_FLAT_NAMES)
def test_a_former_flat_core_path_does_not_import(old: str) -> None:
    code = f"import importlib; importlib.import_module('desktop_approver.core.{old}')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode != 0
    assert "ModuleNotFoundError" in done.stderr


def test_the_core_installs_no_import_hook() -> None:
    code = ("import sys; before = list(sys.meta_path); import desktop_approver.core; "
            "print(len(sys.meta_path) - len(before))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "0", done.stderr


def _modules() -> dict[str, tuple[Path, bool]]:
    found: dict[str, tuple[Path, bool]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(module: str, is_package: bool, tree: ast.AST, known: dict[str, tuple[Path, bool]]) -> Iterator[str]:
    """Every module of the package that ``module`` imports, anywhere in it (type-checking and deferred
    imports included: a circle through them is still two modules that need each other)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_no_two_modules_of_the_package_import_each_other_in_a_circle() -> None:
    known = _modules()
    graph = {module: {name for name in _imported(module, is_package, ast.parse(path.read_text()), known)
                      if name in known and name != module}
             for module, (path, is_package) in known.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_left_flat_in_core_but_the_service() -> None:
    flat = sorted(path.name for path in (ROOT / "desktop_approver" / "core").glob("*.py"))
    assert flat == ["__init__.py", "service.py"]


def test_every_public_name_of_the_policy_package_comes_from_the_submodule_it_names() -> None:
    """``core.policy`` loads its submodules lazily from one table: every name in ``__all__`` resolves,
    from the module the table names, and the table names nothing that is not there."""
    import importlib

    from desktop_approver.core import policy

    for name in policy.__all__:
        assert getattr(policy, name) is not None
    for name, home in policy._HOME.items():
        module = importlib.import_module(f"desktop_approver.core.policy.{home}")
        assert getattr(policy, name) is getattr(module, name)
    assert set(policy.__all__) - {"POLICY_FORMAT_MD"} <= set(policy._HOME)
