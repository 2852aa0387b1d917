"""BrokerNode: client RPCs from the image, forwarding, version-change effects, fail-stop, lifecycle."""

from __future__ import annotations

import uuid

import pytest

from kraftwerk.broker import (
    BrokerState,
    CloseClientConnections,
    ConfigSource,
    ControllerCall,
    FatalFaultError,
    Forward,
    Respond,
)
from kraftwerk.controller import features as fc
from kraftwerk.controller.common import rec, shape_body
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import CLUSTER_ID, Log, activate, broker, controller, drive_broker, roundtrip

MV = MetadataVersion
TOPIC_ID = uuid.UUID("6b1f9d1e-0000-4000-8000-000000000001")


def running_cluster(mv: MetadataVersion = MV.IBP_4_3_IV0, **broker_kw: object):  # type: ignore[no-untyped-def]
    log = Log()
    ctl = controller(
        1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", mv.feature_level)]
    )
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, **broker_kw)  # type: ignore[arg-type]
    log.join(b)
    drive_broker(log, ctl, b, 0)
    drive_broker(log, ctl, b, 1)
    assert b.state is BrokerState.RUNNING
    return log, ctl, b


def add_topic(log: Log) -> None:
    log.append(
        [
            rec("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID}),
            rec(
                "PartitionRecord",
                0,
                {
                    "partitionId": 0,
                    "topicId": TOPIC_ID,
                    "replicas": [2, 3],
                    "isr": [2],
                    "removingReplicas": [],
                    "addingReplicas": [],
                    "leader": 2,
                    "leaderEpoch": 4,
                    "partitionEpoch": 5,
                },
            ),
            rec(
                "ConfigRecord",
                0,
                {"resourceType": 2, "resourceName": "orders", "name": "retention.bytes", "value": "1000"},
            ),
            rec(
                "ConfigRecord",
                0,
                {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"},
            ),
        ]
    )


def ask(b, api_key: int, version: int, body: dict) -> dict:  # type: ignore[no-untyped-def,type-arg]
    req = shape_body(Kind.REQUEST, api_key, version, body)
    reply = b.handle_request(api_key, version, roundtrip(api_key, version, req, kind=Kind.REQUEST), 0)
    assert isinstance(reply, Respond)
    return roundtrip(api_key, version, reply.body)


def test_metadata_from_image() -> None:
    log, _ctl, b = running_cluster()
    add_topic(log)
    for version in (1, 9, 12):
        resp = ask(b, 3, version, {"topics": None, "allowAutoTopicCreation": False})
        assert [x["nodeId"] for x in resp["brokers"]] == [2]
        assert resp["controllerId"] == 2
        topic = resp["topics"][0]
        assert topic["name"] == "orders" and topic["errorCode"] == 0
        part = topic["partitions"][0]
        assert (part["leaderId"], part["replicaNodes"], part["isrNodes"]) == (2, [2, 3], [2])
        if version >= 5:
            assert part["offlineReplicas"] == [3]
    resp = ask(b, 3, 12, {"topics": [{"name": "missing", "topicId": uuid.UUID(int=0)}]})
    assert resp["topics"][0]["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert ask(b, 3, 2, {"topics": None})["clusterId"] == CLUSTER_ID


def test_describe_cluster_and_endpoint_type() -> None:
    _log, _ctl, b = running_cluster()
    resp = ask(b, 60, 1, {"includeClusterAuthorizedOperations": False, "endpointType": 1})
    assert [(x["brokerId"], x["port"]) for x in resp["brokers"]] == [(2, 9112)]
    assert resp["clusterId"] == CLUSTER_ID
    wrong = ask(b, 60, 1, {"endpointType": 2})
    assert (wrong["errorCode"], wrong["errorMessage"], wrong["clusterId"]) == (
        Errors.MISMATCHED_ENDPOINT_TYPE.code,
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
        "")
    assert ask(b, 60, 2, {"endpointType": 0})["errorCode"] == Errors.UNSUPPORTED_ENDPOINT_TYPE.code


def test_describe_configs_sources() -> None:
    log, _ctl, b = running_cluster(static_configs={"num.partitions": "3", "ssl.key.password": "s3cret"})
    add_topic(log)
    body = {
        "resources": [
            {"resourceType": 4, "resourceName": "2", "configurationKeys": None},
            {"resourceType": 2, "resourceName": "orders", "configurationKeys": None},
            {"resourceType": 2, "resourceName": "nope", "configurationKeys": None},
            {"resourceType": 4, "resourceName": "9", "configurationKeys": None},
        ],
        "includeSynonyms": True,
        "includeDocumentation": False,
    }
    resp = ask(b, 32, 4, body)
    brk, topic, missing, other = resp["results"]
    cfg = {c["name"]: c for c in brk["configs"]}
    assert cfg["num.partitions"]["value"] == "3"
    assert cfg["num.partitions"]["configSource"] == ConfigSource.STATIC_BROKER_CONFIG
    assert cfg["min.insync.replicas"]["configSource"] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    assert [s["source"] for s in cfg["min.insync.replicas"]["synonyms"]] == [3, 5]
    assert cfg["ssl.key.password"]["value"] is None and cfg["ssl.key.password"]["isSensitive"]
    tcfg = {c["name"]: c for c in topic["configs"]}
    assert tcfg["retention.bytes"]["value"] == "1000" and tcfg["retention.bytes"]["configSource"] == 1
    assert tcfg["min.insync.replicas"]["value"] == "2"
    assert missing["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert other["errorCode"] == Errors.INVALID_REQUEST.code
    v0 = ask(
        b,
        32,
        0,
        {"resources": [{"resourceType": 4, "resourceName": "2", "configurationKeys": ["num.partitions"]},
                       {"resourceType": 4, "resourceName": "", "configurationKeys": None}]},
    )
    assert [c["name"] for c in v0["results"][0]["configs"]] == ["num.partitions"]
    # the cluster default "" lists only what is set there (Kafka's ConfigHelper)
    assert [c["name"] for c in v0["results"][1]["configs"]] == ["min.insync.replicas"]


def test_api_versions_and_forward() -> None:
    _log, _ctl, b = running_cluster(MV.IBP_4_0_IV3)
    resp = ask(b, 18, 4, {})
    assert {k["apiKey"] for k in resp["apiKeys"]} == {0, 1, 2, 3, 18, 19, 20, 22, 23, 29, 30, 31, 32, 33, 37,
                                                      44, 50, 51, 57, 60, 75}
    assert {f["name"]: f["maxVersionLevel"] for f in resp["finalizedFeatures"]} == {"metadata.version": 25}
    body = {"timeoutMs": 1, "featureUpdates": [], "validateOnly": True}
    reply = b.handle_request(57, 1, body, 0)
    assert reply == Forward(57, 1, body)


def test_version_change_closes_connections_and_snapshots() -> None:
    log, _ctl, b = running_cluster(MV.IBP_4_2_IV1)
    effects = log.append([fc.feature_level_record("metadata.version", 30)])
    assert any(isinstance(e, CloseClientConnections) for e in log.effects[2])
    assert b.image.metadata_version is MV.IBP_4_3_IV0
    assert effects  # every node reported the change


def test_registered_broker_fail_stop_unregisters() -> None:
    log = Log()
    ctl = controller(1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", 21)])
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, release="3.9")
    log.join(b)
    drive_broker(log, ctl, b, 0)
    assert b.broker_epoch >= 0
    with pytest.raises(FatalFaultError) as info:
        b.replay(log.end, [fc.feature_level_record("metadata.version", 25)])
    assert str(info.value) == (
        "Tried to apply FeatureLevelRecord FeatureLevelRecord(name='metadata.version', featureLevel=25), but "
        "this broker only supports versions 1-21"
    )
    assert info.value.cleanup == (ControllerCall(64, 0, {"brokerId": 2}),)
    assert b.state is BrokerState.SHUTTING_DOWN and b.poll(10**6) == []


def test_lifecycle_failures_and_reregistration() -> None:
    b = broker(2)
    calls = b.poll(0)
    assert [c.api_key for c in calls] == [62] and b.poll(1) == []  # one in flight
    reg = calls[0]
    assert "staticConfigs" not in reg.body_for(5) and "logDirs" not in reg.body_for(1)
    b.handle_controller_failure(5)
    assert b.poll(6) == [] and b.next_deadline_ms() == 105
    assert [c.api_key for c in b.poll(105)] == [62]
    b.handle_registration_response({"errorCode": 0, "brokerEpoch": 40}, 110)
    assert b.state is BrokerState.RECOVERY
    hb = b.poll(110)
    assert hb[0].api_key == 63 and hb[0].body["brokerEpoch"] == 40
    b.handle_heartbeat_response({"errorCode": Errors.STALE_BROKER_EPOCH.code}, 120)
    assert b.broker_epoch == -1 and [c.api_key for c in b.poll(120)] == [62]
    # a request that times out counts as a failure: retried after the backoff
    assert b.poll(120 + 30_000) == []
    deadline = b.next_deadline_ms()
    assert deadline is not None and deadline > 120 + 30_000
    assert [c.api_key for c in b.poll(deadline)] == [62]


def test_shutdown_before_registration() -> None:
    b = broker(2)
    b.begin_controlled_shutdown(0)
    assert b.is_shutdown_complete and b.poll(0) == []


def test_restart_on_old_software_loading_a_newer_snapshot_stays_fenced() -> None:
    """A broker restarted on older software loads its last snapshot before registering: it stays
    fenced with Kafka's refusal text (the runtime reports it) instead of dying."""
    from kraftwerk.image.writer import ImageWriterOptions, write_image

    log, _ctl, newer = running_cluster(MV.IBP_4_3_IV0)
    snapshot = write_image(newer.image, ImageWriterOptions(MV.IBP_4_3_IV0)).encoded()
    old = broker(2, release="3.9")
    assert old.load_snapshot(snapshot, end_offset=log.end) == []
    assert old.state is BrokerState.STARTING and old.fenced
    assert old.explain_refusal() == (
        "Unable to register because the broker does not support finalized version 30 of metadata.version. "
        "The broker wants a version between 1 and 21, inclusive."
    )
    # a registered broker still fails stop
    with pytest.raises(FatalFaultError):
        newer_old = broker(3, release="3.9")
        newer_old.broker_epoch = 7
        newer_old.load_snapshot(snapshot, end_offset=log.end)


def test_a_batch_with_an_unsupported_level_is_applied_not_at_all() -> None:
    """KIP-778 fail-stop happens before the batch: no earlier record of it reaches the image."""
    log = Log()
    ctl = controller(1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", 19)])
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, release="3.8")  # runs metadata.version 20, knows no streams.version
    log.join(b)
    drive_broker(log, ctl, b, 0)
    before = b.image
    with pytest.raises(FatalFaultError):
        b.replay(log.end, [fc.feature_level_record("metadata.version", 20),
                           fc.feature_level_record("streams.version", 1)])
    assert b.image is before and b.image.metadata_version is MV.IBP_3_7_IV4


def test_registration_reports_the_configs_kip_1294_audits() -> None:
    """BrokerRegistration v6: configs with an MV rule (file value or default), never a password."""
    reported = broker(2, static_configs={"log.segment.bytes": "4194304", "ssl.key.password": "s3cret",
                                         "num.partitions": "3"}).registration_body()["staticConfigs"]
    assert {c["name"]: c["value"] for c in reported} == {
        "log.segment.bytes": "4194304", "metadata.log.segment.bytes": "1073741824",
        "remote.log.manager.copier.thread.pool.size": "10",
        "remote.log.manager.expiration.thread.pool.size": "10"}
    assert broker(2).registration_body()["staticConfigs"] == []
