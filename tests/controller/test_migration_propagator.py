"""The KRaft controller's requests to ZooKeeper brokers in a migration, fed to real ZK broker cores:
the full state after the takeover, then what each change calls for; an older ZK controller's requests
are refused once the KRaft controller's higher epoch reached a broker."""

from __future__ import annotations

import dataclasses
import random
import uuid

from immutables import Map

from kraftwerk.broker.zk_broker import MigratingZkBrokerLifecycle, ZkBrokerCore
from kraftwerk.controller.migration_propagator import delta_requests, full_requests
from kraftwerk.controller.zk_controller import BrokerRequest
from kraftwerk.image.model import (
    BrokerRegistration,
    ClusterImage,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
ORDERS = uuid.UUID(int=7)
KRAFT_ID, EPOCH = 3000, 9
KRAFT_EPOCHS = {1: 40, 2: 41, 3: 42}


def image(topics: dict[str, TopicImage], *, fenced: frozenset[int] = frozenset(),
          epochs: dict[int, int] = KRAFT_EPOCHS) -> MetadataImage:
    brokers = {b: BrokerRegistration(b, epochs[b], uuid.UUID(int=b),
                                     (Endpoint("PLAINTEXT", f"b{b}", 9092, 0),), fenced=b in fenced,
                                     is_migrating_zk_broker=True) for b in (1, 2, 3)}
    by_name = Map(topics)
    return MetadataImage(cluster=ClusterImage(brokers=brokers),
                         topics=TopicsImage(by_id=Map({t.id: t for t in topics.values()}), by_name=by_name))


def orders(leader: int = 1, isr: tuple[int, ...] = (1, 2, 3), leader_epoch: int = 3) -> TopicImage:
    partition = PartitionRegistration((1, 2, 3), isr, (), leader=leader, leader_epoch=leader_epoch,
                                      partition_epoch=5)
    return TopicImage("orders", ORDERS, {0: partition})


def cores() -> dict[int, ZkBrokerCore]:
    out = {}
    for b in (1, 2, 3):
        core = ZkBrokerCore(b, CLUSTER, MetadataVersion.IBP_3_9_IV0, broker_epoch=100 + b, static_configs={},
                            api_versions={}, listeners=[Endpoint("PLAINTEXT", f"b{b}", 9092, 0)],
                            software=SoftwareVersion.for_release("3.9"), rng=random.Random(1))
        core.kraft_lifecycle = MigratingZkBrokerLifecycle(b, CLUSTER, SoftwareVersion.for_release("3.9"), [],
                                                          incarnation_id=uuid.uuid4())
        core.kraft_lifecycle.broker_epoch = KRAFT_EPOCHS[b]
        out[b] = core
    return out


def deliver(requests: list[BrokerRequest], to: dict[int, ZkBrokerCore]) -> list[int]:
    handlers = {ApiKey.LEADER_AND_ISR: ZkBrokerCore.leader_and_isr, ApiKey.UPDATE_METADATA:
                ZkBrokerCore.update_metadata, ApiKey.STOP_REPLICA: ZkBrokerCore.stop_replica}
    return [handlers[ApiKey(r.api_key)](to[r.broker_id], r.body)["errorCode"] for r in requests]


def test_the_full_state_then_each_change_reaches_the_zookeeper_brokers() -> None:
    brokers = cores()
    before = image({"orders": orders()})
    full = full_requests(before, KRAFT_ID, EPOCH)
    assert {(r.broker_id, ApiKey(r.api_key).name) for r in full} == {
        (b, k) for b in (1, 2, 3) for k in ("LEADER_AND_ISR", "UPDATE_METADATA")}
    assert all(r.body["isKRaftController"] and r.body["type"] == 2 for r in full)
    assert set(deliver(full, brokers)) == {0}
    p0 = brokers[2].image.topics.by_name["orders"].partitions[0]
    assert (p0.leader, p0.leader_epoch) == (1, 3)
    assert brokers[2].kraft_controller  # clients are told of a broker, never of the KRaft controller
    assert brokers[2].metadata_body(12, {"topics": None})["controllerId"] in (1, 2, 3)

    after = image({"orders": orders(leader=2, isr=(2, 3), leader_epoch=4)}, fenced=frozenset({1}))
    delta = delta_requests(before, after, KRAFT_ID, EPOCH)
    assert {r.broker_id for r in delta} == {1, 2, 3}  # broker 1 is fenced but still a replica
    assert set(deliver(delta, brokers)) == {0}
    p0 = brokers[3].image.topics.by_name["orders"].partitions[0]
    assert (p0.leader, p0.isr, p0.leader_epoch) == (2, (2, 3), 4)
    assert sorted(brokers[3].image.cluster.brokers) == [2, 3]

    gone = image({})
    deleted = delta_requests(after, gone, KRAFT_ID, EPOCH)
    assert {ApiKey(r.api_key).name for r in deleted} == {"STOP_REPLICA", "UPDATE_METADATA"}
    assert set(deliver(deleted, brokers)) == {0}
    assert "orders" not in brokers[3].image.topics.by_name


def test_an_older_zk_controller_and_a_wrong_kraft_broker_epoch_are_refused() -> None:
    brokers = cores()
    deliver(full_requests(image({"orders": orders()}), KRAFT_ID, EPOCH), brokers)
    old_zk = {"controllerId": 1, "controllerEpoch": EPOCH - 1, "brokerEpoch": 101, "topicStates": [],
              "liveBrokers": []}
    assert brokers[1].update_metadata(old_zk)["errorCode"] == Errors.STALE_CONTROLLER_EPOCH.code
    [request] = [r for r in full_requests(image({"orders": orders()}), KRAFT_ID, EPOCH)
                 if r.broker_id == 1 and r.api_key == ApiKey.UPDATE_METADATA]
    wrong = dataclasses.replace(request, body={**request.body, "brokerEpoch": 101})  # the ZooKeeper epoch
    assert deliver([wrong], brokers) == [Errors.STALE_BROKER_EPOCH.code]


def test_a_restarted_zookeeper_broker_gets_the_full_state_again() -> None:
    before = image({"orders": orders()})
    after = image({"orders": orders()}, epochs={**KRAFT_EPOCHS, 2: 77})  # a new process, an empty cache
    requests = delta_requests(before, after, KRAFT_ID, EPOCH)
    assert [(r.broker_id, ApiKey(r.api_key).name, r.body["type"]) for r in requests] == [
        (1, "UPDATE_METADATA", 1), (2, "LEADER_AND_ISR", 2), (2, "UPDATE_METADATA", 2),
        (3, "UPDATE_METADATA", 1)]


def test_a_topic_deleted_and_created_again_in_one_delta_stays_in_the_brokers_metadata() -> None:
    """CreateTopics may take the name of a topic whose deletion is still in flight, so one committed
    delta can remove "orders" and create it again under a new id: the new topic's partition states win
    over the deletion's (Kafka's UpdateMetadata batch keeps the last state added per partition), and
    the old replicas are stopped before the new ones are made (Kafka's batch sends LeaderAndIsr first,
    so its StopReplica would delete the new replica too)."""
    brokers = cores()
    before = image({"orders": orders()})
    assert set(deliver(full_requests(before, KRAFT_ID, EPOCH), brokers)) == {0}
    again = dataclasses.replace(orders(leader=2, leader_epoch=0), id=uuid.UUID(int=8))
    delta = delta_requests(before, image({"orders": again}), KRAFT_ID, EPOCH)
    for b in (1, 2, 3):  # the old replica is deleted before the new one is made
        assert [ApiKey(r.api_key).name for r in delta if r.broker_id == b] == [
            "STOP_REPLICA", "LEADER_AND_ISR", "UPDATE_METADATA"]
    assert set(deliver(delta, brokers)) == {0}
    for b in (1, 2, 3):
        topic = brokers[b].image.topics.by_name["orders"]
        p0 = topic.partitions[0]
        assert topic.id == again.id and (p0.leader, p0.leader_epoch) == (2, 0)
