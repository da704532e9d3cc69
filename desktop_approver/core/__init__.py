"""The Qt-free core, in rooms by concern (CONTRIBUTING.md, "Where things are"):

- ``calls``: what a tool call does, read once (``reading``), its shell parser (``shellparse``) and
  its risk level (``risk``);
- ``policy``: the person's rules (rules, load, match, suggest, watch);
- ``decisions``: a call's way from asked to decided (``broker``, ``tickets``, session ``memory``,
  ``modes``, the waiting ``queue``);
- ``messages``: the protocol's messages (``models``), the validation ladder (``protocol``) and the
  generated JSON Schema (``schema``);
- ``transport``: the socket (``server``, the per-connection ``connection``), ``peercred``,
  ``tokens``, ``limits`` and socket ``activation``;
- ``store``: the ``audit`` log, its ``statistics``, and client text made safe for the app's log
  (``logsafe``);
- ``service``: all of it assembled, for the GUI, tests and benchmarks.

The modules lived flat in ``desktop_approver/core/`` before; their old names still import (the same
module objects, so patching either name patches both), and ``python -m
desktop_approver.core.schema`` still runs.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType

MOVED: dict[str, str] = {
    "desktop_approver.core.activation": "desktop_approver.core.transport.activation",
    "desktop_approver.core.audit": "desktop_approver.core.store.audit",
    "desktop_approver.core.broker": "desktop_approver.core.decisions.broker",
    "desktop_approver.core.connection": "desktop_approver.core.transport.connection",
    "desktop_approver.core.limits": "desktop_approver.core.transport.limits",
    "desktop_approver.core.logsafe": "desktop_approver.core.store.logsafe",
    "desktop_approver.core.memory": "desktop_approver.core.decisions.memory",
    "desktop_approver.core.models": "desktop_approver.core.messages.models",
    "desktop_approver.core.modes": "desktop_approver.core.decisions.modes",
    "desktop_approver.core.peercred": "desktop_approver.core.transport.peercred",
    "desktop_approver.core.protocol": "desktop_approver.core.messages.protocol",
    "desktop_approver.core.queue": "desktop_approver.core.decisions.queue",
    "desktop_approver.core.reading": "desktop_approver.core.calls.reading",
    "desktop_approver.core.risk": "desktop_approver.core.calls.risk",
    "desktop_approver.core.schema": "desktop_approver.core.messages.schema",
    "desktop_approver.core.server": "desktop_approver.core.transport.server",
    "desktop_approver.core.shellparse": "desktop_approver.core.calls.shellparse",
    "desktop_approver.core.statistics": "desktop_approver.core.store.statistics",
    "desktop_approver.core.tickets": "desktop_approver.core.decisions.tickets",
    "desktop_approver.core.tokens": "desktop_approver.core.transport.tokens",
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``desktop_approver.core.<old>`` as the module in its room."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns what sys.modules holds under the name once this returns.
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])

    def get_code(self, fullname: str) -> CodeType:
        """For ``python -m desktop_approver.core.<old>``: run the moved module as ``__main__``."""
        return compile(f"import runpy\nrunpy.run_module({MOVED[fullname]!r}, run_name='__main__', alter_sys=True)\n",
                       f"<{fullname} moved to {MOVED[fullname]}>", "exec")


if not any(isinstance(finder, _MovedModule) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModule())
