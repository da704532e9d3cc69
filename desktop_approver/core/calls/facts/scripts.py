"""What a named project script runs (``npm run NAME``), read from the project's ``package.json``.

A script's name says nothing about what it does (``npm run nuke``, ``npm run db:reset``): the
reader leaves ``run NAME`` a gap, and the facts read the command lines the project's file gives
it (with the ``preNAME`` and ``postNAME`` scripts the package managers run around it), for the
judgement to read like any command line (:mod:`..risk.consequences`).

Standard library only; nothing here judges.
"""

from __future__ import annotations

import json
import os
import shlex

__all__ = ["MAX_BYTES", "package_script"]

MAX_BYTES = 1_000_000
"""A larger ``package.json`` is not read: not proven."""


def package_script(folder: str, name: str, args: tuple[str, ...] = ()) -> tuple[tuple[str, ...], str]:
    """The command lines ``run NAME ARGS`` runs from ``folder``'s ``package.json`` (``preNAME``,
    ``NAME`` with ``ARGS`` appended, ``postNAME``), and the problem that stops them being known
    (``""``: none)."""
    path = os.path.join(folder, "package.json")
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return (), "`package.json` is too large to read"
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return (), f"no `package.json` where `{name}` would run"
    except (OSError, ValueError) as exc:
        return (), f"`package.json` could not be read ({type(exc).__name__})"
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict) or not isinstance(scripts.get(name), str):
        return (), f"`package.json` has no script `{name}`"
    lines = [scripts[name] + (" " + shlex.join(args) if args else "")]
    for hook in (f"pre{name}", f"post{name}"):
        text = scripts.get(hook)
        if text is not None and not isinstance(text, str):
            return (), f"`package.json` script `{hook}` is not a command line"
        if text:
            lines.insert(0 if hook.startswith("pre") else len(lines), text)
    return tuple(lines), ""
