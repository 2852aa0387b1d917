"""Readiness checks over trees in Kafka's layout: each precondition fails for its own reason only."""

from __future__ import annotations

import uuid

import pytest

from kraftwerk.migration.errors import MigrationError
from kraftwerk.migration.readiness import (
    BrokerConfigFacts,
    Status,
    broker_facts_from_properties,
    check_readiness,
)
from kraftwerk.migration.state import parse_cluster
from tests.migration.layout import Layout, sample_layout


def ready_v6(ibp: str = "3.9-IV0") -> Layout:
    """A cluster whose brokers say in their registration (KIP-866 v6) that they are ready."""
    layout, _ = sample_layout()
    for b in (1, 2, 3):
        layout.broker(b, version=6, migration={"isReady": True, "clusterId": "x", "ibp": ibp})
    return layout


def statuses(layout: Layout, configs: dict[int, BrokerConfigFacts] | None = None) -> dict[str, Status]:
    report = check_readiness(parse_cluster(layout.tree()), configs)
    return {c.name: c.status for c in report.checks}


def failed(layout: Layout, configs: dict[int, BrokerConfigFacts] | None = None) -> set[str]:
    return {n for n, s in statuses(layout, configs).items() if s is not Status.PASS}


def test_a_ready_cluster_passes_everything() -> None:
    report = check_readiness(parse_cluster(ready_v6().tree()))
    assert report.ready and not report.blockers
    assert report.sizes.topics == 3 and report.sizes.partitions == 6 and report.sizes.acls == 4
    # 6 partitions + 3 topics + 3 topic configs + 2 broker configs + 1 SCRAM + 4 quotas + 1 producer ids +
    # 4 ACLs = 24 records, + ZkMigrationStateRecord + Begin/EndTransactionRecord
    assert report.sizes.estimated_records == 27


@pytest.mark.parametrize(("change", "check"), [
    (lambda lo: lo.broker(2, version=6, migration={"isReady": False, "ibp": "3.9"}), "migration-enabled"),
    (lambda lo: lo.broker(2, version=6, migration={"isReady": True, "ibp": "3.3-IV3"}),
     "inter-broker-protocol"),
    (lambda lo: lo.broker(2, version=6, migration={"isReady": True, "ibp": "2.8-IV1"}),
     "inter-broker-protocol"),
    # a v4 registration has no kraftMigration object: its flag and IBP are unknown too
    (lambda lo: lo.broker(3, version=4, migration=None),
     {"registration-version", "inter-broker-protocol", "migration-enabled"}),
    (lambda lo: lo.topic("x", {0: [1, 9]}, topic_id=uuid.UUID(int=1)), "offline-brokers"),
    (lambda lo: lo.delete_topic("orders"), "pending-deletions"),
    (lambda lo: lo.topic("x", {0: [1, 2]}, topic_id=uuid.UUID(int=1), adding={0: [2]}),
     "pending-reassignments"),
    (lambda lo: lo.put("/admin/reassign_partitions",
                       b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[3,2,1]}]}'),
     "pending-reassignments"),
    (lambda lo: lo.topic("legacy", {0: [1]}, topic_id=None), "topic-ids"),
    (lambda lo: lo.put("/config/topics/orders", b"{oops"), "znodes"),
    (lambda lo: lo.put("/migration", b'{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":2,'
                                     b'"kraft_metadata_offset":1543,"kraft_metadata_epoch":2}'),
     "migration-state"),
    (lambda lo: lo.config("brokers", "1", {
        "ssl.keystore.password": "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC"}),
     "unsupported-features"),
])
def test_each_precondition(change: object, check: str | set[str]) -> None:
    layout = ready_v6()
    change(layout)  # type: ignore[operator]
    assert failed(layout) == (check if isinstance(check, set) else {check})


def test_versions_five_need_the_brokers_configs(tmp_path: object) -> None:
    layout, _ = sample_layout()
    assert statuses(layout)["migration-enabled"] is Status.UNKNOWN
    props = "broker.id={}\nzookeeper.metadata.migration.enable=true\ninter.broker.protocol.version=3.6\n" \
            "controller.quorum.bootstrap.servers=c:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs={}\n"
    configs = {b: broker_facts_from_properties(props.format(b, "/a"), f"b{b}") for b in (1, 2, 3)}
    assert failed(layout, configs) == set()
    configs[3] = broker_facts_from_properties(props.format(3, "/a,/b"), "b3")  # JBOD below 3.7-IV2
    assert failed(layout, configs) == {"unsupported-features"}
    configs[3] = broker_facts_from_properties(props.format(3, "/a").replace("controller.listener", "x"), "b3")
    assert failed(layout, configs) == {"migration-enabled"}
    with pytest.raises(MigrationError, match=r"broker\.id is not a non-negative integer"):
        broker_facts_from_properties("broker.id=-1\n", "generated.properties")


def test_generated_broker_ids_fail() -> None:
    layout = ready_v6()
    layout.broker(1001, version=6, migration={"isReady": True, "ibp": "3.9"})
    layout.put("/brokers/seqid", None)  # one id handed out: dataVersion 1
    assert failed(layout) == {"broker-ids"}
