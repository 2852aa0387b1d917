"""The replica manager's decisions, sans I/O: who leads what, the high watermark, ISR changes.

Kafka's ReplicaManager + Partition, minus the files and sockets. The runtime tells it about each
metadata image (:meth:`ReplicaManager.apply_image` returns the role changes to carry out on the
logs), about appends on the leader and fetches by followers; it answers what a produce must wait
for, where the high watermark is and which ISR change to ask the controller for (AlterPartition).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.controller.common import shape_body
from kraftwerk.image.model import ConfigResource, ConfigResourceType, MetadataImage
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.schema import Kind

DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class BecomeLeader:
    tp: TopicPartition
    topic_id: uuid.UUID
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BecomeFollower:
    tp: TopicPartition
    topic_id: uuid.UUID
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class StopReplica:
    tp: TopicPartition
    delete: bool


RoleChange = BecomeLeader | BecomeFollower | StopReplica


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An AlterPartition item the leader wants sent."""

    tp: TopicPartition
    topic_id: uuid.UUID
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


@dataclass(slots=True)
class PartitionState:
    """One hosted replica as this broker sees it."""

    tp: TopicPartition
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    high_watermark: int = 0
    follower_end: dict[int, int] = field(default_factory=dict)
    follower_caught_up_ms: dict[int, int] = field(default_factory=dict)
    pending: IsrChange | None = None
    """The ISR change sent and not yet settled (Kafka's PendingPartitionChange): the controller may
    have committed it, so the HW counts its members too and no other change is proposed meanwhile."""


#: The controller says the change was not applied (nor can a past or future controller apply it):
#: back to the committed ISR.
NOT_APPLIED = frozenset({Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED})
#: The leader's view is stale: whether the change was applied is unknown, so the pending (maximal)
#: ISR stays until the metadata brings a newer partition epoch.
AWAIT_METADATA = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.FENCED_LEADER_EPOCH,
    Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED,
})


