"""A KRaft controller with ``zookeeper.metadata.migration.enable`` (KIP-866, Kafka 3.9's rules):
PRE_MIGRATION at bootstrap, readiness in its registration, writes refused before the migration and
past the lag bound, the fatal and finalizing activations."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftwerk.broker.node import ControllerCall
from kraftwerk.broker.zk_broker import MigratingZkBrokerLifecycle
from kraftwerk.controller import QuorumController
from kraftwerk.controller.activation import zk_migration_state_record
from kraftwerk.controller.migration_driver import MigrationDriverState, ZkMigrationLeadership
from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import ZkMigrationState
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion
from tests.controller.harness import (
    CLUSTER_ID,
    Log,
    activate,
    broker,
    call,
    controller,
    drive_broker,
    listener,
)

MIGRATING = {"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": "localhost:2181",
             "zookeeper.metadata.migration.max.lag.ms": "1000"}
MV39 = default_bootstrap_records(MetadataVersion.IBP_3_9_IV0)


def create_topic(log: Log, ctl: QuorumController, name: str, now_ms: int = 0) -> dict[str, Any]:
    body = {"topics": [{"name": name, "numPartitions": 1, "replicationFactor": 1, "assignments": [],
                        "configs": []}], "timeoutMs": 1000, "validateOnly": False}
    return call(log, ctl, 19, 7, body, now_ms)["topics"][0]


def migrating_cluster() -> tuple[Log, QuorumController]:
    log = Log()
    ctl = controller(bootstrap_records=MV39, static_configs=MIGRATING)
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2)
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    log.append(ctl.tick(200))
    return log, ctl


def test_bootstrap_starts_in_pre_migration_and_refuses_client_writes() -> None:
    log, ctl = migrating_cluster()
    assert ctl.image.features.zk_migration_state is ZkMigrationState.PRE_MIGRATION
    assert ctl.image.cluster.controllers[1].zk_migration_ready
    refused = create_topic(log, ctl, "t")
    assert refused["errorCode"] == Errors.NOT_CONTROLLER.code
    assert refused["errorMessage"] == "The controller is in pre-migration mode."


def test_api_versions_reports_zk_migration_ready() -> None:
    log, ctl = migrating_cluster()
    hello = {"clientSoftwareName": "t", "clientSoftwareVersion": "1"}
    assert call(log, ctl, 18, 3, hello)["zkMigrationReady"]
    assert not call(log, controller(bootstrap_records=MV39), 18, 3, hello)["zkMigrationReady"]


def test_dual_write_lag_past_the_bound_refuses_writes_with_a_retriable_error() -> None:
    log, ctl = migrating_cluster()
    driver = ctl.migration
    assert driver is not None
    log.append([zk_migration_state_record(ZkMigrationState.MIGRATION)])
    assert create_topic(log, ctl, "a")["errorCode"] == 0
    # the driver reached dual write and ZooKeeper holds everything so far
    driver.state = MigrationDriverState.DUAL_WRITE
    driver.leadership = ZkMigrationLeadership(1, 1, log.end - 1, 1, 0, 1, 1)
    driver.publish(ctl.image, log.end, 1, 5000)  # a batch appended at 5000 that ZooKeeper lacks
    assert create_topic(log, ctl, "b", now_ms=5900)["errorCode"] == 0
    refused = create_topic(log, ctl, "c", now_ms=6001)
    assert refused["errorCode"] == Errors.REQUEST_TIMED_OUT.code
    assert Errors.REQUEST_TIMED_OUT.retriable
    assert "zookeeper.metadata.migration.max.lag.ms=1000" in refused["errorMessage"]
    assert driver.blocking_ms(6500) == 499


def test_a_kraft_born_cluster_cannot_be_migrated() -> None:
    log = Log()
    plain = controller(bootstrap_records=MV39)
    log.controllers.append(plain)
    activate(log, plain)
    assert not any(r.spec.name == "ZkMigrationStateRecord" for r in log.decoded())  # 4.x: no NONE record
    flagged = controller(node_id=1, bootstrap_records=MV39, static_configs=MIGRATING)
    log.join(flagged)
    with pytest.raises(FatalFaultError, match="created in KRaft mode"):
        flagged.on_leader_change(1, 2, 0, False)


def test_bootstrap_below_3_4_cannot_migrate() -> None:
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.IBP_3_3_IV3),
                     static_configs=MIGRATING)
    with pytest.raises(FatalFaultError, match=r"3\.3-IV3 does not support ZK migrations"):
        ctl.on_leader_change(1, 1, 0, True)


def test_a_controller_without_the_flag_finalizes_the_migration() -> None:
    log, _ = migrating_cluster()
    log.append([zk_migration_state_record(ZkMigrationState.MIGRATION)])
    plain = controller(node_id=1, bootstrap_records=MV39)
    log.join(plain)
    act = plain.on_leader_change(1, 3, 0, False)
    assert act is not None
    log.append(act.records)
    assert plain.image.features.zk_migration_state is ZkMigrationState.POST_MIGRATION
    again = controller(node_id=1, bootstrap_records=MV39, static_configs=MIGRATING)
    log.join(again)
    assert again.on_leader_change(1, 4, 0, False) is None  # the flag is ignored after finalization


def zk_broker(node_id: int) -> MigratingZkBrokerLifecycle:
    return MigratingZkBrokerLifecycle(node_id, CLUSTER_ID, SoftwareVersion.for_release("3.9"),
                                      [listener(9092 + node_id * 10)], incarnation_id=uuid.uuid4())


def test_a_migrating_zk_broker_registers_and_is_unfenced_without_reading_the_log() -> None:
    log, ctl = migrating_cluster()
    zk = zk_broker(3)
    log.join(zk)
    for t in (300, 400):
        drive_broker(log, ctl, zk, t)
    registered = ctl.image.cluster.brokers[3]
    assert registered.is_migrating_zk_broker and not registered.fenced
    assert zk.broker_epoch == registered.epoch  # the KRaft epoch, apart from the ZooKeeper one


def test_a_controller_without_the_migration_flag_refuses_zk_brokers() -> None:
    log = Log()
    ctl = controller(bootstrap_records=MV39)
    log.controllers.append(ctl)
    activate(log, ctl)
    zk = zk_broker(3)
    body = ControllerCall(62, 5, zk.registration_body()).body_for(5)
    response = call(log, ctl, 62, 5, body)
    assert response["errorCode"] == Errors.BROKER_ID_NOT_REGISTERED.code
    assert 3 not in ctl.image.cluster.brokers
