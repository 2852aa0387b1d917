"""KIP-866 end to end on real processes, on one ``cluster up --zookeeper`` cluster: first a migration
to DUAL_WRITE that is rolled back (changes made through KRaft stay in ZooKeeper), then the whole
``cluster migrate`` to POST_MIGRATION under a producer with acks=all that loses nothing."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.migration import encode
from kraftwerk.migration.reader import connect
from kraftwerk.migration.znodes import AclEntry, parse_entity_config
from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import LocalCluster
from kraftwerk.runtime.migration_steps import migration_state, zk_brokers
from kraftwerk.runtime.zookeeper import zookeeper_installed
from tests.cluster.helpers import acked_missing, cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.zookeeper]

TOPIC = "orders"
PARTITIONS = 3
READ, ALLOW = 3, 3  # Kafka's AclOperation.READ, AclPermissionType.ALLOW


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def admin_call(cluster: LocalCluster, api_key: int, body: dict[str, Any]) -> dict[str, Any]:
    with AdminClient(cluster.bootstrap_servers.split(",")[0]) as admin:
        result: dict[str, Any] = admin.call(api_key, body)
        return result


def create_topic(cluster: LocalCluster, name: str, configs: dict[str, str] | None = None) -> None:
    body = {"topics": [{"name": name, "numPartitions": PARTITIONS, "replicationFactor": 3, "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeoutMs": 15000, "validateOnly": False}
    assert admin_call(cluster, 19, body)["topics"][0]["errorCode"] == 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if not zookeeper_installed():
        pytest.skip("Debian's zookeeper package is not installed (scripts/setup.sh installs it)")
    root = tmp_path_factory.mktemp("migration-e2e")
    with cluster_up(root, "--zookeeper", "--brokers", "3", "--config",
                    "zookeeper.session.timeout.ms=6000") as up:
        create_topic(up, TOPIC, {"retention.ms": "86400000"})
        with connect(zk_connect(up)) as zk:  # ZooKeeper-mode brokers have no CreateAcls: the znode
            zk.create(f"/kafka-acl/Topic/{TOPIC}", encode.encode_acls(
                [AclEntry("User:alice", ALLOW, READ, "*")]), makepath=True)
        yield up  # `cluster down` stops what the migration added too


def zk_connect(cluster: LocalCluster) -> str:
    assert cluster.zookeeper is not None
    return cluster.zookeeper.connect_string


def produce(bootstrap: str, topic: str, values: list[bytes]) -> dict[tuple[int, int], bytes]:
    """Each value acknowledged (acks=all), by the (partition, offset) the leader answered."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=100, retry_backoff_ms=300,
                             max_in_flight_requests_per_connection=1, request_timeout_ms=15_000)
    futures = [(v, producer.send(topic, value=v, partition=i % PARTITIONS)) for i, v in enumerate(values)]
    producer.flush()
    acked: dict[tuple[int, int], bytes] = {}
    for v, f in futures:
        md = f.get(timeout=60)
        acked[(md.partition, md.offset)] = v
    producer.close()
    return acked


