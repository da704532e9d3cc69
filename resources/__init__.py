"""The app's icons and desktop metadata, installed as ``desktop_approver.resources``.

This folder is the repository's top-level ``resources/`` (the source artwork and metadata);
``setup.py`` maps it into the package, so a wheel, an sdist and an editable install all carry
the same files, and the app reads them with ``importlib.resources``. See README.md here.
"""
