"""The controller's partition rules: ISR changes (AlterPartition) and leader election on fencing.

Kafka's ReplicationControlManager, the part the data plane needs: a leader asks to shrink or expand
its ISR; a fenced or shutting-down broker leaves every ISR and loses its leaderships to the next
in-sync replica (unclean election stays off: no ISR member, no leader); an unfenced broker takes
the leadership of partitions left without one when it is in their ISR. Also the records of a new
topic (round-robin replica assignment over unfenced brokers), which CreateTopics writes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kraftwerk.controller.common import rec
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.image.model import NO_LEADER, MetadataImage, PartitionRegistration, TopicImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.routing import Request
from kraftwerk.versions.metadata_version import MetadataVersion

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)


class ReplicationControlManager:
    """The active controller's handlers of CreateTopics and AlterPartition (Kafka's
    ReplicationControlManager): judged against the committed image, answered once appended."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller

    def _mv(self) -> MetadataVersion:
        mv = self._c.image.metadata_version
        assert mv is not None  # routes are active-only: the metadata.version has committed
        return mv

    def create_topics(self, request: Request) -> Respond | AppendThenRespond:
        records, response = create_topics(self._c.image, self._mv(), request.version, request.body,
                                          self._c.next_offset, self._c.cluster_id)
        return self._reply(request, records, response)

    def alter_partition(self, request: Request) -> Respond | AppendThenRespond:
        records, response = alter_partition(self._c.image, self._mv(), request.version, request.body)
        return self._reply(request, records, response)

    @staticmethod
    def _reply(request: Request, records: list[MetadataRecord], response: dict[str, Any]
               ) -> Respond | AppendThenRespond:
        if not records:
            return Respond(response)
        return AppendThenRespond(tuple(records), response, atomic=True,
                                 not_controller_body=not_controller_body(
            request.api_key, request.version, request.body))


def change_record(mv: MetadataVersion, topic_id: uuid.UUID, pid: int, **changes: Any) -> MetadataRecord:
    """A PartitionChangeRecord at ``mv``'s version (only the given fields change)."""
    value: dict[str, Any] = {"partitionId": pid, "topicId": topic_id}
    value.update(changes)
    return rec("PartitionChangeRecord", mv.partition_change_record_version(), value)


def new_topic_records(image: MetadataImage, mv: MetadataVersion, name: str, topic_id: uuid.UUID,
                      assignment: Sequence[Sequence[int]], configs: Mapping[str,
                                                                            str]) -> list[MetadataRecord]:
    """TopicRecord, one PartitionRecord per partition (leader: the first alive replica), the
    topic's ConfigRecords."""
    alive = {b.id for b in image.cluster.brokers.values() if not b.fenced}
    records = [rec("TopicRecord", 0, {"name": name, "topicId": topic_id})]
    for pid, replicas in enumerate(assignment):
        isr = [r for r in replicas if r in alive]
        leader = isr[0] if isr else NO_LEADER
        value: dict[str, Any] = {
            "partitionId": pid, "topicId": topic_id, "replicas": list(replicas), "isr": isr,
            "removingReplicas": [], "addingReplicas": [], "leader": leader, "leaderEpoch": 0,
            "partitionEpoch": 0,
        }
        version = mv.partition_record_version()
        if version >= 1:
            value["directories"] = [uuid.UUID(int=0)] * len(replicas)
        records.append(rec("PartitionRecord", version, value))
    for key, val in sorted(configs.items()):
        records.append(rec("ConfigRecord", 0, {"resourceType": 2, "resourceName": name, "name": key,
                                                "value": val}))
    return records


