"""The bundle's one executable: ``desktop-approver`` with every command (tray, demo, request, hook...).

A frozen program has no ``python -m``: the app starts its demo agent as
``sys.executable -m desktop_approver.demo``, so that one form is understood here too.
"""

import sys

if sys.argv[1:3] == ["-m", "desktop_approver.demo"]:
    from desktop_approver.demo import main as demo_main

    del sys.argv[1:3]
    sys.exit(demo_main())

from desktop_approver.cli import main

sys.exit(main())
