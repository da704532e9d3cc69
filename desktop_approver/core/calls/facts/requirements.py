"""What a requirements file (``pip install -r FILE``) asks to install, read the way pip reads it.

A requirements file is code to install: besides package names it may hold URLs, VCS addresses,
local archives and paths, editable installs and options that switch the index
(``--index-url``), none of which the command line shows. The reader (:mod:`..risk.understanding`)
leaves ``-r FILE`` a gap; the facts read the file and close the gap only when every requirement
in it (and in the files it includes with ``-r``/``-c``, inside the project) is a plain name with
version specifiers and markers, exactly what ``pip install NAME`` on the command line would be.

Standard library only; nothing here judges.
"""

from __future__ import annotations

import os
import re

__all__ = ["MAX_BYTES", "PACKAGE_ARCHIVE", "plain_requirement", "requirement_lines"]

MAX_BYTES = 1_000_000
"""A larger requirements file is not read: not proven."""

PACKAGE_ARCHIVE = re.compile(r"\.(zip|whl|egg|tar|tgz|tbz2?|txz|tlz|gz|bz2|xz|lz|lzma|zst|7z)$", re.I)
"""A package named by an archive file, told by its extension the way installers tell it, in any
case (pip's archive extensions: .zip .whl .tar .tgz .tar.gz .tbz .tar.bz2 .txz .tlz .tar.xz
.tar.lz .tar.lzma; npm's .tgz; eggs): a local file whose build or install code runs."""

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_VERSION = r"(?:===|==|!=|~=|>=|<=|>|<)\s*[A-Za-z0-9.*+!_-]+"
_REQUIREMENT = re.compile(rf"(?P<name>{_NAME})\s*(?:\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\])?"
                          rf"\s*(?:\(?\s*{_VERSION}(?:\s*,\s*{_VERSION})*\s*\)?)?\s*(?:;[^@]*)?")
# Options pip allows at the end of a requirement line that change nothing about where it comes from.
_LINE_OPTIONS = re.compile(r"\s+--hash[=\s]\s*[\w:]+")
_INCLUDE = re.compile(r"(-r|--requirement|-c|--constraint)(?:\s+|=)(?P<file>\S+)")


def plain_requirement(line: str) -> bool:
    """A requirement that is a package name (extras, versions, markers, hashes), never a URL, a
    VCS address, an archive, a path or an option."""
    text = _LINE_OPTIONS.sub("", line).strip()
    found = _REQUIREMENT.fullmatch(text)
    return found is not None and PACKAGE_ARCHIVE.search(found.group("name")) is None


def requirement_lines(path: str, project: str, depth: int = 0) -> tuple[list[str], str]:
    """The requirement lines of ``path`` and of the files it includes (``-r``/``-c`` inside
    ``project``), and the problem that stops them being proven plain (``""``: none)."""
    if depth > 5:
        return [], f"requirements files include each other more than 5 deep (`{path}`)"
    real = os.path.realpath(path)
    if not (real == project or real.startswith(project.rstrip("/") + "/")):
        return [], f"the requirements file `{path}` is outside the project"
    try:
        if os.path.getsize(real) > MAX_BYTES:
            return [], f"the requirements file `{path}` is too large to read"
        with open(real, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"the requirements file `{path}` could not be read ({type(exc).__name__})"
    lines: list[str] = []
    for raw in re.sub(r"\\\n", " ", text).splitlines():
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if not line:
            continue
        included = _INCLUDE.fullmatch(line)
        if included is not None:
            more, problem = requirement_lines(os.path.join(os.path.dirname(real), included.group("file")),
                                              project, depth + 1)
            if problem:
                return [], problem
            lines += more
            continue
        if not plain_requirement(line):
            return [], f"the requirements file `{path}` lists `{line[:60]}` (not a package name)"
        lines.append(line)
    return lines, ""