def assign_replicas(image: MetadataImage, partitions: int, replication_factor: int, start: int = 0
                    ) -> list[list[int]]:
    """Round-robin over the unfenced brokers, each partition's replicas consecutive (rack-unaware)."""
    brokers = sorted(b.id for b in image.cluster.brokers.values() if not b.fenced)
    if replication_factor > len(brokers):
        raise ValueError(f"Unable to replicate the partition {replication_factor} time(s): The target "
                         f"replication factor of {replication_factor} cannot be reached because only "
                         f"{len(brokers)} broker(s) are registered.")
    return [[brokers[(start + p + r) % len(brokers)] for r in range(replication_factor)]
            for p in range(partitions)]


# ---------------------------------------------------------------------- fencing and unfencing

def on_brokers_fenced(image: MetadataImage, mv: MetadataVersion, fenced: set[int]) -> list[MetadataRecord]:
    """The brokers leave every ISR they are in (never its last member: Kafka keeps the last replica
    in the ISR so that it can come back as leader) and hand leadership to the next ISR member."""
    out = []
    for topic, pid, p in _partitions(image):
        if not fenced.intersection(p.isr) and p.leader not in fenced:
            continue
        kept = [r for r in p.isr if r not in fenced]
        isr = kept or [p.isr[0]] if p.isr else []
        if p.leader in fenced:
            candidates = [r for r in kept if _alive(image, r)]
            leader = candidates[0] if candidates else NO_LEADER
            out.append(change_record(mv, topic.id, pid, isr=isr, leader=leader))
        elif isr != list(p.isr):
            out.append(change_record(mv, topic.id, pid, isr=isr))
    return out


def on_broker_unfenced(image: MetadataImage, mv: MetadataVersion, broker_id: int) -> list[MetadataRecord]:
    """Partitions without a leader whose ISR holds this broker elect it."""
    return [change_record(mv, topic.id, pid, leader=broker_id)
            for topic, pid, p in _partitions(image)
            if p.leader == NO_LEADER and broker_id in p.isr]


def _partitions(image: MetadataImage) -> list[tuple[TopicImage, int, PartitionRegistration]]:
    return [(t, pid, p) for t in image.topics.by_id.values() for pid, p in sorted(t.partitions.items())]


def _alive(image: MetadataImage, broker_id: int) -> bool:
    b = image.cluster.brokers.get(broker_id)
    return b is not None and not b.fenced and not b.in_controlled_shutdown


# ---------------------------------------------------------------------- AlterPartition

def alter_partition(image: MetadataImage, mv: MetadataVersion, version: int, body: Mapping[str, Any]
                    ) -> tuple[list[MetadataRecord], dict[str, Any]]:
    """Kafka's ReplicationControlManager.alterPartition: records to append and the response."""
    broker_id = body["brokerId"]
    broker = image.cluster.brokers.get(broker_id)
    if broker is None or (body.get("brokerEpoch", -1) != -1 and body["brokerEpoch"] != broker.epoch):
        return [], {"throttleTimeMs": 0, "errorCode": Errors.STALE_BROKER_EPOCH.code, "topics": []}
    records: list[MetadataRecord] = []
    topics_out = []
    for t in body.get("topics", ()):
        topics = image.topics
        topic = topics.by_id.get(t["topicId"]) if version >= 2 else topics.by_name.get(t["topicName"])
        parts_out = []
        for p in t.get("partitions", ()):
            pid = p["partitionIndex"]
            reg = None if topic is None else topic.partitions.get(pid)
            new_isr = ([s["brokerId"] for s in p.get("newIsrWithEpochs", ())] if version >= 3
                       else list(p.get("newIsr", ())))
            error = _alter_error(image, broker_id, reg, p, new_isr)
            if error is not Errors.NONE or reg is None or topic is None:
                parts_out.append({"partitionIndex": pid, "errorCode": error.code, "leaderId": -1,
                                  "leaderEpoch": -1, "isr": [], "leaderRecoveryState": 0,
                                  "partitionEpoch": -1})
                continue
            records.append(change_record(mv, topic.id, pid, isr=new_isr))
            log.info("[QuorumController] ISR of %s-%d changes from %s to %s (requested by leader %d)",
                     topic.name, pid, list(reg.isr), new_isr, broker_id)
            parts_out.append({"partitionIndex": pid, "errorCode": 0, "leaderId": reg.leader,
                              "leaderEpoch": reg.leader_epoch, "isr": new_isr, "leaderRecoveryState": 0,
                              "partitionEpoch": reg.partition_epoch + 1})
        topics_out.append({"topicName": t.get("topicName", ""), "topicId": t.get("topicId", uuid.UUID(int=0)),
                           "partitions": parts_out})
    return records, {"throttleTimeMs": 0, "errorCode": 0, "topics": topics_out}


