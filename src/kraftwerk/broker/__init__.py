"""The sans-I/O broker core: lifecycle (registration, heartbeats, controlled shutdown), metadata
follower (image, fail-stop, version changes) and the client RPCs it answers from its image.

Public API: :class:`BrokerNode` (``poll``, ``handle_registration_response``,
``handle_heartbeat_response``, ``handle_controller_failure``, ``begin_controlled_shutdown``,
``replay``, ``load_snapshot``, ``handle_request``, ``next_deadline_ms``), :class:`BrokerState`,
:class:`ControllerCall`; replies/effects are the controller package's :class:`Respond`,
:class:`Forward`, :class:`CloseClientConnections`, :class:`WriteSnapshot`,
:class:`MetadataVersionChanged`, and :class:`FatalFaultError` (its ``cleanup`` holds the
UnregisterBroker call to send before exiting).
"""

from kraftwerk.broker.node import BROKER_API_KEYS, ROUTES, BrokerNode, BrokerState, ControllerCall
from kraftwerk.config import ConfigSource
from kraftwerk.controller.effects import (
    CloseClientConnections,
    Effect,
    Forward,
    MetadataVersionChanged,
    Respond,
    WriteSnapshot,
)
from kraftwerk.image.errors import FatalFaultError

__all__ = [
    "BROKER_API_KEYS",
    "ROUTES",
    "BrokerNode",
    "BrokerState",
    "CloseClientConnections",
    "ConfigSource",
    "ControllerCall",
    "Effect",
    "FatalFaultError",
    "Forward",
    "MetadataVersionChanged",
    "Respond",
    "WriteSnapshot",
]
