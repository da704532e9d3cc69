"""A command's options declared once: argparse builds ``--help`` and the errors from them, and
:func:`read` takes the everyday command line without importing argparse at all.

The commands an agent runs once per tool call (``hook``, ``request``) start as often as the tool
calls they guard, and argparse with what it pulls in (``gettext``, ``locale``, ``shutil``) is a
fifth of such a start. :func:`read` understands the plain forms (``--opt value``, ``--opt=value``,
flags, positionals, choices, numbers); for anything else (``--help``, an abbreviated or unknown
option, a value that looks like an option, a missing or wrong value) it returns None and the
caller hands the same argv to argparse, which answers exactly as before. A test holds the two to
the same answers.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing's own flag costs an import of typing; type checkers read this one the same
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["SOCKET_HELP", "Option", "add_socket", "add_to", "finite_positive", "read"]

SOCKET_HELP = ("the app's socket (default: $DESKTOP_APPROVER_SOCKET, then "
               "$XDG_RUNTIME_DIR/desktop-approver/approver.sock)")


class Option:
    """One option or positional: ``kind`` is ``value`` (``--opt VALUE``), ``flag`` (store_true) or
    ``positional``."""

    __slots__ = ("flag", "kind", "convert", "choices", "default", "metavar", "help", "required")

    def __init__(self, flag: str, *, kind: str = "value", convert: Callable[[str], Any] | None = None,
                 choices: Sequence[str] | None = None, default: Any = None, metavar: str | None = None,
                 help: str = "", required: bool = False) -> None:
        self.flag = flag
        self.kind = kind
        self.convert = convert
        self.choices = tuple(choices) if choices is not None else None
        self.default = False if kind == "flag" else default
        self.metavar = metavar
        self.help = help
        self.required = required or kind == "positional"

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def __repr__(self) -> str:
        return f"<Option {self.flag} {self.kind}>"


def add_to(parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    """Declare ``options`` on an argparse parser (the one used for ``--help`` and errors)."""
    for option in options:
        if option.kind == "positional":
            parser.add_argument(option.flag, choices=option.choices, help=option.help)
        elif option.kind == "flag":
            parser.add_argument(option.flag, action="store_true", help=option.help)
        elif option.convert is not None:
            parser.add_argument(option.flag, type=option.convert, choices=option.choices, default=option.default,
                                metavar=option.metavar, help=option.help, required=option.required)
        else:
            parser.add_argument(option.flag, choices=option.choices, default=option.default,
                                metavar=option.metavar, help=option.help, required=option.required)


def read(options: Sequence[Option], argv: Sequence[str]) -> dict[str, Any] | None:
    """The values of ``argv`` as argparse would give them, or None when argparse should answer."""
    named = {option.flag: option for option in options if option.kind != "positional"}
    positionals = [option for option in options if option.kind == "positional"]
    values: dict[str, Any] = {option.dest: option.default for option in options}
    given: set[str] = set()
    taken = 0
    items = list(argv)
    index = 0
    while index < len(items):
        item = items[index]
        index += 1
        if item.startswith("-") and item != "-":
            flag, equals, inline = item.partition("=")
            option = named.get(flag)
            if option is None:
                return None  # --help, an abbreviation, an unknown option, a negative number: argparse's
            if option.kind == "flag":
                if equals:
                    return None
                values[option.dest] = True
                continue
            if equals:
                text = inline
            elif index < len(items) and not (items[index].startswith("-") and items[index] != "-"):
                text = items[index]
                index += 1
            else:
                return None
            value = _value(option, text)
            if value is None:
                return None
            values[option.dest] = value
            given.add(option.dest)
        else:
            if taken >= len(positionals):
                return None
            value = _value(positionals[taken], item)
            if value is None:
                return None
            values[positionals[taken].dest] = value
            given.add(positionals[taken].dest)
            taken += 1
    if any(option.required and option.dest not in given for option in options):
        return None
    return values


def _value(option: Option, text: str) -> Any:
    if option.choices is not None and text not in option.choices:
        return None
    if option.convert is None:
        return text
    try:
        return option.convert(text)
    except (TypeError, ValueError):
        return None


# -- helpers every command shares (below the commands and ``cli.py``: arrows point down) -------------

def add_socket(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--socket", metavar="PATH", help=SOCKET_HELP)


def finite_positive(unit: str, most: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite number of ``unit`` above zero (and at most ``most``).

    ``float()`` reads "nan", "inf" and "-1e999" too: a NaN timeout compares false with every clock
    reading and an infinite one never ends, so they are refused here, as usage errors (exit 2),
    before the app starts with them.
    """
    def parse(text: str) -> float:
        import argparse

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be a finite number of {unit} above 0, not {text!r}")
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:g} {unit}, not {text!r}")
        return value
    return parse
