"""QuorumController behaviour the runtime relies on: a kraft.version upgrade handed to raft, and
standbys registering again when their software (supported features) changes."""

from __future__ import annotations

from kraftwerk.controller import features as fc
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.protocol.error_codes import Errors
from tests.controller.harness import Log, activate, call, controller


def _update(feature: str, level: int, validate_only: bool) -> dict[str, object]:
    return {"timeoutMs": 60000, "validateOnly": validate_only,
            "featureUpdates": [{"feature": feature, "maxVersionLevel": level, "upgradeType": 1}]}


def test_kraft_version_upgrade_asks_raft_for_the_control_batch() -> None:
    log = Log()
    ctl = controller(1, (1,))
    log.controllers.append(ctl)
    activate(log, ctl)
    end = log.end
    dry = ctl.handle_request(57, 2, _update("kraft.version", 1, True), 0)
    assert isinstance(dry, Respond) and dry.body["errorCode"] == 0  # a dry run writes nothing
    reply = ctl.handle_request(57, 2, _update("kraft.version", 1, False), 0)
    # the level lives in raft's control records: the reply asks the host to write them, and the
    # metadata records carry only Kafka's NoOpRecord
    assert isinstance(reply, AppendThenRespond) and reply.kraft_version_upgrade == 1
    assert [r.spec.name for r in reply.records] == ["NoOpRecord"]
    assert reply.response_body["errorCode"] == 0 and log.end == end
    # once raft reports level 1, the controller finalizes it and refuses going back
    ctl.set_kraft_version(1)
    assert ctl.finalized_features()[0]["kraft.version"] == 1
    down = ctl.handle_request(57, 2, {**_update("kraft.version", 0, False), "featureUpdates": [
        {"feature": "kraft.version", "maxVersionLevel": 0, "upgradeType": 2}]}, 0)
    assert isinstance(down, Respond) and down.body["errorCode"] == Errors.INVALID_UPDATE_VERSION.code


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
