"""Short programs given inline (``python -c``, ``node -e``) that only import and print.

An agent asks ``python3 -c "import sys; print(sys.version)"`` all day; the person should not have
to. The reader vouches for such a program only when it can read all of it: Python is parsed with
:mod:`ast` and every statement, name, attribute and call must be on the lists below (imports of
modules that only compute, ``print`` of expressions built from literals, those modules' listed
functions and values, and a few pure builtins); JavaScript is read token by token and must be one
``console.log(...)`` of literals and listed values. Anything else (a file opened, a process
started, an attribute reached through a call's result, a name not listed) is not understood, and
:func:`only_prints` says why in a phrase.
"""

from __future__ import annotations

import ast
import re

__all__ = ["only_prints"]

# Modules whose listed members only compute or describe the interpreter; ``*`` lists every public one.
_PYTHON_MODULES: dict[str, frozenset[str]] = {
    "sys": frozenset({"version", "version_info", "executable", "platform", "maxsize", "byteorder", "hexversion",
                      "implementation", "getrecursionlimit", "getdefaultencoding", "getfilesystemencoding",
                      "float_info", "int_info", "prefix", "base_prefix", "path"}),
    "platform": frozenset({"platform", "system", "machine", "release", "version", "python_version",
                           "python_implementation", "processor", "architecture", "node", "uname",
                           "python_version_tuple", "mac_ver", "freedesktop_os_release"}),
    "json": frozenset({"dumps", "loads"}),
    "math": frozenset({"*"}), "cmath": frozenset({"*"}), "statistics": frozenset({"*"}),
    "fractions": frozenset({"Fraction"}), "decimal": frozenset({"Decimal"}), "string": frozenset({"*"}),
    "datetime": frozenset({"datetime", "date", "time", "timedelta", "timezone"}),
    "time": frozenset({"time", "monotonic", "perf_counter", "strftime", "gmtime", "localtime", "tzname"}),
    "calendar": frozenset({"month", "calendar", "isleap", "monthrange"}),
    "textwrap": frozenset({"dedent", "indent", "fill", "wrap", "shorten"}),
    "unicodedata": frozenset({"name", "category", "normalize", "lookup"}),
    "keyword": frozenset({"kwlist", "iskeyword"}), "struct": frozenset({"calcsize"}),
    "sysconfig": frozenset({"get_python_version", "get_platform", "get_paths"}),
    "locale": frozenset({"getpreferredencoding", "getlocale"}),
    "importlib.metadata": frozenset({"version"}), "uuid": frozenset({"uuid4"}),
}
_PYTHON_BUILTINS = frozenset({"print", "len", "str", "int", "float", "repr", "sorted", "sum", "min", "max", "range",
                              "list", "dict", "tuple", "set", "abs", "round", "bool", "format", "enumerate", "zip",
                              "hex", "oct", "bin", "ord", "chr", "reversed", "divmod", "pow", "all", "any", "type",
                              "True", "False", "None"})
_PYTHON_NODES = (ast.Module, ast.Expr, ast.Import, ast.ImportFrom, ast.alias, ast.Call, ast.Name, ast.Load,
                 ast.Constant, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Tuple, ast.List,
                 ast.Dict, ast.Set, ast.JoinedStr, ast.FormattedValue, ast.keyword, ast.Subscript, ast.Slice,
                 ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.IfExp)


def only_prints(language: str, code: str) -> str | None:
    """None when ``code`` (a ``python -c`` or ``node -e``/``-p`` program) only imports and prints,
    as read; else what was not read, in a phrase for the dialog."""
    if len(code) > 400:
        return "a longer program"
    if language.startswith(("python", "pypy")):
        return _python(code)
    if language in ("node", "bun"):
        return _javascript(code)
    return f"{language} code"


def _python(code: str) -> str | None:
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError):
        return "code that does not parse"
    imported: dict[str, str] = {}     # the name in the program -> the module
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name not in _PYTHON_MODULES:
                    return f"an import of `{alias.name}`"
                imported[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
                if alias.asname is None and "." in alias.name:
                    imported[alias.name] = alias.name
        elif isinstance(statement, ast.ImportFrom):
            module = statement.module or ""
            members = _PYTHON_MODULES.get(module)
            if members is None or statement.level:
                return f"an import from `{module}`"
            for alias in statement.names:
                if "*" not in members and alias.name not in members or alias.name.startswith("_"):
                    return f"an import of `{alias.name}` from `{module}`"
                imported[alias.asname or alias.name] = f"{module}.{alias.name}"
        elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                  and isinstance(statement.value.func, ast.Name) and statement.value.func.id == "print"):
            return "a statement other than an import or a print"
    for node in ast.walk(tree):
        if not isinstance(node, _PYTHON_NODES):
            return f"a `{type(node).__name__}`"
        if isinstance(node, ast.Name) and node.id not in _PYTHON_BUILTINS and node.id not in imported:
            return f"the name `{node.id}`"
        if isinstance(node, ast.Attribute) and not _listed(node, imported):
            return f"the attribute `{node.attr}`"
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) or _listed(node.func, imported)):
            return "a call of what a call returned"
    return None


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``: names and attributes alone (never through a call or a subscript)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else None


# Values reached one step past a listed member: ``sys.version_info.major``, ``datetime.datetime.now``.
_ONE_STEP = {("sys", "version_info"): frozenset({"major", "minor", "micro"}),
             ("datetime", "datetime"): frozenset({"now", "today", "utcnow"}),
             ("datetime", "date"): frozenset({"today"})}


def _listed(node: ast.AST, imported: dict[str, str]) -> bool:
    """Whether an attribute is a listed member of an imported module (``sys.version``,
    ``importlib.metadata.version``)."""
    parts = _dotted(node)
    if parts is None or parts[0] not in imported:
        return False
    path = [*imported[parts[0]].split("."), *parts[1:]]
    if any(part.startswith("_") for part in path):
        return False
    for cut in (2, 1):
        module, rest = ".".join(path[:cut]), path[cut:]
        members = _PYTHON_MODULES.get(module)
        if members is None:
            continue
        if not rest:
            return True
        if "*" not in members and rest[0] not in members:
            return False
        return len(rest) == 1 or len(rest) == 2 and rest[1] in _ONE_STEP.get((module, rest[0]), frozenset())
    return False


_JS_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>'[^'\\\n]*'|\"[^\"\\\n]*\")|"
                       r"(?P<name>[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)|(?P<op>[-+*/%(),<>=!?:]{1,3}))")
_JS_NAMES = frozenset({"process.version", "process.versions", "process.versions.node", "process.versions.v8",
                       "process.platform", "process.arch", "process.release", "process.release.name",
                       "JSON.stringify", "Math.max", "Math.min", "Math.round", "Math.floor", "Math.ceil",
                       "Math.abs", "Math.PI", "Math.sqrt", "Number", "String", "Boolean", "true", "false", "null",
                       "undefined", "Intl.DateTimeFormat", "Date.now"})


def _javascript(code: str) -> str | None:
    text = code.strip().rstrip(";").strip()
    found = re.fullmatch(r"console\.log\((.*)\)", text, re.S)
    body = found.group(1) if found else text      # node -p prints its expression
    at = 0
    while at < len(body):
        token = _JS_TOKEN.match(body, at)
        if token is None or token.end() == at:
            if body[at:].strip() == "":
                break
            return "code that is not one print of listed values"
        name = token.group("name")
        if name is not None and name not in _JS_NAMES:
            return f"the name `{name}`"
        at = token.end()
    return None
