"""QuorumController: the sans-I/O KRaft controller, composed of managers as Kafka's is.

Every controller (active or standby) replays committed metadata records into its image through
the image layer's :class:`~kraftwerk.image.replay.ImageReplayer` (fail-stop, snapshots at a
metadata.version change). The active one also answers controller RPCs through one table,
:data:`ROUTES` (api key → handler of this class or of a manager: :class:`ClusterControlManager`,
:class:`FeatureControlManager`, :class:`ReplicationControlManager` (topics),
:class:`ConfigurationControlManager` (configs)): a handler validates a request against the committed image and
returns the records to append (:class:`AppendThenRespond`); the host appends them through raft,
waits for them to commit, replays them here like any other committed batch, and sends the
response. Standbys answer controller RPCs with NOT_CONTROLLER.

Time comes in as ``now_ms``; nothing here reads a clock, a socket or a file.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from kraftwerk.config import BrokerConfigLayers, ConfigResourceType
from kraftwerk.controller.acl_control import AclControlManager
from kraftwerk.controller.activation import (
    ACTIVATION_SOURCE_DEFAULT,
    activation_records_for_empty_log,
    activation_records_for_non_empty_log,
    default_bootstrap_records,
)
from kraftwerk.controller.auto_upgrade import static_metadata_version
from kraftwerk.controller.cluster_control import ClusterControlManager
from kraftwerk.controller.common import (
    api_versions_body,
    declared_api_ranges,
    finalized_levels,
    shape_response,
)
from kraftwerk.controller.configs import ConfigurationControlManager
from kraftwerk.controller.effects import AppendThenRespond, Body, Effect, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.feature_control import FeatureControlManager
from kraftwerk.controller.migration_driver import (
    MIGRATION_ENABLE_CONFIG,
    MIGRATION_MAX_LAG_CONFIG,
    MigrationDriver,
    migration_write_refusal,
)
from kraftwerk.controller.partitions import PartitionControlManager
from kraftwerk.controller.responses import encode_response, error_body, not_controller_body
from kraftwerk.controller.scram_control import ScramControlManager
from kraftwerk.controller.topics import ReplicationControlManager
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import ConfigResource, Endpoint, MetadataImage
from kraftwerk.image.replay import ImageReplayer, as_record
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.header import decode_request_header, request_header_version
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.routing import Request, via
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)

RAFT_API_KEYS = (
    ApiKey.FETCH,
    ApiKey.VOTE,
    ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH,
    ApiKey.DESCRIBE_QUORUM,
    ApiKey.FETCH_SNAPSHOT,
    ApiKey.ADD_RAFT_VOTER,
    ApiKey.REMOVE_RAFT_VOTER,
)
"""The raft RPCs a controller listener serves (the host hands them to raft)."""


class QuorumController:
    """One controller node's core (Kafka's QuorumController, sans-I/O).

    The runtime drives it:

    * ``replay(base_offset, records, epoch=..)`` for every committed batch (records as
      :class:`MetadataRecord` or framed bytes; a control batch as ``records=[]`` with
      ``last_offset``), ``load_snapshot(records, end_offset=.., epoch=..)`` when raft loads one;
      both return :class:`~kraftwerk.controller.effects.WriteSnapshot` /
      :class:`~kraftwerk.controller.effects.MetadataVersionChanged` effects and raise
      :class:`~kraftwerk.controller.errors.FatalFaultError` on an unsupported FeatureLevelRecord;
    * ``on_leader_change(leader_id, epoch, now_ms, log_is_empty)`` whenever raft's leader changes;
      it returns the activation :class:`AppendThenRespond` (records only) when this node becomes
      active, else None;
    * ``handle_request(api_key, version, body, now_ms)`` → :class:`Respond` or
      :class:`AppendThenRespond`;
    * ``tick(now_ms)`` → records to append (session-timeout fencing, self-registration, KIP-920's
      automatic metadata.version upgrade);
    * ``set_kraft_version(level)`` when raft's kraft.version changes.
    """

    def __init__(
        self,
        node_id: int,
        cluster_id: str,
        software: SoftwareVersion,
        voters: tuple[int, ...],
        bootstrap_records: Sequence[MetadataRecord | bytes] = (),
        *,
        bootstrap_source: str = ACTIVATION_SOURCE_DEFAULT,
        session_timeout_ms: int = 9000,
        listeners: Sequence[Endpoint] = (),
        incarnation_id: uuid.UUID,
        kraft_version: int = 0,
        allow_unsafe_downgrade: bool = True,
        snapshot_on_version_change: bool = True,
        default_min_isr: int = 1,
        api_versions: Mapping[int, tuple[int, int]] | None = None,
        static_configs: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.node_id = node_id
        self.static_configs = dict(static_configs or {})
        """This node's ``server.properties``: its topic defaults and KIP-920 settings."""
        self.static_metadata_version = static_metadata_version(self.static_configs, software)
        """KIP-920: the level this controller upgrades the cluster to while auto-upgrade is on."""
        self.rng = rng if rng is not None else random.Random(incarnation_id.int)
        """Topic ids (the core reads no global RNG); per process start, like the incarnation id."""
        self.cluster_id = cluster_id
        self.software = software
        self.voters = tuple(voters)
        self.bootstrap_records = tuple(as_record(r) for r in bootstrap_records) or default_bootstrap_records()
        self.bootstrap_source = bootstrap_source
        self.session_timeout_ms = session_timeout_ms
        self.listeners = tuple(listeners)
        self.incarnation_id = incarnation_id  # new for every process start, as Kafka's
        self.kraft_version = kraft_version
        self.allow_unsafe_downgrade = allow_unsafe_downgrade
        self.default_min_isr = default_min_isr
        self._api_ranges = (
            dict(api_versions)
            if api_versions is not None
            else declared_api_ranges(CONTROLLER_API_KEYS + RAFT_API_KEYS)
        )
        self.replayer = ImageReplayer(node_id, "controller", software, snapshots=snapshot_on_version_change)
        self.leader_id: int | None = None
        self.epoch = -1
        self._active = False
        self.next_offset = 0
        """Where the log appends next, for the request being handled (see :meth:`handle_request`)."""
        self.cluster = ClusterControlManager(self)
        self.features = FeatureControlManager(self)
        self.topics = ReplicationControlManager(self)
        self.partitions = PartitionControlManager(self)
        self.configs = ConfigurationControlManager(self)
        self.scram = ScramControlManager(self)
        self.acls = AclControlManager(self)
        enabled = self.static_configs.get(MIGRATION_ENABLE_CONFIG, "false").strip().lower() == "true"
        max_lag_ms = int(self.static_configs.get(MIGRATION_MAX_LAG_CONFIG, "30000"))
        self.migration = MigrationDriver(node_id, max_lag_ms=max_lag_ms) if enabled else None
        """KIP-866's driver on a controller with ``zookeeper.metadata.migration.enable`` (else None)."""

    # ------------------------------------------------------------------ state

    @property
    def image(self) -> MetadataImage:
        """The image of every committed record replayed so far."""
        return self.replayer.image

    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def last_committed_offset(self) -> int:
        return self.replayer.last_offset

    @property
    def metadata_version(self) -> MetadataVersion | None:
        return self.image.metadata_version

    @property
    def latest_metadata_version(self) -> MetadataVersion | None:
        """The level this controller's next records are written at: a metadata.version it appended
        but has not committed yet wins over the image's, as in Kafka, whose controller applies its
        own records at once. Without it a registration appended after an unsafe downgrade would
        carry data the new level cannot hold."""
        return self.features.latest_metadata_version() or self.image.metadata_version

    def finalized_features(self) -> tuple[dict[str, int], int]:
        """(levels as ApiVersions reports them, FinalizedFeaturesEpoch)."""
        return finalized_levels(self.image, self.kraft_version), self.image.features_epoch

    def set_kraft_version(self, level: int) -> None:
        """raft's finalized kraft.version (it lives in KRaft control records)."""
        self.kraft_version = level

    def config_layers(self) -> BrokerConfigLayers:
        """This node's ``server.properties`` under the image's dynamic configs (the cluster default
        and its own id)."""
        configs = self.image.configs
        return BrokerConfigLayers(
            static=self.static_configs,
            cluster_default=configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {}),
            broker=configs.get(ConfigResource(ConfigResourceType.BROKER, str(self.node_id)), {}),
        )

    # ------------------------------------------------------------------ replay

    def replay(
        self,
        base_offset: int,
        records: Sequence[MetadataRecord | bytes],
        *,
        epoch: int = -1,
        append_time_ms: int = -1,
        last_offset: int | None = None,
    ) -> list[Effect]:
        """Replay one committed batch (see :class:`ImageReplayer`)."""
        try:
            effects: list[Effect] = [
                *self.replayer.replay(
                    base_offset, records, epoch=epoch, append_time_ms=append_time_ms, last_offset=last_offset
                )
            ]
        except FatalFaultError as fault:
            # KIP-778 fail-stop: an active controller resigns (the runtime tells raft) and exits.
            log.error("[QuorumController id=%d] %s", self.node_id, fault)
            self._active = False
            raise
        for r in records:
            record = as_record(r)
            self.cluster.on_committed(record)
            self.features.on_committed(record)
            self.configs.on_committed(record)
            self.topics.on_committed(record)
        if self.migration is not None and (records or last_offset is not None):
            last = last_offset if last_offset is not None else base_offset + len(records) - 1
            self.migration.voters = self.voters
            self.migration.publish(self.image, last, epoch, append_time_ms)
        return effects

    def load_snapshot(
        self, records: Sequence[MetadataRecord | bytes], *, end_offset: int, epoch: int = -1
    ) -> MetadataImage:
        """Replace the image by a snapshot's (``end_offset`` exclusive)."""
        image = self.replayer.load_snapshot(records, end_offset=end_offset, epoch=epoch)
        self.cluster.on_snapshot()
        if self.migration is not None:
            self.migration.publish(image, end_offset - 1, epoch, -1)
        return image

    # ------------------------------------------------------------------ leadership

    def on_leader_change(
        self, leader_id: int | None, epoch: int, now_ms: int, log_is_empty: bool
    ) -> AppendThenRespond | None:
        """Raft elected ``leader_id`` at ``epoch``. Becoming active returns the activation records
        (bootstrap on an empty log, an abort of an open transaction otherwise), or None."""
        self.leader_id = leader_id
        self.epoch = epoch
        was_active = self._active
        self._active = leader_id == self.node_id
        self.features.on_leader_change()
        self.configs.on_leader_change()
        self.topics.on_leader_change()
        if self.migration is not None:
            self.migration.on_leader_change(leader_id, epoch)
        if not self._active:
            if was_active:
                log.info("[QuorumController id=%d] Renouncing leadership at epoch %d", self.node_id, epoch)
            self.cluster.on_leader_change(False, now_ms)
            return None
        log.info(
            "[QuorumController id=%d] Becoming the active controller at epoch %d, next write offset %d.",
            self.node_id,
            epoch,
            self.last_committed_offset + 1,
        )
        self.cluster.on_leader_change(True, now_ms)
        txn_start = self.replayer.txn_start_offset
        if log_is_empty or self.image.metadata_version is None:
            act = activation_records_for_empty_log(
                self.bootstrap_records, self.bootstrap_source, txn_start, self.default_min_isr,
                zk_migration_enabled=self.migration is not None,
            )
            log.warning("[QuorumController id=%d] %s", self.node_id, act.message)
            return AppendThenRespond(act.records, {}, atomic=act.atomic)
        act = activation_records_for_non_empty_log(self.image, txn_start, self.migration is not None)
        log.info("[QuorumController id=%d] %s", self.node_id, act.message)
        return AppendThenRespond(act.records, {}) if act.records else None

    # ------------------------------------------------------------------ timers

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work (a broker session expiring, a KIP-920 check), or None."""
        if not self._active:
            return None
        due = (self.cluster.next_deadline_ms(), self.features.next_check_ms())
        deadlines = [d for d in due if d is not None]
        return min(deadlines, default=None)

    def tick(self, now_ms: int) -> list[MetadataRecord]:
        """Records to append now: fence brokers whose session expired; register this controller
        when the metadata.version allows it and the image lacks (or has stale) registration; raise
        metadata.version to the static one when KIP-920's check is due."""
        if not self._active or self.image.metadata_version is None:
            return []
        return [*self.cluster.tick(now_ms), *self.features.auto_upgrade(now_ms)]

    def controller_registration_body(self) -> Body:
        """The ControllerRegistration request this node sends to the active controller (KIP-919)."""
        return self.cluster.controller_registration_body()

    def needs_controller_registration(self) -> bool:
        """Whether a standby should send :meth:`controller_registration_body` to the active one."""
        return self.cluster.needs_controller_registration()

    def describe_cluster_body(self, version: int, body: Mapping[str, Any]) -> Body:
        """DescribeCluster as a controller answers it."""
        return self.cluster.describe_cluster_body(version, body)

    # ------------------------------------------------------------------ requests

    def handle_request(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        now_ms: int,
        *,
        next_offset: int | None = None,
    ) -> Respond | AppendThenRespond:
        """Answer one controller RPC (body and response are codec dicts at ``version``, trimmed to
        the fields that version has).

        ``next_offset`` is the offset the host's log gives the next record it appends (raft's log end
        offset): a new broker registration's epoch is the offset of its RegisterBrokerRecord, as
        Kafka's. None means right after the committed log, exact only when nothing appended is
        still uncommitted (the tests' instant log).
        """
        self.next_offset = self.last_committed_offset + 1 if next_offset is None else next_offset
        reply = self._route(Request(api_key, version, body, now_ms))
        if isinstance(reply, Respond):
            return Respond(shape_response(api_key, version, reply.body))
        nc = reply.not_controller_body
        return AppendThenRespond(
            reply.records,
            shape_response(api_key, version, reply.response_body),
            reply.atomic,
            None if nc is None else shape_response(api_key, version, nc),
            reply.kraft_version_upgrade,
        )

    def _route(self, request: Request) -> Respond | AppendThenRespond:
        api_key, version, body = request.api_key, request.version, request.body
        route = ROUTES.get(api_key)
        if (route is None or route.active_only) and (not self._active or self.image.metadata_version is None):
            # Until the bootstrap records commit, an active controller cannot judge any request.
            return Respond(not_controller_body(api_key, version, body))
        if route is None:
            return Respond(error_body(api_key, version, Errors.UNSUPPORTED_VERSION, None, body))
        if route.active_only and route.forwardable and self.migration is not None:
            refusal = migration_write_refusal(self.image, self.migration, request.now_ms)
            if refusal is not None:
                return Respond(error_body(api_key, version, refusal.error, refusal.text, body))
        try:
            return route.handle(self, request)
        except ApiError as err:
            return Respond(error_body(api_key, version, err.error, err.text, body))

    def api_versions(self, request: Request) -> Respond:
        levels, epoch = self.finalized_features()
        body = api_versions_body(request.version, self._api_ranges, self.software, levels, epoch)
        body["zkMigrationReady"] = self.migration is not None  # KIP-866, as a 3.9 controller reports it
        return Respond(body)

    # ------------------------------------------------------------------ Envelope

    def envelope(self, request: Request) -> Respond | AppendThenRespond:
        """KIP-590 forwarding: decode the embedded request, handle it, wrap the response."""
        body, now_ms = request.body, request.now_ms
        data = bytes(body.get("requestData") or b"")
        try:
            api_key = int.from_bytes(data[0:2], "big", signed=True)
            version = int.from_bytes(data[2:4], "big", signed=True)
            req_spec = by_api_key(Kind.REQUEST, api_key)
            header, pos = decode_request_header(data, request_header_version(req_spec, version))
            inner, _ = codec.decode_from(req_spec, version, data, pos)  # trailing bytes ignored, as Kafka
        except (ProtocolError, IndexError, ValueError):
            return Respond({"responseData": None, "errorCode": Errors.INVALID_REQUEST.code})
        route = ROUTES.get(api_key)
        if route is None or not route.forwardable:
            return Respond({"responseData": None, "errorCode": Errors.INVALID_REQUEST.code})
        if not self._active:
            return Respond({"responseData": None, "errorCode": Errors.NOT_CONTROLLER.code})
        reply = self.handle_request(api_key, version, inner, now_ms, next_offset=self.next_offset)
        correlation = header["correlationId"]

        def wrap(response: Body) -> Body:
            return {"responseData": encode_response(api_key, version, correlation, response), "errorCode": 0}

        if isinstance(reply, Respond):
            return Respond(wrap(reply.body))
        return AppendThenRespond(
            reply.records,
            wrap(reply.response_body),
            reply.atomic,
            {"responseData": None, "errorCode": Errors.NOT_CONTROLLER.code},
            reply.kraft_version_upgrade,
        )


