"""A ZK-mode broker's core fed by the real ZK controller's requests: its cache (the image the data
plane and the read path use), stale requests refused, and the admin RPCs as Kafka's znode writes."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kraftwerk.broker.zk_broker import ZkBrokerCore
from kraftwerk.config import ConfigResourceType
from kraftwerk.controller.zk_controller import Decisions, ZkController, ZkCreate, ZkSet
from kraftwerk.image.model import ConfigResource, Endpoint
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.znodes import BrokerZnode, parse_config_change, parse_entity_config, parse_topic
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion
from tests.migration.layout import Layout

ORDERS = uuid.UUID(int=7)


def cluster() -> tuple[ZkController, dict[int, ZkBrokerCore]]:
    layout = Layout().cluster("MkU3OEVBNTcwNTJENDM2Qk", controller=1, controller_epoch=4)
    for b in (1, 2, 3):
        layout.broker(b)
    layout.topic("orders", {0: [1, 2, 3], 1: [2, 3, 1]}, topic_id=ORDERS, partition_epoch=2)
    controller = ZkController(1, 5, parse_cluster(layout.tree()))
    cores = {b.id: ZkBrokerCore(b.id, "MkU3OEVBNTcwNTJENDM2Qk", MetadataVersion.IBP_3_9_IV0,
                                broker_epoch=b.epoch, static_configs={"default.replication.factor": "2"},
                                api_versions={},
                                listeners=[Endpoint("PLAINTEXT", f"b{b.id}.example", 9092, 0)],
                                software=SoftwareVersion.for_release("3.9"), rng=random.Random(1))
             for b in controller.brokers.values()}
    deliver(controller.become_controller(), cores)
    return controller, cores


def deliver(d: Decisions, cores: dict[int, ZkBrokerCore]) -> None:
    handlers: dict[int, Callable[[ZkBrokerCore, Mapping[str, Any]], dict[str, Any]]] = {
        ApiKey.LEADER_AND_ISR: ZkBrokerCore.leader_and_isr,
        ApiKey.UPDATE_METADATA: ZkBrokerCore.update_metadata, ApiKey.STOP_REPLICA: ZkBrokerCore.stop_replica}
    for r in d.requests:
        if r.broker_id in cores:
            assert handlers[r.api_key](cores[r.broker_id], r.body)["errorCode"] == 0


def test_the_cache_follows_the_controller() -> None:
    controller, cores = cluster()
    image = cores[2].image
    assert sorted(image.cluster.brokers) == [1, 2, 3]
    assert image.cluster.brokers[2].epoch == cores[2].broker_epoch
    p0 = image.topics.by_name["orders"].partitions[0]
    assert (p0.leader, p0.isr, p0.partition_epoch) == (1, (1, 2, 3), 2)
    assert image.topics.by_name["orders"].id == ORDERS
    metadata = cores[3].handle_read(ApiKey.METADATA, 12, {"topics": None}, 0, "PLAINTEXT").body
    assert [t["name"] for t in metadata["topics"]] == ["orders"]
    assert sorted(b["nodeId"] for b in metadata["brokers"]) == [1, 2, 3]
    del cores[1]
    deliver(controller.brokers_changed({b: z for b, z in _znodes(controller).items() if b != 1}), cores)
    p0 = cores[3].image.topics.by_name["orders"].partitions[0]
    assert (p0.leader, p0.isr, p0.leader_epoch) == (2, (2, 3), 1)
    assert sorted(cores[3].image.cluster.brokers) == [2, 3]


def _znodes(controller: ZkController) -> dict[int, BrokerZnode]:
    return {b.id: BrokerZnode(b.id, 5, "h", 9092, tuple(f"{e[0]}://{e[1]}:{e[2]}" for e in b.endpoints),
                              None, b.epoch, None, (("PLAINTEXT", "PLAINTEXT"),))
            for b in controller.brokers.values()}


def test_requests_of_an_older_controller_or_for_another_broker_epoch_are_refused() -> None:
    _, cores = cluster()
    core = cores[1]
    stale = {"controllerId": 2, "controllerEpoch": 4, "brokerEpoch": core.broker_epoch, "topicStates": [],
             "liveBrokers": []}
    assert core.update_metadata(stale)["errorCode"] == Errors.STALE_CONTROLLER_EPOCH.code
    other = {**stale, "controllerEpoch": 5, "brokerEpoch": 12345}
    assert core.update_metadata(other)["errorCode"] == Errors.STALE_BROKER_EPOCH.code
    assert sorted(core.image.cluster.brokers) == [1, 2, 3]


def test_stop_replica_with_delete_drops_the_topic() -> None:
    controller, cores = cluster()
    deliver(controller.deletions_requested(["orders"]), cores)
    assert all("orders" not in c.image.topics.by_name for c in cores.values())


def test_create_topics_writes_the_config_then_the_assignment_with_a_topic_id() -> None:
    _, cores = cluster()
    response, writes = cores[1].create_topics({"topics": [
        {"name": "audit", "numPartitions": 3, "replicationFactor": -1, "assignments": [],
         "configs": [{"name": "retention.ms", "value": "1000"}]},
        {"name": "orders", "numPartitions": 1, "replicationFactor": 1, "assignments": [], "configs": []}]})
    results = {t["name"]: t for t in response["topics"]}
    assert results["orders"]["errorCode"] == Errors.TOPIC_ALREADY_EXISTS.code and "orders" not in writes
    config, topic = writes["audit"]
    assert isinstance(config, ZkSet) and config.path == "/config/topics/audit" and config.version == -1
    assert parse_entity_config(config.path, config.data) == {"retention.ms": "1000"}
    assert isinstance(topic, ZkCreate) and topic.path == "/brokers/topics/audit"
    znode = parse_topic(topic.path, topic.data)
    assert znode.version == 3 and znode.topic_id == results["audit"]["topicId"]
    assert sorted(znode.partitions) == [0, 1, 2] and all(len(r) == 2 for r in znode.partitions.values())
    ZkBrokerCore.topic_exists(response, "audit")
    assert results["audit"]["errorCode"] == Errors.TOPIC_ALREADY_EXISTS.code


def test_config_changes_write_the_whole_entity_and_a_notification() -> None:
    _, cores = cluster()
    core = cores[2]
    orders = ConfigResource(ConfigResourceType.TOPIC, "orders")
    core.set_configs({orders: {"retention.ms": "5", "cleanup.policy": "compact"}})
    response, writes = core.config_writes({"resources": [
        {"resourceType": ConfigResourceType.TOPIC, "resourceName": "orders",
         "configs": [{"name": "retention.ms", "configOperation": 1, "value": None},
                     {"name": "segment.ms", "configOperation": 0, "value": "60000"}]},
        {"resourceType": ConfigResourceType.TOPIC, "resourceName": "nope", "configs": []}]},
        incremental=True)
    assert [r["errorCode"] for r in response["responses"]] == [0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    config, change = writes
    assert isinstance(config, ZkSet) and config.path == "/config/topics/orders"
    assert parse_entity_config(config.path, config.data) == {"cleanup.policy": "compact",
                                                             "segment.ms": "60000"}
    assert isinstance(change, ZkCreate) and change.sequential
    assert parse_config_change(change.path + "0000000000", change.data) == "topics/orders"
    default = {"resourceType": ConfigResourceType.BROKER, "resourceName": "",
               "configs": [{"name": "log.cleaner.threads", "value": "2"}]}
    _, writes = core.config_writes({"resources": [default]}, incremental=False)
    assert writes[0].path == "/config/brokers/<default>"


def test_delete_topics_marks_them_for_the_controller() -> None:
    _, cores = cluster()
    response, writes = cores[1].delete_topics(6, {"topics": [{"name": "orders", "topicId": None},
                                                             {"name": "nope", "topicId": None}]})
    assert [r["errorCode"] for r in response["responses"]] == [0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    assert [w.path for w in writes] == ["/admin/delete_topics/orders"]


def test_create_partitions_rewrites_the_assignment() -> None:
    _, cores = cluster()
    response, writes = cores[1].create_partitions({"topics": [
        {"name": "orders", "count": 4, "assignments": None},
        {"name": "nope", "count": 2, "assignments": None}]})
    assert [r["errorCode"] for r in response["results"]] == [0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    [write] = writes
    assert isinstance(write, ZkSet) and write.path == "/brokers/topics/orders"
    znode = parse_topic(write.path, write.data)
    assert znode.topic_id == ORDERS and sorted(znode.partitions) == [0, 1, 2, 3]
    assert znode.partitions[0] == (1, 2, 3) and len(znode.partitions[3]) == 3
