"""Packages, plus three folders mapped into the package (everything else is in pyproject.toml).

The repository keeps the artwork and desktop metadata in the top-level ``resources/`` and the
systemd units in ``packaging/linux/`` (one copy of each file). They are installed as
``desktop_approver.resources`` and ``desktop_approver.resources.linux``, so wheels, sdists,
editable installs and the PyInstaller bundle all carry them and the app loads them with
``importlib.resources`` (see resources/README.md). ``docs/`` is installed the same way as
``desktop_approver.docs`` with ``policy.md`` as its only data (pyproject.toml), so wheels, sdists
and editable installs carry the policy file's reference for ``desktop-approver policy docs``.
"""

from setuptools import find_packages, setup

MAPPED = {"desktop_approver.resources": "resources", "desktop_approver.resources.linux": "packaging/linux",
          "desktop_approver.docs": "docs"}

setup(packages=[*find_packages(include=["desktop_approver", "desktop_approver.*"]), *MAPPED], package_dir=MAPPED)
