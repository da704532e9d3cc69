"""Helpers shared by test folders (private D-Bus buses, notification servers)."""
