"""KIP-1294 on the controller: static configs a 4.4 broker reports below 4.4-IV1 kept in memory
and written at the upgrade, and the pre-flight config audit of every metadata.version change."""

from __future__ import annotations

from typing import Any

import pytest

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller import QuorumController
from kraftwerk.controller.effects import AppendThenRespond
from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker

MV = MetadataVersion.from_version_string
IBP_4_4_IV1 = MetadataVersion.IBP_4_4_IV1
IV1 = IBP_4_4_IV1.feature_level
STATIC = {"log.segment.bytes": "2097152", "ssl.keystore.password": "planted-secret"}


def _cluster(static: dict[str, str] | None = STATIC, controller_configs: dict[str, str] | None = None,
             initial: str = "4.3-IV0") -> tuple[Log, QuorumController]:
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MV(initial)), release="4.4",
                     static_configs=controller_configs or {})
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, release="4.4", static_configs=static)
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    return log, ctl


def _update(log: Log, ctl: QuorumController, level: int, *, upgrade_type: int = 1,
            validate_only: bool = False,
            skip: bool = False) -> dict[str, Any]:
    body = {"timeoutMs": 1000, "validateOnly": validate_only, "skipConfigAudit": skip,
            "featureUpdates": [{"feature": "metadata.version", "maxVersionLevel": level,
                                "upgradeType": upgrade_type}]}
    return call(log, ctl, 57, 3, body)


def _set_cluster_default(log: Log, ctl: QuorumController, name: str, value: str) -> None:
    body = {"resources": [{"resourceType": int(ConfigResourceType.BROKER), "resourceName": "",
                           "configs": [{"name": name, "configOperation": 0, "value": value}]}],
            "validateOnly": False}
    assert call(log, ctl, 44, 1, body)["responses"][0]["errorCode"] == 0


