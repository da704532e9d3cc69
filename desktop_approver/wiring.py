"""The app's entry wires the core to the ways in the core does not know.

The core (``core/``) serves the socket and knows nothing of the NATS relay (``relay/``), which
stands above it and uses its broker; arrows point down. So the tray's options are made here, one
floor above both: :func:`service_options` is the core's own ``ServiceOptions.from_args`` plus, for
``--relay URL`` (``--relay-creds FILE``), a front door that answers relayed requests with the
same broker. The relay's modules (and ``nats-py``) load only when ``--relay`` is given.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from .core.service import DoorFactory, FrontDoor, HealthListener, ServiceOptions

if TYPE_CHECKING:
    from .core.decisions.broker import Broker
    from .relay.address import RelayAddress

__all__ = ["relay_address", "relay_door", "service_options"]


def service_options(args: Any) -> ServiceOptions:
    """The tray's service options from its command line: the core's, and the relay's front door.

    Raises ``relay.address.AddressError`` for a ``--relay`` that cannot be used (the tray says so
    and does not start), and what ``ServiceOptions.from_args`` raises.
    """
    options = ServiceOptions.from_args(args)
    address = relay_address(args)
    if address is not None:
        options.doors = (*options.doors, relay_door(address))
    return options


def relay_address(args: Any) -> RelayAddress | None:
    """``--relay URL`` with ``--relay-creds FILE``; None without ``--relay``."""
    url = getattr(args, "relay", None)
    if not url:
        return None
    from .relay.address import AddressError, parse

    if importlib.util.find_spec("nats") is None:
        raise AddressError("--relay needs the relay extra: pip install 'desktop-approver[relay]'")
    return parse(url, getattr(args, "relay_creds", None), ca_file=getattr(args, "relay_ca", None))


def relay_door(address: RelayAddress) -> DoorFactory:
    """A front door that answers requests relayed over NATS at ``address`` with the service's broker."""

    def open_door(broker: Broker, on_problem: HealthListener) -> FrontDoor:
        from .relay.approver import RelayApprover

        return RelayApprover(broker, address, on_problem=on_problem)

    return open_door
