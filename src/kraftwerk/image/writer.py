"""Write an image as metadata records at a chosen metadata.version, reporting every loss.

This is the one path from an image to records (snapshots, bootstrap, ``metadata rewrite``). It
follows Kafka's ``MetadataImage.write`` order (features with metadata.version first, cluster,
topics, configs, client quotas, producer ids, ACLs, SCRAM, delegation tokens) and writes each
record at the version the target metadata.version allows.

Whatever the target cannot represent is a *loss*. Kafka's loss texts are kept word for word
(``upstream-kafka.md`` §4); kraftwerk adds losses Kafka drops silently or cannot meet (ELR below
4.0-IV1, cordoned log dirs below 4.3-IV0, broker static configs, leader recovery state below
3.2-IV0, feature levels whose dependencies the target does not meet). With
``LossPolicy.REFUSE`` (Kafka's default) the writer collects every loss and then raises one
:class:`UnwritableMetadataError`; with ``LossPolicy.DROP`` it drops the data and reports.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.image.errors import ImageError, UnwritableMetadataError
from kraftwerk.image.model import (
    DIR_MIGRATING,
    BrokerRegistration,
    ControllerRegistration,
    Endpoint,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    ScramMechanism,
    SupportedRange,
    TopicImage,
    ZkMigrationState,
)
from kraftwerk.protocol import codec
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.protocol.schema import MessageSpec
from kraftwerk.versions import features as feature_catalogue
from kraftwerk.versions.metadata_version import FEATURE_NAME, MINIMUM_BOOTSTRAP_VERSION, MetadataVersion

log = logging.getLogger(__name__)


class LossPolicy(enum.Enum):
    """What the writer does with data the target version cannot hold."""

    REFUSE = "refuse"
    """Collect every loss, then raise UnwritableMetadataError (Kafka's default handler)."""
    DROP = "drop"
    """Drop the data and report the losses in the result (KIP-778's unsafe downgrade)."""


@dataclass(frozen=True, slots=True)
class ImageWriterOptions:
    """Target version and loss policy (Kafka's ImageWriterOptions)."""

    metadata_version: MetadataVersion
    loss_policy: LossPolicy = LossPolicy.REFUSE


@dataclass(frozen=True, slots=True)
class WrittenRecord:
    """One record of the written image: its declaration, record version and value."""

    spec: MessageSpec
    version: int
    value: codec.Value

    def encode(self) -> bytes:
        """The framed bytes that go into a KRaft log/snapshot record value."""
        return encode_metadata_record(self.spec, self.version, self.value)


@dataclass(frozen=True, slots=True)
class ImageWriteResult:
    """The records written and the losses (empty when the write was lossless)."""

    metadata_version: MetadataVersion
    records: tuple[WrittenRecord, ...]
    losses: tuple[str, ...] = field(default=())

    @property
    def lossless(self) -> bool:
        return not self.losses

    def encoded(self) -> list[bytes]:
        return [r.encode() for r in self.records]


class _Writer:
    """Collects records and losses for one write."""

    def __init__(self, options: ImageWriterOptions) -> None:
        self.mv = options.metadata_version
        self.records: list[WrittenRecord] = []
        self.losses: list[str] = []
        self._seen: set[str] = set()

    def loss(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.losses.append(text)

    def write(self, record_name: str, version: int, value: dict[str, Any]) -> None:
        spec = lookup_record(record_name)
        self.records.append(WrittenRecord(spec, version, _shape(spec, version, value)))


def _shape(spec: MessageSpec, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """Drop keys for fields the version lacks; they must hold defaults (losses were checked). A key
    that is no field of the record is a writer bug, never silently dropped."""
    unknown = set(value) - {f.json_name for f in spec.fields}
    if unknown:
        raise AssertionError(f"{spec.name} has no field(s) {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {}
    for f in spec.fields:
        if f.json_name not in value:
            continue
        v = value[f.json_name]
        if version in f.versions:
            out[f.json_name] = v
        elif v != f.default_value() and not (v in ((), []) and f.is_array):
            raise AssertionError(f"{spec.name} v{version} cannot hold {f.json_name}={v!r}; loss not checked")
    return out


def write_image(image: MetadataImage, options: ImageWriterOptions | MetadataVersion | None = None
                ) -> ImageWriteResult:
    """Write ``image`` at ``options.metadata_version`` (default: the image's own version)."""
    if options is None:
        if image.metadata_version is None:
            raise ImageError("the image has no metadata.version; give the version to write it at")
        options = ImageWriterOptions(image.metadata_version)
    elif isinstance(options, MetadataVersion):
        options = ImageWriterOptions(options)
    w = _Writer(options)
    _write_features(image, w)
    _write_cluster(image, w)
    _write_topics(image, w)
    _write_configs(image, w)
    _write_quotas(image, w)
    _write_producer_ids(image, w)
    _write_acls(image, w)
    _write_scram(image, w)
    _write_tokens(image, w)
    if w.losses:
        if options.loss_policy is LossPolicy.REFUSE:
            raise UnwritableMetadataError(w.mv, w.losses)
        for loss in w.losses:
            log.info("Dropping metadata that metadata.version %s cannot represent: %s", w.mv, loss)
    return ImageWriteResult(w.mv, tuple(w.records), tuple(w.losses))


def image_losses(image: MetadataImage, metadata_version: MetadataVersion) -> tuple[str, ...]:
    """Every loss writing ``image`` at ``metadata_version`` would cause (a dry run)."""
    return write_image(image, ImageWriterOptions(metadata_version, LossPolicy.DROP)).losses


# --------------------------------------------------------------------------- features


def _feature_dependency_problem(name: str, level: int, mv: MetadataVersion) -> str | None:
    """Why ``name=level`` cannot be finalized at ``mv``, from the feature catalogue."""
    if level >= 1 and mv < MetadataVersion.IBP_3_3_IV3:
        return f"the feature flag {name}={level}, which depends on metadata.version=7 (3.3-IV3)"
    feature = feature_catalogue.Feature.lookup(name)
    if feature is None:
        return None
    try:
        fl = feature.from_feature_level(level, allow_unstable=True)
    except Exception:  # an unknown level: nothing to check against
        return None
    for dep, dep_level in fl.dependencies:
        if dep == FEATURE_NAME and mv.feature_level < dep_level:
            return f"the feature flag {name}={level}, which depends on metadata.version level {dep_level}"
    return None


def _write_features(image: MetadataImage, w: _Writer) -> None:
    features = image.features
    if w.mv < MINIMUM_BOOTSTRAP_VERSION:
        if features.finalized:
            w.loss("feature flag(s): " + ", ".join(sorted(features.finalized)))
    else:
        # metadata.version first, at record version 0, so any reader can decode what follows.
        w.write("FeatureLevelRecord", 0, {"name": FEATURE_NAME, "featureLevel": w.mv.feature_level})
        for name, level in sorted(features.finalized.items()):
            problem = _feature_dependency_problem(name, level, w.mv)
            if problem is not None:
                w.loss(problem)
                continue
            w.write("FeatureLevelRecord", 0, {"name": name, "featureLevel": level})
    state = features.zk_migration_state
    if w.mv.is_migration_supported():
        # 3.x writes the state at every version that knows it; 4.x stopped writing NONE.
        if state is not ZkMigrationState.NONE or w.mv < MetadataVersion.IBP_4_0_IV0:
            w.write("ZkMigrationStateRecord", 0, {"zkMigrationState": int(state)})
    elif state is not ZkMigrationState.NONE:
        w.loss(f"the ZK Migration state which was {state.name}")


# --------------------------------------------------------------------------- cluster


def _endpoints(listeners: tuple[Endpoint, ...]) -> list[dict[str, Any]]:
    return [{"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
            for e in listeners]


def _ranges(features: tuple[tuple[str, SupportedRange], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max} for n, r in features]


def broker_record(broker: BrokerRegistration, w: _Writer) -> dict[str, Any]:
    """Kafka's BrokerRegistration.toRecord, with kraftwerk's extra loss checks."""
    mv = w.mv
    value: dict[str, Any] = {
        "brokerId": broker.id,
        "incarnationId": broker.incarnation_id,
        "brokerEpoch": broker.epoch,
        "endPoints": _endpoints(broker.listeners),
        "features": _ranges(broker.supported_features),
        "rack": broker.rack,
        "fenced": broker.fenced,
    }
    if broker.in_controlled_shutdown:
        if mv.is_in_controlled_shutdown_state_supported():
            value["inControlledShutdown"] = True
        else:
            w.loss("the inControlledShutdown state of one or more brokers")
    if broker.is_migrating_zk_broker:
        if mv.is_migration_supported():
            value["isMigratingZkBroker"] = True
        else:
            w.loss("the isMigratingZkBroker state of one or more brokers")
    if broker.directories:
        if mv.is_directory_assignment_supported():
            value["logDirs"] = list(broker.directories)
        else:
            w.loss("the online log directories of one or more brokers")
    if broker.cordoned_directories:
        if mv.is_cordoned_log_dirs_supported():
            value["cordonedLogDirs"] = list(broker.cordoned_directories)
        else:
            w.loss("the cordoned log directories of one or more brokers")
    if broker.static_configs:
        if mv.is_broker_static_configs_supported():
            value["staticConfigs"] = [{"name": n, "value": v} for n, v in broker.static_configs]
        else:
            w.loss("the static configs of one or more brokers")
    return value


def broker_registration_value(broker: BrokerRegistration, mv: MetadataVersion) -> dict[str, Any]:
    """A RegisterBrokerRecord value re-stating ``broker`` at ``mv`` (shaped to its record version)."""
    w = _Writer(ImageWriterOptions(mv))
    version = mv.register_broker_record_version()
    return _shape(lookup_record("RegisterBrokerRecord"), version, broker_record(broker, w))


def controller_record(controller: ControllerRegistration) -> dict[str, Any]:
    return {
        "controllerId": controller.id,
        "incarnationId": controller.incarnation_id,
        "zkMigrationReady": controller.zk_migration_ready,
        "endPoints": _endpoints(controller.listeners),
        "features": _ranges(controller.supported_features),
    }


def _write_cluster(image: MetadataImage, w: _Writer) -> None:
    version = w.mv.register_broker_record_version()
    for broker in image.cluster.brokers.values():
        w.write("RegisterBrokerRecord", version, broker_record(broker, w))
    if image.cluster.controllers:
        if w.mv.is_controller_registration_supported():
            for controller in image.cluster.controllers.values():
                w.write("RegisterControllerRecord", w.mv.register_controller_record_version(),
                        controller_record(controller))
        else:
            w.loss("controller registration data")


# --------------------------------------------------------------------------- topics


def partition_record(topic: TopicImage, pid: int, part: PartitionRegistration, w: _Writer) -> dict[str, Any]:
    """Kafka's PartitionRegistration.toRecord, with kraftwerk's extra loss checks."""
    mv = w.mv
    value: dict[str, Any] = {
        "partitionId": pid,
        "topicId": topic.id,
        "replicas": list(part.replicas),
        "isr": list(part.isr),
        "removingReplicas": list(part.removing_replicas),
        "addingReplicas": list(part.adding_replicas),
        "leader": part.leader,
        "leaderEpoch": part.leader_epoch,
        "partitionEpoch": part.partition_epoch,
    }
    if part.leader_recovery_state is not LeaderRecoveryState.RECOVERED:
        if mv.is_leader_recovery_supported():
            value["leaderRecoveryState"] = int(part.leader_recovery_state)
        else:
            w.loss("the leader recovery state of one or more partitions")
    if part.elr or part.last_known_elr:
        if mv.is_elr_supported():
            if part.elr:
                value["eligibleLeaderReplicas"] = list(part.elr)
            if part.last_known_elr:
                value["lastKnownElr"] = list(part.last_known_elr)
        else:
            w.loss("the eligible leader replicas of one or more partitions")
    if mv.is_directory_assignment_supported():
        value["directories"] = list(part.directories)
    elif any(d != DIR_MIGRATING for d in part.directories):
        w.loss("the directory assignment state of one or more replicas")
    return value


def _write_topics(image: MetadataImage, w: _Writer) -> None:
    version = w.mv.partition_record_version()
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        w.write("TopicRecord", 0, {"name": topic.name, "topicId": topic.id})
        for pid in sorted(topic.partitions):
            w.write("PartitionRecord", version, partition_record(topic, pid, topic.partitions[pid], w))


# --------------------------------------------------------------------------- the rest


def _write_configs(image: MetadataImage, w: _Writer) -> None:
    for resource in sorted(image.configs):
        for name, value in image.configs[resource].items():
            w.write("ConfigRecord", 0, {"resourceType": resource.type, "resourceName": resource.name,
                                        "name": name, "value": value})


def _write_quotas(image: MetadataImage, w: _Writer) -> None:
    for entity in sorted(image.client_quotas, key=_quota_sort_key):
        for key, value in image.client_quotas[entity].items():
            w.write("ClientQuotaRecord", 0, {
                "entity": [{"entityType": t, "entityName": n} for t, n in entity],
                "key": key, "value": value, "remove": False})


def _quota_sort_key(entity: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, str, bool], ...]:
    return tuple((t, n or "", n is None) for t, n in entity)


def _write_producer_ids(image: MetadataImage, w: _Writer) -> None:
    if image.producer_ids_next >= 0:
        w.write("ProducerIdsRecord", 0, {"brokerId": -1, "brokerEpoch": -1,
                                         "nextProducerId": image.producer_ids_next})


def _write_acls(image: MetadataImage, w: _Writer) -> None:
    for acl_id in sorted(image.acls, key=str):
        acl = image.acls[acl_id]
        w.write("AccessControlEntryRecord", 0, {
            "id": acl_id, "resourceType": acl.resource_type, "resourceName": acl.resource_name,
            "patternType": acl.pattern_type, "principal": acl.principal, "host": acl.host,
            "operation": acl.operation, "permissionType": acl.permission_type})


def _mechanism_name(mechanism: int) -> str:
    try:
        return ScramMechanism(mechanism).name
    except ValueError:
        return f"UNKNOWN({mechanism})"


def _write_scram(image: MetadataImage, w: _Writer) -> None:
    if not image.scram:
        return
    keys = sorted(image.scram)
    if w.mv.is_scram_supported():
        for mechanism, user in keys:
            cred = image.scram[(mechanism, user)]
            w.write("UserScramCredentialRecord", 0, {
                "name": user, "mechanism": mechanism, "salt": cred.salt, "storedKey": cred.stored_key,
                "serverKey": cred.server_key, "iterations": cred.iterations})
        return
    by_mech: dict[int, list[str]] = {}
    for mechanism, user in keys:
        by_mech.setdefault(mechanism, []).append(user)
    # Kafka's ScramImage text, including its "},{" separators.
    text = "ScramImage({"
    for mechanism, users in by_mech.items():
        text += f"{_mechanism_name(mechanism)}:{', '.join(users)}" + "},{"
    w.loss(text + "})")


def _write_tokens(image: MetadataImage, w: _Writer) -> None:
    if not image.delegation_tokens:
        return
    ids = sorted(image.delegation_tokens)
    if not w.mv.is_delegation_token_supported():
        w.loss(f"DelegationTokenImage({', '.join(ids)})")
        return
    for token_id in ids:
        t = image.delegation_tokens[token_id]
        w.write("DelegationTokenRecord", 0, {
            "owner": t.owner, "requester": t.requester, "renewers": list(t.renewers),
            "issueTimestamp": t.issue_timestamp, "maxTimestamp": t.max_timestamp,
            "expirationTimestamp": t.expiration_timestamp, "tokenId": t.token_id})

