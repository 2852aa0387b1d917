"""The sans-I/O controller core (Kafka's QuorumController, FeatureControlManager, ClusterControlManager).

``QuorumController`` composes the managers and answers RPCs through one table, ``ROUTES``.

It never imports raft: the runtime feeds it committed metadata records and leadership changes,
and it returns records to append and response bodies. Public API:

* :class:`QuorumController` — ``replay``, ``load_snapshot``, ``on_leader_change``,
  ``handle_request``, ``tick``, ``next_deadline_ms``, ``set_kraft_version``,
  ``controller_registration_body`` / ``needs_controller_registration``;
* replies :class:`Respond`, :class:`AppendThenRespond` (and the broker's :class:`Forward`);
* effects of replay :class:`WriteSnapshot`, :class:`MetadataVersionChanged`,
  :class:`CloseClientConnections` (broker);
* :class:`FatalFaultError` (KIP-778 fail-stop, raised by the image layer's replay), :class:`ApiError`;
* the pure feature checks in :mod:`kraftwerk.controller.features` (``update_features``,
  ``reason_not_supported``, ``registration_feature_error``, ``java_hash_map_order``).
"""

from kraftwerk.controller.activation import (
    Activation,
    activation_records_for_empty_log,
    default_bootstrap_records,
)
from kraftwerk.controller.cluster_control import ClusterControlManager
from kraftwerk.controller.common import api_versions_body, finalized_levels
from kraftwerk.controller.effects import (
    AppendThenRespond,
    Body,
    CloseClientConnections,
    Effect,
    Forward,
    MetadataVersionChanged,
    Reply,
    Respond,
    WriteSnapshot,
)
from kraftwerk.controller.errors import ApiError, ControllerError
from kraftwerk.controller.feature_control import FeatureControlManager
from kraftwerk.controller.features import (
    FeatureControlState,
    FeatureUpdate,
    NodeSupport,
    UpdateFeaturesOutcome,
    UpgradeType,
    registration_feature_error,
    update_features,
)
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS, RAFT_API_KEYS, ROUTES, QuorumController
from kraftwerk.controller.responses import encode_response
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.replay import ImageReplayer

__all__ = [
    "CONTROLLER_API_KEYS",
    "RAFT_API_KEYS",
    "ROUTES",
    "Activation",
    "ApiError",
    "AppendThenRespond",
    "Body",
    "CloseClientConnections",
    "ClusterControlManager",
    "ControllerError",
    "Effect",
    "FatalFaultError",
    "FeatureControlManager",
    "FeatureControlState",
    "FeatureUpdate",
    "Forward",
    "ImageReplayer",
    "MetadataVersionChanged",
    "NodeSupport",
    "QuorumController",
    "Reply",
    "Respond",
    "UpdateFeaturesOutcome",
    "UpgradeType",
    "WriteSnapshot",
    "activation_records_for_empty_log",
    "api_versions_body",
    "default_bootstrap_records",
    "encode_response",
    "finalized_levels",
    "registration_feature_error",
    "update_features",
]
