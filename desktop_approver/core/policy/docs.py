"""The policy file's reference, ``docs/policy.md``, read from the installed package.

There is one copy of the text: ``docs/policy.md`` in the repository. ``setup.py`` maps ``docs/``
into the package as ``desktop_approver.docs`` with ``policy.md`` as its only data, so a wheel, an
sdist and an editable install all carry it, and ``desktop-approver policy docs`` prints it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGE = "desktop_approver.docs"
NAME = "policy.md"


def policy_format_md() -> str:
    """The Markdown of ``docs/policy.md``: the file format, actions, conditions and precedence."""
    try:
        return resources.files(PACKAGE).joinpath(NAME).read_text(encoding="utf-8")
    except ModuleNotFoundError:
        # A source tree run without installing it (PYTHONPATH=.), or an editable install made before
        # setup.py mapped docs/: the file is where the mapping would have found it.
        return (Path(__file__).resolve().parents[3] / "docs" / NAME).read_text(encoding="utf-8")
