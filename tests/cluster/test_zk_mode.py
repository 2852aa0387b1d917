"""``kraftwerk cluster up --zookeeper``: a real ZooKeeper and three ZooKeeper-mode brokers (software
3.9). kafka-python and confluent-kafka create a topic, produce and consume; the znodes, read with
kazoo, are Kafka's layout (parsed with ``migration/znodes.py``, keys and versions as the reference
gives them); ``kraftwerk topics`` / ``configs`` work against it; the KIP-866 readiness check runs
against the live cluster; a killed broker's partitions move while a producer keeps producing, and
the broker rejoins the ISRs when it comes back."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.migration.reader import connect, read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.znodes import (
    parse_broker,
    parse_cluster_id,
    parse_config_change,
    parse_controller,
    parse_controller_epoch,
    parse_entity_config,
    parse_feature,
    parse_partition_state,
    parse_topic,
)
from kraftwerk.runtime.local_cluster import LocalCluster, free_ports, pid_alive
from kraftwerk.runtime.zookeeper import zookeeper_installed
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.zookeeper, pytest.mark.timeout(300)]

TOPIC = "zk-orders"
PARTITIONS = 3
#: The keys of Kafka 3.9's znodes (reference/zookeeper-layout.md's examples).
BROKER_KEYS = {"features", "listener_security_protocol_map", "endpoints", "jmx_port", "port", "host",
               "version", "timestamp"}
STATE_KEYS = {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
TOPIC_KEYS = {"partitions", "topic_id", "adding_replicas", "removing_replicas", "version"}
CONTROLLER_KEYS = {"version", "brokerid", "timestamp", "kraftControllerEpoch"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if not zookeeper_installed():
        pytest.skip("Debian's zookeeper package is not installed (scripts/setup.sh installs it)")
    with cluster_up(tmp_path_factory.mktemp("zk"), "--zookeeper", "--brokers", "3",
                    "--config", "zookeeper.session.timeout.ms=6000") as up:
        yield up


def _zk(cluster: LocalCluster) -> str:
    assert cluster.zookeeper is not None
    return cluster.zookeeper.connect_string


def _partitions(bootstrap: str) -> dict[int, dict[str, Any]]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        [topic] = admin.describe_topics([TOPIC])
        return {p["partition_index"]: p for p in topic["partitions"]}
    finally:
        admin.close()


def _produce(bootstrap: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=100, retry_backoff_ms=300,
                             max_in_flight_requests_per_connection=1, request_timeout_ms=15_000)
    futures = [producer.send(TOPIC, value=v, partition=i % PARTITIONS) for i, v in enumerate(values)]
    producer.flush()
    for f in futures:
        f.get(timeout=60)
    producer.close()


def _consume(bootstrap: str) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    ends = consumer.end_offsets(tps)
    out = []
    for m in consumer:
        out.append(m.value)
        if all(consumer.position(tp) >= ends[tp] for tp in tps):
            break
    consumer.close()
    return out


def test_clients_create_a_topic_produce_and_consume(cluster: LocalCluster) -> None:
    from confluent_kafka import Producer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    result = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, topic_configs={"retention.ms": "86400000"})])
    admin.close()
    assert [t["error_code"] for t in result["topics"]] == [0]
    parts = _partitions(cluster.bootstrap_servers)
    assert sorted(parts) == [0, 1, 2] and all(sorted(p["isr_nodes"]) == [1, 2, 3] for p in parts.values())
    _produce(cluster.bootstrap_servers, [b"kp-%d" % i for i in range(300)])
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True})
    errors: list[Any] = []
    for i in range(300):
        producer.produce(TOPIC, value=b"ck-%d" % i, partition=i % PARTITIONS,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0 and errors == []
    got = _consume(cluster.bootstrap_servers)
    assert sorted(got) == sorted([b"kp-%d" % i for i in range(300)] + [b"ck-%d" % i for i in range(300)])


def test_znodes_are_kafkas_layout(cluster: LocalCluster) -> None:
    code, out, err = cli("configs", "--alter", "--bootstrap-server", cluster.bootstrap_servers,
                         "--topic", TOPIC, "--add-config", "segment.ms=600000")
    assert code == 0, err
    with connect(_zk(cluster)) as zk:
        data, _ = zk.get("/cluster/id")
        assert parse_cluster_id("/cluster/id", data) == cluster.cluster_id
        data, stat = zk.get("/controller")
        assert set(json.loads(data)) == CONTROLLER_KEYS and stat.ephemeralOwner != 0
        controller = parse_controller("/controller", data)
        assert (controller.version, controller.kraft_controller_epoch) == (2, -1)
        assert controller.broker_id in (1, 2, 3)
        assert parse_controller_epoch("/controller_epoch", zk.get("/controller_epoch")[0]) >= 1
        feature = parse_feature("/feature", zk.get("/feature")[0])
        assert (feature.version, feature.enabled, feature.features) == (2, True, {})
        for b in (1, 2, 3):
            data, stat = zk.get(f"/brokers/ids/{b}")
            assert set(json.loads(data)) == BROKER_KEYS and stat.ephemeralOwner != 0
            reg = parse_broker(f"/brokers/ids/{b}", data, stat)
            assert reg.version == 5 and reg.endpoints == (f"PLAINTEXT://{cluster.node(b).address}",)
            assert dict(reg.security_protocols) == {"PLAINTEXT": "PLAINTEXT"}
            assert json.loads(data)["features"] == {}
        data, _ = zk.get(f"/brokers/topics/{TOPIC}")
        assert set(json.loads(data)) == TOPIC_KEYS
        topic = parse_topic(f"/brokers/topics/{TOPIC}", data)
        assert topic.version == 3 and topic.topic_id is not None and sorted(topic.partitions) == [0, 1, 2]
        for p, replicas in topic.partitions.items():
            path = f"/brokers/topics/{TOPIC}/partitions/{p}/state"
            data, stat = zk.get(path)
            assert set(json.loads(data)) == STATE_KEYS
            state = parse_partition_state(path, data, stat)
            assert state.leader == replicas[0] and sorted(state.isr) == [1, 2, 3]
        config = parse_entity_config(f"/config/topics/{TOPIC}", zk.get(f"/config/topics/{TOPIC}")[0])
        assert config == {"retention.ms": "86400000", "segment.ms": "600000"}
        changes = [parse_config_change(f"/config/changes/{c}", zk.get(f"/config/changes/{c}")[0])
                   for c in sorted(zk.get_children("/config/changes"))]
        assert changes[-1] == f"topics/{TOPIC}"
        tree = parse_cluster(read_tree(zk))
    assert tree.invalid == [] and sorted(tree.brokers) == [1, 2, 3]
    code, out, _ = cli("topics", "--describe", "--bootstrap-server", cluster.bootstrap_servers,
                       "--topic", TOPIC, "--output", "json")
    [described] = json.loads(out)
    assert code == 0 and described["configs"] == config and described["partitionCount"] == PARTITIONS


def test_kraftwerk_topics_create_grow_and_delete(cluster: LocalCluster) -> None:
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    code, _, err = cli("topics", "--create", *bootstrap, "--topic", "zk-grow", "--partitions", "1",
                       "--replication-factor", "2")
    assert code == 0, err
    code, _, err = cli("topics", "--alter", *bootstrap, "--topic", "zk-grow", "--partitions", "3")
    assert code == 0, err
    code, out, _ = cli("topics", "--describe", *bootstrap, "--topic", "zk-grow", "--output", "json")
    [described] = json.loads(out)
    assert described["partitionCount"] == 3 and all(p["leader"] >= 0 for p in described["partitions"])
    with connect(_zk(cluster)) as zk:
        topic = parse_topic("/brokers/topics/zk-grow", zk.get("/brokers/topics/zk-grow")[0])
        assert sorted(topic.partitions) == [0, 1, 2]
        assert zk.exists("/brokers/topics/zk-grow/partitions/2/state") is not None
    code, _, err = cli("topics", "--delete", *bootstrap, "--topic", "zk-grow")
    assert code == 0, err
    with connect(_zk(cluster)) as zk:
        assert zk.exists("/brokers/topics/zk-grow") is None and zk.exists("/config/topics/zk-grow") is None
        assert zk.get_children("/admin/delete_topics") == []
    code, out, _ = cli("topics", "--list", *bootstrap)
    assert out.split() == [TOPIC]


def test_the_migration_check_runs_against_the_live_cluster(cluster: LocalCluster) -> None:
    configs = [str(n.config_path(cluster.root)) for n in cluster.nodes]
    code, out, _ = cli("migration", "check", "--zookeeper", _zk(cluster), "--output", "json",
                         *[a for c in configs for a in ("--broker-config", c)])
    report = json.loads(out)
    checks = {c["check"]: c["status"] for c in report["checks"]}
    assert report["clusterId"] == cluster.cluster_id
    assert checks["brokers"] == "PASS" and checks["registration-version"] == "PASS"
    assert checks["inter-broker-protocol"] == "PASS"
    assert checks["migration-enabled"] == "FAIL" and code == 1  # zookeeper.metadata.migration.enable is off


def test_a_killed_broker_loses_its_partitions_while_clients_keep_producing(cluster: LocalCluster) -> None:
    from kafka.errors import KafkaError

    victim = _partitions(cluster.bootstrap_servers)[0]["leader_id"]
    node = cluster.node(victim)
    survivors = ",".join(n.address for n in cluster.nodes if n.node_id != victim)
    produced: list[bytes] = []
    failures: list[BaseException] = []

    def keep_producing() -> None:
        try:
            for batch in range(12):
                values = [b"during-%d-%d" % (batch, i) for i in range(30)]
                _produce(survivors, values)
                produced.extend(values)
                time.sleep(0.5)
        except BaseException as exc:  # reported by the test thread
            failures.append(exc)

    producer = threading.Thread(target=keep_producing)
    producer.start()
    time.sleep(1)
    assert node.pid is not None
    os.kill(node.pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    parts: dict[int, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        try:  # the admin client may still try the dead broker while the cluster fails over
            parts = _partitions(survivors)
        except KafkaError:
            continue
        if all(p["leader_id"] not in (victim, -1) and victim not in p["isr_nodes"] for p in parts.values()):
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"leadership did not move off broker {victim}: {parts}")
    producer.join(120)
    assert failures == [] and len(produced) == 360
    assert set(produced) <= set(_consume(survivors))
    while pid_alive(node.pid):
        time.sleep(0.05)
    code, _, err = cli("cluster", "up", "--dir", str(cluster.root))
    assert code == 0, err
    deadline = time.monotonic() + 60
    while sorted(_partitions(cluster.bootstrap_servers)[0]["isr_nodes"]) != [1, 2, 3]:
        assert time.monotonic() < deadline, "the restarted broker did not rejoin the ISR"
        time.sleep(0.5)


def test_a_broker_that_had_to_be_killed_restarts_once_zookeeper_expired_its_session(
        cluster: LocalCluster) -> None:
    """A stop that must SIGKILL a ZooKeeper broker (a stopped process ignores SIGTERM) returns only once
    ZooKeeper has expired the dead broker's session: a restart before that finds /brokers/ids/3 taken."""
    current = LocalCluster.load(cluster.root)
    node = current.node(3)
    assert node.pid is not None
    os.kill(node.pid, signal.SIGSTOP)
    assert current.stop([node], grace_s=1) == [3]
    with connect(_zk(cluster)) as zk:
        assert zk.exists("/brokers/ids/3") is None
    current.start(node)
    assert current.wait_ready([node], 60) == {}


