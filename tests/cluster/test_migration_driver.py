"""KIP-866 on real processes: three KRaft controllers in migration mode take over a Kafka 3.x ZooKeeper
tree written into a real ZooKeeper (with one ZooKeeper-mode broker in migration, which the driver waits
for, as Kafka's does), copy it into the metadata log as one transaction, then dual-write; with
ZooKeeper stopped, writes go on until the lag bound, are refused, and resume once ZooKeeper is back
and has caught up."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kraftwerk.controller.migration_driver import MigrateMetadata
from kraftwerk.migration.reader import connect, read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import decode_metadata_record
from kraftwerk.runtime import migration_io
from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import (
    ZK_BROKER_ROLE,
    LocalCluster,
    ZooKeeperProcess,
    format_cluster,
    plan_cluster,
)
from kraftwerk.runtime.metrics import scrape
from kraftwerk.runtime.migration_steps import broker_migration_configs
from kraftwerk.runtime.zookeeper import ZooKeeperServer
from kraftwerk.storage.metadata_log import iter_metadata_batches
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.cluster.helpers import cli
from tests.migration.layout import Layout, kafka_uuid

pytestmark = [pytest.mark.cluster, pytest.mark.zookeeper]

CLUSTER_ID = "a1b2c3d4e5f6g7h8i9j0kw"
MAX_LAG_MS = 3000
ORDERS = uuid.uuid5(uuid.NAMESPACE_URL, "kraftwerk-test/orders")
AUDIT = uuid.uuid5(uuid.NAMESPACE_URL, "kraftwerk-test/audit")
BROKER = 4  # the ZooKeeper broker: plan_cluster numbers controllers 1-3 first


def tree() -> Layout:
    """A 3.9 ZooKeeper cluster (broker 4 registers itself in /brokers/ids once started): two topics on
    broker 4, topic and broker configs, an ACL, a producer id block."""
    layout = Layout().cluster(CLUSTER_ID, controller=BROKER, controller_epoch=7)
    layout.topic("orders", {0: [BROKER], 1: [BROKER]}, topic_id=ORDERS, leader_epoch=3, partition_epoch=2)
    layout.topic("audit", {0: [BROKER]}, topic_id=AUDIT)
    layout.config("topics", "orders", {"retention.ms": "86400000"})
    layout.config("brokers", "<default>", {"log.cleaner.threads": "2"})
    layout.acl("Topic", "orders", [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}])
    layout.producer_ids(BROKER, 5000)
    return layout


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def migrated(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[LocalCluster, ZooKeeperServer]]:
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(30)
    try:
        tree().write(client)
    finally:
        client.stop()
        client.close()
    root = tmp_path_factory.mktemp("migration-cluster")
    extra = {"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": zookeeper.connect_string,
             "zookeeper.metadata.migration.max.lag.ms": str(MAX_LAG_MS)}
    cluster = plan_cluster(root, CLUSTER_ID, 3, 1, extra=extra, static_quorum=True)
    broker = cluster.node(BROKER)
    format_cluster(cluster, "3.9")
    # broker 4 runs in ZooKeeper mode with the migration flag and the quorum, as after Kafka's step 3
    broker.roles, broker.extra = ZK_BROKER_ROLE, broker_migration_configs(cluster)
    cluster.zookeeper = ZooKeeperProcess(zookeeper.port, zookeeper.pid)
    cluster.save()
    try:
        cluster.start_all(60)
        cluster.save()
        yield cluster, zookeeper
    finally:
        saved = LocalCluster.load(root)  # the pids of what a `cluster roll` restarted
        cluster.stop(cluster.nodes)
        saved.stop(saved.nodes)


def read_zookeeper(zookeeper: ZooKeeperServer) -> Any:
    with connect(zookeeper.connect_string) as c:
        return read_tree(c)


def migration_znode(zookeeper: ZooKeeperServer) -> dict[str, Any]:
    node = read_zookeeper(zookeeper).get("/migration")
    return {} if node is None or node.data is None else json.loads(node.data)


def log_dir(cluster: LocalCluster, node_id: int) -> Path:
    return cluster.node(node_id).data_dir(cluster.root) / "__cluster_metadata-0"


def show(cluster: LocalCluster, node_id: int) -> dict[str, Any]:
    code, out, err = cli("metadata", "show", "--log-dir", str(log_dir(cluster, node_id)), "--output", "json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def metrics(cluster: LocalCluster) -> dict[str, float]:
    """The active controller's gauges."""
    active = wait_for("an active controller", cluster.active_controller)
    info = cluster.ready_info(cluster.node(active))
    assert info is not None and info["metricsPort"]
    gauges = scrape("127.0.0.1", info["metricsPort"])
    assert gauges is not None
    return gauges