def test_rollback_from_dual_write_keeps_what_kraft_changed_in_zookeeper(cluster: LocalCluster) -> None:
    code, _, err = cli("cluster", "migrate", "--dir", str(cluster.root), "--to-phase", "controllers",
                       "--timeout", "0.001")  # the controllers cannot be ready that fast
    assert code == 1 and err.startswith("Migration phase controllers failed: Timed out after 0.001s")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, _, err = cli("cluster", "migrate", "--dir", str(cluster.root), "--to-phase", "controllers")
    assert code == 0, err  # resumed: the same controllers, now waited for

    def unready() -> str:
        code, out, _ = cli("cluster", "status", "--dir", str(cluster.root), "--output", "json")
        return str((json.loads(out)["migration"] or {}).get("unreadyBrokers", "")) if code == 0 else ""

    flagless = "has not enabled zookeeper.metadata.migration.enable"
    assert wait_for("the brokers named", unready) == "; ".join(f"{b}: {flagless}" for b in (1, 2, 3))
    code, out, err = cli("cluster", "migrate", "--dir", str(cluster.root), "--to-phase", "dual-write",
                         "--output", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [p["phase"] for p in report["phases"]] == ["brokers-migrating", "dual-write"]  # resumed
    assert report["nextPhase"] == "brokers-kraft" and not report["finalized"]
    migrated = LocalCluster.load(cluster.root)
    create_topic(migrated, "made-in-dual-write")  # forwarded by a ZK broker to the KRaft controller
    body = {"resources": [{"resourceType": 2, "resourceName": TOPIC, "configs": [
        {"name": "segment.ms", "configOperation": 0, "value": "3600000"}]}], "validateOnly": False}
    assert admin_call(migrated, 44, body)["responses"][0]["errorCode"] == 0

    def in_zookeeper() -> bool:
        with connect(zk_connect(cluster)) as zk:
            if zk.exists("/brokers/topics/made-in-dual-write") is None:
                return False
            data, _ = zk.get(f"/config/topics/{TOPIC}")
        return parse_entity_config(f"/config/topics/{TOPIC}", data).get("segment.ms") == "3600000"

    wait_for("the dual writes", in_zookeeper)
    code, out, err = cli("cluster", "rollback-migration", "--dir", str(cluster.root), "--output", "json")
    assert code == 0, err
    assert json.loads(out)["rolledBack"]
    back = LocalCluster.load(cluster.root)
    assert [n.roles for n in back.nodes] == ["zk-broker"] * 3 and not back.controllers
    with connect(zk_connect(cluster)) as zk:
        assert zk.exists("/migration") is None
        holder = json.loads(wait_for("a ZooKeeper broker controller", lambda: zk.exists("/controller")
                                     and zk.get("/controller")[0]))
        assert holder["brokerid"] in (1, 2, 3) and holder.get("kraftControllerEpoch", -1) == -1
    assert in_zookeeper()
    create_topic(back, "after-rollback")  # the ZooKeeper controller is in charge again
    acked = produce(back.bootstrap_servers, "after-rollback", [b"after-rollback-%d" % i for i in range(30)])
    assert len(acked) == 30 and acked_missing(back.bootstrap_servers, "after-rollback", acked) == []


def test_migrate_reaches_post_migration_under_an_acks_all_producer(cluster: LocalCluster) -> None:
    """Runs after the rollback: the cluster migrates again from ZooKeeper mode, to the end."""
    bootstrap = LocalCluster.load(cluster.root).bootstrap_servers  # same ports in both modes
    acknowledged: dict[tuple[int, int], bytes] = {}
    failures: list[BaseException] = []
    states: set[tuple[str, str]] = set()
    stop = threading.Event()

    def keep_producing() -> None:
        batch = 0
        try:
            while not stop.is_set():
                values = [b"m-%d-%d" % (batch, i) for i in range(20)]
                acknowledged.update(produce(bootstrap, TOPIC, values))
                batch += 1
        except BaseException as exc:  # reported by the test thread
            failures.append(exc)

    def scrape_states() -> None:
        while not stop.is_set():
            seen = migration_state(LocalCluster.load(cluster.root))
            if seen is not None:
                states.add((seen["zkMigrationState"], seen.get("driverState", "-")))
            time.sleep(0.1)

    threads = [threading.Thread(target=keep_producing), threading.Thread(target=scrape_states)]
    for t in threads:
        t.start()
    try:
        code, out, err = cli("cluster", "migrate", "--dir", str(cluster.root), "--output", "json")
    finally:
        stop.set()
        for t in threads:
            t.join(180)
    assert code == 0, err
    report = json.loads(out)
    assert [p["phase"] for p in report["phases"]] == ["controllers", "brokers-migrating", "dual-write",
                                                      "brokers-kraft", "finalize"]
    assert report["finalized"]
    assert failures == [] and len(acknowledged) >= 20
    missing = acked_missing(bootstrap, TOPIC, acknowledged)  # by offset: a loss cannot hide behind a timeout
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged lost: {missing[:10]}"
    assert ("MIGRATION", "DUAL_WRITE") in states  # scraped while the brokers rolled
    final = migration_state(LocalCluster.load(cluster.root))  # the scraper may stop just before it
    assert final is not None and final["zkMigrationState"] == "POST_MIGRATION" and "driverState" not in final

    done = LocalCluster.load(cluster.root)
    assert not zk_brokers(done) and {n.roles for n in done.brokers} == {"broker"}
    controller = done.controllers[0]
    log_dir = Path(controller.data_dir(done.root)) / "__cluster_metadata-0"
    code, out, err = cli("metadata", "show", "--log-dir", str(log_dir), "--output", "json")
    assert code == 0, err
    image = json.loads(out)
    assert image["zkMigrationState"] == "POST_MIGRATION"
    assert {TOPIC, "made-in-dual-write", "after-rollback"} <= {t["name"] for t in image["topics"]}
    configs = {(c["resourceType"], c["resourceName"]): c["configs"] for c in image["configs"]}
    assert configs[("TOPIC", TOPIC)] == {"retention.ms": "86400000", "segment.ms": "3600000"}
    assert [(a["resourceName"], a["principal"], a["operation"]) for a in image["acls"]] == [
        (TOPIC, "User:alice", "READ")]