def test_roll_with_the_migration_flag_and_status(cluster: LocalCluster) -> None:
    roll = ("cluster", "roll", "--dir", str(cluster.root), "--node", "2", "--output", "json",
            "--config", "zookeeper.metadata.migration.enable=true")
    running = LocalCluster.load(cluster.root).node(2).pid
    code, _, err = cli(*roll)  # Kafka's broker refuses the flag without a controller quorum
    assert code == 1 and err.startswith("If using zookeeper.metadata.migration.enable, either "
                                        "controller.quorum.bootstrap.servers must contain")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert running is not None and pid_alive(running)  # refused before the broker was stopped
    assert LocalCluster.load(cluster.root).node(2).pid == running
    (nowhere,) = free_ports(1)  # no controller answers there yet: the broker keeps trying
    quorum = {"controller.quorum.voters": f"3000@127.0.0.1:{nowhere}",
              "controller.listener.names": "CONTROLLER",
              "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}
    code, out, err = cli(*roll, *[a for k, v in quorum.items() for a in ("--config", f"{k}={v}")])
    assert code == 0, err
    assert json.loads(out)["restarted"][0]["softwareVersion"] == "3.9"
    with connect(_zk(cluster)) as zk:
        data, stat = zk.get("/brokers/ids/2")
    reg = parse_broker("/brokers/ids/2", data, stat)  # KIP-866's registration v6 says it is ready
    assert reg.version == 6 and reg.migration is not None
    assert (reg.migration.is_ready, reg.migration.cluster_id, reg.migration.ibp) == (True, cluster.cluster_id,
                                                                                      "3.9-IV0")
    code, out, _ = cli("migration", "check", "--zookeeper", _zk(cluster), "--output", "json")
    [flag] = [c for c in json.loads(out)["checks"] if c["check"] == "migration-enabled"]
    assert code == 1 and flag["status"] == "UNKNOWN" and "brokers 1, 3 is not known" in flag["reason"]
    code, out, _ = cli("cluster", "status", "--dir", str(cluster.root), "--output", "json")
    status = json.loads(out)
    rows = status["nodes"]
    assert status["zookeeper"] == {"connect": _zk(cluster), "pid": cluster.zookeeper.pid, "state": "running"}
    assert code == 0 and [(r["nodeId"], r["roles"], r["state"]) for r in rows] == [
        (1, "zk-broker", "ready"), (2, "zk-broker", "ready"), (3, "zk-broker", "ready")]
    assert len(_consume(cluster.bootstrap_servers)) >= 960


@pytest.mark.parametrize(("flags", "message"), [
    (("--controllers", "1"), "--controllers cannot be used with --zookeeper"),
    (("--release-version", "3.9-IV0"), "--release-version cannot be used with --zookeeper"),
    (("--software-version", "4.0"), "ZooKeeper mode was removed in Kafka 4.0"),
])
def test_up_refuses_what_a_zookeeper_mode_cluster_cannot_be(tmp_path: Path, flags: tuple[str, ...],
                                                          message: str) -> None:
    code, _, err = cli("cluster", "up", "--zookeeper", "--dir", str(tmp_path / "c"), *flags)
    assert code == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "c").exists()
