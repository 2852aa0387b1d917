"""Replay semantics of MetadataDelta: sentinels, deletes, transactions, errors, sharing."""

from __future__ import annotations

import pytest

from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.errors import MetadataReplayError
from kraftwerk.image.loader import MetadataBatch, load_snapshot, replay_batches
from kraftwerk.image.model import DIR_MIGRATING, DIR_UNASSIGNED, ConfigResource, LeaderRecoveryState
from kraftwerk.image.replay import ImageReplayer
from kraftwerk.image.writer import write_image
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from kraftwerk.versions.software import SoftwareVersion
from tests.image.helpers import mv_record, rec, replay, reread, uid

T = uid(1)


def _base() -> list:  # type: ignore[type-arg]
    return [
        mv_record(MV.IBP_3_7_IV2),
        rec("RegisterBrokerRecord", 3, brokerId=1, incarnationId=uid(9), brokerEpoch=10, logDirs=[uid(5)]),
        rec("TopicRecord", name="t", topicId=T),
        rec(
            "PartitionRecord",
            1,
            partitionId=0,
            topicId=T,
            replicas=[1, 2, 3],
            isr=[1, 2],
            leader=1,
            leaderEpoch=4,
            partitionEpoch=7,
            directories=[uid(5), uid(6), uid(7)],
        ),
    ]


def test_partition_change_sentinels() -> None:
    image = replay(_base())
    # leader -2 (default) = no change: epochs: leader epoch kept, partition epoch bumped
    image = replay([rec("PartitionChangeRecord", 1, partitionId=0, topicId=T, isr=[1])], image)
    p = image.topics.by_id[T].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (1, 4, 8, (1,))
    # leader -1 = no leader now: bumps the leader epoch
    image = replay(
        [rec("PartitionChangeRecord", 1, partitionId=0, topicId=T, leader=-1, leaderRecoveryState=1)], image
    )
    p = image.topics.by_id[T].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (-1, 5, 9)
    assert p.leader_recovery_state is LeaderRecoveryState.RECOVERING
    # new replicas keep known directories, new ones are UNASSIGNED
    image = replay([rec("PartitionChangeRecord", 1, partitionId=0, topicId=T, replicas=[3, 4])], image)
    p = image.topics.by_id[T].partitions[0]
    assert p.replicas == (3, 4) and p.directories == (uid(7), DIR_UNASSIGNED)
    assert p.leader_recovery_state is LeaderRecoveryState.RECOVERING  # -1 default = unchanged


def test_partition_without_directories_is_migrating() -> None:
    image = replay(
        [
            mv_record(MV.IBP_3_6_IV2),
            rec("TopicRecord", name="t", topicId=T),
            rec("PartitionRecord", 0, partitionId=0, topicId=T, replicas=[1, 2], isr=[1]),
        ]
    )
    assert image.topics.by_id[T].partitions[0].directories == (DIR_MIGRATING, DIR_MIGRATING)