def _alter_error(image: MetadataImage, broker_id: int, reg: PartitionRegistration | None,
                 p: Mapping[str, Any], new_isr: list[int]) -> Errors:
    if reg is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if reg.leader != broker_id:
        return Errors.INVALID_REQUEST
    if p["leaderEpoch"] != reg.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if p["partitionEpoch"] != reg.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    if broker_id not in new_isr or any(r not in reg.replicas for r in new_isr):
        return Errors.INVALID_REQUEST
    if any(r not in reg.isr and not _alive(image, r) for r in new_isr):
        return Errors.INELIGIBLE_REPLICA
    return Errors.NONE


# ---------------------------------------------------------------------- CreateTopics

def create_topics(image: MetadataImage, mv: MetadataVersion, version: int, body: Mapping[str, Any],
                  next_offset: int, cluster_id: str) -> tuple[list[MetadataRecord], dict[str, Any]]:
    """CreateTopics: explicit assignments or round-robin ones (-1: the broker defaults, here 1 and 1).

    The topic id is derived from the cluster id, the name and the offset the TopicRecord will get,
    so the core stays free of randomness and a re-created topic gets a new id.
    """
    records: list[MetadataRecord] = []
    results = []
    for i, t in enumerate(body.get("topics", ())):
        name = t["name"]
        result: dict[str, Any] = {"name": name, "topicId": uuid.UUID(int=0), "errorCode": 0,
                                  "errorMessage": None, "numPartitions": -1, "replicationFactor": -1,
                                  "configs": None}
        try:
            if name in image.topics.by_name:
                raise _CreateError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            if t.get("assignments"):
                assignment = [list(a["brokerIds"]) for a in sorted(t["assignments"],
                                                                    key=lambda a: a["partitionIndex"])]
            else:
                count = t["numPartitions"] if t["numPartitions"] != -1 else 1
                rf = t["replicationFactor"] if t["replicationFactor"] != -1 else 1
                if count <= 0:
                    raise _CreateError(Errors.INVALID_PARTITIONS,
                                       "Number of partitions was set to an invalid "
                                       f"non-positive value {count}.")
                if rf <= 0:
                    raise _CreateError(Errors.INVALID_REPLICATION_FACTOR, "Replication factor must be larger "
                                       "than 0, or -1 to use the default value.")
                try:
                    assignment = assign_replicas(image, count, rf, start=len(image.topics.by_name) + i)
                except ValueError as exc:
                    raise _CreateError(Errors.INVALID_REPLICATION_FACTOR, str(exc)) from None
        except _CreateError as err:
            result.update(errorCode=err.error.code, errorMessage=err.text)
            results.append(result)
            continue
        topic_id = uuid.uuid5(uuid.NAMESPACE_URL,
                              f"kraftwerk:{cluster_id}/{name}/{next_offset + len(records)}")
        configs = {c["name"]: c["value"] for c in t.get("configs", ()) if c.get("value") is not None}
        result.update(topicId=topic_id, numPartitions=len(assignment), replicationFactor=len(assignment[0]))
        results.append(result)
        if not body.get("validateOnly", False):
            records.extend(new_topic_records(image, mv, name, topic_id, assignment, configs))
    return records, {"throttleTimeMs": 0, "topics": results}


class _CreateError(Exception):
    def __init__(self, error: Errors, text: str) -> None:
        super().__init__(text)
        self.error = error
        self.text = text
