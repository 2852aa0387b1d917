"""Hypothesis: random valid record sequences → replay → write → replay gives the same image."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.image.loader import MetadataBatch, load_snapshot
from kraftwerk.image.replay import ImageReplayer
from kraftwerk.image.writer import write_image
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from kraftwerk.versions.software import SoftwareVersion
from tests.image.helpers import mv_record, rec, replay, reread, uid

VERSIONS = [
    MV.IBP_3_3_IV3,
    MV.IBP_3_4_IV0,
    MV.IBP_3_5_IV2,
    MV.IBP_3_6_IV2,
    MV.IBP_3_7_IV0,
    MV.IBP_3_7_IV2,
    MV.IBP_3_9_IV0,
    MV.IBP_4_0_IV1,
    MV.IBP_4_2_IV1,
    MV.IBP_4_3_IV0,
    MV.IBP_4_4_IV1,
]


@st.composite
def record_logs(draw: st.DrawFn) -> list[MetadataRecord]:
    """A log valid at one metadata.version, using only what that version can represent."""
    mv: MV = draw(st.sampled_from(VERSIONS))
    pv = mv.partition_record_version()
    out = [mv_record(mv)]
    brokers: dict[int, int] = {}
    topics: dict[int, list[int]] = {}
    acls: set[int] = set()
    next_topic = 0
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(
            st.sampled_from(
                [
                    "broker",
                    "change",
                    "topic",
                    "partition",
                    "pchange",
                    "rmtopic",
                    "config",
                    "feature",
                    "acl",
                    "rmacl",
                    "scram",
                    "token",
                    "quota",
                    "pids",
                    "txn",
                    "controller",
                    "clearelr",
                    "unregister",
                    "partition",
                    "partition",
                    "pchange",
                    "topic",
                ]
            )
        )
        if kind == "broker":
            bid = draw(st.integers(0, 4))
            brokers[bid] = draw(st.integers(0, 100))
            fields: dict[str, Any] = dict(
                brokerId=bid,
                incarnationId=uid(bid),
                brokerEpoch=brokers[bid],
                fenced=draw(st.booleans()),
                rack=draw(st.sampled_from([None, "r1"])),
                endPoints=[{"name": "PLAINTEXT", "host": "h", "port": 9092 + bid, "securityProtocol": 0}],
                features=[{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 30}],
            )
            if mv.is_in_controlled_shutdown_state_supported():
                fields["inControlledShutdown"] = draw(st.booleans())
            if mv.is_directory_assignment_supported():
                fields["logDirs"] = [uid(200 + bid)]
            if mv.is_cordoned_log_dirs_supported() and draw(st.booleans()):
                fields["cordonedLogDirs"] = [uid(200 + bid)]
            if mv >= MV.IBP_4_4_IV1 and draw(st.booleans()):
                fields["staticConfigs"] = [{"name": "log.dirs", "value": "/d"}]
            out.append(
                rec(
                    "RegisterBrokerRecord",
                    mv.register_broker_record_version(),
                    **fields,
                )
            )
        elif kind == "change" and brokers:
            bid = draw(st.sampled_from(sorted(brokers)))
            out.append(
                rec(
                    "BrokerRegistrationChangeRecord",
                    1,
                    brokerId=bid,
                    brokerEpoch=brokers[bid],
                    fenced=draw(st.sampled_from([-1, 0, 1])),
                    inControlledShutdown=draw(st.sampled_from([0, 1]))
                    if mv.is_in_controlled_shutdown_state_supported()
                    else 0,
                )
            )
        elif kind == "unregister" and brokers:
            bid = draw(st.sampled_from(sorted(brokers)))
            out.append(rec("UnregisterBrokerRecord", brokerId=bid, brokerEpoch=brokers.pop(bid)))
        elif kind == "controller" and mv.is_controller_registration_supported():
            out.append(
                rec(
                    "RegisterControllerRecord",
                    controllerId=draw(st.integers(3000, 3002)),
                    incarnationId=uid(7),
                    zkMigrationReady=draw(st.booleans()),
                )
            )
        elif kind == "topic":
            topics[next_topic] = []
            out.append(rec("TopicRecord", name=f"t{next_topic}", topicId=uid(1000 + next_topic)))
            next_topic += 1
        elif kind == "partition" and topics:
            t = draw(st.sampled_from(sorted(topics)))
            pid = len(topics[t])
            topics[t].append(pid)
            replicas = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
            fields = dict(
                partitionId=pid,
                topicId=uid(1000 + t),
                replicas=replicas,
                isr=replicas[:1],
                leader=replicas[0],
                leaderEpoch=draw(st.integers(0, 5)),
                partitionEpoch=draw(st.integers(0, 5)),
                leaderRecoveryState=draw(st.sampled_from([0, 1])),
            )
            if pv >= 1:
                fields["directories"] = [uid(200 + r) for r in replicas]
            if pv >= 2:
                fields["eligibleLeaderReplicas"] = draw(st.sampled_from([None, [], replicas[-1:]]))
                fields["lastKnownElr"] = draw(st.sampled_from([None, [4]]))
            out.append(rec("PartitionRecord", pv, **fields))
        elif kind == "pchange" and any(topics.values()):
            t = draw(st.sampled_from(sorted(t for t in topics if topics[t])))
            pid = draw(st.sampled_from(topics[t]))
            fields = dict(
                partitionId=pid,
                topicId=uid(1000 + t),
                leader=draw(st.sampled_from([-2, -1, 3])),
                isr=draw(st.sampled_from([None, [3]])),
                leaderRecoveryState=draw(st.sampled_from([-1, 0, 1])),
            )
            if draw(st.booleans()):
                fields["replicas"] = [3, 4]
                if pv >= 1 and draw(st.booleans()):
                    fields["directories"] = [uid(203), uid(204)]
            if pv >= 2:
                fields["eligibleLeaderReplicas"] = draw(st.sampled_from([None, [], [3]]))
            out.append(rec("PartitionChangeRecord", pv, **fields))
        elif kind == "clearelr" and mv.is_elr_supported() and topics:
            out.append(
                rec("ClearElrRecord", topicName=draw(st.sampled_from(["", *(f"t{t}" for t in topics)])))
            )
        elif kind == "rmtopic" and topics:
            t = draw(st.sampled_from(sorted(topics)))
            del topics[t]
            out.append(rec("RemoveTopicRecord", topicId=uid(1000 + t)))
        elif kind == "config":
            out.append(
                rec(
                    "ConfigRecord",
                    resourceType=draw(st.sampled_from([2, 4])),
                    resourceName=draw(st.sampled_from(["", "t0", "t1"])),
                    name=draw(st.sampled_from(["a", "b"])),
                    value=draw(st.sampled_from([None, "1", "2"])),
                )
            )
        elif kind == "feature":
            name, levels = draw(
                st.sampled_from(
                    [("group.version", [0, 1]), ("transaction.version", [0, 1, 2])]
                    + ([("eligible.leader.replicas.version", [0, 1])] if mv.is_elr_supported() else [])
                )
            )
            out.append(rec("FeatureLevelRecord", name=name, featureLevel=draw(st.sampled_from(levels))))
        elif kind == "acl":
            a = draw(st.integers(0, 3))
            acls.add(a)
            out.append(
                rec(
                    "AccessControlEntryRecord",
                    id=uid(500 + a),
                    resourceType=2,
                    resourceName="t",
                    patternType=3,
                    principal="User:a",
                    host="*",
                    operation=draw(st.integers(2, 4)),
                    permissionType=3,
                )
            )
        elif kind == "rmacl" and acls:
            a = draw(st.sampled_from(sorted(acls)))
            acls.discard(a)
            out.append(rec("RemoveAccessControlEntryRecord", id=uid(500 + a)))
        elif kind == "scram" and mv.is_scram_supported():
            out.append(
                rec(
                    "UserScramCredentialRecord",
                    name=draw(st.sampled_from(["a", "b"])),
                    mechanism=draw(st.sampled_from([1, 2])),
                    salt=b"s",
                    storedKey=b"k",
                    serverKey=b"v",
                    iterations=4096,
                )
            )
        elif kind == "token" and mv.is_delegation_token_supported():
            out.append(
                rec(
                    "DelegationTokenRecord",
                    owner="User:a",
                    requester="User:a",
                    renewers=[],
                    issueTimestamp=1,
                    maxTimestamp=2,
                    expirationTimestamp=3,
                    tokenId=draw(st.sampled_from(["x", "y"])),
                )
            )
        elif kind == "quota":
            out.append(
                rec(
                    "ClientQuotaRecord",
                    entity=[{"entityType": "client-id", "entityName": draw(st.sampled_from([None, "c"]))}],
                    key="request_percentage",
                    value=draw(st.floats(0, 100)),
                    remove=draw(st.booleans()),
                )
            )
        elif kind == "pids":
            out.append(
                rec("ProducerIdsRecord", brokerId=0, brokerEpoch=0, nextProducerId=draw(st.integers(0, 9)))
            )
        elif kind == "txn" and mv.is_metadata_transaction_supported():
            out.append(rec("BeginTransactionRecord", name="t"))
            out.append(rec("NoOpRecord"))
            out.append(rec("EndTransactionRecord") if draw(st.booleans()) else rec("AbortTransactionRecord"))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_logs())
def test_replay_write_replay_is_identity(records: list[MetadataRecord]) -> None:
    image = replay(records)
    result = write_image(image)  # refuses on any loss: a valid log at its own version is lossless
    again = replay(reread(result))
    assert again == image
    assert write_image(again).encoded() == result.encoded()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record_logs())
def test_batch_by_batch_equals_one_delta(records: list[MetadataRecord]) -> None:
    loader = ImageReplayer(1, "broker", SoftwareVersion.latest(unstable=True), snapshots=False)
    for i, r in enumerate(records):
        loader.replay(i, [r], epoch=1)
    assert loader.image == replay(records)
    snap = [MetadataBatch(i, i, 1, 0, ((i, r),)) for i, r in enumerate(reread(write_image(loader.image)))]
    assert load_snapshot(snap, loader.image) == load_snapshot(snap) == loader.image
