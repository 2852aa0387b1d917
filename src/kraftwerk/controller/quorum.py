"""QuorumController: the sans-I/O KRaft controller state machine.

Every controller (active or standby) replays committed metadata records into its image. The
active one also answers controller RPCs: it validates a request against the committed image and
returns the records to append (:class:`AppendThenRespond`); the runtime appends them through raft,
waits for them to commit, replays them here like any other committed batch, and sends the
response. Standbys answer controller RPCs with NOT_CONTROLLER.

Time comes in as ``now_ms``; nothing here reads a clock, a socket or a file.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftwerk.config import BrokerConfigLayers, parse_broker_config
from kraftwerk.controller import features as fc
from kraftwerk.controller.auto_upgrade import (
    AUTO_UPGRADE,
    AutoUpgrade,
    AutoUpgradeTimer,
    auto_upgrade_settings,
    static_metadata_version,
)
from kraftwerk.controller.common import (
    ImageReplayer,
    api_versions_body,
    as_record,
    declared_api_ranges,
    features_from_request,
    finalized_levels,
    shape_response,
)
from kraftwerk.controller.configs import ConfigControl, alter_error_body, describe_configs
from kraftwerk.controller.effects import AppendThenRespond, Body, Effect, Respond
from kraftwerk.controller.errors import ApiError, FatalFaultError
from kraftwerk.controller.topics import TopicControl, TopicDefaults, topics_error_body
from kraftwerk.image.model import (
    BrokerRegistration,
    ConfigResource,
    ConfigResourceType,
    Endpoint,
    MetadataImage,
    ZkMigrationState,
)
from kraftwerk.image.writer import image_losses
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.header import (
    decode_request_header,
    encode_response_header,
    request_header_version,
    response_header_version,
)
from kraftwerk.protocol.registry import by_api_key, lookup_record
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.features import VersionRange
from kraftwerk.versions.metadata_version import FEATURE_NAME, LATEST_PRODUCTION, MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)

API_VERSIONS = 18
METADATA = 3
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
INCREMENTAL_ALTER_CONFIGS = 44
UPDATE_FEATURES = 57
ENVELOPE = 58
DESCRIBE_CLUSTER = 60
BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63
UNREGISTER_BROKER = 64
CONTROLLER_REGISTRATION = 70
DESCRIBE_QUORUM = 55

RAFT_API_KEYS = (1, 52, 53, 54, 55, 59, 80, 81)
"""Fetch, Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum, FetchSnapshot, AddRaftVoter,
RemoveRaftVoter (the runtime's)."""
CONTROLLER_API_KEYS = (
    API_VERSIONS,
    UPDATE_FEATURES,
    ENVELOPE,
    DESCRIBE_CLUSTER,
    BROKER_REGISTRATION,
    BROKER_HEARTBEAT,
    UNREGISTER_BROKER,
    CONTROLLER_REGISTRATION,
    CREATE_TOPICS,
    DELETE_TOPICS,
    CREATE_PARTITIONS,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
"""The controller RPCs :meth:`QuorumController.handle_request` answers."""
ADMIN_WRITE_API_KEYS = (
    CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS,
)
"""The topic and config writes brokers forward to the active controller."""

ACTIVATION_SOURCE_DEFAULT = "the default bootstrap"


def rec(name: str, version: int, value: dict[str, Any]) -> MetadataRecord:
    return MetadataRecord(lookup_record(name), version, value)


@dataclass(frozen=True, slots=True)
class Activation:
    """What becoming active produced: the records to append first and Kafka's log line."""

    records: tuple[MetadataRecord, ...]
    message: str
    atomic: bool


def bootstrap_metadata_version(records: Sequence[MetadataRecord]) -> MetadataVersion:
    for r in records:
        if r.spec.name == "FeatureLevelRecord" and r.value["name"] == FEATURE_NAME:
            return MetadataVersion.from_feature_level(r.value["featureLevel"])
    raise ApiError(
        Errors.INVALID_REQUEST,
        "No FeatureLevelRecord for metadata.version was found in the bootstrap metadata",
    )


def default_bootstrap_records(mv: MetadataVersion = LATEST_PRODUCTION) -> tuple[MetadataRecord, ...]:
    """Kafka's ``BootstrapMetadata.fromVersion``: just the metadata.version record."""
    return (fc.feature_level_record(FEATURE_NAME, mv.feature_level),)


def activation_records_for_empty_log(
    bootstrap: Sequence[MetadataRecord],
    source: str,
    transaction_start_offset: int = -1,
    default_min_isr: int = 1,
) -> Activation:
    """Kafka 4.x ``ActivationRecordsGenerator.recordsForEmptyLog`` (its log text, its records).

    From 3.6-IV1 the bootstrap records go in a metadata transaction (Begin/End); a partial
    bootstrap transaction left by a failed controller is aborted first. Enabling ELR at bootstrap
    adds the cluster-level ``min.insync.replicas`` config, as Kafka does.
    """
    mv = bootstrap_metadata_version(bootstrap)
    txn = mv.is_metadata_transaction_supported()
    text = "Performing controller activation. "
    records: list[MetadataRecord] = []
    if transaction_start_offset != -1:
        if not txn:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR,
                f"Detected partial bootstrap records transaction at {transaction_start_offset}, but "
                f"the metadata.version {mv} does not support transactions. Cannot continue.",
            )
        text += (
            f"Aborting partial bootstrap records transaction at offset {transaction_start_offset}. "
            f"Re-appending {len(bootstrap)} bootstrap record(s) in new metadata transaction at "
            f"metadata.version {mv} from bootstrap source '{source}'. "
        )
        records.append(rec("AbortTransactionRecord", 0, {"reason": "Controller failover"}))
        records.append(rec("BeginTransactionRecord", 0, {"name": "Bootstrap records"}))
    else:
        text += f"The metadata log appears to be empty. Appending {len(bootstrap)} bootstrap record(s) "
        if txn:
            records.append(rec("BeginTransactionRecord", 0, {"name": "Bootstrap records"}))
            text += "in metadata transaction "
        text += f"at metadata.version {mv} from bootstrap source '{source}'. "
    records.extend(bootstrap)
    elr = any(
        r.spec.name == "FeatureLevelRecord"
        and r.value["name"] == "eligible.leader.replicas.version"
        and r.value["featureLevel"] > 0
        for r in bootstrap
    )
    if elr:
        records.append(
            rec(
                "ConfigRecord",
                0,
                {
                    "resourceType": 4,
                    "resourceName": "",
                    "name": "min.insync.replicas",
                    "value": str(default_min_isr),
                },
            )
        )
    if txn:
        records.append(rec("EndTransactionRecord", 0, {}))
    return Activation(tuple(records), text.strip(), atomic=not txn)


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
    * ``tick(now_ms)`` → records to append (session-timeout fencing, self-registration);
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
        """This node's ``server.properties`` (the topic defaults it validates and places with)."""
        self.rng = rng if rng is not None else random.Random(incarnation_id.int)
        self.static_metadata_version = static_metadata_version(self.static_configs, software)
        """KIP-920: the level this controller upgrades the cluster to while auto-upgrade is on."""
        self._auto_upgrade_timer = AutoUpgradeTimer()
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
        self._replayer = ImageReplayer(node_id, "controller", software, snapshots=snapshot_on_version_change)
        self.leader_id: int | None = None
        self.epoch = -1
        self._active = False
        self._last_contact: dict[int, int] = {}
        # What this active controller has appended but not yet replayed. Kafka's controller applies
        # its own records before they commit, so a registration and a feature update racing each
        # other are judged against each other; the image alone is the committed state.
        self._inflight_brokers: dict[int, dict[str, VersionRange]] = {}
        self._inflight_levels: dict[str, int] = {}
        self._fencing: set[int] = set()
        self._self_registration_sent_offset = -2
        self._next_offset = 0  # of the request being handled (see handle_request)

    # ------------------------------------------------------------------ state

    @property
    def image(self) -> MetadataImage:
        """The image of every committed record replayed so far."""
        return self._replayer.image

    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def last_committed_offset(self) -> int:
        return self._replayer.last_offset

    @property
    def metadata_version(self) -> MetadataVersion | None:
        return self.image.metadata_version

    def finalized_features(self) -> tuple[dict[str, int], int]:
        """(levels as ApiVersions reports them, FinalizedFeaturesEpoch)."""
        return finalized_levels(self.image, self.kraft_version), self.image.features_epoch

    def set_kraft_version(self, level: int) -> None:
        """raft's finalized kraft.version (it lives in KRaft control records)."""
        self.kraft_version = level

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
            effects = self._replayer.replay(
                base_offset, records, epoch=epoch, append_time_ms=append_time_ms, last_offset=last_offset
            )
        except FatalFaultError as fault:
            # KIP-778 fail-stop: an active controller resigns (the runtime tells raft) and exits.
            log.error("[QuorumController id=%d] %s", self.node_id, fault)
            self._active = False
            raise
        for r in records:
            record = as_record(r)
            name = record.spec.name
            if name in ("BrokerRegistrationChangeRecord", "FenceBrokerRecord"):
                self._fencing.discard(record.value.get("brokerId", record.value.get("id", -1)))
            elif name == "RegisterBrokerRecord":
                self._inflight_brokers.pop(record.value["brokerId"], None)
            elif name == "FeatureLevelRecord" and self._inflight_levels.get(record.value["name"]) == \
                    record.value["featureLevel"]:
                del self._inflight_levels[record.value["name"]]
        return effects

    def load_snapshot(
        self, records: Sequence[MetadataRecord | bytes], *, end_offset: int, epoch: int = -1
    ) -> MetadataImage:
        """Replace the image by a snapshot's (``end_offset`` exclusive)."""
        image = self._replayer.load_snapshot(records, end_offset=end_offset, epoch=epoch)
        self._fencing.clear()
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
        self._inflight_brokers.clear()
        self._inflight_levels.clear()
        self._auto_upgrade_timer.reset()
        if not self._active:
            if was_active:
                log.info("[QuorumController id=%d] Renouncing leadership at epoch %d", self.node_id, epoch)
            self._last_contact.clear()
            self._fencing.clear()
            return None
        log.info(
            "[QuorumController id=%d] Becoming the active controller at epoch %d, next write offset %d.",
            self.node_id,
            epoch,
            self.last_committed_offset + 1,
        )
        # Every registered broker gets a fresh session from now (Kafka touches them all).
        self._last_contact = {b: now_ms for b in self.image.cluster.brokers}
        txn_start = self._replayer.txn_start_offset
        if log_is_empty or self.image.metadata_version is None:
            act = activation_records_for_empty_log(
                self.bootstrap_records, self.bootstrap_source, txn_start, self.default_min_isr
            )
            log.warning("[QuorumController id=%d] %s", self.node_id, act.message)
            return AppendThenRespond(act.records, {}, atomic=act.atomic)
        text = "Performing controller activation. "
        if txn_start != -1:
            text += f"Aborting in-progress metadata transaction at offset {txn_start}. "
            log.info("[QuorumController id=%d] %s", self.node_id, text.strip())
            return AppendThenRespond(
                (rec("AbortTransactionRecord", 0, {"reason": "Controller failover"}),), {}
            )
        log.info("[QuorumController id=%d] %s", self.node_id, text.strip())
        return None

    # ------------------------------------------------------------------ timers

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work (a broker session expiring), or None."""
        if not self._active:
            return None
        deadlines = [
            t + self.session_timeout_ms
            for b, t in self._last_contact.items()
            if self._unfenced(b) and b not in self._fencing
        ]
        if self._auto_upgrade_timer.next_check_ms is not None:
            deadlines.append(self._auto_upgrade_timer.next_check_ms)
        return min(deadlines) if deadlines else None

    def tick(self, now_ms: int) -> list[MetadataRecord]:
        """Records to append now: fence brokers whose session expired; register this controller
        when the metadata.version allows it and the image lacks (or has stale) registration."""
        if not self._active or self.image.metadata_version is None:
            return []
        out: list[MetadataRecord] = []
        for broker_id, last in sorted(self._last_contact.items()):
            if broker_id in self._fencing or not self._unfenced(broker_id):
                continue
            if now_ms - last > self.session_timeout_ms:
                broker = self.image.cluster.brokers[broker_id]
                log.info(
                    "[QuorumController id=%d] Fencing broker %d because its session has timed out.",
                    self.node_id,
                    broker_id,
                )
                out.append(self._fence_record(broker, in_controlled_shutdown=False))
                self._fencing.add(broker_id)
        out.extend(self._self_registration())
        out.extend(self._auto_upgrade(now_ms))
        return out

    def auto_upgrade_settings(self) -> AutoUpgrade:
        """KIP-920's settings in force on this controller."""
        return auto_upgrade_settings(
            self.image, self.node_id, self.static_configs, self.static_metadata_version
        )

    def _auto_upgrade(self, now_ms: int) -> list[MetadataRecord]:
        """KIP-920: raise metadata.version to this controller's static value when due, through the
        UpdateFeatures checks; never lower it; a refusal is logged and retried next interval."""
        settings = self.auto_upgrade_settings()
        if not self._auto_upgrade_timer.due(settings, now_ms) or settings.target is None:
            return []
        state = self.feature_state()
        current, target = state.metadata_version, settings.target
        if target.feature_level <= current.feature_level:
            return []
        update = fc.FeatureUpdate(FEATURE_NAME, target.feature_level, fc.UpgradeType.UPGRADE)
        image = self.image
        outcome = fc.update_features(state, [update], losses_at=lambda mv: image_losses(image, mv))
        if not outcome.ok:
            log.warning("[QuorumController id=%d] Automatic upgrade of metadata.version from %s to %s "
                        "refused (retrying in %d ms): %s", self.node_id, current, target,
                        settings.interval_ms, outcome.message)
            return []
        log.info("[QuorumController id=%d] Automatically upgrading metadata.version from %s to %s "
                 "(%s=true).", self.node_id, current, target, AUTO_UPGRADE)
        self._inflight_levels[FEATURE_NAME] = target.feature_level
        return self._elr_config_records(outcome.records) + list(outcome.records)

    def _unfenced(self, broker_id: int) -> bool:
        broker = self.image.cluster.brokers.get(broker_id)
        return broker is not None and not broker.fenced

    def _self_registration(self) -> list[MetadataRecord]:
        mv = self.image.metadata_version
        if mv is None or not mv.is_controller_registration_supported():
            return []
        current = self.image.cluster.controllers.get(self.node_id)
        wanted = self.controller_registration_body()
        if (
            current is not None
            and current.incarnation_id == self.incarnation_id
            and dict(current.supported_features) == {f["name"]: _srange(f) for f in wanted["features"]}
        ):
            return []
        if self._self_registration_sent_offset == self.last_committed_offset:
            return []  # already appended; wait for it to commit
        self._self_registration_sent_offset = self.last_committed_offset
        return [self._controller_record(wanted)]

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
        self._next_offset = self.last_committed_offset + 1 if next_offset is None else next_offset
        reply = self._handle(api_key, version, body, now_ms)
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

    def _handle(
        self, api_key: int, version: int, body: Mapping[str, Any], now_ms: int
    ) -> Respond | AppendThenRespond:
        if api_key == API_VERSIONS:
            levels, epoch = self.finalized_features()
            return Respond(api_versions_body(version, self._api_ranges, self.software, levels, epoch))
        if api_key == DESCRIBE_CLUSTER:
            return Respond(self.describe_cluster_body(version, body))
        if api_key == ENVELOPE:
            return self._envelope(body, now_ms)
        if api_key == DESCRIBE_CONFIGS:
            return Respond(describe_configs(self.image, self.node_id, self.static_configs, version, body))
        if not self._active or self.image.metadata_version is None:
            # Until the bootstrap records commit, an active controller cannot judge any request.
            return Respond(not_controller_body(api_key, version, body))
        try:
            if api_key == UPDATE_FEATURES:
                return self._update_features(version, body)
            if api_key == BROKER_REGISTRATION:
                return self._register_broker(version, body, now_ms)
            if api_key == BROKER_HEARTBEAT:
                return self._broker_heartbeat(body, now_ms)
            if api_key == CONTROLLER_REGISTRATION:
                return self._register_controller(body)
            if api_key == UNREGISTER_BROKER:
                return self._unregister_broker(body)
            if api_key in ADMIN_WRITE_API_KEYS:
                return self._admin_write(api_key, version, body)
        except ApiError as err:
            return Respond(error_body(api_key, version, err.error, err.text, body))
        return Respond(error_body(api_key, version, Errors.UNSUPPORTED_VERSION, None, body))

    # ------------------------------------------------------------------ topics and configs

    def config_layers(self) -> BrokerConfigLayers:
        """This node's ``server.properties`` under the image's cluster-default dynamic configs."""
        return BrokerConfigLayers(
            static=self.static_configs,
            cluster_default=self.image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {}),
        )

    def _admin_write(
        self, api_key: int, version: int, body: Mapping[str, Any]
    ) -> Respond | AppendThenRespond:
        """CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs."""
        layers = self.config_layers()
        if api_key in (CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS):
            parsed = parse_broker_config(self.static_configs)
            defaults = TopicDefaults(
                parsed.integer("num.partitions"), parsed.integer("default.replication.factor")
            )
            topics = TopicControl(self.image, self.rng, layers, defaults)
            if api_key == CREATE_TOPICS:
                records, response = topics.create_topics(body)
            elif api_key == DELETE_TOPICS:
                records, response = topics.delete_topics(version, body)
            else:
                records, response = topics.create_partitions(body)
            refusal = topics_error_body(api_key, version, Errors.NOT_CONTROLLER, None, body)
        else:
            configs = ConfigControl(self.image, layers, self.voters)
            if api_key == ALTER_CONFIGS:
                records, response = configs.alter_configs(body)
            else:
                records, response = configs.incremental_alter_configs(body)
            refusal = alter_error_body(Errors.NOT_CONTROLLER, None, body)
        if not records:
            return Respond(response)
        return AppendThenRespond(tuple(records), response, atomic=True, not_controller_body=refusal)

    # ------------------------------------------------------------------ DescribeCluster

    def describe_cluster_body(self, version: int, body: Mapping[str, Any]) -> Body:
        """DescribeCluster as a controller answers it (KIP-919: EndpointType 2 lists controllers)."""
        endpoint_type = body.get("endpointType", 1)
        include_fenced = bool(body.get("includeFencedBrokers", False))
        if endpoint_type == 2:
            nodes = []
            for cid in sorted(set(self.voters) | set(self.image.cluster.controllers)):
                reg = self.image.cluster.controllers.get(cid)
                listener = (
                    reg.listeners[0]
                    if reg is not None and reg.listeners
                    else (self.listeners[0] if cid == self.node_id and self.listeners else None)
                )
                if listener is None:
                    continue
                nodes.append(
                    {
                        "brokerId": cid,
                        "host": listener.host,
                        "port": listener.port,
                        "rack": None,
                        "isFenced": False,
                    }
                )
            controller = self.leader_id if self.leader_id is not None else -1
            return {
                "throttleTimeMs": 0,
                "errorCode": 0,
                "errorMessage": None,
                "endpointType": 2,
                "clusterId": self.cluster_id,
                "controllerId": controller,
                "brokers": nodes,
                "clusterAuthorizedOperations": -2147483648,
            }
        return describe_cluster_brokers(
            self.image, self.cluster_id, self.leader_id, include_fenced, endpoint_type if version >= 1 else 1
        )

    # ------------------------------------------------------------------ UpdateFeatures

    def feature_state(self) -> fc.FeatureControlState:
        """The image as the feature checks see it, with this controller's appended but not yet
        committed registrations and levels on top."""
        image = self.image
        mv = image.metadata_version
        if mv is None:
            raise ApiError(Errors.NOT_CONTROLLER, "The controller has not finished activation")
        ranges = dict(self.software.supported_features())
        supported = {b.id: _ranges(b.supported_features) for b in image.cluster.brokers.values()}
        supported.update(self._inflight_brokers)
        brokers = tuple(fc.NodeSupport(bid, supported[bid]) for bid in sorted(supported))
        inflight_mv = self._inflight_levels.get(FEATURE_NAME)
        if inflight_mv is not None:
            mv = MetadataVersion.from_feature_level(inflight_mv)
        finalized = dict(image.features.finalized)
        finalized.update(
            {n: v for n, v in self._inflight_levels.items() if n not in (FEATURE_NAME, fc.KRAFT_VERSION)}
        )
        controllers = tuple(
            fc.NodeSupport(c.id, _ranges(c.supported_features)) for c in image.cluster.controllers.values()
        )
        return fc.FeatureControlState(
            self.node_id,
            mv,
            {n: v for n, v in finalized.items() if v > 0},
            ranges,
            brokers,
            controllers,
            self.voters,
            self.kraft_version,
            image.features.zk_migration_state in (ZkMigrationState.PRE_MIGRATION, ZkMigrationState.MIGRATION),
        )

    def _update_features(self, version: int, body: Mapping[str, Any]) -> Respond | AppendThenRespond:
        updates = parse_feature_updates(version, body)
        state = self.feature_state()
        image = self.image
        refusal = self.auto_upgrade_settings().manual_change_error(
            version, state.metadata_version, {u.feature: u.level for u in updates}
        )
        if refusal is not None:
            return Respond(update_features_error_body(version, [u.feature for u in updates], *refusal))

        def losses_at(mv: MetadataVersion) -> tuple[str, ...]:
            return image_losses(image, mv)

        outcome = fc.update_features(
            state,
            updates,
            validate_only=bool(body.get("validateOnly", False)),
            losses_at=losses_at,
            allow_unsafe_downgrade=self.allow_unsafe_downgrade,
        )
        response = update_features_response(version, outcome)
        if not outcome.ok or not outcome.records:
            return Respond(response)
        records = self._elr_config_records(outcome.records) + list(outcome.records)
        for r in outcome.records:
            if r.spec.name == "FeatureLevelRecord":
                self._inflight_levels[r.value["name"]] = r.value["featureLevel"]
        return AppendThenRespond(
            tuple(records),
            response,
            atomic=True,
            not_controller_body=update_features_error_body(
                version, outcome.feature_names, Errors.NOT_CONTROLLER, None
            ),
            kraft_version_upgrade=outcome.kraft_version_upgrade,
        )

    def _elr_config_records(self, records: Sequence[MetadataRecord]) -> list[MetadataRecord]:
        """Enabling ELR (Kafka's ``ConfigurationControlManager.updateFeatures``): create the
        cluster-level ``min.insync.replicas`` if missing and delete broker-level overrides."""
        enabling = any(
            r.spec.name == "FeatureLevelRecord"
            and r.value["name"] == "eligible.leader.replicas.version"
            and r.value["featureLevel"] > 0
            for r in records
        )
        if not enabling:
            return []
        out: list[MetadataRecord] = []
        key = "min.insync.replicas"
        cluster = ConfigResource(ConfigResourceType.BROKER, "")
        if key not in self.image.configs.get(cluster, {}):
            value = self.image.configs.get(cluster, {}).get(key, str(self.default_min_isr))
            out.append(
                rec("ConfigRecord", 0, {"resourceType": 4, "resourceName": "", "name": key, "value": value})
            )
        for resource in sorted(self.image.configs):
            if (
                resource.type == ConfigResourceType.BROKER
                and resource.name
                and key in self.image.configs[resource]
            ):
                out.append(
                    rec(
                        "ConfigRecord",
                        0,
                        {"resourceType": 4, "resourceName": resource.name, "name": key, "value": None},
                    )
                )
        return out

    # ------------------------------------------------------------------ registration

    def _register_broker(self, version: int, body: Mapping[str, Any], now_ms: int) -> AppendThenRespond:
        mv = self.image.metadata_version
        assert mv is not None
        broker_id = body["brokerId"]
        if body.get("clusterId") != self.cluster_id:
            raise ApiError(
                Errors.INCONSISTENT_CLUSTER_ID,
                f"Expected cluster ID {self.cluster_id}, but got cluster ID {body.get('clusterId')}",
            )
        if body.get("isMigratingZkBroker", False):
            raise ApiError(
                Errors.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers."
            )
        existing = self.image.cluster.brokers.get(broker_id)
        incarnation = body["incarnationId"]
        if (
            existing is not None
            and existing.incarnation_id != incarnation
            and self._has_session(broker_id, now_ms)
            and not existing.fenced
        ):
            raise ApiError(
                Errors.DUPLICATE_BROKER_REGISTRATION, "Another broker is registered with that broker id."
            )
        ranges = features_from_request(body.get("features") or ())
        finalized = dict(self.image.features.finalized)
        if self.kraft_version > 0:
            finalized[fc.KRAFT_VERSION] = self.kraft_version
        err = fc.registration_feature_error(ranges, mv, finalized)
        if err is None and self._inflight_levels:  # and against the levels about to commit
            pending = {**finalized, **self._inflight_levels}
            pending_mv = MetadataVersion.from_feature_level(pending.pop(FEATURE_NAME, mv.feature_level))
            err = fc.registration_feature_error(ranges, pending_mv, pending)
        if err is not None:
            log.info(
                "[QuorumController id=%d] Unable to register broker %d: %s", self.node_id, broker_id, err
            )
            raise err
        amending = existing is not None and existing.incarnation_id == incarnation
        prior = existing if amending else None
        if prior is not None:
            epoch = prior.epoch  # a retried registration keeps its epoch (Kafka's amending path)
            if not self._registration_changed(prior, body, ranges):
                self._last_contact[broker_id] = now_ms
                return AppendThenRespond((), {"throttleTimeMs": 0, "errorCode": 0, "brokerEpoch": epoch})
        else:
            # A new incarnation: the broker epoch is the offset of its RegisterBrokerRecord (Kafka's
            # nextWriteOffset), so a restart gets a larger epoch and the old process's requests fail.
            epoch = self._next_offset
        record_version = mv.register_broker_record_version()
        value: dict[str, Any] = {
            "brokerId": broker_id,
            "isMigratingZkBroker": False,
            "incarnationId": incarnation,
            "brokerEpoch": epoch,
            "endPoints": _endpoint_records(body),
            "features": [
                {"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in sorted(ranges.items())
            ],
            "rack": body.get("rack"),
            # Amending keeps the fencing state (Kafka's); a new incarnation starts fenced.
            "fenced": prior.fenced if prior is not None else True,
            "inControlledShutdown": prior.in_controlled_shutdown if prior is not None else False,
        }
        if record_version >= 3:
            value["logDirs"] = list(body.get("logDirs") or ())
        if record_version >= 4 and body.get("cordonedLogDirs"):
            value["cordonedLogDirs"] = list(body.get("cordonedLogDirs") or ())
        if record_version >= 5 and body.get("staticConfigs"):
            value["staticConfigs"] = [
                {"name": c["name"], "value": c.get("value")} for c in body.get("staticConfigs") or ()
            ]
        value = _shape(lookup_record("RegisterBrokerRecord"), record_version, value)
        self._last_contact[broker_id] = now_ms
        log.info(
            "[QuorumController id=%d] %s broker %d, incarnation ID %s (previous %s), with broker epoch %d "
            "(RegisterBrokerRecord v%d).",
            self.node_id,
            "Amending the registration of" if amending else "Registering a new incarnation of",
            broker_id,
            incarnation,
            existing.incarnation_id if existing is not None else None,
            epoch,
            record_version,
        )
        response = {"throttleTimeMs": 0, "errorCode": 0, "brokerEpoch": epoch}
        self._inflight_brokers[broker_id] = dict(ranges)
        return AppendThenRespond(
            (rec("RegisterBrokerRecord", record_version, value),),
            response,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "brokerEpoch": -1,
            },
        )

    @staticmethod
    def _registration_changed(
        existing: BrokerRegistration, body: Mapping[str, Any], ranges: Mapping[str, VersionRange]
    ) -> bool:
        listeners = tuple((lst["name"], lst["host"], lst["port"]) for lst in body.get("listeners") or ())
        have = tuple((e.name, e.host, e.port) for e in existing.listeners)
        return (
            listeners != have
            or _ranges(existing.supported_features) != dict(ranges)
            or existing.rack != body.get("rack")
        )

    def _has_session(self, broker_id: int, now_ms: int) -> bool:
        last = self._last_contact.get(broker_id)
        return last is not None and now_ms - last <= self.session_timeout_ms

    def _register_controller(self, body: Mapping[str, Any]) -> Respond | AppendThenRespond:
        mv = self.image.metadata_version
        if mv is None or not mv.is_controller_registration_supported():
            raise ApiError(
                Errors.UNSUPPORTED_VERSION,
                "The current MetadataVersion is too old to support controller registrations.",
            )
        ok = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None}
        return AppendThenRespond(
            (self._controller_record(body),),
            ok,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "errorMessage": None,
            },
        )

    def _controller_record(self, body: Mapping[str, Any]) -> MetadataRecord:
        mv = self.image.metadata_version
        assert mv is not None
        return rec(
            "RegisterControllerRecord",
            mv.register_controller_record_version(),
            {
                "controllerId": body["controllerId"],
                "incarnationId": body["incarnationId"],
                "zkMigrationReady": bool(body.get("zkMigrationReady", False)),
                "endPoints": _endpoint_records(body),
                "features": [dict(f) for f in body.get("features") or ()],
            },
        )

    def controller_registration_body(self) -> Body:
        """The ControllerRegistration request this node sends to the active controller (KIP-919)."""
        return {
            "controllerId": self.node_id,
            "incarnationId": self.incarnation_id,
            "zkMigrationReady": False,
            "listeners": [
                {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
                for e in self.listeners
            ],
            "features": [
                {"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in self.software.supported_features().items()
            ],
        }

    def needs_controller_registration(self) -> bool:
        """Whether a standby should send :meth:`controller_registration_body` to the active one."""
        mv = self.image.metadata_version
        if self._active or mv is None or not mv.is_controller_registration_supported():
            return False
        current = self.image.cluster.controllers.get(self.node_id)
        if current is None or current.incarnation_id != self.incarnation_id:
            return True
        # New software (a rolling upgrade) changes the supported ranges: register them again.
        wanted = self.controller_registration_body()["features"]
        return dict(current.supported_features) != {f["name"]: _srange(f) for f in wanted}

    def _unregister_broker(self, body: Mapping[str, Any]) -> Respond | AppendThenRespond:
        broker_id = body["brokerId"]
        existing = self.image.cluster.brokers.get(broker_id)
        if existing is None:
            raise ApiError(
                Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered"
            )
        self._last_contact.pop(broker_id, None)
        ok = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None}
        return AppendThenRespond(
            (rec("UnregisterBrokerRecord", 0, {"brokerId": broker_id, "brokerEpoch": existing.epoch}),), ok
        )

    # ------------------------------------------------------------------ heartbeats

    def _broker_heartbeat(self, body: Mapping[str, Any], now_ms: int) -> Respond | AppendThenRespond:
        broker_id = body["brokerId"]
        broker = self.image.cluster.brokers.get(broker_id)
        if broker is None:
            raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")
        if body.get("brokerEpoch") != broker.epoch:
            raise ApiError(
                Errors.STALE_BROKER_EPOCH,
                f"Expected broker epoch {broker.epoch}, but got broker epoch {body.get('brokerEpoch')}",
            )
        self._last_contact[broker_id] = now_ms
        offset = body.get("currentMetadataOffset", -1)
        register_offset = self._replayer.register_offsets.get(broker_id, self.last_committed_offset)
        caught_up = offset >= register_offset
        want_fence = bool(body.get("wantFence", False))
        want_shutdown = bool(body.get("wantShutDown", False))
        records: list[MetadataRecord] = []
        fenced = broker.fenced
        should_shutdown = False
        if want_shutdown:
            # No partition leadership moves here, so a controlled shutdown completes at once
            # (Kafka's SHUTDOWN_NOW when the broker leads nothing): fence it and let it go.
            if not fenced:
                records.append(self._fence_record(broker, in_controlled_shutdown=True))
                self._fencing.add(broker_id)
            fenced = True
            should_shutdown = True
        elif want_fence:
            if not fenced:
                records.append(self._fence_record(broker, in_controlled_shutdown=False))
                self._fencing.add(broker_id)
            fenced = True
        elif fenced and caught_up:
            log.info(
                "[QuorumController id=%d] The request from broker %d to unfence has been granted because "
                "it has caught up with the offset of its register broker record %d.",
                self.node_id,
                broker_id,
                register_offset,
            )
            records.append(self._unfence_record(broker))
            fenced = False
        response = {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "isCaughtUp": caught_up,
            "isFenced": fenced,
            "shouldShutDown": should_shutdown,
        }
        if not records:
            return Respond(response)
        return AppendThenRespond(
            tuple(records),
            response,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "isCaughtUp": False,
                "isFenced": True,
                "shouldShutDown": False,
            },
        )

    def _fence_record(self, broker: BrokerRegistration, *, in_controlled_shutdown: bool) -> MetadataRecord:
        mv = self.image.metadata_version
        assert mv is not None
        if mv.is_broker_registration_change_record_supported():
            value: dict[str, Any] = {"brokerId": broker.id, "brokerEpoch": broker.epoch, "fenced": 1}
            if in_controlled_shutdown and mv.is_in_controlled_shutdown_state_supported():
                value["inControlledShutdown"] = 1
            return rec("BrokerRegistrationChangeRecord", _change_record_version(mv), value)
        return rec("FenceBrokerRecord", 0, {"id": broker.id, "epoch": broker.epoch})

    def _unfence_record(self, broker: BrokerRegistration) -> MetadataRecord:
        mv = self.image.metadata_version
        assert mv is not None
        if mv.is_broker_registration_change_record_supported():
            return rec(
                "BrokerRegistrationChangeRecord",
                _change_record_version(mv),
                {"brokerId": broker.id, "brokerEpoch": broker.epoch, "fenced": -1},
            )
        return rec("UnfenceBrokerRecord", 0, {"id": broker.id, "epoch": broker.epoch})

    # ------------------------------------------------------------------ Envelope

    def _envelope(self, body: Mapping[str, Any], now_ms: int) -> Respond | AppendThenRespond:
        """KIP-590 forwarding: decode the embedded request, handle it, wrap the response."""
        data = bytes(body.get("requestData") or b"")
        try:
            api_key = int.from_bytes(data[0:2], "big", signed=True)
            version = int.from_bytes(data[2:4], "big", signed=True)
            req_spec = by_api_key(Kind.REQUEST, api_key)
            header, pos = decode_request_header(data, request_header_version(req_spec, version))
            inner, _ = codec.decode_from(req_spec, version, data, pos)  # trailing bytes ignored, as Kafka
        except (ProtocolError, IndexError, ValueError):
            return Respond({"responseData": None, "errorCode": Errors.INVALID_REQUEST.code})
        if api_key == ENVELOPE or api_key not in (
            UPDATE_FEATURES,
            DESCRIBE_CLUSTER,
            API_VERSIONS,
            UNREGISTER_BROKER,
            DESCRIBE_CONFIGS,
            *ADMIN_WRITE_API_KEYS,
        ):
            return Respond({"responseData": None, "errorCode": Errors.INVALID_REQUEST.code})
        if not self._active:
            return Respond({"responseData": None, "errorCode": Errors.NOT_CONTROLLER.code})
        reply = self.handle_request(api_key, version, inner, now_ms, next_offset=self._next_offset)
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


