"""The controller's partition rules: ISR changes (AlterPartition) and leader election on fencing.

Kafka's ReplicationControlManager, the part the data plane needs: a leader asks to shrink or expand
its ISR; a fenced or shutting-down broker leaves every ISR and loses its leaderships to the next
in-sync replica (unclean election stays off: no ISR member, no leader); an unfenced broker takes
the leadership of partitions left without one when it is in their ISR. CreateTopics is
:mod:`kraftwerk.controller.topics`'.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, cast

from kraftwerk.controller.common import rec
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.image.model import NO_LEADER, MetadataImage, PartitionRegistration, TopicImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.replication import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from kraftwerk.protocol.routing import Request
from kraftwerk.versions.metadata_version import MetadataVersion

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)


class PartitionControlManager:
    """The active controller's AlterPartition handler (the ISR half of Kafka's
    ReplicationControlManager): judged against the committed image, answered once appended."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller

    def _mv(self) -> MetadataVersion:
        mv = self._c.image.metadata_version
        assert mv is not None  # routes are active-only: the metadata.version has committed
        return mv

    def alter_partition(self, request: Request) -> Respond | AppendThenRespond:
        body = cast(AlterPartitionRequest, request.body)
        records, response = alter_partition(self._c.image, self._mv(), request.version, body)
        return self._reply(request, records, response)

    @staticmethod
    def _reply(request: Request, records: list[MetadataRecord], response: AlterPartitionResponse
               ) -> Respond | AppendThenRespond:
        if not records:
            return Respond(as_body(response))
        return AppendThenRespond(tuple(records), as_body(response), atomic=True,
                                 not_controller_body=not_controller_body(
            request.api_key, request.version, request.body))


def change_record(mv: MetadataVersion, topic_id: uuid.UUID, pid: int, **changes: Any) -> MetadataRecord:
    """A PartitionChangeRecord at ``mv``'s version (only the given fields change)."""
    value: dict[str, Any] = {"partitionId": pid, "topicId": topic_id}
    value.update(changes)
    return rec("PartitionChangeRecord", mv.partition_change_record_version(), value)


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

def alter_partition(image: MetadataImage, mv: MetadataVersion, version: int, body: AlterPartitionRequest
                    ) -> tuple[list[MetadataRecord], AlterPartitionResponse]:
    """Kafka's ReplicationControlManager.alterPartition: records to append and the response."""
    broker_id = body["brokerId"]
    broker = image.cluster.brokers.get(broker_id)
    if broker is None or (body.get("brokerEpoch", -1) != -1 and body["brokerEpoch"] != broker.epoch):
        return [], {"throttleTimeMs": 0, "errorCode": Errors.STALE_BROKER_EPOCH.code, "topics": []}
    records: list[MetadataRecord] = []
    topics_out: list[AlterPartitionResponseTopicData] = []
    for t in body.get("topics", ()):
        topics = image.topics
        topic = topics.by_id.get(t["topicId"]) if version >= 2 else topics.by_name.get(t["topicName"])
        parts_out: list[AlterPartitionResponsePartitionData] = []
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
                 p: AlterPartitionRequestPartitionData, new_isr: list[int]) -> Errors:
    if reg is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if p["leaderEpoch"] > reg.leader_epoch or p["partitionEpoch"] > reg.partition_epoch:
        return Errors.NOT_CONTROLLER  # the leader knows more than this controller: find the active one
    if p["leaderEpoch"] < reg.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if reg.leader != broker_id:
        return Errors.INVALID_REQUEST
    if p["partitionEpoch"] < reg.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    if broker_id not in new_isr or any(r not in reg.replicas for r in new_isr):
        return Errors.INVALID_REQUEST
    if any(r not in reg.isr and not _alive(image, r) for r in new_isr):
        return Errors.INELIGIBLE_REPLICA
    return Errors.NONE
