"""KIP-920 on the controller: the static metadata.version, the auto-upgrade timer (upgrade only,
through the UpdateFeatures checks), and manual metadata.version changes refused while it is on."""

from __future__ import annotations

from typing import Any

import pytest

from kraftwerk.config import ConfigError
from kraftwerk.controller import QuorumController
from kraftwerk.controller.auto_upgrade import static_metadata_version
from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker

MV = MetadataVersion.from_version_string
AUTO = {
    "metadata.version": "4.0-IV3",
    "auto.upgrade.metadata.version": "true",
    "auto.upgrade.metadata.version.interval.ms": "1000",
}


def _cluster(
    static: dict[str, str], *, release: str = "4.3", broker_release: str = "4.3"
) -> tuple[Log, QuorumController]:
    log = Log()
    ctl = controller(
        bootstrap_records=default_bootstrap_records(MV("3.9-IV0")), static_configs=static, release=release
    )
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, release=broker_release)
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    return log, ctl


def _tick(log: Log, ctl: QuorumController, now_ms: int) -> None:
    log.append(ctl.tick(now_ms))


def _update(
    log: Log, ctl: QuorumController, version: int, level: int, feature: str = "metadata.version"
) -> dict[str, Any]:
    body = {
        "timeoutMs": 1000,
        "featureUpdates": [
            {"feature": feature, "maxVersionLevel": level, "upgradeType": 1, "allowDowngrade": False}
        ],
        "validateOnly": False,
    }
    return call(log, ctl, 57, version, body)


def test_static_metadata_version_values() -> None:
    software = SoftwareVersion.for_release("4.3")
    assert static_metadata_version({"metadata.version": "4.0"}, software) is MV("4.0-IV3")
    assert static_metadata_version({"inter.broker.protocol.version": "3.9-IV0"}, software) is MV("3.9-IV0")
    assert static_metadata_version({}, software) is None
    with pytest.raises(ConfigError, match=r"Invalid value bogus for configuration metadata\.version"):
        static_metadata_version({"metadata.version": "bogus"}, software)
    with pytest.raises(ConfigError, match=r"software \(3.9\) supports metadata.version 3.0-IV1 to 3.9-IV0"):
        static_metadata_version({"metadata.version": "4.0-IV3"}, SoftwareVersion.for_release("3.9"))


def test_auto_upgrade_reaches_the_static_level_after_an_interval_and_never_downgrades() -> None:
    log, ctl = _cluster(AUTO)
    _tick(log, ctl, 200)  # arms the timer (and registers the controller)
    assert ctl.next_deadline_ms() is not None and ctl.next_deadline_ms() <= 1200
    _tick(log, ctl, 1100)
    assert ctl.image.metadata_version is MV("3.9-IV0")
    _tick(log, ctl, 1200)
    assert ctl.image.metadata_version is MV("4.0-IV3")
    assert log.brokers[0].image.metadata_version is MV("4.0-IV3")
    # a lower static value on the next active controller does nothing
    lower = controller(static_configs={**AUTO, "metadata.version": "3.7"})
    log.join(lower)
    lower.on_leader_change(lower.node_id, 2, 5000, False)
    for now in range(5000, 12000, 1000):
        _tick(log, lower, now)
    assert lower.image.metadata_version is MV("4.0-IV3")


def test_a_refused_auto_upgrade_is_retried(caplog: pytest.LogCaptureFixture) -> None:
    log, ctl = _cluster(AUTO, broker_release="3.9")  # the broker cannot run 4.0-IV3
    for now in (200, 1200, 2200):
        _tick(log, ctl, now)
    assert ctl.image.metadata_version is MV("3.9-IV0")
    assert caplog.text.count("Automatic upgrade of metadata.version from 3.9-IV0 to 4.0-IV3 refused") == 2


def test_manual_change_refused_while_automatic_then_allowed() -> None:
    log, ctl = _cluster(AUTO)
    level = MV("4.1-IV1").feature_level
    v3 = _update(log, ctl, 3, level)
    assert v3["errorCode"] == Errors.MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED.code == 134
    assert "auto.upgrade.metadata.version" in v3["errorMessage"]
    v2 = _update(log, ctl, 2, level)
    assert (
        v2["errorCode"] == Errors.INVALID_REQUEST.code
        and "auto.upgrade.metadata.version" in v2["errorMessage"]
    )
    assert _update(log, ctl, 3, 1, feature="group.version")["errorCode"] == 0  # other features still change
    # the cluster default turned off (dynamic beats server.properties): manual changes work again
    body = {
        "resources": [
            {
                "resourceType": 4,
                "resourceName": "",
                "configs": [
                    {"name": "auto.upgrade.metadata.version", "configOperation": 0, "value": "false"}
                ],
            }
        ],
        "validateOnly": False,
    }
    assert call(log, ctl, 44, 1, body)["responses"][0]["errorCode"] == 0
    assert _update(log, ctl, 3, level)["errorCode"] == 0
    assert ctl.image.metadata_version is MV("4.1-IV1")
    _tick(log, ctl, 10_000)
    assert ctl.next_deadline_ms() is None or ctl.image.metadata_version is MV("4.1-IV1")


def test_enabled_dynamically_per_controller() -> None:
    log, ctl = _cluster({"metadata.version": "4.0"})
    _tick(log, ctl, 100)
    _tick(log, ctl, 5000)
    assert ctl.image.metadata_version is MV("3.9-IV0")  # off by default
    body = {
        "resources": [
            {
                "resourceType": 4,
                "resourceName": str(ctl.node_id),
                "configs": [
                    {"name": "auto.upgrade.metadata.version", "configOperation": 0, "value": "true"},
                    {
                        "name": "auto.upgrade.metadata.version.interval.ms",
                        "configOperation": 0,
                        "value": "10",
                    },
                ],
            }
        ],
        "validateOnly": False,
    }
    assert call(log, ctl, 44, 1, body)["responses"][0]["errorCode"] == 0
    _tick(log, ctl, 6000)
    _tick(log, ctl, 6010)
    assert ctl.image.metadata_version is MV("4.0-IV3")
