"""Arrows point down: the package's rooms stand on floors, and no module imports a room on a floor
above its own (deferred and type-checking imports count too: an arrow is an arrow however late it
is followed). Rooms on one floor may use each other; :mod:`tests.core.test_rooms` keeps any two
modules out of a circle.

An import by name counts as an import: ``importlib.import_module("...")``, ``__import__("...")``,
``sys.modules["..."]`` and the lazy tables that feed them (``{"AsyncClient": ".client.async_client"}``)
all hold the module's name as a string, so every string that names a module of the package
(absolute, or relative to the module's package) is an arrow too (:func:`named_by_string`).

A new module belongs to the room of the longest prefix below that names it; one no prefix names
fails :func:`test_every_module_stands_in_a_room`, so its floor is decided, not guessed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.core.test_rooms import _imported, _modules

FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # What an agent runs (standard library only): the thin client, and the relay's agent side, which the
    # client loads for a nats:// URL.
    ("agent", ("desktop_approver", "desktop_approver.version", "desktop_approver.client",
               "desktop_approver.relay", "desktop_approver.relay.agent", "desktop_approver.relay.address",
               "desktop_approver.relay.names")),
    # The Qt-free app: the core and what the app and the agents' tests use beside it. The core knows no
    # relay, no adapter, no command and no window.
    ("core", ("desktop_approver.core", "desktop_approver.notify", "desktop_approver.logs", "desktop_approver.testing")),
    ("render", ("desktop_approver.render",)),
    # Over the core: the frameworks' adapters, and the relay's app side (it uses the core's broker).
    ("adapters and the relay's app side", ("desktop_approver.adapters", "desktop_approver.relay.approver")),
    # The commands (and their shared helpers, commands/argv.py), and the app's entry that wires the core
    # to the relay.
    ("commands and wiring", ("desktop_approver.commands", "desktop_approver.wiring")),
    ("gui", ("desktop_approver.gui", "desktop_approver.demo")),
    ("cli", ("desktop_approver.cli", "desktop_approver.__main__")),
)


def floor_of(module: str) -> tuple[int, str] | None:
    """The floor (and its room's prefix) of ``module``: the longest prefix that names it."""
    best: tuple[int, str] | None = None
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (number, prefix)
    return best


def named_by_string(module: str, is_package: bool, tree: ast.AST, known: dict[str, tuple[Path, bool]]) -> Iterator[str]:
    """Every module of the package a string in ``module`` names: ``"desktop_approver.x.y"``, or
    ``".x.y"`` relative to the module's package as ``import_module(name, __name__)`` reads it (a
    trailing ``:attr`` or ``.attr`` is dropped). A relative string that names no module (``".json"``)
    is not a name."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value.partition(":")[0]
        if text.startswith("desktop_approver."):
            base, name = "desktop_approver", text
        elif text.startswith(".") and text.lstrip(".").replace(".", "").replace("_", "").isalnum():
            dots = len(text) - len(text.lstrip("."))
            base = ".".join(package.split(".")[: len(package.split(".")) - (dots - 1)])
            name = f"{base}.{text.lstrip('.')}"
        else:
            continue
        if name not in known:
            name = name.rpartition(".")[0]  # "module.attr"
        if name in known and name != base:
            yield name


def arrows(module: str, is_package: bool, source: str, known: dict[str, tuple[Path, bool]]) -> set[str]:
    """The modules of the package ``module`` reaches: by import statement or by name."""
    tree = ast.parse(source)
    return set(_imported(module, is_package, tree, known)) | set(named_by_string(module, is_package, tree, known))


def test_every_module_stands_in_a_room() -> None:
    assert [module for module in _modules() if floor_of(module) is None] == []


def test_no_module_imports_a_room_above_it() -> None:
    known = _modules()
    upward = []
    for module, (path, is_package) in sorted(known.items()):
        here = floor_of(module)
        assert here is not None
        for target in arrows(module, is_package, path.read_text(), known):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            there = floor_of(target) if target in known else None
            if there is not None and there[0] > here[0]:
                upward.append(f"{module} ({FLOORS[here[0]][0]}) imports {target} ({FLOORS[there[0]][0]})")
    assert upward == []


def test_the_test_sees_an_upward_arrow() -> None:
    """The check itself can fail: a core module importing the relay is reported."""
    module = "desktop_approver.core.service"
    tree = ast.parse("from ..relay.approver import RelayApprover\n")
    known = _modules()
    targets = set(_imported(module, False, tree, known))
    assert "desktop_approver.relay.approver" in {t if t in known else t.rsplit(".", 1)[0] for t in targets}
    core, relay = floor_of(module), floor_of("desktop_approver.relay.approver")
    assert core is not None and relay is not None and relay[0] > core[0]


def test_the_test_sees_an_upward_arrow_by_name() -> None:
    """An import by name is an arrow too, however it is spelled."""
    known = _modules()
    service = "desktop_approver.core.service"
    for source, module in [
        ('import importlib\nimportlib.import_module("desktop_approver.relay.approver")\n', service),
        ('__import__("desktop_approver.gui.app")\n', service),
        ('import sys\nsys.modules["desktop_approver.relay.approver"].RelayApprover\n', service),
        ('import importlib\nimportlib.import_module("..relay.approver", __name__)\n', service),
        ('_HOME = {"Window": ".gui.app"}\n', "desktop_approver"),
        ('LAZY = "desktop_approver.cli:main"\n', "desktop_approver.client.base"),
    ]:
        here = floor_of(module)
        floors = {floor_of(target) for target in arrows(module, module == "desktop_approver", source, known)}
        assert here is not None and any(there is not None and there[0] > here[0] for there in floors), source
    assert arrows(service, False, 'SUFFIX = ".json"\nWORD = "."\n', known) == set()