def create_topic(cluster: LocalCluster, name: str) -> dict[str, Any]:
    with AdminClient(cluster.node(BROKER).address) as admin:
        body = {"topics": [{"name": name, "numPartitions": 1, "replicationFactor": 1, "assignments": [],
                            "configs": []}], "timeoutMs": 5000, "validateOnly": False}
        result: dict[str, Any] = admin.call(19, body)["topics"][0]
        return result


def test_the_tree_is_migrated_in_one_transaction_and_dual_write_begins(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    cluster, zookeeper = migrated
    wait_for("dual write", lambda: migration_znode(zookeeper).get("kraft_metadata_offset", -1) > 0)
    segments = sorted(log_dir(cluster, 1).glob("*.log"))
    batches = [b for segment in segments for b in iter_metadata_batches(segment)]
    records = [r for b in batches for r in b.records]
    names = [r.spec.name for r in records]
    begin = next(i for i, r in enumerate(records)
                 if r.spec.name == "BeginTransactionRecord" and r.value["name"] == "ZK Migration")
    end = names.index("EndTransactionRecord", begin)
    inside = names[begin + 1:end]
    assert inside[-1] == "ZkMigrationStateRecord"
    assert inside.count("TopicRecord") == 2 and inside.count("PartitionRecord") == 3
    assert {"ConfigRecord", "AccessControlEntryRecord", "ProducerIdsRecord"} <= set(inside)
    states = [r.value["zkMigrationState"] for b in batches for r in b.records
              if r.spec.name == "ZkMigrationStateRecord"]
    assert states[:2] == [2, 1]  # PRE_MIGRATION at bootstrap, MIGRATION with the copy

    image = show(cluster, 2)  # a standby replayed the same log
    assert image["zkMigrationState"] == "MIGRATION"
    topics = {t["name"]: t for t in image["topics"]}
    assert topics["orders"]["topicId"] == kafka_uuid(ORDERS)
    assert topics["audit"]["topicId"] == kafka_uuid(AUDIT)
    assert {p["leaderEpoch"] for p in topics["orders"]["partitions"]} == {3}
    configs = {(c["resourceType"], c["resourceName"]): c["configs"] for c in image["configs"]}
    assert configs[("TOPIC", "orders")] == {"retention.ms": "86400000"}
    assert configs[("BROKER", "")] == {"log.cleaner.threads": "2"}
    assert image["nextProducerId"] == 6000

    zk = read_zookeeper(zookeeper)
    holder = json.loads(zk.get("/controller").data)
    assert holder["kraftControllerEpoch"] >= 1 and holder["brokerid"] in (1, 2, 3)
    assert zk.get("/controller").stat.ephemeral_owner == 0  # persistent: ZK brokers cannot win it back
    assert int(zk.get("/controller_epoch").data) >= 8  # 7 in the tree; broker 4 may have claimed it first

    gauges = metrics(cluster)
    k = "kafka_controller_KafkaController_"
    assert gauges[k + "ZkMigrationState"] == 1 and gauges[k + "MetadataType"] == 2
    assert gauges["kraftwerk_migration_driver_state{DUAL_WRITE}"] == 8
    assert gauges[k + "Features{metadata.version}"] == 21  # 3.9-IV0
    assert gauges[k + "ZooKeeperBlockingKRaftMillis"] == 0
    code, out, err = cli("cluster", "status", "--dir", str(cluster.root), "--output", "json")
    assert code == 0, err
    assert json.loads(out)["migration"] == {"zkMigrationState": "MIGRATION", "driverState": "DUAL_WRITE"}


def test_a_topic_created_through_kraft_appears_in_zookeeper_in_kafkas_layout(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    cluster, zookeeper = migrated
    wait_for("dual write", lambda: migration_znode(zookeeper).get("kraft_metadata_offset", -1) > 0)
    assert create_topic(cluster, "created-in-kraft")["errorCode"] == 0
    state = wait_for("the topic in ZooKeeper", lambda: (s := parse_cluster(read_zookeeper(zookeeper)))
                     .topics.get("created-in-kraft") and s)
    topic = state.topics["created-in-kraft"]
    image = show(cluster, 1)
    [kraft] = [t for t in image["topics"] if t["name"] == "created-in-kraft"]
    assert topic.znode.topic_id is not None and kafka_uuid(topic.znode.topic_id) == kraft["topicId"]
    assert topic.znode.partitions == {0: (BROKER,)}
    zk = read_zookeeper(zookeeper)
    assert json.loads(zk.get("/config/topics/created-in-kraft").data) == {"version": 1, "config": {}}
    partition = json.loads(zk.get("/brokers/topics/created-in-kraft/partitions/0/state").data)
    assert partition["leader"] == BROKER and partition["isr"] == [BROKER]
    assert partition["controller_epoch"] == int(zk.get("/controller_epoch").data)


def test_zookeeper_down_writes_continue_then_are_refused_then_both_converge(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    cluster, zookeeper = migrated
    wait_for("dual write", lambda: migration_znode(zookeeper).get("kraft_metadata_offset", -1) > 0)
    zookeeper.stop()
    try:
        assert create_topic(cluster, "while-zk-down")["errorCode"] == 0  # within the bound
        refused = wait_for("the lag bound", lambda: (r := create_topic(cluster, f"t{time.monotonic_ns()}"))
                           ["errorCode"] == Errors.REQUEST_TIMED_OUT.code and r, timeout_s=30)
        assert "zookeeper.metadata.migration.max.lag.ms" in refused["errorMessage"]
    finally:
        zookeeper.start(same_port=True)
    wait_for("writes to resume", lambda: create_topic(cluster, "after-zk-back")["errorCode"] == 0,
             timeout_s=60)

    def converged() -> bool:
        kraft = {t["name"]: t["topicId"] for t in show(cluster, 1)["topics"]}
        topics = parse_cluster(read_zookeeper(zookeeper)).topics
        zk = {n: kafka_uuid(t.znode.topic_id) for n, t in topics.items() if t.znode.topic_id is not None}
        return kraft == zk and "while-zk-down" in zk and "after-zk-back" in zk

    wait_for("ZooKeeper and KRaft to hold the same topics", converged, timeout_s=60)
    gauges = metrics(cluster)
    assert gauges["kafka_controller_KafkaController_ZooKeeperBlockingKRaftMillis"] > 0


def test_after_a_controller_failover_the_new_one_claims_zookeeper_and_dual_writes(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    cluster, zookeeper = migrated
    wait_for("dual write", lambda: migration_znode(zookeeper).get("kraft_metadata_offset", -1) > 0)
    old = json.loads(read_zookeeper(zookeeper).get("/controller").data)
    stopped = cluster.node(old["brokerid"])
    cluster.stop([stopped])
    try:
        def claimed() -> dict[str, Any] | None:
            holder = json.loads(read_zookeeper(zookeeper).get("/controller").data)
            return holder if holder["brokerid"] != stopped.node_id else None

        holder = wait_for("another controller to claim /controller", claimed)
        assert holder["kraftControllerEpoch"] > old["kraftControllerEpoch"]
        wait_for("writes through the new controller", lambda: create_topic(cluster, "after-failover")
                 ["errorCode"] == 0)
        wait_for("the topic in ZooKeeper",
                 lambda: "after-failover" in parse_cluster(read_zookeeper(zookeeper)).topics)
        assert migration_znode(zookeeper)["kraft_controller_id"] == holder["brokerid"]
    finally:
        cluster.start(stopped)
        cluster.save()
        cluster.wait_ready([stopped], 60)


def test_the_copy_is_appended_in_batches_inside_one_transaction(
        migrated: tuple[LocalCluster, ZooKeeperServer], monkeypatch: pytest.MonkeyPatch) -> None:
    _, zookeeper = migrated
    monkeypatch.setattr(migration_io, "RECORDS_PER_BATCH", 4)
    zk = migration_io.ZkMigrationClient(zookeeper.connect_string, node_id=1, cluster_id=CLUSTER_ID,
                                        timeout_s=5)
    try:
        batches = zk.translation_batches(MigrateMetadata(MetadataVersion.IBP_3_9_IV0))
        old = zk.translation_batches(MigrateMetadata(MetadataVersion.IBP_3_5_IV2))
    finally:
        zk.close()
    names = [[decode_metadata_record(r).spec.name for r in b] for b in batches]
    assert len(names) > 2 and all(len(b) <= 4 for b in names)
    assert names[0][0] == "BeginTransactionRecord" and names[-1][-2:] == ["ZkMigrationStateRecord",
                                                                          "EndTransactionRecord"]
    assert len(old) == 1  # no metadata transactions before 3.6-IV1: one atomic batch


def test_zookeeper_brokers_to_wait_for_are_registered_ones_and_those_assignments_name(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    _, zookeeper = migrated
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(30)
    try:
        client.ensure_path("/with-brokers")
        client.chroot = "/with-brokers"
        layout = Layout().cluster(CLUSTER_ID)
        layout.broker(1).broker(2)
        layout.topic("t", {0: [2, 3]}, topic_id=ORDERS)
        layout.write(client)
        ids = []
        for chroot in ("/with-brokers", ""):
            zk = migration_io.ZkMigrationClient(zookeeper.connect_string + chroot, node_id=1,
                                                cluster_id=CLUSTER_ID, timeout_s=5)
            try:
                ids.append(zk.broker_ids())
            finally:
                zk.close()
    finally:
        client.stop()
        client.close()
    # broker 3 is down but named by an assignment; in the module's tree broker 4 registered itself
    assert ids == [frozenset({1, 2, 3}), frozenset({BROKER})]


def test_controllers_rolled_without_the_flag_finalize_the_migration(
        migrated: tuple[LocalCluster, ZooKeeperServer]) -> None:
    """Last in the module: it ends the migration (POST_MIGRATION is permanent)."""
    cluster, zookeeper = migrated
    wait_for("dual write", lambda: migration_znode(zookeeper).get("kraft_metadata_offset", -1) > 0)
    nodes = ("--node", "1", "--node", "2", "--node", "3")
    code, _, err = cli("cluster", "roll", "--dir", str(cluster.root), "--config",
                       "zookeeper.metadata.migration.enable=false", *nodes)
    assert code == 0, err
    wait_for("POST_MIGRATION", lambda: show(LocalCluster.load(cluster.root), 1)["zkMigrationState"]
             == "POST_MIGRATION")
    rolled = LocalCluster.load(cluster.root)
    gauges = metrics(rolled)
    assert gauges["kafka_controller_KafkaController_ZkMigrationState"] == 3
    assert gauges["kafka_controller_KafkaController_MetadataType"] == 3  # KRaft
    assert not [k for k in gauges if k.startswith("kraftwerk_migration_driver_state")]  # no driver now
    assert create_topic(rolled, "kraft-only")["errorCode"] == 0
