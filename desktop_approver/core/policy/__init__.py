"""The person's policy file: rules that answer a tool call before any dialog is shown.

Qt-free. A :class:`Policy` is an immutable list of :class:`Rule` read from TOML;
:meth:`Policy.evaluate` answers ``allow`` / ``ask`` / ``deny`` / ``block`` or ``None`` (no rule:
ask the person), and :meth:`Policy.explain` says why, part by part. :class:`PolicyWatcher` keeps
the policy in force while the person edits the file; :func:`suggest_rule`, :func:`rule_matches`
and :func:`append_rule` serve the dialog's "Always allow...": the rule shown is exactly the rule
written. The file format is ``docs/policy.md`` (:func:`policy_format_md`,
``desktop-approver policy docs``); its JSON Schema is ``ipc/policy.schema.json``.

One module per concern, everything importable from here:

- :mod:`.rules`: the vocabulary, :class:`PolicyCall`, :class:`Rule`, :class:`PolicyVerdict`, :class:`PolicyError`
- :mod:`.model`: the pydantic model of the file, and the reason a value is refused
- :mod:`.globs`: the pattern language, its checks, and the same checks as JSON Schema patterns
- :mod:`.load`: reading the file, and the line of a problem
- :mod:`.parts`: a call cut into parts, and the files each part touches
- :mod:`.match`: :class:`Policy`, and how a rule matches a part
- :mod:`.explain`: :class:`Explanation`, what ``policy explain`` prints
- :mod:`.automatic`: what an automatic answer needs (a fully understood call at safe or moderate)
- :mod:`.breadth`: allow rules broader than they look, for ``policy check`` to warn about
- :mod:`.suggest`: "Always allow...": suggesting, checking and writing a rule
- :mod:`.watch`: :class:`PolicyWatcher`, reloading on change
- :mod:`.docs`: the format's reference, from the installed package
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Every name below is importable from here, but each submodule loads with the first name taken
# from it: the app watches for a rules file without loading the file's pydantic model (idle memory).
_HOME: dict[str, str] = {
    "policy_format_md": "docs",
    "Explanation": "explain", "PartExplanation": "explain", "RuleCheck": "explain",
    "_Lines": "load", "rule_from_dict": "load",
    "Policy": "match",
    "_Context": "parts", "shell_command": "parts",
    **dict.fromkeys(["ACTIONS", "MAX_POLICY_BYTES", "OPERATIONS", "RISK_LEVELS", "RULE_KEYS", "SUPPORTED_VERSION",
                     "Action", "PolicyCall", "PolicyError", "PolicyVerdict", "Rule"], "rules"),
    **dict.fromkeys(["append_rule", "render_rule", "rule_matches", "suggest_rule", "suggest_rule_alternatives"],
                    "suggest"),
    "ChangeCallback": "watch", "PolicyWatcher": "watch",
}

if TYPE_CHECKING:
    from .docs import policy_format_md
    from .explain import Explanation, PartExplanation, RuleCheck
    from .load import _Lines as _Lines  # noqa: F401  (the tests count its line scans)
    from .load import rule_from_dict
    from .match import Policy
    from .parts import _Context as _Context  # noqa: F401  (the tests compare its parts with the reading module's)
    from .parts import shell_command
    from .rules import (
        ACTIONS,
        MAX_POLICY_BYTES,
        OPERATIONS,
        RISK_LEVELS,
        RULE_KEYS,
        SUPPORTED_VERSION,
        Action,
        PolicyCall,
        PolicyError,
        PolicyVerdict,
        Rule,
    )
    from .suggest import append_rule, render_rule, rule_matches, suggest_rule, suggest_rule_alternatives
    from .watch import ChangeCallback, PolicyWatcher

__all__ = [
    "ACTIONS", "MAX_POLICY_BYTES", "OPERATIONS", "POLICY_FORMAT_MD", "RISK_LEVELS", "RULE_KEYS", "SUPPORTED_VERSION",
    "Action", "ChangeCallback", "Explanation", "PartExplanation", "Policy", "PolicyCall", "PolicyError",
    "PolicyVerdict", "PolicyWatcher", "Rule", "RuleCheck", "append_rule", "policy_format_md", "render_rule",
    "rule_from_dict", "rule_matches", "shell_command", "suggest_rule", "suggest_rule_alternatives",
]


def __getattr__(name: str) -> Any:
    """Each public name from its submodule, loaded when first asked for; ``POLICY_FORMAT_MD``, the
    text of docs/policy.md, read then too (not at import)."""
    if name == "POLICY_FORMAT_MD":
        format_md: Any = __getattr__("policy_format_md")
        return format_md()
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
