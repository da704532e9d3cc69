"""The policy file's reference, installed as ``desktop_approver.docs``.

``setup.py`` maps this folder into the package with ``policy.md`` as its only data file, so a
wheel, an sdist and an editable install all carry the one copy, and ``desktop-approver policy docs``
reads it with ``importlib.resources``. The rest of ``docs/`` stays out of the package.
"""