Handler = Callable[[QuorumController, Request], Respond | AppendThenRespond]


@dataclass(frozen=True, slots=True)
class ControllerRoute:
    """How the controller answers one api key."""

    handle: Handler
    active_only: bool = True
    """Only the active controller, once its metadata.version has committed, may answer (others
    answer NOT_CONTROLLER)."""
    forwardable: bool = False
    """A broker may forward it inside an Envelope (KIP-590)."""


_cluster: Callable[[QuorumController], ClusterControlManager] = attrgetter("cluster")
_features: Callable[[QuorumController], FeatureControlManager] = attrgetter("features")
_topics: Callable[[QuorumController], ReplicationControlManager] = attrgetter("topics")
_partitions: Callable[[QuorumController], PartitionControlManager] = attrgetter("partitions")
_configs: Callable[[QuorumController], ConfigurationControlManager] = attrgetter("configs")
_scram: Callable[[QuorumController], ScramControlManager] = attrgetter("scram")
_acls: Callable[[QuorumController], AclControlManager] = attrgetter("acls")

ROUTES: Mapping[int, ControllerRoute] = {
    ApiKey.API_VERSIONS: ControllerRoute(QuorumController.api_versions, active_only=False, forwardable=True),
    ApiKey.UPDATE_FEATURES: ControllerRoute(
        via(_features, FeatureControlManager.update_features), forwardable=True
    ),
    ApiKey.ENVELOPE: ControllerRoute(QuorumController.envelope, active_only=False),
    ApiKey.DESCRIBE_CLUSTER: ControllerRoute(
        via(_cluster, ClusterControlManager.describe_cluster), active_only=False, forwardable=True
    ),
    ApiKey.BROKER_REGISTRATION: ControllerRoute(via(_cluster, ClusterControlManager.register_broker)),
    ApiKey.BROKER_HEARTBEAT: ControllerRoute(via(_cluster, ClusterControlManager.broker_heartbeat)),
    ApiKey.UNREGISTER_BROKER: ControllerRoute(
        via(_cluster, ClusterControlManager.unregister_broker), forwardable=True
    ),
    ApiKey.CONTROLLER_REGISTRATION: ControllerRoute(via(_cluster, ClusterControlManager.register_controller)),
    ApiKey.CREATE_TOPICS: ControllerRoute(
        via(_topics, ReplicationControlManager.create_topics), forwardable=True
    ),
    ApiKey.ALTER_PARTITION: ControllerRoute(via(_partitions, PartitionControlManager.alter_partition)),
    ApiKey.DELETE_TOPICS: ControllerRoute(
        via(_topics, ReplicationControlManager.delete_topics), forwardable=True
    ),
    ApiKey.CREATE_PARTITIONS: ControllerRoute(
        via(_topics, ReplicationControlManager.create_partitions), forwardable=True
    ),
    ApiKey.DESCRIBE_CONFIGS: ControllerRoute(
        via(_configs, ConfigurationControlManager.describe_configs), active_only=False, forwardable=True
    ),
    ApiKey.ALTER_CONFIGS: ControllerRoute(
        via(_configs, ConfigurationControlManager.alter_configs), forwardable=True
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ControllerRoute(
        via(_configs, ConfigurationControlManager.incremental_alter_configs), forwardable=True
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ControllerRoute(
        via(_scram, ScramControlManager.alter), forwardable=True
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ControllerRoute(
        via(_scram, ScramControlManager.describe), active_only=False, forwardable=True
    ),
    ApiKey.CREATE_ACLS: ControllerRoute(via(_acls, AclControlManager.create_acls), forwardable=True),
    ApiKey.DELETE_ACLS: ControllerRoute(via(_acls, AclControlManager.delete_acls), forwardable=True),
    ApiKey.DESCRIBE_ACLS: ControllerRoute(
        via(_acls, AclControlManager.describe_acls), active_only=False, forwardable=True
    ),
}
"""Api key → handler: adding a controller RPC is one handler method and one line here."""

CONTROLLER_API_KEYS = tuple(ROUTES)
"""The controller RPCs :meth:`QuorumController.handle_request` answers."""