# --------------------------------------------------------------------------- helpers


def _srange(f: Mapping[str, Any]) -> Any:
    from kraftwerk.image.model import SupportedRange

    return SupportedRange(f["minSupportedVersion"], f["maxSupportedVersion"])


def _endpoint_records(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A registration request's ``listeners`` as the ``endPoints`` of its Register*Record."""
    return [
        {
            "name": lst["name"],
            "host": lst["host"],
            "port": lst["port"],
            "securityProtocol": lst["securityProtocol"],
        }
        for lst in body.get("listeners") or ()
    ]


def _ranges(pairs: Any) -> dict[str, VersionRange]:
    out: dict[str, VersionRange] = {}
    for name, r in pairs:
        out[name] = VersionRange(r.min, r.max) if r.min <= r.max else VersionRange(r.max, r.max)
    return out


def _change_record_version(mv: MetadataVersion) -> int:
    """BrokerRegistrationChangeRecord version: 0; 1 with InControlledShutdown (3.3-IV3); 2 with
    LogDirs (3.7-IV2); 3 with CordonedLogDirs (4.3-IV0)."""
    if mv.is_cordoned_log_dirs_supported():
        return 3
    if mv.is_directory_assignment_supported():
        return 2
    if mv.is_in_controlled_shutdown_state_supported():
        return 1
    return 0


def _shape(spec: Any, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """Keep only the fields ``version`` of ``spec`` has."""
    return {
        f.json_name: value[f.json_name] for f in spec.fields if f.json_name in value and version in f.versions
    }


def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """Header + body bytes of a response (what an EnvelopeResponse carries)."""
    spec = by_api_key(Kind.RESPONSE, api_key)
    header = encode_response_header({"correlationId": correlation_id}, response_header_version(spec, version))
    return header + codec.encode(spec, version, dict(body))


def parse_feature_updates(version: int, body: Mapping[str, Any]) -> list[fc.FeatureUpdate]:
    """The request's updates in Kafka's iteration order (a Java HashMap keyed by feature name).

    v0's ``AllowDowngrade`` maps to SAFE_DOWNGRADE (Kafka's ``UpdateFeaturesRequest.upgradeType``).
    """
    by_name: dict[str, fc.FeatureUpdate] = {}
    for u in body.get("featureUpdates") or ():
        if version == 0:
            utype = fc.UpgradeType.SAFE_DOWNGRADE if u.get("allowDowngrade") else fc.UpgradeType.UPGRADE
        else:
            utype = fc.UpgradeType.from_code(u.get("upgradeType", 1))
        by_name[u["feature"]] = fc.FeatureUpdate(u["feature"], u["maxVersionLevel"], utype)
    return [by_name[n] for n in fc.java_hash_map_order(list(by_name))]


def update_features_error_body(
    version: int, names: Sequence[str], error: Errors, message: str | None
) -> Body:
    """Kafka's ``UpdateFeaturesResponse.createWithErrors``: v0-1 repeat the error per feature."""
    results = (
        [{"feature": n, "errorCode": error.code, "errorMessage": message} for n in sorted(names)]
        if version < 2
        else []
    )
    return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": message, "results": results}


def update_features_response(version: int, outcome: fc.UpdateFeaturesOutcome) -> Body:
    return update_features_error_body(version, outcome.feature_names, outcome.error, outcome.message)


def not_controller_body(api_key: int, version: int, body: Mapping[str, Any]) -> Body:
    return error_body(api_key, version, Errors.NOT_CONTROLLER, None, body)


def error_body(
    api_key: int, version: int, error: Errors, message: str | None, body: Mapping[str, Any]
) -> Body:
    """A response of ``api_key`` carrying ``error`` (the shapes of the controller RPCs)."""
    if api_key == UPDATE_FEATURES:
        names = [u["feature"] for u in body.get("featureUpdates") or ()]
        return update_features_error_body(version, names, error, message)
    if api_key == BROKER_REGISTRATION:
        return {"throttleTimeMs": 0, "errorCode": error.code, "brokerEpoch": -1}
    if api_key == BROKER_HEARTBEAT:
        return {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "isCaughtUp": False,
            "isFenced": True,
            "shouldShutDown": False,
        }
    if api_key in (CONTROLLER_REGISTRATION, UNREGISTER_BROKER):
        return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": message}
    if api_key in (CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS):
        return topics_error_body(api_key, version, error, message, body)
    if api_key in (ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS):
        return alter_error_body(error, message, body)
    if api_key == DESCRIBE_CLUSTER:
        return {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "errorMessage": message,
            "endpointType": 1,
            "clusterId": "",
            "controllerId": -1,
            "brokers": [],
            "clusterAuthorizedOperations": -2147483648,
        }
    spec = by_api_key(Kind.RESPONSE, api_key)
    out = codec.default_value(spec)
    if "errorCode" in out:
        out["errorCode"] = error.code
    return out


def describe_cluster_brokers(
    image: MetadataImage,
    cluster_id: str,
    controller_id: int | None,
    include_fenced: bool,
    endpoint_type: int = 1,
    listener_name: str | None = None,
) -> Body:
    """DescribeCluster listing brokers from the image (unfenced only unless ``include_fenced``)."""
    brokers = []
    for b in image.cluster.brokers.values():
        if b.fenced and not include_fenced:
            continue
        endpoint = _pick_listener(b.listeners, listener_name)
        if endpoint is None:
            continue
        brokers.append(
            {
                "brokerId": b.id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": b.rack,
                "isFenced": b.fenced,
            }
        )
    return {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "errorMessage": None,
        "endpointType": endpoint_type,
        "clusterId": cluster_id,
        "controllerId": -1 if controller_id is None else controller_id,
        "brokers": brokers,
        "clusterAuthorizedOperations": -2147483648,
    }


def _pick_listener(listeners: Sequence[Endpoint], name: str | None) -> Endpoint | None:
    if not listeners:
        return None
    if name is not None:
        for e in listeners:
            if e.name == name:
                return e
        return None
    return listeners[0]
