"""The GUI: the only package that imports PySide6 (tray, review dialog, inbox, notifications)."""
