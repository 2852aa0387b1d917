"""What a KRaft controller in migration tells the ZooKeeper brokers (Kafka's ``MigrationPropagator``),
sans-I/O: the full LeaderAndIsr + UpdateMetadata once it took over (KRAFT_CONTROLLER_TO_BROKER_COMM),
then, in DUAL_WRITE, the requests each committed change calls for.

ZooKeeper brokers read no metadata log, so these requests are their only metadata: every request
carries ``isKRaftController`` and the controller epoch the driver claimed in ``/controller_epoch``
(higher than any ZK controller's, so a stale ZK controller's requests are refused), and each broker's
KRaft broker epoch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftwerk.controller.zk_controller import (
    EPOCH_DURING_DELETE,
    LEADER_AND_ISR_VERSION,
    LEADER_DURING_DELETE,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA_VERSION,
    BrokerRequest,
)
from kraftwerk.image.model import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from kraftwerk.protocol.api_keys import ApiKey

INCREMENTAL, FULL = 1, 2
"""Kafka's ``AbstractControlRequest.Type`` (LeaderAndIsr v5+, UpdateMetadata v8's tagged field)."""


def zk_brokers(image: MetadataImage) -> list[BrokerRegistration]:
    """The registered migrating ZooKeeper brokers (the ones these requests go to)."""
    return [b for _, b in sorted(image.cluster.brokers.items()) if b.is_migrating_zk_broker]


def full_requests(image: MetadataImage, controller_id: int, controller_epoch: int) -> list[BrokerRequest]:
    """Every partition's state to every ZooKeeper broker: LeaderAndIsr for those it replicates,
    UpdateMetadata for all, both of type FULL."""
    partitions = [(t, p) for t in _topics(image) for p in sorted(t.partitions)]
    out = []
    for broker in zk_brokers(image):
        header = _header(broker, controller_id, controller_epoch)
        mine = [(t, p) for t, p in partitions if broker.id in t.partitions[p].replicas]
        out.append(_leader_and_isr(image, header, mine, FULL))
        out.append(_update_metadata(image, header, partitions, FULL))
    return out


def delta_requests(previous: MetadataImage, image: MetadataImage, controller_id: int,
                   controller_epoch: int) -> list[BrokerRequest]:
    """The requests for what changed from ``previous`` to ``image``: LeaderAndIsr to the replicas
    of changed partitions, StopReplica (delete) to the replicas of deleted topics, UpdateMetadata to
    every ZooKeeper broker when a partition or the broker set changed."""
    changed: list[tuple[TopicImage, int]] = []
    for topic in _topics(image):
        before = previous.topics.by_id.get(topic.id)
        for p, now in sorted(topic.partitions.items()):
            if before is None or before.partitions.get(p) != now:
                changed.append((topic, p))
    deleted = [t for t in _topics(previous) if t.id not in image.topics.by_id]
    brokers_changed = _live(previous) != _live(image)
    newly_registered = {b.id for b in zk_brokers(image)} - {b.id for b in zk_brokers(previous)
                                                            if _epoch(image, b.id) == b.epoch}
    out: list[BrokerRequest] = []
    for broker in zk_brokers(image):
        header = _header(broker, controller_id, controller_epoch)
        if broker.id in newly_registered:  # a ZK broker that just registered (or restarted) needs everything
            partitions = [(t, p) for t in _topics(image) for p in sorted(t.partitions)]
            mine = [(t, p) for t, p in partitions if broker.id in t.partitions[p].replicas]
            out.append(_leader_and_isr(image, header, mine, FULL))
            out.append(_update_metadata(image, header, partitions, FULL))
            continue
        for topic in deleted:  # first: a topic created again under its name must not lose its new replicas
            replicated = [p for p, r in sorted(topic.partitions.items()) if broker.id in r.replicas]
            if replicated:
                out.append(_stop_replica(header, topic, replicated))
        mine = [(t, p) for t, p in changed if broker.id in t.partitions[p].replicas]
        if mine:
            out.append(_leader_and_isr(image, header, mine, INCREMENTAL))
        if changed or deleted or brokers_changed:
            out.append(_update_metadata(image, header, changed, INCREMENTAL, deleted=deleted))
    return out


def _epoch(image: MetadataImage, broker_id: int) -> int | None:
    registration = image.cluster.brokers.get(broker_id)
    return None if registration is None else registration.epoch


def _topics(image: MetadataImage) -> list[TopicImage]:
    return [image.topics.by_name[n] for n in sorted(image.topics.by_name)]


def _live(image: MetadataImage) -> list[BrokerRegistration]:
    return [b for _, b in sorted(image.cluster.brokers.items()) if not b.fenced]


def _header(broker: BrokerRegistration, controller_id: int, controller_epoch: int) -> dict[str, Any]:
    return {"controllerId": controller_id, "isKRaftController": True, "controllerEpoch": controller_epoch,
            "brokerEpoch": broker.epoch, "brokerId": broker.id}


def _leader_and_isr(image: MetadataImage, header: dict[str, Any], partitions: list[tuple[TopicImage, int]],
                    kind: int) -> BrokerRequest:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for topic, p in partitions:
        r = topic.partitions[p]
        leaders.add(r.leader)
        by_topic.setdefault(topic.name, []).append({
            "partitionIndex": p, "controllerEpoch": header["controllerEpoch"], "leader": r.leader,
            "leaderEpoch": r.leader_epoch, "isr": list(r.isr), "partitionEpoch": r.partition_epoch,
            "replicas": list(r.replicas), "addingReplicas": list(r.adding_replicas),
            "removingReplicas": list(r.removing_replicas), "isNew": False,
            "leaderRecoveryState": int(r.leader_recovery_state)})
    live_leaders = []
    for b in _live(image):
        if b.id in leaders and b.listeners:
            endpoint = b.listeners[0]
            live_leaders.append({"brokerId": b.id, "hostName": endpoint.host, "port": endpoint.port})
    body = {**_fields(header), "type": kind, "liveLeaders": live_leaders, "topicStates": [
        {"topicName": n, "topicId": image.topics.by_name[n].id, "partitionStates": ps}
        for n, ps in by_topic.items()]}
    return BrokerRequest(_broker_of(header), ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body)


def _partition_state(topic: TopicImage, p: int, r: PartitionRegistration, epoch: int, live: set[int],
                     leader: int | None = None) -> dict[str, Any]:
    return {"partitionIndex": p, "controllerEpoch": epoch, "leader": r.leader if leader is None else leader,
            "leaderEpoch": r.leader_epoch, "isr": list(r.isr), "zkVersion": r.partition_epoch,
            "replicas": list(r.replicas), "offlineReplicas": [b for b in r.replicas if b not in live]}


def _update_metadata(image: MetadataImage, header: dict[str, Any],
                     partitions: Iterable[tuple[TopicImage, int]], kind: int, *,
                     deleted: Iterable[TopicImage] = ()) -> BrokerRequest:
    live = _live(image)
    live_ids = {b.id for b in live}
    epoch = header["controllerEpoch"]
    by_topic: dict[str, tuple[TopicImage, list[dict[str, Any]]]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic.name, (topic, []))[1].append(
            _partition_state(topic, p, topic.partitions[p], epoch, live_ids))
    for topic in deleted:  # leader -2: the broker drops the partition from its cache
        # (a topic created again under the same name keeps its partitions' states: Kafka's batch keeps
        # the last state added per partition, and the changes come after the deletions)
        _, states = by_topic.setdefault(topic.name, (topic, []))
        kept = {state["partitionIndex"] for state in states}
        states += [_partition_state(topic, p, r, epoch, live_ids, LEADER_DURING_DELETE)
                   for p, r in sorted(topic.partitions.items()) if p not in kept]
    brokers = [{"id": b.id, "rack": b.rack, "endpoints": [
        {"port": e.port, "host": e.host, "listener": e.name, "securityProtocol": e.security_protocol}
        for e in b.listeners]} for b in live]
    body = {**_fields(header), "type": kind, "liveBrokers": brokers, "topicStates": [
        {"topicName": n, "topicId": t.id, "partitionStates": ps} for n, (t, ps) in by_topic.items()]}
    return BrokerRequest(_broker_of(header), ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)


def _stop_replica(header: dict[str, Any], topic: TopicImage, partitions: list[int]) -> BrokerRequest:
    states = [{"partitionIndex": p, "leaderEpoch": EPOCH_DURING_DELETE, "deletePartition": True}
              for p in partitions]
    body = {**_fields(header), "topicStates": [{"topicName": topic.name, "partitionStates": states}]}
    return BrokerRequest(_broker_of(header), ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body)


def _fields(header: dict[str, Any]) -> dict[str, Any]:
    """The header's request fields (``brokerId`` only says where the request goes)."""
    return {k: v for k, v in header.items() if k != "brokerId"}


def _broker_of(header: dict[str, Any]) -> int:
    return int(header["brokerId"])