def test_static_configs_wait_in_memory_then_the_audit_refuses_until_an_override_fixes_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log, ctl = _cluster()
    # 4.3-IV0 cannot persist them (RegisterBrokerRecord v4): kept in memory, never a password
    assert ctl.image.cluster.brokers[2].static_configs == ()
    reported = dict(ctl.cluster.reported_static_configs[2])
    assert reported["log.segment.bytes"] == "2097152" and "ssl.keystore.password" not in reported

    for validate_only in (True, False):
        r = _update(log, ctl, IV1, validate_only=validate_only)
        assert r["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
        assert "broker 2 log.segment.bytes=2097152 from STATIC_BROKER_CONFIG" in r["errorMessage"]
        assert "4.4-IV1" in r["errorMessage"]
    assert ctl.image.metadata_version is MV("4.3-IV0")
    # the controller does not announce an upgrade the audit refuses (it did, then refused it)
    assert not [m for m in caplog.messages if "Upgrading metadata.version" in m]

    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    assert _update(log, ctl, IV1)["errorCode"] == 0
    assert "[QuorumController id=1] Upgrading metadata.version from 4.3-IV0 to 4.4-IV1." in caplog.messages
    assert ctl.image.metadata_version is IBP_4_4_IV1
    # written at the upgrade: a controller failing over now reads them from the log
    assert dict(ctl.image.cluster.brokers[2].static_configs)["log.segment.bytes"] == "2097152"
    assert all(b"planted-secret" not in r for r in log.records)


def test_a_broker_that_never_reported_refuses_the_upgrade_unless_the_audit_is_skipped() -> None:
    log, ctl = _cluster(static=None)
    r = _update(log, ctl, IV1)
    assert r["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
    assert "broker(s) 2 never reported their static configs" in r["errorMessage"]
    assert _update(log, ctl, IV1, skip=True)["errorCode"] == 0
    assert ctl.image.metadata_version is IBP_4_4_IV1


def test_kip_920_auto_upgrade_goes_through_the_same_audit() -> None:
    auto = {"metadata.version": str(IBP_4_4_IV1), "auto.upgrade.metadata.version": "true",
            "auto.upgrade.metadata.version.interval.ms": "1000"}
    log, ctl = _cluster(controller_configs=auto)
    for now in (1500, 3000):
        log.append(ctl.tick(now))
    assert ctl.image.metadata_version is MV("4.3-IV0")  # refused: broker 2's 2 MiB segments
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    log.append(ctl.tick(4500))
    assert ctl.image.metadata_version is IBP_4_4_IV1


def test_a_broker_re_sends_its_static_configs_to_a_new_active_controller() -> None:
    log, ctl = _cluster()
    b = log.brokers[0]
    b.set_controller(ctl.node_id)
    successor = controller(node_id=3, voters=(1, 3), release="4.4")
    log.join(successor)
    log.epoch += 1
    activate(log, successor, now_ms=200)
    assert 2 not in successor.cluster.reported_static_configs  # memory does not fail over
    b.set_controller(successor.node_id)
    drive_broker(log, successor, b, 300)
    assert dict(successor.cluster.reported_static_configs[2])["log.segment.bytes"] == "2097152"
    audit = successor.features.config_audit(IV1, skip=False)
    assert audit is not None and audit.refused and audit.unknown_brokers == ()
    assert "broker 2 log.segment.bytes=2097152" in audit.message()


def test_a_lost_re_sent_registration_is_retried_after_the_backoff() -> None:
    log, _ = _cluster()
    b = log.brokers[0]
    b.set_controller(1)
    b.set_controller(3)
    [first] = b.poll(300)
    assert first.api_key == 62 and first.max_version == 6
    b.handle_controller_failure(300)
    assert b.poll(300) == []  # backing off, not a tight loop
    [again] = b.poll(300 + b.max_backoff_ms)
    assert again.api_key == 62


# --------------------------------------------------------------- found by the simulator's property (f)


def _alter(log: Log, ctl: QuorumController, rname: str, value: str | None, *, commit: bool = True
           ) -> dict[str, Any]:
    """IncrementalAlterConfigs of ``log.segment.bytes`` on a BROKER resource (SET, or DELETE for
    None); without ``commit`` the records stay appended but unreplayed (in flight)."""
    op = {"name": "log.segment.bytes", "configOperation": 1 if value is None else 0, "value": value}
    body = {"resources": [{"resourceType": int(ConfigResourceType.BROKER), "resourceName": rname,
                           "configs": [op]}], "validateOnly": False}
    if commit:
        return call(log, ctl, 44, 1, body)["responses"][0]
    reply = ctl.handle_request(44, 1, body, 0, next_offset=log.end)
    response = reply.response_body if isinstance(reply, AppendThenRespond) else reply.body
    return dict(response["responses"][0])


def test_deleting_the_override_that_covers_a_static_value_is_refused_at_its_level() -> None:
    log, ctl = _cluster()
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    assert _update(log, ctl, IV1)["errorCode"] == 0
    refused = _alter(log, ctl, "", None)
    assert refused["errorCode"] == Errors.INVALID_CONFIG.code
    assert refused["errorMessage"] == (
        "Broker 2 would be left with Invalid value 2097152 for configuration log.segment.bytes: Value must "
        "be at least 3145728 (since metadata.version 4.4-IV1), from STATIC_BROKER_CONFIG")
    assert _alter(log, ctl, "2", "3145728")["errorCode"] == 0  # its own override covers it now
    assert _alter(log, ctl, "", None)["errorCode"] == 0
    assert _alter(log, ctl, "2", None)["errorCode"] == Errors.INVALID_CONFIG.code


def test_a_config_change_in_flight_is_audited_and_an_upgrade_in_flight_binds_config_changes() -> None:
    log, ctl = _cluster()
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    # the delete is appended, not committed: the audit sees the broker's 2 MiB behind it
    assert _alter(log, ctl, "", None, commit=False)["errorCode"] == 0
    r = _update(log, ctl, IV1)
    assert r["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
    assert "broker 2 log.segment.bytes" in r["errorMessage"]
    ctl.on_leader_change(ctl.node_id, ctl.epoch + 1, 0, False)  # the append is lost with the leadership
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    body = {"timeoutMs": 1000, "validateOnly": False, "featureUpdates": [
        {"feature": "metadata.version", "maxVersionLevel": IV1, "upgradeType": 1}]}
    upgrade = ctl.handle_request(57, 3, body, 0, next_offset=log.end)
    assert isinstance(upgrade, AppendThenRespond)  # 4.4-IV1 in flight: 2 MiB is already refused
    assert _alter(log, ctl, "", "2097152", commit=False)["errorCode"] == Errors.INVALID_CONFIG.code


def test_a_new_broker_whose_static_value_breaks_the_level_is_refused_until_an_override_lets_it_in() -> None:
    log, ctl = _cluster(static={"log.segment.bytes": "4194304"})
    assert _update(log, ctl, IV1)["errorCode"] == 0
    late = broker(3, release="4.4", static_configs={"log.segment.bytes": "2097152"})
    log.join(late)
    late.set_controller(ctl.node_id)
    drive_broker(log, ctl, late, 200)
    assert late.broker_epoch < 0 and 3 not in ctl.image.cluster.brokers
    assert "log.segment.bytes: Value must be at least 3145728" in (late.last_refusal or "")
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")
    drive_broker(log, ctl, late, 200 + late.max_backoff_ms)
    assert late.broker_epoch >= 0 and 3 in ctl.image.cluster.brokers


def _failover(log: Log) -> QuorumController:
    successor = controller(node_id=3, voters=(1, 3), release="4.4")
    log.join(successor)
    log.epoch += 1
    activate(log, successor, now_ms=200)
    return successor


def test_after_a_failover_below_4_4_iv1_the_audit_waits_for_brokers_that_report() -> None:
    log, _ = _cluster(static={"log.segment.bytes": "524288"}, initial="3.9-IV0")
    successor = _failover(log)
    audit = successor.features.config_audit(MetadataVersion.IBP_4_0_IV0.feature_level, skip=False)
    assert audit is not None and audit.refused and audit.awaited_brokers == (2,)
    assert "broker(s) 2 have not reported their static configs to this controller yet" in audit.message()


def test_after_a_failover_an_override_hiding_an_unreported_static_value_stays() -> None:
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MV("4.0-IV0")), release="4.4")
    log.controllers.append(ctl)
    activate(log, ctl)
    _set_cluster_default(log, ctl, "log.segment.bytes", "4194304")  # hides the 512 KiB below
    b = broker(2, release="4.4", static_configs={"log.segment.bytes": "524288"})
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    assert b.broker_epoch >= 0
    b.set_controller(ctl.node_id)
    successor = _failover(log)
    refused = _alter(log, successor, "", None)
    assert refused["errorCode"] == Errors.INVALID_CONFIG.code
    assert "has not reported to this controller yet" in refused["errorMessage"]
    b.set_controller(successor.node_id)
    drive_broker(log, successor, b, 300)  # it re-sends its registration: now the value is known
    refused = _alter(log, successor, "", None)
    assert refused["errorCode"] == Errors.INVALID_CONFIG.code
    assert "Invalid value 524288 for configuration log.segment.bytes" in refused["errorMessage"]