class ReplicaManager:
    """This broker's view of the partitions it hosts."""

    def __init__(self, node_id: int, *,
                 replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS) -> None:
        self.node_id = node_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.partitions: dict[TopicPartition, PartitionState] = {}

    # ------------------------------------------------------------------ metadata

    def apply_image(self, image: MetadataImage, now_ms: int) -> list[RoleChange]:
        """Adopt the image's assignments; returns what changed for this broker, leaders first."""
        changes: list[RoleChange] = []
        seen: set[TopicPartition] = set()
        for topic in image.topics.by_id.values():
            for pid, reg in topic.partitions.items():
                if self.node_id not in reg.replicas:
                    continue
                tp = TopicPartition(topic.name, pid)
                seen.add(tp)
                old = self.partitions.get(tp)
                if old is not None and old.leader_epoch == reg.leader_epoch and old.leader == reg.leader:
                    # same leadership: the state object stays (waiting requests hold it); only a newer
                    # partition epoch is news (an AlterPartition answer may have brought this one
                    # already) and it settles the pending change, whatever its answer will say
                    if reg.partition_epoch > old.partition_epoch:
                        old.replicas, old.isr = reg.replicas, reg.isr
                        old.partition_epoch, old.pending = reg.partition_epoch, None
                    continue
                st = PartitionState(tp, topic.id, reg.replicas, reg.isr, reg.leader, reg.leader_epoch,
                                    reg.partition_epoch)
                if old is not None:
                    st.high_watermark = old.high_watermark
                self.partitions[tp] = st
                if reg.leader == self.node_id:
                    st.follower_caught_up_ms = {r: now_ms for r in reg.replicas if r != self.node_id}
                    changes.append(BecomeLeader(tp, topic.id, reg.leader_epoch))
                else:
                    changes.append(BecomeFollower(tp, topic.id, reg.leader, reg.leader_epoch))
        for tp in [tp for tp in self.partitions if tp not in seen]:
            gone = self.partitions.pop(tp)
            deleted = gone.topic_id not in image.topics.by_id
            changes.append(StopReplica(tp, deleted))
        changes.sort(key=lambda c: 0 if isinstance(c, BecomeLeader) else 1)
        return changes

    @staticmethod
    def topic_config(image: MetadataImage, topic: str, name: str, broker_defaults: Mapping[str, str],
                     broker_name: str, default: str) -> str:
        """A topic config from the image: the topic's, else the cluster's dynamic default, else the
        broker's static value, else Kafka's default."""
        topic_cfg = image.configs.get(ConfigResource(ConfigResourceType.TOPIC, topic), {})
        if name in topic_cfg:
            return topic_cfg[name]
        cluster = image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
        if broker_name in cluster:
            return cluster[broker_name]
        return broker_defaults.get(broker_name, default)

    # ------------------------------------------------------------------ leader side

    def leader(self, tp: TopicPartition, current_epoch: int = -1) -> PartitionState | Errors:
        """The partition when this broker leads it at ``current_epoch`` (-1: any), else the error."""
        st = self.partitions.get(tp)
        if st is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if current_epoch >= 0 and current_epoch != st.leader_epoch:
            stale = current_epoch < st.leader_epoch
            return Errors.FENCED_LEADER_EPOCH if stale else Errors.UNKNOWN_LEADER_EPOCH
        if st.leader != self.node_id:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return st

    def check_produce(self, st: PartitionState, acks: int, min_isr: int) -> Errors:
        """Kafka's Partition.appendRecordsToLeader check: acks=all needs min.insync.replicas in ISR."""
        if acks == -1 and len(st.isr) < min_isr:
            return Errors.NOT_ENOUGH_REPLICAS
        return Errors.NONE

    def update_high_watermark(self, st: PartitionState, leader_end: int) -> bool:
        """Move the HW to the smallest log end offset in the maximal ISR (the ISR plus a member whose
        addition is in flight: once the controller commits it, that member may be elected leader, so
        the HW must not have passed its log end, as Kafka's ``maximalIsr``); True if it moved."""
        members = {*st.isr, *(st.pending.new_isr if st.pending is not None else ())}
        ends = [leader_end] + [st.follower_end.get(r, 0) for r in members if r != self.node_id]
        hw = min(ends)
        if hw > st.high_watermark:
            st.high_watermark = hw
            return True
        return False

    def on_follower_fetch(self, st: PartitionState, replica_id: int, fetch_offset: int, leader_end: int,
                          epoch_start: int, now_ms: int) -> tuple[bool, IsrChange | None]:
        """A follower fetched from ``fetch_offset``: its log ends there. Returns (HW moved, an ISR
        expansion to request: Kafka's rule, caught up to the HW and into the leader's epoch)."""
        st.follower_end[replica_id] = fetch_offset
        if fetch_offset >= leader_end:
            st.follower_caught_up_ms[replica_id] = now_ms
        moved = self.update_high_watermark(st, leader_end)
        if (replica_id not in st.isr and st.pending is None and replica_id in st.replicas
                and fetch_offset >= st.high_watermark and fetch_offset >= epoch_start):
            st.pending = IsrChange(st.tp, st.topic_id, st.leader_epoch, st.partition_epoch,
                                   tuple(sorted({*st.isr, replica_id})))
            return moved, st.pending
        return moved, None

    def lagging_followers(self, now_ms: int) -> list[IsrChange]:
        """ISR shrinks for followers not caught up within replica.lag.time.max.ms."""
        out = []
        for st in self.partitions.values():
            if st.leader != self.node_id or st.pending is not None:
                continue
            lagging = [r for r in st.isr if r != self.node_id
                       and now_ms - st.follower_caught_up_ms.get(r, now_ms) > self.replica_lag_time_max_ms]
            if lagging:
                st.pending = IsrChange(st.tp, st.topic_id, st.leader_epoch, st.partition_epoch,
                                       tuple(r for r in st.isr if r not in lagging))
                out.append(st.pending)
        return out

    def is_pending(self, change: IsrChange) -> bool:
        """Whether ``change`` is still its partition's unsettled ISR change (else a retry is moot)."""
        st = self.partitions.get(change.tp)
        return st is not None and st.pending is change

    def on_alter_partition_result(self, change: IsrChange, error: Errors, result: Mapping[str, Any] | None
                                  ) -> bool:
        """The controller's answer to ``change`` (a lost answer is NETWORK_EXCEPTION; NONE with no
        ``result``: the partition was missing from it). Returns whether to send the same change
        again, as Kafka's Partition.handleAlterPartitionError: only an answer that says what the
        controller did settles the change; a lost one, NOT_CONTROLLER, a stale broker epoch... are
        retried, and the HW keeps counting the change's members meanwhile."""
        st = self.partitions.get(change.tp)
        if st is None or st.pending is not change:
            return False  # settled by the metadata or a leader change: this answer is out of date
        if error is Errors.NONE and result is not None:
            if result["leaderEpoch"] == st.leader_epoch and result["partitionEpoch"] >= st.partition_epoch:
                st.isr, st.partition_epoch = tuple(result["isr"]), result["partitionEpoch"]
                st.pending = None
            return False  # else an answer about another epoch: the metadata will tell
        if error in NOT_APPLIED:
            st.pending = None
            return False
        return error not in AWAIT_METADATA


def alter_partition_answers(changes: list[IsrChange], response: Mapping[str, Any]
                            ) -> list[tuple[IsrChange, Errors, Mapping[str, Any] | None]]:
    """Each change's error and partition result in an AlterPartition answer: a top-level error is
    every change's, a partition missing from the answer is (NONE, None) (Kafka resends both)."""
    top = Errors.for_code(response["errorCode"])
    results = {(t["topicId"], p["partitionIndex"]): p for t in response["topics"]
               for p in t["partitions"]} if top is Errors.NONE else {}
    out = []
    for c in changes:
        result = results.get((c.topic_id, c.tp.partition))
        out.append((c, top if result is None else Errors.for_code(result["errorCode"]), result))
    return out


def alter_partition_body(node_id: int, broker_epoch: int, changes: list[IsrChange],
                         broker_epochs: Mapping[int, int], version: int) -> dict[str, Any]:
    """An AlterPartition request at ``version`` (from v2 topic ids, from v3 the ISR members' broker
    epochs)."""
    by_topic: dict[tuple[uuid.UUID, str], list[dict[str, Any]]] = {}
    for c in changes:
        by_topic.setdefault((c.topic_id, c.tp.topic), []).append({  # leaderRecoveryState: RECOVERED
            "partitionIndex": c.tp.partition,
            "leaderEpoch": c.leader_epoch,
            "newIsr": list(c.new_isr),
            "newIsrWithEpochs": [{"brokerId": b, "brokerEpoch": broker_epochs.get(b, -1)} for b in c.new_isr],
            "partitionEpoch": c.partition_epoch,
        })
    body = {"brokerId": node_id, "brokerEpoch": broker_epoch,
            "topics": [{"topicName": name, "topicId": tid, "partitions": parts}
                       for (tid, name), parts in by_topic.items()]}
    return shape_body(Kind.REQUEST, ApiKey.ALTER_PARTITION, version, body)
