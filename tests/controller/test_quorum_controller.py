"""QuorumController: activation, registration, heartbeats, fencing, ApiVersions, UpdateFeatures,
the unsafe downgrade, fail-stop and Envelope forwarding."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from kraftwerk.broker import BrokerNode, BrokerState
from kraftwerk.controller import (
    AppendThenRespond,
    FatalFaultError,
    MetadataVersionChanged,
    Respond,
    WriteSnapshot,
    activation_records_for_empty_log,
    default_bootstrap_records,
    encode_response,
)
from kraftwerk.controller import features as fc
from kraftwerk.controller.common import rec
from kraftwerk.image.writer import LossPolicy
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.header import encode_request_header
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import (
    CLUSTER_ID,
    Log,
    activate,
    broker,
    call,
    controller,
    drive_broker,
    roundtrip,
)

MV = MetadataVersion


def bootstrap(mv: MetadataVersion, **features: int) -> list:  # type: ignore[type-arg]
    recs = list(default_bootstrap_records(mv))
    for name, level in sorted(features.items()):
        recs.append(fc.feature_level_record(name.replace("_", "."), level))
    return recs


def started(
    mv: MetadataVersion = MV.IBP_4_3_IV0, voters: tuple[int, ...] = (1,), **kw: object
) -> tuple[Log, object]:
    log = Log()
    ctl = controller(1, voters, bootstrap_records=bootstrap(mv), **kw)  # type: ignore[arg-type]
    log.controllers.append(ctl)
    activate(log, ctl)
    return log, ctl


def update(log: Log, ctl, version: int, *updates: tuple[str, int, int], validate_only: bool = False) -> dict:  # type: ignore[no-untyped-def,type-arg]
    if version == 0:
        ups = [{"feature": n, "maxVersionLevel": lvl, "allowDowngrade": t != 1} for n, lvl, t in updates]
    else:
        ups = [{"feature": n, "maxVersionLevel": lvl, "upgradeType": t} for n, lvl, t in updates]
    body = {"timeoutMs": 1000, "featureUpdates": ups, "validateOnly": validate_only}
    return call(log, ctl, 57, version, body)


# ---------------------------------------------------------------- activation


def test_activation_empty_log_transaction(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    log, ctl = started(MV.IBP_4_3_IV0)
    assert [r.spec.name for r in log.decoded()] == [
        "BeginTransactionRecord",
        "FeatureLevelRecord",
        "EndTransactionRecord",
    ]
    assert ctl.metadata_version is MV.IBP_4_3_IV0  # type: ignore[attr-defined]
    assert (
        "Performing controller activation. The metadata log appears to be empty. Appending 1 bootstrap "
        "record(s) in metadata transaction at metadata.version 4.3-IV0 from bootstrap source "
        "'the default bootstrap'."
    ) in caplog.text


def test_activation_messages_like_kafka() -> None:
    act = activation_records_for_empty_log(default_bootstrap_records(MV.IBP_3_3_IV3), "test")
    assert act.message == (
        "Performing controller activation. The metadata log appears to be empty. Appending 1 "
        "bootstrap record(s) at metadata.version 3.3-IV3 from bootstrap source 'test'."
    )
    assert act.atomic and len(act.records) == 1
    act = activation_records_for_empty_log(default_bootstrap_records(MV.IBP_3_6_IV1), "test", 0)
    assert act.message == (
        "Performing controller activation. Aborting partial bootstrap records transaction at "
        "offset 0. Re-appending 1 bootstrap record(s) in new metadata transaction at "
        "metadata.version 3.6-IV1 from bootstrap source 'test'."
    )
    assert not act.atomic and len(act.records) == 4
    elr = bootstrap(MV.IBP_4_0_IV1, eligible_leader_replicas_version=1)
    act = activation_records_for_empty_log(elr, "test", 0, default_min_isr=2)
    assert len(act.records) == 6
    assert any(r.spec.name == "ConfigRecord" and r.value["value"] == "2" for r in act.records)


def test_failover_aborts_open_transaction() -> None:
    log = Log()
    a, b = controller(1, (1, 2)), controller(2, (1, 2))
    log.controllers += [a, b]
    act = a.on_leader_change(1, 1, 0, True)
    assert act is not None
    log.append(act.records[:2])  # Begin + FLR committed, End lost with the leader
    reply = b.on_leader_change(2, 2, 10, False)
    assert reply is not None and [r.spec.name for r in reply.records] == [
        "AbortTransactionRecord",
        "BeginTransactionRecord",
        "FeatureLevelRecord",
        "EndTransactionRecord",
    ]
    log.append(reply.records)
    assert b.metadata_version is MV.IBP_4_3_IV0
    # an open transaction after bootstrap is aborted alone
    log.append([rec("BeginTransactionRecord", 0, {"name": "x"}), fc.noop_record()])
    reply = a.on_leader_change(1, 3, 20, False)
    assert reply is not None and [r.spec.name for r in reply.records] == ["AbortTransactionRecord"]


def test_standby_answers_not_controller() -> None:
    log, ctl = started(voters=(1, 2))
    standby = controller(2, (1, 2))
    log.join(standby)
    standby.on_leader_change(1, 1, 0, False)
    resp = call(log, standby, 57, 2, {"timeoutMs": 1, "featureUpdates": [], "validateOnly": False})
    assert resp["errorCode"] == Errors.NOT_CONTROLLER.code
    # but standbys serve ApiVersions with the same finalized features
    assert (
        call(log, standby, 18, 4, {})["finalizedFeatures"] == call(log, ctl, 18, 4, {})["finalizedFeatures"]
    )  # type: ignore[arg-type]


def test_active_before_its_bootstrap_commits_answers_not_controller() -> None:
    """Found by the lifecycle simulator: a registration arriving between activation and the commit
    of the bootstrap records crashed the controller (no metadata.version to judge it by)."""
    log = Log()
    ctl = controller(1, (1,), bootstrap_records=bootstrap(MV.IBP_4_3_IV0))
    log.controllers.append(ctl)
    act = ctl.on_leader_change(1, log.epoch, 0, True)
    assert act is not None and ctl.metadata_version is None  # the bootstrap is not committed yet
    b = broker(2)
    registration = b.poll(0)[0]
    reply = ctl.handle_request(62, 4, registration.body_for(4), 0)
    assert isinstance(reply, Respond) and reply.body["errorCode"] == Errors.NOT_CONTROLLER.code


# ---------------------------------------------------------------- registration, heartbeats


def test_register_heartbeat_unfence_and_shutdown() -> None:
    log, ctl = started()
    b = broker(2)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    assert b.broker_epoch >= 0 and b.state is BrokerState.RECOVERY
    reg = [r for r in log.decoded() if r.spec.name == "RegisterBrokerRecord"][-1]
    assert reg.version == 4 and reg.value["fenced"] is True and reg.value["logDirs"]
    drive_broker(log, ctl, b, 1)  # type: ignore[arg-type]
    assert b.state is BrokerState.RUNNING and not ctl.image.cluster.brokers[2].fenced  # type: ignore[attr-defined]
    b.begin_controlled_shutdown(5)
    drive_broker(log, ctl, b, 5)  # type: ignore[arg-type]
    assert b.state is BrokerState.SHUTTING_DOWN
    reg2 = ctl.image.cluster.brokers[2]  # type: ignore[attr-defined]
    assert reg2.fenced and reg2.in_controlled_shutdown


def test_register_broker_record_version_follows_metadata_version() -> None:
    for mv, version in ((MV.IBP_3_3_IV3, 1), (MV.IBP_3_5_IV0, 2), (MV.IBP_3_9_IV0, 3), (MV.IBP_4_3_IV0, 4)):
        log, ctl = started(mv)
        b = broker(2)
        log.join(b)
        drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
        drive_broker(log, ctl, b, 1)  # type: ignore[arg-type]
        recs = log.decoded()
        assert [r.version for r in recs if r.spec.name == "RegisterBrokerRecord"] == [version]
        assert b.state is BrokerState.RUNNING, mv
        changes = [
            r.spec.name
            for r in recs
            if r.spec.name in ("UnfenceBrokerRecord", "BrokerRegistrationChangeRecord")
        ]
        assert changes == ["BrokerRegistrationChangeRecord"]


def test_session_timeout_fences_and_heartbeat_unfences() -> None:
    log, ctl = started(session_timeout_ms=1000)
    log.append(ctl.tick(0))  # type: ignore[attr-defined]  # the controller registers itself first
    b = broker(2)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    drive_broker(log, ctl, b, 1)  # type: ignore[arg-type]
    assert ctl.next_deadline_ms() == 1001  # type: ignore[attr-defined]
    assert ctl.tick(1000) == []  # type: ignore[attr-defined]
    fence = ctl.tick(1002)  # type: ignore[attr-defined]
    assert [r.value["fenced"] for r in fence] == [1]
    assert ctl.tick(1003) == []  # type: ignore[attr-defined]  # not twice before it commits
    log.append(fence)
    assert ctl.image.cluster.brokers[2].fenced  # type: ignore[attr-defined]
    b.handle_heartbeat_response({"errorCode": 0, "isCaughtUp": True, "isFenced": True}, 1004)
    assert b.state is BrokerState.RECOVERY
    drive_broker(log, ctl, b, 5000)  # type: ignore[arg-type]
    assert not ctl.image.cluster.brokers[2].fenced and b.state is BrokerState.RUNNING  # type: ignore[attr-defined]


def test_heartbeat_not_caught_up_stays_fenced_and_stale_epoch() -> None:
    log, ctl = started()
    b = broker(2)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    body = {
        "brokerId": 2,
        "brokerEpoch": b.broker_epoch,
        "currentMetadataOffset": 0,
        "wantFence": False,
        "wantShutDown": False,
    }
    resp = call(log, ctl, 63, 0, body)  # type: ignore[arg-type]
    assert resp["isFenced"] and not resp["isCaughtUp"]
    resp = call(log, ctl, 63, 0, {**body, "brokerEpoch": 999})  # type: ignore[arg-type]
    assert resp["errorCode"] == Errors.STALE_BROKER_EPOCH.code
    resp = call(log, ctl, 63, 0, {**body, "brokerId": 77})  # type: ignore[arg-type]
    assert resp["errorCode"] == Errors.BROKER_ID_NOT_REGISTERED.code


def test_registration_refused_for_old_software_stays_fenced(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log, ctl = started(MV.IBP_4_3_IV0)
    old = broker(3, release="3.9")
    log.join(old)  # it follows the log as an observer, but cannot apply metadata.version 30
    drive_broker(log, ctl, old, 0)  # type: ignore[arg-type]
    expected = (
        "Unable to register because the broker does not support finalized version 30 of metadata.version. "
        "The broker wants a version between 1 and 21, inclusive."
    )
    assert old.state is BrokerState.STARTING and old.broker_epoch == -1 and old.fenced
    assert old.last_refusal == expected
    assert expected in caplog.text
    assert 3 not in ctl.image.cluster.brokers  # type: ignore[attr-defined]
    # retried with growing backoff
    first = old.next_deadline_ms()
    assert first is not None and first > 0 and old.poll(first - 1) == []
    drive_broker(log, ctl, old, first)  # type: ignore[arg-type]
    second = old.next_deadline_ms()
    assert second is not None and second - first > first
    # restarted with newer software it registers
    new = broker(3, release="4.3")
    log.join(new)
    drive_broker(log, ctl, new, second)  # type: ignore[arg-type]
    assert new.broker_epoch >= 0


def _registered_broker(node_id: int = 2) -> tuple[Log, Any, BrokerNode]:
    """A controller with one registered, unfenced broker."""
    log, ctl = started()
    b = broker(node_id)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    drive_broker(log, ctl, b, 1)  # type: ignore[arg-type]
    return log, ctl, b


def test_duplicate_registration_and_cluster_id() -> None:
    log, ctl, _ = _registered_broker()
    other = broker(2, incarnation_id=uuid.uuid4())
    resp = call(log, ctl, 62, 5, other.registration_body() | {}, 2)  # type: ignore[arg-type]
    assert resp["errorCode"] == Errors.DUPLICATE_BROKER_REGISTRATION.code
    body = other.registration_body() | {"clusterId": "other"}
    assert call(log, ctl, 62, 5, body, 2)["errorCode"] == Errors.INCONSISTENT_CLUSTER_ID.code  # type: ignore[arg-type]
    no_mv = broker(9).registration_body() | {"features": []}
    assert call(log, ctl, 62, 5, no_mv, 2)["errorCode"] == Errors.INVALID_REGISTRATION.code  # type: ignore[arg-type]


def test_a_restarted_broker_is_a_new_incarnation_with_a_larger_epoch() -> None:
    log, ctl, first = _registered_broker()

    def register_offset(incarnation: uuid.UUID) -> int:
        return next(i for i, r in enumerate(log.decoded())
                    if r.spec.name == "RegisterBrokerRecord" and r.value["incarnationId"] == incarnation)

    # Kafka's broker epoch: the offset of the broker's RegisterBrokerRecord
    assert first.broker_epoch == register_offset(first.incarnation_id)
    # killed -9 and restarted at once: the old incarnation's session is still valid, so the new
    # one is refused and the registration stays the old one's, with nothing written
    restarted = broker(2, incarnation_id=uuid.uuid4())
    end = log.end
    resp = call(log, ctl, 62, 5, restarted.registration_body(), 2000)  # type: ignore[arg-type]
    assert resp["errorCode"] == Errors.DUPLICATE_BROKER_REGISTRATION.code and log.end == end
    assert ctl.image.cluster.brokers[2].incarnation_id == first.incarnation_id  # type: ignore[attr-defined]
    # the session expires, the controller fences the old incarnation; the new one registers
    log.append(ctl.tick(20_000))  # type: ignore[attr-defined]
    assert ctl.image.cluster.brokers[2].fenced  # type: ignore[attr-defined]
    log.join(restarted)
    # with two appended records not committed yet, the epoch is still the record's own offset
    in_flight = [fc.noop_record(), fc.noop_record()]
    reply = ctl.handle_request(  # type: ignore[attr-defined]
        62, 5, restarted.registration_body(), 20_001, next_offset=log.end + len(in_flight))
    log.append(in_flight)
    log.append(reply.records)
    restarted.handle_registration_response(reply.response_body, 20_001)
    assert restarted.broker_epoch == register_offset(restarted.incarnation_id) > first.broker_epoch
    # and the old process's heartbeats are fenced by the new epoch
    stale = call(log, ctl, 63, 0, first.heartbeat_body(), 20_002)  # type: ignore[arg-type]
    assert stale["errorCode"] == Errors.STALE_BROKER_EPOCH.code


def test_controller_registration() -> None:
    log, ctl = started(MV.IBP_3_6_IV2, voters=(1, 2))
    standby = controller(2, (1, 2))
    log.join(standby)
    body = standby.controller_registration_body()
    reply = ctl.handle_request(70, 0, body, 0)  # type: ignore[attr-defined]
    assert isinstance(reply, Respond) and reply.body["errorCode"] == Errors.UNSUPPORTED_VERSION.code
    assert reply.body["errorMessage"] == (
        "The current MetadataVersion is too old to support controller registrations."
    )
    assert ctl.tick(0) == []  # type: ignore[attr-defined]
    log2, ctl2 = started(MV.IBP_3_7_IV0, voters=(1, 2))
    own = ctl2.tick(0)  # type: ignore[attr-defined]
    assert [r.spec.name for r in own] == ["RegisterControllerRecord"]
    log2.append(own)
    assert ctl2.tick(1) == []  # type: ignore[attr-defined]
    st2 = controller(2, (1, 2))
    log2.join(st2)
    assert st2.needs_controller_registration()
    assert call(log2, ctl2, 70, 0, st2.controller_registration_body())["errorCode"] == 0  # type: ignore[arg-type]
    assert set(ctl2.image.cluster.controllers) == {1, 2}  # type: ignore[attr-defined]
    assert not st2.needs_controller_registration()


# ---------------------------------------------------------------- ApiVersions, DescribeCluster


def test_api_versions_features() -> None:
    log, ctl = started(MV.IBP_4_0_IV3, kraft_version=1)
    update(log, ctl, 2, ("transaction.version", 2, 1))
    epoch = log.end - 1
    v4 = call(log, ctl, 18, 4, {})  # type: ignore[arg-type]
    sup = {f["name"]: (f["minVersion"], f["maxVersion"]) for f in v4["supportedFeatures"]}
    assert sup["metadata.version"] == (7, 30) and sup["transaction.version"] == (0, 2)
    fin = {f["name"]: (f["minVersionLevel"], f["maxVersionLevel"]) for f in v4["finalizedFeatures"]}
    assert fin == {"metadata.version": (25, 25), "transaction.version": (2, 2), "kraft.version": (1, 1)}
    assert v4["finalizedFeaturesEpoch"] == epoch
    v3 = call(log, ctl, 18, 3, {})  # type: ignore[arg-type]
    assert [f["name"] for f in v3["supportedFeatures"]] == ["metadata.version"]  # alterFeatureLevel0
    v0 = call(log, ctl, 18, 0, {})  # type: ignore[arg-type]
    assert any(k["apiKey"] == 57 and k["maxVersion"] == 3 for k in v0["apiKeys"])  # v3: KIP-920


def test_describe_cluster_controller_listener() -> None:
    log, ctl = started()
    b = broker(2)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    # Kafka's ControllerApis: a controller asked for brokers refuses (KIP-919, error 114)
    resp = call(log, ctl, 60, 2, {"endpointType": 1, "includeFencedBrokers": True})  # type: ignore[arg-type]
    assert (resp["errorCode"], resp["errorMessage"], resp["brokers"]) == (
        Errors.MISMATCHED_ENDPOINT_TYPE.code,
        "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER",
        [])
    assert call(log, ctl, 60, 0, {})["errorCode"] == Errors.INVALID_REQUEST.code  # type: ignore[arg-type]
    unknown = call(log, ctl, 60, 1, {"endpointType": 3})  # type: ignore[arg-type]
    assert (unknown["errorCode"], unknown["errorMessage"]) == (
        Errors.UNSUPPORTED_ENDPOINT_TYPE.code, "Unsupported endpoint type 3")
    ctrl = call(log, ctl, 60, 1, {"endpointType": 2})  # type: ignore[arg-type]
    assert ctrl["controllerId"] == 1 and [x["brokerId"] for x in ctrl["brokers"]] == [1]


# ---------------------------------------------------------------- UpdateFeatures


def test_update_features_v1_results_and_atomicity() -> None:
    log, ctl = started(MV.IBP_4_0_IV3)
    before = log.end
    resp = update(log, ctl, 1, ("transaction.version", 2, 1), ("foo.bar", 1, 1))
    assert log.end == before
    assert resp["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
    text = (
        "The update failed for all features since the following feature had an error: Invalid update "
        "version 1 for feature foo.bar. Local controller 1 does not support this feature."
    )
    assert resp["errorMessage"] == text
    assert {r["feature"]: (r["errorCode"], r["errorMessage"]) for r in resp["results"]} == {
        "foo.bar": (95, text),
        "transaction.version": (95, text),
    }
    ok = update(log, ctl, 0, ("transaction.version", 2, 1))
    assert ok["errorCode"] == 0 and ok["results"] == [
        {"feature": "transaction.version", "errorCode": 0, "errorMessage": None}
    ]
    assert ctl.image.features.finalized == {"transaction.version": 2}  # type: ignore[attr-defined]


def test_disabling_an_unknown_feature_is_refused_and_writes_nothing() -> None:
    log, ctl = started(MV.IBP_4_0_IV3)
    before = log.end
    for version in (1, 2):
        resp = update(log, ctl, version, ("bogus.feature", 0, 2))
        assert resp["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
        assert resp["errorMessage"] == (
            "The update failed for all features since the following feature had an error: Invalid update "
            "version 0 for feature bogus.feature. Feature bogus.feature not found."
        )
    assert log.end == before and "bogus.feature" not in ctl.image.features.finalized  # type: ignore[attr-defined]


def test_validate_only_appends_nothing() -> None:
    log, ctl = started(MV.IBP_3_9_IV0)
    before = list(log.records)
    for ups in (
        [("metadata.version", 30, 1)],
        [("metadata.version", 15, 3)],
        [("transaction.version", 2, 1)],
    ):
        resp = update(log, ctl, 2, *ups, validate_only=True)
        assert resp["errorCode"] == 0
    assert log.records == before


def test_broker_blocks_upgrade_beyond_its_range() -> None:
    log, ctl = started(MV.IBP_3_9_IV0)
    old = broker(4, release="3.9")
    log.join(old)
    drive_broker(log, ctl, old, 0)  # type: ignore[arg-type]
    resp = update(log, ctl, 2, ("metadata.version", 30, 1))
    assert resp["errorMessage"].endswith(
        "Invalid update version 30 for feature metadata.version. Broker 4 only supports versions 1-21"
    )


def test_elr_upgrade_adds_min_isr_config() -> None:
    log, ctl = started(MV.IBP_4_0_IV3)
    update(log, ctl, 2, ("eligible.leader.replicas.version", 1, 1))
    names = [r.spec.name for r in log.decoded()[-2:]]
    assert names == ["ConfigRecord", "FeatureLevelRecord"]
    assert ctl.image.features.finalized["eligible.leader.replicas.version"] == 1  # type: ignore[attr-defined]


def test_kraft_version_upgrade_reply() -> None:
    _log, ctl = started(MV.IBP_3_9_IV0)
    body = {
        "timeoutMs": 1,
        "featureUpdates": [{"feature": "kraft.version", "maxVersionLevel": 1, "upgradeType": 1}],
        "validateOnly": False,
    }
    reply = ctl.handle_request(57, 2, body, 0)  # type: ignore[attr-defined]
    assert isinstance(reply, AppendThenRespond)
    assert reply.kraft_version_upgrade == 1 and [r.spec.name for r in reply.records] == ["NoOpRecord"]


# ---------------------------------------------------------------- version change, unsafe downgrade


def test_unsafe_downgrade_lossy_snapshot_and_loss_text() -> None:
    log, ctl = started(MV.IBP_4_3_IV0)
    b = broker(2)
    log.join(b)
    drive_broker(log, ctl, b, 0)  # type: ignore[arg-type]
    drive_broker(log, ctl, b, 1)  # type: ignore[arg-type]
    log.append(ctl.tick(2))  # type: ignore[attr-defined]  # controller self-registration (MV >= 3.7-IV0)
    refused = update(log, ctl, 2, ("metadata.version", 14, 2))
    assert refused["errorMessage"].endswith(
        "Unsupported metadata.version downgrade from 30 to 14. Refusing to "
        "perform the requested downgrade because it might delete metadata "
        "information."
    )
    dry = update(log, ctl, 2, ("metadata.version", 14, 3), validate_only=True)
    n = log.end
    resp = update(log, ctl, 2, ("metadata.version", 14, 3))
    assert resp["errorCode"] == 0 and dry["errorMessage"] == resp["errorMessage"]
    assert resp["errorMessage"] == (
        "Metadata has been lost because the following could not be represented in "
        "metadata.version 3.6-IV2: the online log directories of one or more "
        "brokers; controller registration data"
    )
    assert log.end == n + 1
    for node in (ctl, b):
        image = node.image  # type: ignore[attr-defined]
        assert image.metadata_version is MV.IBP_3_6_IV2
        assert image.cluster.controllers == {} and image.cluster.brokers[2].directories == ()
    assert ctl.image == b.image  # type: ignore[attr-defined]
    snaps = [e for e in log.effects[1] if isinstance(e, WriteSnapshot)]
    before, after = snaps[-2], snaps[-1]
    assert before.end_offset == n and before.options.metadata_version is MV.IBP_4_3_IV0 and not before.lossy
    assert after.end_offset == n + 1 and after.lossy and after.options.loss_policy is LossPolicy.DROP
    result = after.render()
    assert result.metadata_version is MV.IBP_3_6_IV2 and result.lossless  # already rewritten
    changed = [e for e in log.effects[2] if isinstance(e, MetadataVersionChanged)][-1]
    assert changed.losses == (
        "the online log directories of one or more brokers",
        "controller registration data",
    )
    # a node on 3.6 software can start from that snapshot
    old = broker(5, release="3.6")
    old.load_snapshot(result.encoded(), end_offset=after.end_offset, epoch=after.epoch)
    assert old.image == ctl.image  # type: ignore[attr-defined]


def test_no_self_registration_behind_an_uncommitted_unsafe_downgrade() -> None:
    """Found by the lifecycle simulator (seeds 1131, 1206 at 1+1): a controller that registered
    itself from the committed level while its own downgrade to 3.6-IV2 was still in flight put a
    RegisterControllerRecord after it, and no later snapshot at 3.6-IV2 could be written."""
    log, ctl = started(MV.IBP_4_3_IV0)  # not registered yet: the first tick would register it
    body = {"timeoutMs": 1000, "validateOnly": False,
            "featureUpdates": [{"feature": "metadata.version", "maxVersionLevel": 14, "upgradeType": 3}]}
    reply = ctl.handle_request(57, 1, roundtrip(57, 1, body, Kind.REQUEST), 1, next_offset=log.end)  # type: ignore[attr-defined]
    assert isinstance(reply, AppendThenRespond)
    assert ctl.latest_metadata_version is MV.IBP_3_6_IV2  # type: ignore[attr-defined]
    assert ctl.metadata_version is MV.IBP_4_3_IV0  # type: ignore[attr-defined]
    assert not [r for r in ctl.tick(2) if r.spec.name == "RegisterControllerRecord"]  # type: ignore[attr-defined]
    log.append(reply.records)
    assert not [r for r in ctl.tick(3) if r.spec.name == "RegisterControllerRecord"]  # type: ignore[attr-defined]
    log.append(ctl.tick(4))  # type: ignore[attr-defined]
    snapshot = log.latest_snapshot()
    assert snapshot is not None and snapshot.render().metadata_version is MV.IBP_3_6_IV2


def test_safe_downgrade_and_upgrade_write_version_change_snapshots() -> None:
    log, ctl = started(MV.IBP_4_2_IV1)
    resp = update(log, ctl, 2, ("metadata.version", 23, 2))
    assert resp["errorCode"] == 0 and resp["errorMessage"] is None
    snaps = [e for e in log.effects[1] if isinstance(e, WriteSnapshot)]
    assert [s.options.metadata_version for s in snaps] == [MV.IBP_4_2_IV1, MV.IBP_4_0_IV1]
    assert all(s.render().lossless for s in snaps)
    update(log, ctl, 2, ("metadata.version", 29, 1))
    assert ctl.metadata_version is MV.IBP_4_2_IV1  # type: ignore[attr-defined]


def test_controller_fail_stop_on_unsupported_level() -> None:
    log, _ctl = started(MV.IBP_4_3_IV0)
    old = controller(2, (1, 2), release="3.9")
    with pytest.raises(FatalFaultError) as info:
        old.replay(0, log.records, epoch=1)
    assert str(info.value) == (
        "Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=30), but "
        "this controller only supports versions 1-21"
    )
    assert (info.value.level, info.value.supported_min, info.value.supported_max) == (30, 1, 21)
    ok = controller(3, (1, 3), release="3.9")
    ok.replay(
        0, [fc.feature_level_record("metadata.version", 21), fc.feature_level_record("kraft.version", 5)]
    )
    assert ok.metadata_version is MV.IBP_3_9_IV0


# ---------------------------------------------------------------- Envelope


def test_envelope_forwarded_update_features() -> None:
    log, ctl = started(MV.IBP_4_0_IV3)
    req_spec = by_api_key(Kind.REQUEST, 57)
    body = {
        "timeoutMs": 1,
        "featureUpdates": [{"feature": "group.version", "maxVersionLevel": 1, "upgradeType": 1}],
        "validateOnly": False,
    }
    data = encode_request_header(
        {"requestApiKey": 57, "requestApiVersion": 1, "correlationId": 42, "clientId": "adminclient-1"}, 2
    ) + codec.encode(req_spec, 1, body)
    resp = call(
        log, ctl, 58, 0, {"requestData": data, "requestPrincipal": b"", "clientHostAddress": b"\x7f\0\0\1"}
    )
    assert resp["errorCode"] == 0
    assert resp["responseData"] == encode_response(
        57,
        1,
        42,
        {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "errorMessage": None,
            "results": [{"feature": "group.version", "errorCode": 0, "errorMessage": None}],
        },
    )
    assert ctl.image.features.finalized == {"group.version": 1}  # type: ignore[attr-defined]
    bad = call(log, ctl, 58, 0, {"requestData": b"\0", "requestPrincipal": None, "clientHostAddress": b""})
    assert bad["errorCode"] == Errors.INVALID_REQUEST.code


def test_bodies_encode_at_every_version() -> None:
    _log, ctl = started(MV.IBP_4_3_IV0)
    for v in range(0, 5):
        body = roundtrip(18, v, ctl.handle_request(18, v, {}, 0).body)  # type: ignore[attr-defined]
        assert body["errorCode"] == 0 and {"apiKey": 57, "minVersion": 0, "maxVersion": 3} in body["apiKeys"]
        if v >= 3:  # the feature fields exist from v3
            mv = {"name": "metadata.version", "minVersion": 7, "maxVersion": 30}
            assert mv in body["supportedFeatures"]
            assert {"name": "metadata.version", "maxVersionLevel": 30, "minVersionLevel": 30} in \
                body["finalizedFeatures"]
    for v in range(1, 3):
        body = roundtrip(60, v, ctl.describe_cluster_body(v, {"endpointType": 2}))  # type: ignore[attr-defined]
        assert body["clusterId"] == CLUSTER_ID and body["controllerId"] == ctl.node_id
    refused = roundtrip(60, 0, ctl.describe_cluster_body(0, {}))  # type: ignore[attr-defined]
    assert refused["errorCode"] == Errors.INVALID_REQUEST.code


# ---------------------------------------------------------------- requests racing uncommitted records


def _update_body(feature: str, level: int) -> dict:  # type: ignore[type-arg]
    return {"timeoutMs": 1, "validateOnly": False,
            "featureUpdates": [{"feature": feature, "maxVersionLevel": level, "upgradeType": 1}]}


def test_update_is_judged_against_a_registration_not_yet_committed() -> None:
    """Found by the lifecycle simulator (seed 31474): a 3.9 broker's registration and a
    streams.version upgrade were both accepted before either committed."""
    log, ctl = started(MV.IBP_3_9_IV0)
    old = broker(2, release="3.9")  # knows no streams.version
    registering = ctl.handle_request(62, 4, old.poll(0)[0].body_for(4), 0)  # type: ignore[attr-defined]
    assert isinstance(registering, AppendThenRespond)  # appended, not yet committed
    reply = ctl.handle_request(57, 1, _update_body("streams.version", 1), 0)  # type: ignore[attr-defined]
    assert isinstance(reply, Respond)
    assert "Broker 2 does not support this feature." in reply.body["results"][0]["errorMessage"]
    log.append(registering.records)  # once it commits, the image says the same
    reply = ctl.handle_request(57, 1, _update_body("streams.version", 1), 0)  # type: ignore[attr-defined]
    assert "Broker 2 does not support this feature." in reply.body["results"][0]["errorMessage"]


def test_registration_is_judged_against_a_level_not_yet_committed() -> None:
    _log, ctl = started(MV.IBP_3_9_IV0)
    upgrading = ctl.handle_request(57, 1, _update_body("streams.version", 1), 0)  # type: ignore[attr-defined]
    assert isinstance(upgrading, AppendThenRespond)
    old = broker(2, release="3.9")
    reply = ctl.handle_request(62, 4, old.poll(0)[0].body_for(4), 0)  # type: ignore[attr-defined]
    assert isinstance(reply, Respond) and reply.body["errorCode"] == Errors.UNSUPPORTED_VERSION.code


def test_leadership_change_forgets_what_never_committed() -> None:
    log, ctl = started(MV.IBP_3_9_IV0)
    upgrading = ctl.handle_request(57, 1, _update_body("streams.version", 1), 0)  # type: ignore[attr-defined]
    assert isinstance(upgrading, AppendThenRespond)
    ctl.on_leader_change(2, log.epoch + 1, 0, False)  # type: ignore[attr-defined]
    ctl.on_leader_change(1, log.epoch + 2, 0, False)  # type: ignore[attr-defined]
    old = broker(2, release="3.9")
    reply = ctl.handle_request(62, 4, old.poll(0)[0].body_for(4), 0)  # type: ignore[attr-defined]
    assert isinstance(reply, AppendThenRespond)
