"""Topic administration on the active controller (Kafka's ``ReplicationControlManager``, sans-I/O).

CreateTopics, DeleteTopics and CreatePartitions are judged against the committed image and
answered with the records to append: TopicRecord, the topic's ConfigRecords, then one
PartitionRecord per partition at the version the finalized metadata.version allows. Replicas
are placed over unfenced brokers, rack-aware: each partition takes its replicas from distinct
racks while there are racks left, its leader rotating over the brokers.
"""

from __future__ import annotations

import logging
import random
import re
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any, cast

from kraftwerk.config import (
    BrokerConfigLayers,
    ConfigError,
    ConfigResourceType,
    describe_topic,
    parse_broker_config,
    validate_topic_configs,
)
from kraftwerk.controller.effects import AppendThenRespond, Body, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.responses import topics_error_body
from kraftwerk.image.model import (
    DIR_MIGRATING,
    DIR_UNASSIGNED,
    BrokerRegistration,
    MetadataImage,
    TopicsImage,
)
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.topics import (
    CreatePartitionsRequest,
    CreatePartitionsRequestCreatePartitionsTopic,
    CreatePartitionsResponse,
    CreatePartitionsResponseCreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
    CreateTopicsResponseCreatableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicsResponseDeletableTopicResult,
)
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.protocol.routing import Request

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_error(name: str) -> str | None:
    """Kafka's ``Topic.validate`` text for an invalid name, or None."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL_TOPIC.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def _unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def _record(name: str, version: int, value: dict[str, Any]) -> MetadataRecord:
    return MetadataRecord(lookup_record(name), version, value)


def _active(broker: BrokerRegistration) -> bool:
    return not broker.fenced and not broker.in_controlled_shutdown


def place_replicas(
    brokers: Sequence[BrokerRegistration], first: int, count: int, replication_factor: int, rotation: int
) -> list[list[int]]:
    """Replica lists for ``count`` new partitions (Kafka's ``StripedReplicaPlacer`` contract and
    texts): only unfenced brokers are used; a partition's replicas go to distinct racks while any
    rack is unused; leaders rotate from ``rotation`` on."""
    if replication_factor < 1:
        raise ApiError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"Invalid replication factor {replication_factor}: the replication factor must be positive.",
        )
    usable = [b for b in brokers if _active(b)]
    if not usable:
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR, "All brokers are currently fenced.")
    if replication_factor > len(brokers) or replication_factor > len(usable):
        total = len(brokers) if replication_factor > len(brokers) else len(usable)
        raise ApiError(
            Errors.INVALID_REPLICATION_FACTOR,
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{total} broker(s) are registered.",
        )
    # Interleave the racks (rack a's first broker, rack b's first, ..., rack a's second, ...), so
    # consecutive brokers in the ring sit on different racks.
    by_rack: dict[str, list[int]] = {}
    for b in sorted(usable, key=lambda b: b.id):
        by_rack.setdefault(b.rack or "", []).append(b.id)
    racks = [by_rack[r] for r in sorted(by_rack)]
    ring = [rack[i] for i in range(max(len(r) for r in racks)) for rack in racks if i < len(rack)]
    rack_of = {b.id: b.rack or "" for b in usable}
    out = []
    for p in range(first, first + count):
        start = (rotation + p) % len(ring)
        order = ring[start:] + ring[:start]
        chosen: list[int] = []
        for want_new_rack in (True, False):
            for bid in order:
                if len(chosen) == replication_factor:
                    break
                if bid in chosen:
                    continue
                if want_new_rack and rack_of[bid] in {rack_of[c] for c in chosen}:
                    continue
                chosen.append(bid)
        out.append(chosen)
    return out


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    """The controller's defaults for a topic created without a partition count or a replication
    factor (its ``num.partitions`` and ``default.replication.factor``)."""

    num_partitions: int = 1
    replication_factor: int = 1


class TopicControl:
    """CreateTopics / DeleteTopics / CreatePartitions against one image.

    ``rng`` makes topic ids (the cores read no global RNG); ``layers`` are the controller's config
    layers a topic's configs are validated over; ``level`` is the finalized metadata.version's
    feature level (KIP-1294's rules in force there apply to the new topic's configs). ``creating``
    names the topics whose creation is appended but not committed: taken, as in Kafka's controller.
    """

    def __init__(
        self,
        image: MetadataImage,
        rng: random.Random,
        layers: BrokerConfigLayers,
        defaults: TopicDefaults,
        creating: Collection[str] = (),
    ) -> None:
        mv = image.metadata_version
        if mv is None:
            raise ApiError(Errors.NOT_CONTROLLER, "The controller has not finished activation")
        self.image = image
        self.mv = mv
        self.rng = rng
        self.layers = layers
        self.defaults = defaults
        self.creating = creating

    # ---------------------------------------------------------------- CreateTopics

    def create_topics(self, request_body: Mapping[str, Any]) -> tuple[list[MetadataRecord], Body]:
        body = cast(CreateTopicsRequest, request_body)
        topics = list(body.get("topics") or ())
        validate_only = bool(body.get("validateOnly", False))
        errors: dict[str, ApiError] = {}
        names = [t["name"] for t in topics]
        for name in names:
            if names.count(name) > 1:
                errors[name] = ApiError(Errors.INVALID_REQUEST, "Duplicate topic name.")
        collisions: dict[str, str] = {}
        for existing in chain(self.image.topics.by_name, self.creating):
            collisions.setdefault(_unify_collision_chars(existing), existing)
        records: list[MetadataRecord] = []
        results: list[CreateTopicsResponseCreatableTopicResult] = []
        for topic in topics:
            name = topic["name"]
            if name not in errors:
                try:
                    result, new_records = self._create_one(topic, collisions)
                    records += new_records
                    results.append(result)
                    collisions.setdefault(_unify_collision_chars(name), name)
                    continue
                except ApiError as refused:
                    errors[name] = refused
            error = errors[name]
            results.append(
                {
                    "name": name,
                    "topicId": uuid.UUID(int=0),
                    "errorCode": error.error.code,
                    "errorMessage": error.text if error.text is not None else error.error.describe(),
                    "numPartitions": -1,
                    "replicationFactor": -1,
                    "configs": None,
                }
            )
        summary = ", ".join(
            f"{r['name']}: "
            + (
                "SUCCESS"
                if r["errorCode"] == 0
                else f"{Errors.for_code(r['errorCode']).name} ({r['errorMessage']})"
            )
            for r in results
        )
        log.info("%sCreateTopics result(s): %s", "Validate-only " if validate_only else "", summary)
        response: CreateTopicsResponse = {"throttleTimeMs": 0, "topics": results}
        return ([] if validate_only else records), as_body(response)

    def _create_one(
        self, topic: CreateTopicsRequestCreatableTopic, collisions: Mapping[str, str]
    ) -> tuple[CreateTopicsResponseCreatableTopicResult, list[MetadataRecord]]:
        name = topic["name"]
        invalid = topic_name_error(name)
        if invalid is not None:
            raise ApiError(Errors.INVALID_TOPIC_EXCEPTION, invalid)
        if name in self.image.topics.by_name or name in self.creating:
            raise ApiError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        colliding = collisions.get(_unify_collision_chars(name))
        if colliding is not None:
            raise ApiError(
                Errors.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {colliding}"
            )
        configs = {c["name"]: c.get("value") for c in topic.get("configs") or ()}
        try:
            validate_topic_configs(configs, level=self.mv.feature_level, layers=self.layers)
        except ConfigError as exc:
            raise ApiError(Errors.INVALID_CONFIG, str(exc)) from None
        assignment = self._assignment(topic)
        topic_id = self._new_topic_id()
        records = [_record("TopicRecord", 0, {"name": name, "topicId": topic_id})]
        records += [
            _record(
                "ConfigRecord",
                0,
                {"resourceType": int(ConfigResourceType.TOPIC), "resourceName": name, "name": k, "value": v},
            )
            for k, v in configs.items()
        ]
        records += [self.partition_record(topic_id, pid, replicas) for pid, replicas in enumerate(assignment)]
        entries = describe_topic({k: v for k, v in configs.items() if v is not None}, self.layers)
        result: CreateTopicsResponseCreatableTopicResult = {
            "name": name,
            "topicId": topic_id,
            "errorCode": 0,
            "errorMessage": None,
            "topicConfigErrorCode": 0,
            "numPartitions": len(assignment),
            "replicationFactor": len(assignment[0]),
            "configs": [
                {
                    "name": e.name,
                    "value": e.value,
                    "readOnly": e.read_only,
                    "configSource": int(e.source),
                    "isSensitive": e.sensitive,
                }
                for e in entries
            ],
        }
        return result, records

    def _assignment(self, topic: CreateTopicsRequestCreatableTopic) -> list[list[int]]:
        manual = list(topic.get("assignments") or ())
        partitions, rf = topic["numPartitions"], topic["replicationFactor"]
        if manual:
            if rf != -1:
                raise ApiError(
                    Errors.INVALID_REQUEST,
                    "A manual partition assignment was specified, but replication factor was not set to -1.",
                )
            if partitions != -1:
                raise ApiError(
                    Errors.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions was not set to -1.",
                )
            by_index: dict[int, list[int]] = {}
            expected_rf: int | None = None
            for a in manual:
                index = a["partitionIndex"]
                if index in by_index:
                    raise ApiError(
                        Errors.INVALID_REPLICA_ASSIGNMENT,
                        f"Found multiple manual partition assignments for partition {index}",
                    )
                replicas = list(a["brokerIds"])
                self._check_manual(replicas, expected_rf, index)
                expected_rf = len(replicas)
                by_index[index] = replicas
            if sorted(by_index) != list(range(len(by_index))):
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    "partitions should be a consecutive 0-based integer sequence",
                )
            return [by_index[i] for i in range(len(by_index))]
        if rf < -1 or rf == 0:
            raise ApiError(
                Errors.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if partitions < -1 or partitions == 0:
            raise ApiError(
                Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        count = self.defaults.num_partitions if partitions == -1 else partitions
        factor = self.defaults.replication_factor if rf == -1 else rf
        try:
            return place_replicas(
                list(self.image.cluster.brokers.values()),
                0,
                count,
                factor,
                self.image.topics.partition_count(),
            )
        except ApiError as err:
            raise ApiError(
                err.error, f"Unable to replicate the partition {factor} time(s): {err.text}"
            ) from None

    def _check_manual(self, replicas: list[int], expected_rf: int | None, index: int) -> None:
        """Kafka's ``validateManualPartitionAssignment`` plus the all-fenced check."""
        brokers = self.image.cluster.brokers
        if not replicas:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for bid in sorted(replicas):
            if bid not in brokers:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes "
                    f"broker {bid}, but no such broker is registered.",
                )
            if bid == previous:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {bid} more than once.",
                )
            previous = bid
        if expected_rf is not None and len(replicas) != expected_rf:
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a "
                f"partition with {len(replicas)} replica(s), but this is not consistent with "
                f"previous partitions, which have {expected_rf} replica(s).",
            )
        if not any(_active(brokers[b]) for b in replicas):
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                "All brokers specified in the manual partition "
                f"assignment for partition {index} are fenced or in controlled shutdown.",
            )

    def _new_topic_id(self) -> uuid.UUID:
        while True:
            topic_id = uuid.UUID(int=self.rng.getrandbits(128), version=4)
            if topic_id not in self.image.topics.by_id:
                return topic_id

    def partition_record(
        self, topic_id: uuid.UUID, partition_id: int, replicas: Sequence[int]
    ) -> MetadataRecord:
        """A new partition's PartitionRecord at the version the metadata.version allows: the ISR is
        the active replicas, the leader the first of them; each replica in its broker's only log
        dir, else unassigned (Kafka's ``defaultDir``)."""
        brokers = self.image.cluster.brokers
        isr = [b for b in replicas if b in brokers and _active(brokers[b])]
        value: dict[str, Any] = {
            "partitionId": partition_id,
            "topicId": topic_id,
            "replicas": list(replicas),
            "isr": isr,
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": isr[0] if isr else -1,
            "leaderRecoveryState": 0,
            "leaderEpoch": 0,
            "partitionEpoch": 0,
        }
        version = self.mv.partition_record_version()
        if version >= 1:
            value["directories"] = [_default_dir(brokers.get(b)) for b in replicas]
        if version >= 2:
            value["eligibleLeaderReplicas"] = None
            value["lastKnownElr"] = None
        return _record("PartitionRecord", version, value)

    # ---------------------------------------------------------------- DeleteTopics

    def delete_topics(
        self, version: int, request_body: Mapping[str, Any]
    ) -> tuple[list[MetadataRecord], Body]:
        body = cast(DeleteTopicsRequest, request_body)
        wanted: list[tuple[str | None, uuid.UUID | None]]
        if version >= 6:
            wanted = [(t.get("name"), t.get("topicId")) for t in body.get("topics") or ()]
        else:
            wanted = [(n, None) for n in body.get("topicNames") or ()]
        records: list[MetadataRecord] = []
        results: list[DeleteTopicsResponseDeletableTopicResult] = []
        deleted: set[uuid.UUID] = set()
        for name, topic_id in wanted:
            topic = None
            error = Errors.NONE
            message: str | None = None
            if name is not None:
                topic = self.image.topics.by_name.get(name)
                if topic is None:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            elif topic_id is None or topic_id.int == 0:
                error, message = (
                    Errors.INVALID_REQUEST,
                    f"Attempt to find topic with invalid topicId {topic_id}",
                )
            else:
                topic = self.image.topics.by_id.get(topic_id)
                if topic is None:
                    error = Errors.UNKNOWN_TOPIC_ID
            if topic is not None and topic.id not in deleted:
                deleted.add(topic.id)
                records.append(_record("RemoveTopicRecord", 0, {"topicId": topic.id}))
                log.info("Removing topic %s with ID %s.", topic.name, topic.id)
            results.append(
                {
                    "name": topic.name if topic is not None else name,
                    "topicId": topic.id if topic is not None else (topic_id or uuid.UUID(int=0)),
                    "errorCode": error.code,
                    "errorMessage": message
                    if message is not None or error is Errors.NONE
                    else error.describe(),
                }
            )
        response: DeleteTopicsResponse = {"throttleTimeMs": 0, "responses": results}
        return records, as_body(response)

    # ---------------------------------------------------------------- CreatePartitions

    def create_partitions(self, request_body: Mapping[str, Any]) -> tuple[list[MetadataRecord], Body]:
        body = cast(CreatePartitionsRequest, request_body)
        records: list[MetadataRecord] = []
        results: list[CreatePartitionsResponseCreatePartitionsTopicResult] = []
        names = [t["name"] for t in body.get("topics") or ()]
        added = 0
        for topic in body.get("topics") or ():
            name = topic["name"]
            try:
                if names.count(name) > 1:
                    raise ApiError(Errors.INVALID_REQUEST, "Duplicate topic name.")
                new = self._create_partitions(topic, added)
                added += len(new)
                records += new
                results.append({"name": name, "errorCode": 0, "errorMessage": None})
            except ApiError as err:
                results.append(
                    {
                        "name": name,
                        "errorCode": err.error.code,
                        "errorMessage": err.text if err.text is not None else err.error.describe(),
                    }
                )
        if body.get("validateOnly"):
            records = []
        response: CreatePartitionsResponse = {"throttleTimeMs": 0, "results": results}
        return records, as_body(response)

    def _create_partitions(
        self, topic: CreatePartitionsRequestCreatePartitionsTopic, rotation_extra: int
    ) -> list[MetadataRecord]:
        name, count = topic["name"], topic["count"]
        current = self.image.topics.by_name.get(name)
        if current is None:
            raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        have = len(current.partitions)
        if count == have:
            raise ApiError(Errors.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
        if count < have:
            raise ApiError(
                Errors.INVALID_PARTITIONS,
                f"The topic {name} currently has {have} partition(s); {count} would not be an increase.",
            )
        additional = count - have
        rf = len(next(iter(current.partitions.values())).replicas)
        manual = topic.get("assignments")
        if manual is not None:
            if len(manual) != additional:
                raise ApiError(
                    Errors.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {additional} additional "
                    f"partition(s), but only {len(manual)} assignment(s) were specified.",
                )
            assignment = [list(a["brokerIds"]) for a in manual]
            for i, replicas in enumerate(assignment):
                self._check_manual(replicas, rf, have + i)
        else:
            try:
                assignment = place_replicas(
                    list(self.image.cluster.brokers.values()),
                    have,
                    additional,
                    rf,
                    self.image.topics.partition_count() + rotation_extra,
                )
            except ApiError as err:
                raise ApiError(
                    err.error, f"Unable to replicate the partition {rf} time(s): {err.text}"
                ) from None
        return [self.partition_record(current.id, have + i, r) for i, r in enumerate(assignment)]


def _default_dir(broker: BrokerRegistration | None) -> uuid.UUID:
    """Kafka's ``ClusterControlManager.defaultDir``."""
    if broker is None or not broker.directories:
        return DIR_MIGRATING
    if len(broker.directories) == 1:
        return broker.directories[0]
    return DIR_UNASSIGNED


class ReplicationControlManager:
    """The controller's topic RPCs (Kafka's ``ReplicationControlManager``): each judged by a
    :class:`TopicControl` over the committed image without the deletions in flight and with the
    names of the creations in flight taken (Kafka judges its uncommitted state), the controller's
    config layers and its ``num.partitions`` / ``default.replication.factor``."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller
        self.deleting: dict[uuid.UUID, str] = {}
        """Topics whose RemoveTopicRecord this active controller appended and has not replayed yet:
        gone for the next request, as in Kafka's controller, whose state includes what it appended."""
        self.creating: dict[str, uuid.UUID] = {}
        """Likewise the topics whose TopicRecord it appended: their names are taken."""

    def on_committed(self, record: MetadataRecord) -> None:
        if record.spec.name == "RemoveTopicRecord":
            self.deleting.pop(record.value["topicId"], None)
        elif record.spec.name == "TopicRecord":
            name = record.value["name"]
            if self.creating.get(name) == record.value["topicId"]:
                del self.creating[name]

    def on_leader_change(self) -> None:
        self.deleting.clear()
        self.creating.clear()

    def live_image(self) -> MetadataImage:
        """The committed image without the topics whose deletion is in flight: what partition
        changes (fencing, AlterPartition) and config changes are judged on, so that no record for a
        topic follows its RemoveTopicRecord."""
        image = self._c.image
        if not self.deleting:
            return image
        by_name, by_id = image.topics.by_name, image.topics.by_id
        for topic_id, name in self.deleting.items():
            if topic_id in by_id:
                by_name, by_id = by_name.delete(name), by_id.delete(topic_id)
        return replace(image, topics=TopicsImage(by_id, by_name))

    def _control(self) -> TopicControl:
        c = self._c
        parsed = parse_broker_config(c.static_configs)
        defaults = TopicDefaults(
            parsed.integer("num.partitions"), parsed.integer("default.replication.factor")
        )
        return TopicControl(self.live_image(), c.rng, c.config_layers(), defaults, self.creating.keys())

    def create_topics(self, request: Request) -> Respond | AppendThenRespond:
        records, response = self._control().create_topics(request.body)
        for record in records:
            if record.spec.name == "TopicRecord":
                self.creating[record.value["name"]] = record.value["topicId"]
        return _reply(request, records, response)

    def delete_topics(self, request: Request) -> Respond | AppendThenRespond:
        records, response = self._control().delete_topics(request.version, request.body)
        by_id = self._c.image.topics.by_id
        for record in records:
            if record.spec.name == "RemoveTopicRecord" and record.value["topicId"] in by_id:
                self.deleting[record.value["topicId"]] = by_id[record.value["topicId"]].name
        return _reply(request, records, response)

    def create_partitions(self, request: Request) -> Respond | AppendThenRespond:
        return _reply(request, *self._control().create_partitions(request.body))


def _reply(request: Request, records: list[MetadataRecord], response: Body) -> Respond | AppendThenRespond:
    """The records to append atomically then the response; NOT_CONTROLLER for every topic if the
    append fails."""
    if not records:
        return Respond(response)
    refusal = topics_error_body(request.api_key, request.version, Errors.NOT_CONTROLLER, None, request.body)
    return AppendThenRespond(tuple(records), response, atomic=True, not_controller_body=refusal)
