"""MetadataDelta: replay metadata records on top of an image, then apply to get the next image.

A delta records only what changed: touched brokers, the topics whose partitions changed (each
with a private copy of its partition dict), config resources, ACL ids... ``apply`` folds those
changes into the image's persistent maps, so its cost follows the size of the change, not of the
image.

Metadata transactions (KIP-868): records after a BeginTransactionRecord are held back and
replayed together at the EndTransactionRecord; an AbortTransactionRecord discards them. An open
transaction is not part of ``apply``'s result; ``pending_transaction`` lets a loader carry it on.

A delta built with ``snapshot=True`` ignores the base image: a snapshot states the whole image,
so loading one over an existing image ("hot" load) gives exactly what a cold load gives.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kraftwerk.image.errors import MetadataReplayError
from kraftwerk.image.merge import merge_map, merge_small, updated
from kraftwerk.image.model import (
    DIR_MIGRATING,
    DIR_UNASSIGNED,
    EMPTY_IMAGE,
    EMPTY_PROVENANCE,
    NO_LEADER_CHANGE,
    BrokerRegistration,
    ClusterImage,
    ConfigResource,
    ConfigResourceType,
    ControllerRegistration,
    DelegationToken,
    FeaturesImage,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    QuotaEntity,
    ScramCredential,
    StandardAcl,
    TopicImage,
    TopicsImage,
    ZkMigrationState,
    sorted_dirs,
)
from kraftwerk.image.registrations import broker_from_record, endpoints_from, features_from
from kraftwerk.native import compiled
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.versions.errors import UnknownMetadataVersionError
from kraftwerk.versions.features import KRAFT_VERSION
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion

log = logging.getLogger(__name__)

#: the compiled twin of the partition replay, or None (pure Python)
NATIVE = compiled("kraftwerk.image._cdelta")

UNSUPPORTED_MV_MESSAGE = (
    "Unsupported metadata version - if you are currently upgrading your cluster, please ensure the "
    "metadata version is set to 3.3-IV3 (or higher) before updating the software version. The "
    "metadata version can be updated via the `kafka-features` command-line tool."
)

Value = Mapping[str, Any]
_T = TypeVar("_T")


def _ints(values: Iterable[int] | None) -> tuple[int, ...]:
    return tuple(values) if values else ()


def _share(shared: dict[Any, Any] | None, value: _T) -> _T:
    if shared is None:
        return value
    kept: _T = shared.setdefault(value, value)
    return kept


def _partition_from_record_py(value: Value, shared: dict[Any, Any] | None = None) -> PartitionRegistration:
    """Kafka's PartitionRegistration(PartitionRecord): no directories means MIGRATING.

    ``shared`` (a delta's) maps each tuple to an equal one kept before, so that the many
    partitions with the same replicas, ISR or directories hold one tuple between them. The pure
    reference of ``_cdelta.partition_from_record``.
    """
    replicas = _share(shared, _ints(value.get("replicas")))
    dirs_raw = value.get("directories")
    if dirs_raw:
        if len(dirs_raw) != len(replicas):
            raise MetadataReplayError(
                f"The lengths for replicas and directories do not match in partition "
                f"{value.get('topicId')}:{value.get('partitionId')}"
            )
        dirs = _share(shared, tuple(dirs_raw))
    else:
        dirs = _share(shared, (DIR_MIGRATING,) * len(replicas))
    return _new_partition(PartitionRegistration, (
        replicas,
        _share(shared, _ints(value.get("isr"))),
        dirs,
        _share(shared, _ints(value.get("removingReplicas"))),
        _share(shared, _ints(value.get("addingReplicas"))),
        value.get("leader", -1),
        _recovery_state(value.get("leaderRecoveryState", 0)),
        value.get("leaderEpoch", -1),
        value.get("partitionEpoch", -1),
        _share(shared, _ints(value.get("eligibleLeaderReplicas"))),
        _share(shared, _ints(value.get("lastKnownElr"))),
    ))


_new_partition = tuple.__new__
_RECOVERY_STATES = {state.value: state for state in LeaderRecoveryState}


def _recovery_state(raw: int) -> LeaderRecoveryState:
    state = _RECOVERY_STATES.get(raw)
    if state is None:
        raise MetadataReplayError(f"Value {raw} is not a valid leader recovery state")
    return state


#: the PartitionRecord replay in use: the compiled twin when built (see :mod:`kraftwerk.native`)
partition_from_record: Callable[[Value, dict[Any, Any] | None], PartitionRegistration] = (
    _partition_from_record_py if NATIVE is None else NATIVE.partition_from_record)


def merge_partition_change(prev: PartitionRegistration, value: Value,
                           directories_supported: bool = True) -> PartitionRegistration:
    """Kafka's PartitionRegistration.merge(PartitionChangeRecord).

    Null fields mean "no change"; Leader -2 means no change, any other value (incl. -1) is a new
    leader and bumps the leader epoch; every change bumps the partition epoch. New replicas get
    UNASSIGNED directories, except below 3.7-IV2 where no directory is ever assigned (MIGRATING):
    otherwise a plain reassignment at 3.6 would make the image unwritable at its own version.
    """
    new_replicas_raw = value.get("replicas")
    new_replicas = prev.replicas if new_replicas_raw is None else tuple(new_replicas_raw)
    dirs_raw = value.get("directories")
    if dirs_raw:
        if new_replicas_raw is not None and len(dirs_raw) != len(new_replicas_raw):
            raise MetadataReplayError("The lengths for replicas and directories do not match.")
        new_dirs: tuple[uuid.UUID, ...] = tuple(dirs_raw)
    elif new_replicas_raw is not None:
        old = dict(zip(prev.replicas, prev.directories, strict=False))
        fresh = DIR_UNASSIGNED if directories_supported else DIR_MIGRATING
        new_dirs = tuple(old.get(r, fresh) for r in new_replicas)
    else:
        new_dirs = prev.directories
    if not new_dirs:
        new_dirs = (DIR_MIGRATING,) * len(new_replicas)
    if len(new_dirs) != len(new_replicas):
        raise MetadataReplayError("The lengths for replicas and directories do not match.")
    isr = value.get("isr")
    removing = value.get("removingReplicas")
    adding = value.get("addingReplicas")
    leader = value.get("leader", NO_LEADER_CHANGE)
    if leader == NO_LEADER_CHANGE:
        new_leader, new_leader_epoch = prev.leader, prev.leader_epoch
    else:
        new_leader, new_leader_epoch = leader, prev.leader_epoch + 1
    lrs = value.get("leaderRecoveryState", -1)
    elr = value.get("eligibleLeaderReplicas")
    lkelr = value.get("lastKnownElr")
    return PartitionRegistration(
        replicas=new_replicas,
        isr=prev.isr if isr is None else tuple(isr),
        directories=new_dirs,
        removing_replicas=prev.removing_replicas if removing is None else tuple(removing),
        adding_replicas=prev.adding_replicas if adding is None else tuple(adding),
        leader=new_leader,
        leader_recovery_state=prev.leader_recovery_state if lrs == -1 else _recovery_state(lrs),
        leader_epoch=new_leader_epoch,
        partition_epoch=prev.partition_epoch + 1,
        elr=prev.elr if elr is None else tuple(elr),
        last_known_elr=prev.last_known_elr if lkelr is None else tuple(lkelr),
    )


class _TopicChange:
    """A topic touched by the delta: its (possibly new) identity and a private partition dict."""

    __slots__ = ("id", "name", "partitions")

    def __init__(self, topic_id: uuid.UUID, name: str, partitions: dict[int, PartitionRegistration]):
        self.id = topic_id
        self.name = name
        self.partitions = partitions


class MetadataDelta:
    """Changes to a :class:`MetadataImage`, built by replaying records in log order."""

    def __init__(self, image: MetadataImage = EMPTY_IMAGE, *, snapshot: bool = False) -> None:
        self.image = image
        self._base = EMPTY_IMAGE if snapshot else image
        self.snapshot = snapshot
        self._mv: MetadataVersion | None = None
        self._features: dict[str, int] = {}
        self._zk_state: ZkMigrationState | None = None
        self._features_epoch: int | None = None
        self._brokers: dict[int, BrokerRegistration | None] = {}
        self._controllers: dict[int, ControllerRegistration | None] = {}
        self._topics: dict[uuid.UUID, _TopicChange] = {}
        self._deleted_topics: set[uuid.UUID] = set()
        self._configs: dict[ConfigResource, dict[str, str]] = {}
        self._quotas: dict[QuotaEntity, dict[str, float]] = {}
        self._producer_ids_next: int | None = None
        self._acls: dict[uuid.UUID, StandardAcl | None] = {}
        self._scram_changes: dict[tuple[int, str], ScramCredential | None] = {}
        self._tokens: dict[str, DelegationToken | None] = {}
        self._txn: list[tuple[MetadataRecord, int]] | None = None
        self._shared: dict[Any, Any] = {}  # tuples kept by the partitions replayed so far
        self.records_replayed = 0

    # ------------------------------------------------------------------ transactions

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    @property
    def pending_transaction(self) -> list[tuple[MetadataRecord, int]] | None:
        """Records of an open transaction (not yet applied), or None."""
        return self._txn

    def resume_transaction(self, pending: list[tuple[MetadataRecord, int]] | None) -> None:
        """Continue a transaction that a previous delta left open."""
        self._txn = None if pending is None else list(pending)

    # ------------------------------------------------------------------ replay

    def replay(self, record: MetadataRecord, offset: int = -1) -> None:
        """Apply one record. ``offset`` is its log offset (for the features epoch), if known."""
        if self._txn is None:  # the usual case, once per record of a cold load: no extra call
            handler = _HANDLERS.get(record.spec.name)
            if handler is not None:
                handler(self, record.value, offset)
                self.records_replayed += 1
                return
        self._replay_with_transactions(record, offset)

    def _replay_with_transactions(self, record: MetadataRecord, offset: int) -> None:
        """A transaction's markers and the records inside one; an unknown record type."""
        name = record.spec.name
        if name == "BeginTransactionRecord":
            if self._txn is not None:
                raise MetadataReplayError("BeginTransactionRecord inside an open metadata transaction")
            self._txn = []
            return
        if name == "EndTransactionRecord":
            if self._txn is None:
                raise MetadataReplayError("EndTransactionRecord without a BeginTransactionRecord")
            pending, self._txn = self._txn, None
            for rec, off in pending:
                self._replay_one(rec, off)
            return
        if name == "AbortTransactionRecord":
            if self._txn is None:
                raise MetadataReplayError("AbortTransactionRecord without a BeginTransactionRecord")
            log.info("Aborted metadata transaction of %d record(s): %s", len(self._txn),
                     record.value.get("reason"))
            self._txn = None
            return
        if self._txn is not None:
            self._txn.append((record, offset))
            return
        self._replay_one(record, offset)

    def replay_all(self, records: Iterable[MetadataRecord]) -> None:
        for record in records:
            self.replay(record)

    def _replay_one(self, record: MetadataRecord, offset: int) -> None:
        handler = _HANDLERS.get(record.spec.name)
        if handler is None:
            raise MetadataReplayError(f"Unable to replay {record.spec.name}: unknown metadata record type")
        handler(self, record.value, offset)
        self.records_replayed += 1

    # ------------------------------------------------------------------ features

    def _feature_level(self, value: Value, offset: int) -> None:
        name = value["name"]
        level = value["featureLevel"]
        if name == KRAFT_VERSION:
            return  # kraft.version lives in KRaft control records (KAFKA-18979)
        if name == FEATURE_NAME:
            try:
                self._mv = MetadataVersion.from_feature_level(level, allow_legacy=True)
            except UnknownMetadataVersionError:
                raise MetadataReplayError(UNSUPPORTED_MV_MESSAGE + f" (feature level {level})") from None
        else:
            self._features[name] = level
        self._features_epoch = offset

    def _zk_migration_state(self, value: Value, offset: int) -> None:
        raw = value.get("zkMigrationState", 0)
        try:
            self._zk_state = ZkMigrationState(raw)
        except ValueError:
            raise MetadataReplayError(f"Unknown ZkMigrationState value {raw}") from None

    # ------------------------------------------------------------------ cluster

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self._brokers:
            return self._brokers[broker_id]
        return self._base.cluster.brokers.get(broker_id)

    def _broker_or_throw(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        cur = self.broker(broker_id)
        if cur is None:
            raise MetadataReplayError(
                f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if cur.epoch != epoch:
            raise MetadataReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match "
                f"the current broker epoch, {cur.epoch}")
        return cur

    def _register_broker(self, value: Value, offset: int) -> None:
        reg = broker_from_record(value)
        self._brokers[reg.id] = reg

    def _unregister_broker(self, value: Value, offset: int) -> None:
        self._broker_or_throw(value["brokerId"], value["brokerEpoch"], "unregister")
        self._brokers[value["brokerId"]] = None

    def _fence(self, value: Value, offset: int) -> None:
        cur = self._broker_or_throw(value["id"], value["epoch"], "fence")
        self._brokers[cur.id] = _replace_broker(cur, fenced=True)

    def _unfence(self, value: Value, offset: int) -> None:
        cur = self._broker_or_throw(value["id"], value["epoch"], "unfence")
        self._brokers[cur.id] = _replace_broker(cur, fenced=False)

    def _broker_change(self, value: Value, offset: int) -> None:
        cur = self._broker_or_throw(value["brokerId"], value["brokerEpoch"], "change")
        changes: dict[str, Any] = {}
        fenced = value.get("fenced", 0)
        if fenced == 1:
            changes["fenced"] = True
        elif fenced == -1:
            changes["fenced"] = False
        elif fenced != 0:
            raise MetadataReplayError(
                f"Unable to replay BrokerRegistrationChangeRecord: bad fenced value {fenced}")
        shutdown = value.get("inControlledShutdown", 0)
        if shutdown == 1:
            changes["in_controlled_shutdown"] = True
        elif shutdown != 0:
            raise MetadataReplayError(
                f"Unable to replay BrokerRegistrationChangeRecord: bad inControlledShutdown value {shutdown}")
        dirs = value.get("logDirs")
        if dirs:
            changes["directories"] = sorted_dirs(dirs)
        cordoned = value.get("cordonedLogDirs")
        if cordoned is not None:
            changes["cordoned_directories"] = sorted_dirs(cordoned)
        self._brokers[cur.id] = _replace_broker(cur, **changes)

    def _register_controller(self, value: Value, offset: int) -> None:
        reg = ControllerRegistration(
            id=value["controllerId"],
            incarnation_id=value["incarnationId"],
            zk_migration_ready=bool(value.get("zkMigrationReady", False)),
            listeners=endpoints_from(value.get("endPoints")),
            supported_features=features_from(value.get("features")),
        )
        self._controllers[reg.id] = reg

    def _unregister_controller(self, value: Value, offset: int) -> None:
        cid = value["controllerId"]
        if cid in self._controllers:
            present = self._controllers[cid] is not None
        else:
            present = cid in self._base.cluster.controllers
        if not present:
            raise MetadataReplayError(f"Tried to unregister controller {cid}, but it was not registered.")
        self._controllers[cid] = None

    # ------------------------------------------------------------------ topics

    def topic(self, topic_id: uuid.UUID) -> TopicImage | None:
        """The topic as the delta currently sees it (partitions may be a live dict: read only)."""
        change = self._topics.get(topic_id)
        if change is not None:
            return TopicImage(change.name, change.id, change.partitions)
        if topic_id in self._deleted_topics:
            return None
        return self._base.topics.by_id.get(topic_id)

    def _topic_change(self, topic_id: uuid.UUID, what: Callable[[], str]) -> _TopicChange:
        """The topic's change, made on first touch; ``what`` names the action for the error (a
        function: formatting it for each of a million partitions cost more than replaying one)."""
        change = self._topics.get(topic_id)
        if change is None:
            base = None if topic_id in self._deleted_topics else self._base.topics.by_id.get(topic_id)
            if base is None:
                raise MetadataReplayError(f"Unable to {what()}: no topic with id {topic_id} found.")
            change = _TopicChange(base.id, base.name, dict(base.partitions))
            self._topics[topic_id] = change
        return change

    def _topic(self, value: Value, offset: int) -> None:
        tid = value["topicId"]
        if tid in self._base.topics.by_id:
            self._deleted_topics.add(tid)  # a re-created id replaces the old topic
        self._topics[tid] = _TopicChange(tid, value["name"], {})

    def _remove_topic(self, value: Value, offset: int) -> None:
        tid = value["topicId"]
        change = self._topics.pop(tid, None)
        if change is not None:
            name = change.name
            if tid in self._base.topics.by_id:
                self._deleted_topics.add(tid)
        else:
            base = None if tid in self._deleted_topics else self._base.topics.by_id.get(tid)
            if base is None:
                raise MetadataReplayError(f"Unable to delete topic with id {tid}: no such topic found.")
            name = base.name
            self._deleted_topics.add(tid)
        # Kafka's MetadataDelta also drops the topic's configs.
        self._configs[ConfigResource(ConfigResourceType.TOPIC, name)] = {}

    def _partition(self, value: Value, offset: int) -> None:
        change = self._topics.get(value["topicId"])  # the topic's earlier partitions made it
        if change is None:
            change = self._topic_change(value["topicId"],
                                        lambda: f"replay PartitionRecord {value.get('partitionId')}")
        change.partitions[value["partitionId"]] = partition_from_record(value, self._shared)

    def _partition_change(self, value: Value, offset: int) -> None:
        pid = value["partitionId"]
        change = self._topic_change(value["topicId"], lambda: f"find partition {value['topicId']}:{pid}")
        prev = change.partitions.get(pid)
        if prev is None:
            raise MetadataReplayError(f"Unable to find partition {value['topicId']}:{pid}")
        change.partitions[pid] = merge_partition_change(prev, value, self._directories_supported())

    def _directories_supported(self) -> bool:
        mv = self._mv if self._mv is not None else self._base.features.metadata_version
        return mv is None or mv.is_directory_assignment_supported()

    def _clear_elr(self, value: Value, offset: int) -> None:
        name = value.get("topicName", "")
        if name:
            tid = self._topic_id_by_name(name)
            if tid is None:
                raise MetadataReplayError(
                    f"Unable to clear elr for topic with name {name}: no such topic found.")
            ids = [tid]
        else:
            ids = [tid for tid in self._current_topic_ids()]
        for tid in ids:
            topic = self.topic(tid)
            assert topic is not None
            if not any(p.elr or p.last_known_elr for p in topic.partitions.values()):
                continue
            change = self._topic_change(tid, lambda: "clear ELR")
            for pid, part in list(change.partitions.items()):
                if part.elr or part.last_known_elr:
                    change.partitions[pid] = merge_partition_change(
                        part, {"eligibleLeaderReplicas": [], "lastKnownElr": []})

    def _topic_id_by_name(self, name: str) -> uuid.UUID | None:
        for change in self._topics.values():
            if change.name == name:
                return change.id
        base = self._base.topics.by_name.get(name)
        if base is not None and base.id not in self._deleted_topics:
            return base.id
        return None

    def _current_topic_ids(self) -> list[uuid.UUID]:
        ids = [tid for tid in self._base.topics.by_id if tid not in self._deleted_topics]
        ids.extend(tid for tid in self._topics
                   if tid not in self._base.topics.by_id or tid in self._deleted_topics)
        return ids

    # ------------------------------------------------------------------ configs, quotas, security

    def _config_dict(self, resource: ConfigResource) -> dict[str, str]:
        cur = self._configs.get(resource)
        if cur is None:
            cur = dict(self._base.configs.get(resource, {}))
            self._configs[resource] = cur
        return cur

    def _config(self, value: Value, offset: int) -> None:
        resource = ConfigResource(value["resourceType"], value["resourceName"])
        configs = self._config_dict(resource)
        if value.get("value") is None:
            configs.pop(value["name"], None)
        else:
            configs[value["name"]] = value["value"]

    def _client_quota(self, value: Value, offset: int) -> None:
        entity: QuotaEntity = tuple(sorted((e["entityType"], e.get("entityName")) for e in value["entity"]))
        cur = self._quotas.get(entity)
        if cur is None:
            cur = dict(self._base.client_quotas.get(entity, {}))
            self._quotas[entity] = cur
        if value.get("remove", False):
            cur.pop(value["key"], None)
        else:
            cur[value["key"]] = value["value"]

    def _producer_ids(self, value: Value, offset: int) -> None:
        self._producer_ids_next = value["nextProducerId"]

    def _acl(self, value: Value, offset: int) -> None:
        self._acls[value["id"]] = StandardAcl(
            resource_type=value["resourceType"],
            resource_name=value["resourceName"],
            pattern_type=value["patternType"],
            principal=value["principal"],
            host=value["host"],
            operation=value["operation"],
            permission_type=value["permissionType"],
        )

    def _remove_acl(self, value: Value, offset: int) -> None:
        acl_id = value["id"]
        present = self._acls[acl_id] is not None if acl_id in self._acls else acl_id in self._base.acls
        if not present:
            raise MetadataReplayError(
                f"Failed to find existing ACL with ID {acl_id} in either image or changes")
        self._acls[acl_id] = None

    def _scram(self, value: Value, offset: int) -> None:
        self._scram_changes[(value["mechanism"], value["name"])] = ScramCredential(
            salt=bytes(value["salt"]),
            stored_key=bytes(value["storedKey"]),
            server_key=bytes(value["serverKey"]),
            iterations=value["iterations"],
        )

    def _remove_scram(self, value: Value, offset: int) -> None:
        key = (value["mechanism"], value["name"])
        changes = self._scram_changes
        present = changes[key] is not None if key in changes else key in self._base.scram
        if not present:
            raise MetadataReplayError(
                f"Failed to find existing SCRAM credential for {value['name']} ({value['mechanism']})")
        self._scram_changes[key] = None

    def _token(self, value: Value, offset: int) -> None:
        token = DelegationToken(
            token_id=value["tokenId"],
            owner=value["owner"],
            requester=value.get("requester", value["owner"]) or value["owner"],
            renewers=tuple(value.get("renewers") or ()),
            issue_timestamp=value["issueTimestamp"],
            max_timestamp=value["maxTimestamp"],
            expiration_timestamp=value["expirationTimestamp"],
        )
        self._tokens[token.token_id] = token

    def _remove_token(self, value: Value, offset: int) -> None:
        self._tokens[value["tokenId"]] = None

    def _noop(self, value: Value, offset: int) -> None:
        pass

    # ------------------------------------------------------------------ apply

    def apply(self, provenance: Provenance = EMPTY_PROVENANCE) -> MetadataImage:
        """The new image. Unchanged parts are shared with the base image."""
        base = self._base
        features = base.features
        if self._mv is not None or self._features or self._zk_state is not None:
            finalized = dict(base.features.finalized)
            for name, level in self._features.items():
                if level == 0:
                    finalized.pop(name, None)
                else:
                    finalized[name] = level
            features = FeaturesImage(
                metadata_version=self._mv if self._mv is not None else base.features.metadata_version,
                finalized=dict(sorted(finalized.items())),
                zk_migration_state=self._zk_state if self._zk_state is not None else
                base.features.zk_migration_state,
            )
        cluster = base.cluster
        if self._brokers or self._controllers:
            cluster = ClusterImage(
                brokers=merge_small(base.cluster.brokers, self._brokers),
                controllers=merge_small(base.cluster.controllers, self._controllers),
            )
        topics = base.topics
        if self._topics or self._deleted_topics:
            removed_names = [base.topics.by_id[t].name for t in self._deleted_topics]
            new_topics = {tid: TopicImage(c.name, c.id, c.partitions) for tid, c in self._topics.items()}
            by_id = updated(base.topics.by_id, new_topics,
                             [t for t in self._deleted_topics if t not in new_topics])
            by_name = updated(base.topics.by_name, {t.name: t for t in new_topics.values()},
                               [n for n in removed_names if n not in {t.name for t in new_topics.values()}])
            topics = TopicsImage(by_id, by_name)
        configs = base.configs
        if self._configs:
            configs = updated(configs, {r: dict(sorted(c.items())) for r, c in self._configs.items() if c},
                               [r for r, c in self._configs.items() if not c])
        quotas = base.client_quotas
        if self._quotas:
            quotas = updated(quotas, {e: dict(sorted(q.items())) for e, q in self._quotas.items() if q},
                              [e for e, q in self._quotas.items() if not q])
        epoch = base.features_epoch if self._features_epoch is None else self._features_epoch
        snapshot_epoch = self.snapshot and provenance.last_offset >= 0
        if snapshot_epoch or (self._features_epoch is not None and self._features_epoch < 0):
            epoch = provenance.last_offset
        return MetadataImage(
            features=features,
            cluster=cluster,
            topics=topics,
            configs=configs,
            client_quotas=quotas,
            producer_ids_next=base.producer_ids_next if self._producer_ids_next is None
            else self._producer_ids_next,
            acls=merge_map(base.acls, self._acls),
            scram=merge_map(base.scram, self._scram_changes),
            delegation_tokens=merge_map(base.delegation_tokens, self._tokens),
            provenance=provenance,
            features_epoch=epoch,
        )


def _replace_broker(cur: BrokerRegistration, **changes: Any) -> BrokerRegistration:
    from dataclasses import replace

    return replace(cur, **changes)


_Handler = Callable[[MetadataDelta, Value, int], None]

_HANDLERS: dict[str, _Handler] = {
    "RegisterBrokerRecord": MetadataDelta._register_broker,
    "UnregisterBrokerRecord": MetadataDelta._unregister_broker,
    "FenceBrokerRecord": MetadataDelta._fence,
    "UnfenceBrokerRecord": MetadataDelta._unfence,
    "BrokerRegistrationChangeRecord": MetadataDelta._broker_change,
    "RegisterControllerRecord": MetadataDelta._register_controller,
    "UnregisterControllerRecord": MetadataDelta._unregister_controller,
    "TopicRecord": MetadataDelta._topic,
    "RemoveTopicRecord": MetadataDelta._remove_topic,
    "PartitionRecord": MetadataDelta._partition,
    "PartitionChangeRecord": MetadataDelta._partition_change,
    "ClearElrRecord": MetadataDelta._clear_elr,
    "ConfigRecord": MetadataDelta._config,
    "FeatureLevelRecord": MetadataDelta._feature_level,
    "ClientQuotaRecord": MetadataDelta._client_quota,
    "ProducerIdsRecord": MetadataDelta._producer_ids,
    "AccessControlEntryRecord": MetadataDelta._acl,
    "RemoveAccessControlEntryRecord": MetadataDelta._remove_acl,
    "UserScramCredentialRecord": MetadataDelta._scram,
    "RemoveUserScramCredentialRecord": MetadataDelta._remove_scram,
    "DelegationTokenRecord": MetadataDelta._token,
    "RemoveDelegationTokenRecord": MetadataDelta._remove_token,
    "ZkMigrationStateRecord": MetadataDelta._zk_migration_state,
    "NoOpRecord": MetadataDelta._noop,
}
