"""``python -m desktop_approver`` is the same as the ``desktop-approver`` command."""

import sys

from .cli import main

sys.exit(main())