def test_broker_change_int8_semantics() -> None:
    image = replay(_base())
    assert image.cluster.brokers[1].fenced
    image = replay([rec("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=10, fenced=-1)], image)
    assert not image.cluster.brokers[1].fenced
    image = replay(
        [
            rec(
                "BrokerRegistrationChangeRecord",
                1,
                brokerId=1,
                brokerEpoch=10,
                fenced=0,
                inControlledShutdown=1,
            )
        ],
        image,
    )
    b = image.cluster.brokers[1]
    assert not b.fenced and b.in_controlled_shutdown
    image = replay([rec("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=10, fenced=1)], image)
    assert image.cluster.brokers[1].fenced
    image = replay([rec("UnfenceBrokerRecord", id=1, epoch=10)], image)
    assert not image.cluster.brokers[1].fenced
    with pytest.raises(MetadataReplayError, match="did not match"):
        replay([rec("FenceBrokerRecord", id=1, epoch=11)], image)
    with pytest.raises(MetadataReplayError):
        replay([rec("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=10, fenced=2)], image)
    image = replay([rec("UnregisterBrokerRecord", brokerId=1, brokerEpoch=10)], image)
    assert not image.cluster.brokers


def test_features_configs_and_removals() -> None:
    image = replay(
        [
            *_base(),
            rec("FeatureLevelRecord", name="group.version", featureLevel=1),
            rec("FeatureLevelRecord", name="kraft.version", featureLevel=1),
            rec("ConfigRecord", resourceType=2, resourceName="t", name="retention.ms", value="1"),
            rec("ConfigRecord", resourceType=4, resourceName="", name="a", value="1"),
            rec("ConfigRecord", resourceType=4, resourceName="", name="b", value="2"),
        ]
    )
    assert dict(image.features.finalized) == {"group.version": 1}  # kraft.version ignored
    image = replay(
        [
            rec("FeatureLevelRecord", name="group.version", featureLevel=0),
            rec("ConfigRecord", resourceType=4, resourceName="", name="a", value=None),
            rec("RemoveTopicRecord", topicId=T),
        ],
        image,
    )
    assert dict(image.features.finalized) == {}
    assert {r: dict(c) for r, c in image.configs.items()} == {ConfigResource(4, ""): {"b": "2"}}
    assert len(image.topics) == 0 and "t" not in image.topics.by_name
    with pytest.raises(MetadataReplayError, match="no such topic"):
        replay([rec("RemoveTopicRecord", topicId=T)], image)
    with pytest.raises(MetadataReplayError):
        replay([rec("FeatureLevelRecord", name="metadata.version", featureLevel=99)], image)


def test_clear_elr() -> None:
    image = replay(
        [
            mv_record(MV.IBP_4_0_IV1),
            rec("TopicRecord", name="t", topicId=T),
            rec(
                "PartitionRecord",
                2,
                partitionId=0,
                topicId=T,
                replicas=[1, 2],
                isr=[1],
                eligibleLeaderReplicas=[2],
                lastKnownElr=[3],
                partitionEpoch=1,
            ),
            rec("PartitionRecord", 2, partitionId=1, topicId=T, replicas=[1], isr=[1], partitionEpoch=1),
        ]
    )
    cleared = replay([rec("ClearElrRecord", topicName="")], image)
    p0, p1 = cleared.topics.by_id[T].partitions[0], cleared.topics.by_id[T].partitions[1]
    assert (p0.elr, p0.last_known_elr, p0.partition_epoch) == ((), (), 2)
    assert p1 is image.topics.by_id[T].partitions[1]
    assert replay([rec("ClearElrRecord", topicName="t")], image) == cleared
    with pytest.raises(MetadataReplayError):
        replay([rec("ClearElrRecord", topicName="nope")], image)


def test_transactions_commit_and_abort() -> None:
    topic = rec("TopicRecord", name="x", topicId=uid(3))
    begin, end, abort = (
        rec("BeginTransactionRecord"),
        rec("EndTransactionRecord"),
        rec("AbortTransactionRecord"),
    )
    base = replay(_base())
    assert "x" in replay([begin, topic, end], base).topics.by_name
    assert "x" not in replay([begin, topic, abort], base).topics.by_name
    # an open transaction is not visible; the loader carries it across batches
    loader = ImageReplayer(1, "broker", SoftwareVersion.latest())
    loader.image = base
    loader.replay(10, [begin, topic], epoch=1)
    assert loader.in_transaction and "x" not in loader.image.topics.by_name
    loader.replay(12, [end], epoch=1)
    assert not loader.in_transaction and "x" in loader.image.topics.by_name
    with pytest.raises(MetadataReplayError):
        replay([end])


def test_security_records() -> None:
    image = replay(
        [
            *_base(),
            rec(
                "AccessControlEntryRecord",
                id=uid(4),
                resourceType=2,
                resourceName="t",
                patternType=3,
                principal="User:a",
                host="*",
                operation=3,
                permissionType=3,
            ),
            rec(
                "UserScramCredentialRecord",
                name="a",
                mechanism=2,
                salt=b"1",
                storedKey=b"2",
                serverKey=b"3",
                iterations=8192,
            ),
            rec(
                "DelegationTokenRecord",
                owner="User:a",
                requester="User:b",
                renewers=["User:c"],
                issueTimestamp=1,
                maxTimestamp=3,
                expirationTimestamp=2,
                tokenId="t1",
            ),
            rec(
                "ClientQuotaRecord",
                entity=[{"entityType": "user", "entityName": None}],
                key="producer_byte_rate",
                value=10.0,
                remove=False,
            ),
            rec("ProducerIdsRecord", brokerId=1, brokerEpoch=10, nextProducerId=5000),
        ]
    )
    assert (
        len(image.acls) == len(image.scram) == len(image.delegation_tokens) == len(image.client_quotas) == 1
    )
    assert image.producer_ids_next == 5000
    assert replay(reread(write_image(image))) == image
    image = replay(
        [
            rec("RemoveAccessControlEntryRecord", id=uid(4)),
            rec("RemoveUserScramCredentialRecord", name="a", mechanism=2),
            rec("RemoveDelegationTokenRecord", tokenId="t1"),
            rec(
                "ClientQuotaRecord",
                entity=[{"entityType": "user", "entityName": None}],
                key="producer_byte_rate",
                value=0.0,
                remove=True,
            ),
        ],
        image,
    )
    assert not image.acls and not image.scram and not image.delegation_tokens and not image.client_quotas
    with pytest.raises(MetadataReplayError):
        replay([rec("RemoveAccessControlEntryRecord", id=uid(4))], image)


def _batches(records: list, start: int = 0) -> list[MetadataBatch]:  # type: ignore[type-arg]
    return [MetadataBatch(start + i, start + i, 1, 0, ((start + i, r),)) for i, r in enumerate(records)]


def test_hot_snapshot_load_equals_cold_load() -> None:
    old = replay(
        [
            *_base(),
            rec("TopicRecord", name="gone", topicId=uid(8)),
            rec("ConfigRecord", resourceType=4, resourceName="", name="stale", value="1"),
            rec("FeatureLevelRecord", name="group.version", featureLevel=1),
        ]
    )
    snapshot_image = replay(
        [*_base(), rec("ConfigRecord", resourceType=4, resourceName="", name="x", value="1")]
    )
    snap = reread(write_image(snapshot_image))
    cold = load_snapshot(_batches(snap), snapshot_offset=100, snapshot_epoch=2)
    hot = load_snapshot(_batches(snap), old, snapshot_offset=100, snapshot_epoch=2)
    assert hot == cold == snapshot_image
    assert hot.provenance.last_offset == 99 and hot.features_epoch == 99
    loader = ImageReplayer(1, "broker", SoftwareVersion.latest())
    loader.image = old
    assert loader.load_snapshot(snap, end_offset=100, epoch=2) == cold


def test_one_partition_change_shares_everything_else() -> None:
    records = [mv_record(MV.IBP_3_7_IV2)]
    for t in range(300):
        records.append(rec("TopicRecord", name=f"t{t}", topicId=uid(100 + t)))
        records.extend(
            rec(
                "PartitionRecord",
                1,
                partitionId=p,
                topicId=uid(100 + t),
                replicas=[1],
                isr=[1],
                directories=[uid(5)],
            )
            for p in range(4)
        )
    image = replay_batches(_batches(records))
    delta = MetadataDelta(image)
    delta.replay(rec("PartitionChangeRecord", 1, partitionId=2, topicId=uid(100), isr=[]))
    new = delta.apply()
    assert new.topics.by_id[uid(100)].partitions[2].isr == ()
    assert new.topics.by_id[uid(100)].partitions[1] is image.topics.by_id[uid(100)].partitions[1]
    for t in range(1, 300):
        assert new.topics.by_id[uid(100 + t)] is image.topics.by_id[uid(100 + t)]
    assert new.cluster is image.cluster and new.configs is image.configs and new.features is image.features
    assert image.topics.by_id[uid(100)].partitions[2].isr == (1,)  # the old image is untouched


@pytest.mark.parametrize("collector_on", [True, False])
def test_cold_replay_shares_equal_tuples_and_leaves_the_collector_as_it_was(collector_on: bool) -> None:
    """Partitions with equal replicas, ISR and directories hold one tuple each (the image's memory
    per partition); the replay pauses Python's cyclic collector and restores it, even on error."""
    import gc

    records = [*_base(), rec("PartitionRecord", 1, partitionId=1, topicId=T, replicas=[1, 2, 3], isr=[1, 2],
                             leader=2, directories=[uid(5), uid(6), uid(7)])]
    batch = MetadataBatch(0, len(records) - 1, 1, 0, tuple(enumerate(records)))
    bad = MetadataBatch(9, 9, 1, 0, ((9, rec("PartitionRecord", 1, partitionId=0, topicId=uid(77))),))
    was = gc.isenabled()
    try:
        if not collector_on:
            gc.disable()
        partitions = replay_batches([batch]).topics.by_id[T].partitions
        p0, p1 = partitions[0], partitions[1]
        assert p0.replicas is p1.replicas and p0.isr is p1.isr and p0.directories is p1.directories
        assert (p0.leader, p1.leader) == (1, 2)
        assert gc.isenabled() is collector_on
        with pytest.raises(MetadataReplayError):
            replay_batches([batch, bad])
        assert gc.isenabled() is collector_on
    finally:
        if was:
            gc.enable()
