"""The private-bus fixtures (pytest allows ``pytest_plugins`` only in the top conftest)."""

from tests.support.dbus import notification_server, private_bus, start_notification_server  # noqa: F401
