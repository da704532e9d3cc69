"""The systemd user units and the XDG autostart entry, installed as ``desktop_approver.resources.linux``.

``setup.py`` maps this folder into the package so that ``desktop-approver install`` can write
these very files into the user's XDG locations from a wheel. See README.md here.
"""
