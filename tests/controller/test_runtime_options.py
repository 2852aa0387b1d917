"""QuorumController options the runtime relies on: refusing kraft.version upgrades its raft cannot
perform, and standbys registering again when their software (supported features) changes."""

from __future__ import annotations

from kraftwerk.controller import features as fc
from kraftwerk.protocol.error_codes import Errors
from tests.controller.harness import Log, activate, call, controller


def _update(feature: str, level: int, validate_only: bool) -> dict[str, object]:
    return {"timeoutMs": 60000, "validateOnly": validate_only,
            "featureUpdates": [{"feature": feature, "maxVersionLevel": level, "upgradeType": 1}]}


def test_kraft_version_upgrade_refused_when_raft_cannot_do_it() -> None:
    log = Log()
    ctl = controller(1, (1,), kraft_version_upgrades=False)
    log.controllers.append(ctl)
    activate(log, ctl)
    end = log.end
    dry = call(log, ctl, 57, 2, _update("kraft.version", 1, True))
    assert dry["errorCode"] == 0  # a dry run only checks support, as Kafka does
    resp = call(log, ctl, 57, 2, _update("kraft.version", 1, False))
    assert resp["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
    assert resp["errorMessage"] == (
        "The update failed for all features since the following feature had an error: Invalid update "
        "version 1 for feature kraft.version. This controller's raft implementation cannot upgrade "
        "kraft.version yet.")
    assert log.end == end  # nothing appended
    # the default keeps the core's behaviour (a NoOpRecord plus the raft-side upgrade request)
    other = controller(1, (1,))
    log2 = Log(controllers=[other])
    activate(log2, other)
    assert call(log2, other, 57, 2, _update("kraft.version", 1, False))["errorCode"] == 0


def test_standby_registers_again_after_a_software_change() -> None:
    log = Log()
    active = controller(1, (1, 2), bootstrap_records=[fc.feature_level_record("metadata.version", 21)])
    log.controllers.append(active)
    activate(log, active)
    old = controller(2, (1, 2), release="3.9")
    log.join(old)
    old.on_leader_change(1, log.epoch, 0, False)
    assert old.needs_controller_registration()
    call(log, active, 70, 0, old.controller_registration_body())
    assert not old.needs_controller_registration()
    # the same node restarted on newer software (same incarnation id, wider ranges)
    new = controller(2, (1, 2), release="4.3")
    log.join(new)
    new.on_leader_change(1, log.epoch, 0, False)
    assert new.needs_controller_registration()
    call(log, active, 70, 0, new.controller_registration_body())
    assert not new.needs_controller_registration()
    assert dict(active.image.cluster.controllers[2].supported_features)["metadata.version"].max == 30
