"""The pattern language of rules: fnmatch globs, the checks a pattern passes when a rule is read,
and the same checks written as JSON Schema patterns for :mod:`.model` (and so for editors).

Every pattern must hold something other than blanks and close every ``[`` (fnmatch quietly reads an
unclosed one as a literal; in a rule it is always a typo); in a path pattern ``**`` must be a whole
component. ``tests/core/test_policy_model.py`` checks that the regexes accept exactly what the
checks accept.
"""

from __future__ import annotations

# The checks below as regexes. GLOB is check_glob (something other than blanks, every '[' closed
# as _check_brackets reads it), written so that no alternative can backtrack into another; a path
# glob must also not contain BAD_DOUBLE_STAR, a '**' sharing its component with something else.
_BRACKET = r"\[(?:!\][^\]]*|![^\]]+|\][^\]]*|[^!\]][^\]]*)\]"
GLOB = rf"^\s*(?:[^\s\[]|{_BRACKET})(?:[^\[]|{_BRACKET})*$"
BAD_DOUBLE_STAR = r"[^/]\*\*|\*\*[^/]"
GLOB_HELP = ("a glob: * matches any characters, ? one, [abc] one of a set, [!abc] one not in it, [[] a literal '['; "
             "not blank")
PATH_GLOB_HELP = GLOB_HELP + "; ** is a whole path component, and matches any number of directories"


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def check_glob(pattern: str) -> str:
    if not pattern.strip():
        raise ValueError("empty pattern")
    _check_brackets(pattern)
    return pattern


def check_command(pattern: str) -> str:
    return check_glob(_squeeze(pattern))


def check_path_glob(pattern: str) -> str:
    check_glob(pattern)
    for part in pattern.split("/"):
        if "**" in part and part != "**":
            raise ValueError(f"'**' must be a whole path component in {pattern!r} (write 'dir/**/name')")
    return pattern


def _check_brackets(pattern: str) -> None:
    """fnmatch quietly reads an unclosed ``[`` as a literal; in a rule it is always a typo."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            while j < len(pattern) and pattern[j] != "]":
                j += 1
            if j >= len(pattern):
                raise ValueError(f"unclosed '[' in {pattern!r} (write '[[]' for a literal '[')")
            i = j
        i += 1
