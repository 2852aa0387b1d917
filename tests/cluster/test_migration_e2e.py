"""KIP-866 end to end on real processes: a ``cluster up --zookeeper`` cluster with a topic, KRaft
controllers in migration mode join, the ZooKeeper brokers are rolled with the migration flag and
register with the KRaft quorum as migrating ZK brokers, and the driver reaches DUAL_WRITE."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import LocalCluster
from kraftwerk.runtime.metrics import migration_summary, scrape
from kraftwerk.runtime.migration_steps import add_migration_controllers, broker_migration_configs, zk_brokers
from kraftwerk.runtime.zookeeper import zookeeper_installed
from tests.cluster.helpers import cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.zookeeper]

TOPIC = "orders"


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if not zookeeper_installed():
        pytest.skip("Debian's zookeeper package is not installed (scripts/setup.sh installs it)")
    root = tmp_path_factory.mktemp("migration-e2e")
    with cluster_up(root, "--zookeeper", "--brokers", "3", "--config",
                    "zookeeper.session.timeout.ms=6000") as up:
        try:
            yield up
        finally:
            saved = LocalCluster.load(root)
            saved.stop(saved.controllers)


def controller_gauges(cluster: LocalCluster) -> dict[str, float] | None:
    """The active KRaft controller's gauges (None while there is none)."""
    active = cluster.active_controller()
    info = None if active is None else cluster.ready_info(cluster.node(active))
    if info is None or not info.get("metricsPort"):
        return None
    return scrape("127.0.0.1", info["metricsPort"])


def driver_state(cluster: LocalCluster, state: str) -> dict[str, float] | None:
    """The active controller's gauges once its driver is in ``state``."""
    gauges = controller_gauges(cluster)
    summary = migration_summary(gauges) if gauges else None
    return gauges if summary is not None and summary.get("driverState") == state else None


def test_zookeeper_brokers_register_with_the_quorum_and_dual_write_begins(cluster: LocalCluster) -> None:
    with AdminClient(zk_brokers(cluster)[0].address) as admin:
        body = {"topics": [{"name": TOPIC, "numPartitions": 3, "replicationFactor": 3, "assignments": [],
                            "configs": [{"name": "retention.ms", "value": "86400000"}]}],
                "timeoutMs": 10000, "validateOnly": False}
        assert admin.call(19, body)["topics"][0]["errorCode"] == 0
    controllers = add_migration_controllers(cluster)
    for node in controllers:
        cluster.start(node)
    cluster.wait_ready(controllers, 60)
    gauges = wait_for("the driver waiting for brokers", lambda: driver_state(cluster, "WAIT_FOR_BROKERS"))
    assert gauges["kafka_controller_KafkaController_MigratingZkBrokerCount"] == 0
    for broker in zk_brokers(cluster):
        broker.extra.update(broker_migration_configs(cluster))
    cluster.roll(None, [b.node_id for b in zk_brokers(cluster)], keep_software=True)
    gauges = wait_for("dual write", lambda: driver_state(cluster, "DUAL_WRITE"))
    assert gauges["kafka_controller_KafkaController_MigratingZkBrokerCount"] == 3
