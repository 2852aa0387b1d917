"""Writing images at lower metadata.versions: Kafka's ImageDowngradeTest and every loss kind."""

from __future__ import annotations

import uuid

import pytest

from kraftwerk.image.errors import UnwritableMetadataError
from kraftwerk.image.writer import ImageWriterOptions, LossPolicy, image_losses, write_image
from kraftwerk.protocol.json_form import uuid_from_str
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.image.helpers import as_tuples, mv_record, rec, replay, reread, uid

TOPIC_ID = uuid_from_str("5JPuABiJTPu2pQjpZWM6_A")
TOPIC = rec("TopicRecord", name="foo", topicId=TOPIC_ID)
PARTITION = dict(
    partitionId=0, topicId=TOPIC_ID, replicas=[0, 1], isr=[0, 1], leader=0, leaderEpoch=1, partitionEpoch=2
)


def _drop(image, mv):  # type: ignore[no-untyped-def]
    return write_image(image, ImageWriterOptions(mv, LossPolicy.DROP))


def test_pre_zk_migration_support_version() -> None:
    """§9 row 26: isMigratingZkBroker at 3.4-IV0 written at 3.3-IV3 → loss, RegisterBrokerRecord v1."""
    broker = dict(
        brokerId=123,
        incarnationId=uuid_from_str("XgjKo16hRWeWrTui0iR5Nw"),
        brokerEpoch=456,
        rack=None,
        fenced=False,
        inControlledShutdown=True,
    )
    image = replay(
        [
            mv_record(MV.IBP_3_4_IV0),
            rec("RegisterBrokerRecord", 2, isMigratingZkBroker=True, **broker),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
        ]
    )
    result = _drop(image, MV.IBP_3_3_IV3)
    assert result.losses == ("the isMigratingZkBroker state of one or more brokers",)
    assert as_tuples(reread(result)) == as_tuples(
        [
            mv_record(MV.IBP_3_3_IV3),
            rec("RegisterBrokerRecord", 1, **broker),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
        ]
    )


def test_directory_assignment_state() -> None:
    """§9 row 27: PartitionRecord v2 with directories written at 3.7-IV0 → loss, v0 without them."""
    dirs = [uuid_from_str("c7QfSi6xSIGQVh3Qd5RJxA"), uuid_from_str("rWaCHejCRRiptDMvW5Xw0g")]
    image = replay(
        [mv_record(MV.IBP_3_7_IV2), TOPIC, rec("PartitionRecord", 2, directories=dirs, **PARTITION)]
    )
    result = _drop(image, MV.IBP_3_7_IV0)
    assert result.losses == ("the directory assignment state of one or more replicas",)
    assert as_tuples(reread(result)) == as_tuples(
        [
            mv_record(MV.IBP_3_7_IV0),
            rec("ZkMigrationStateRecord", 0, zkMigrationState=0),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
        ]
    )


def test_premodern_version_loses_feature_flags() -> None:
    image = replay(
        [
            mv_record(MV.IBP_3_3_IV0),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
            rec("FeatureLevelRecord", name="foo.feature", featureLevel=4),
        ]
    )
    result = _drop(image, MV.IBP_3_2_IV0)
    assert result.losses == ("feature flag(s): foo.feature",)
    assert as_tuples(reread(result)) == as_tuples([TOPIC, rec("PartitionRecord", 0, **PARTITION)])


def test_pre_controlled_shutdown_state_version() -> None:
    broker = dict(
        brokerId=123,
        incarnationId=uuid_from_str("XgjKo16hRWeWrTui0iR5Nw"),
        brokerEpoch=456,
        rack=None,
        fenced=False,
    )
    image = replay(
        [
            mv_record(MV.IBP_3_3_IV3),
            rec("RegisterBrokerRecord", 1, inControlledShutdown=True, **broker),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
        ]
    )
    result = _drop(image, MV.IBP_3_3_IV2)
    assert result.losses == ("the inControlledShutdown state of one or more brokers",)
    assert as_tuples(reread(result)) == as_tuples(
        [
            mv_record(MV.IBP_3_3_IV2),
            rec("RegisterBrokerRecord", 0, **broker),
            TOPIC,
            rec("PartitionRecord", 0, **PARTITION),
        ]
    )


def _rich_image():  # type: ignore[no-untyped-def]
    """An image at 4.3-IV0 using everything that some older version cannot hold."""
    return replay(
        [
            mv_record(MV.IBP_4_3_IV0),
            rec("FeatureLevelRecord", name="eligible.leader.replicas.version", featureLevel=1),
            rec("ZkMigrationStateRecord", zkMigrationState=3),
            rec(
                "RegisterBrokerRecord",
                4,
                brokerId=1,
                incarnationId=uid(1),
                brokerEpoch=5,
                fenced=False,
                inControlledShutdown=True,
                isMigratingZkBroker=True,
                logDirs=[uid(7)],
                cordonedLogDirs=[uid(7)],
            ),
            rec("RegisterControllerRecord", controllerId=3000, incarnationId=uid(2)),
            TOPIC,
            rec(
                "PartitionRecord",
                2,
                directories=[uid(7), uid(8)],
                eligibleLeaderReplicas=[1],
                leaderRecoveryState=1,
                **PARTITION,
            ),
            rec(
                "UserScramCredentialRecord",
                name="alice",
                mechanism=1,
                salt=b"s",
                storedKey=b"k",
                serverKey=b"v",
                iterations=4096,
            ),
            rec(
                "DelegationTokenRecord",
                owner="User:a",
                requester="User:a",
                renewers=[],
                issueTimestamp=1,
                maxTimestamp=2,
                expirationTimestamp=3,
                tokenId="tok1",
            ),
        ]
    )


def test_refuse_collects_every_loss_before_raising() -> None:
    image = _rich_image()
    with pytest.raises(UnwritableMetadataError) as info:
        write_image(image, ImageWriterOptions(MV.IBP_3_3_IV2))
    err = info.value
    assert err.losses == (
        "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version=7 (3.3-IV3)",
        "the ZK Migration state which was POST_MIGRATION",
        "the inControlledShutdown state of one or more brokers",
        "the isMigratingZkBroker state of one or more brokers",
        "the online log directories of one or more brokers",
        "the cordoned log directories of one or more brokers",
        "controller registration data",
        "the eligible leader replicas of one or more partitions",
        "the directory assignment state of one or more replicas",
        "ScramImage({SCRAM_SHA_256:alice},{})",
        "DelegationTokenImage(tok1)",
    )
    assert str(err).startswith(
        "Metadata has been lost because the following could not be represented in "
        "metadata.version 3.3-IV2: the feature flag"
    )


@pytest.mark.parametrize(
    ("mv", "expected"),
    [
        (MV.IBP_4_2_IV1, ["the cordoned log directories of one or more brokers"]),
        (
            MV.IBP_4_0_IV0,
            [
                "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version "
                "level 23",
                "the cordoned log directories of one or more brokers",
                "the eligible leader replicas of one or more partitions",
            ],
        ),
        (
            MV.IBP_3_6_IV2,
            [
                "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version "
                "level 23",
                "the online log directories of one or more brokers",
                "the cordoned log directories of one or more brokers",
                "controller registration data",
                "the eligible leader replicas of one or more partitions",
                "the directory assignment state of one or more replicas",
            ],
        ),
        (
            MV.IBP_3_5_IV1,
            [
                "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version "
                "level 23",
                "the online log directories of one or more brokers",
                "the cordoned log directories of one or more brokers",
                "controller registration data",
                "the eligible leader replicas of one or more partitions",
                "the directory assignment state of one or more replicas",
                "ScramImage({SCRAM_SHA_256:alice},{})",
                "DelegationTokenImage(tok1)",
            ],
        ),
        (MV.IBP_3_1_IV0, None),
    ],
)
def test_losses_by_version(mv: MV, expected: list[str] | None) -> None:
    losses = image_losses(_rich_image(), mv)
    if expected is not None:
        assert list(losses) == expected
    else:
        assert "the leader recovery state of one or more partitions" in losses
        assert "feature flag(s): eligible.leader.replicas.version" in losses


def test_lossy_write_drops_data_and_replays_cleanly() -> None:
    image = _rich_image()
    result = _drop(image, MV.IBP_3_6_IV2)
    again = replay(reread(result))
    assert again.metadata_version is MV.IBP_3_6_IV2
    assert not again.cluster.controllers
    broker = again.cluster.brokers[1]
    assert broker.directories == () and broker.cordoned_directories == ()
    assert broker.is_migrating_zk_broker and broker.in_controlled_shutdown
    part = again.topics.by_id[TOPIC_ID].partitions[0]
    assert part.elr == () and all(d == uuid.UUID(int=0) for d in part.directories)
    assert "eligible.leader.replicas.version" not in again.features.finalized
    assert len(again.scram) == 1 and len(again.delegation_tokens) == 1


def test_static_configs_need_kip_1294_version() -> None:
    image = replay(
        [
            mv_record(MV.IBP_4_4_IV1),
            rec(
                "RegisterBrokerRecord",
                5,
                brokerId=1,
                incarnationId=uid(1),
                brokerEpoch=5,
                staticConfigs=[{"name": "log.dirs", "value": "/a"}],
            ),
        ]
    )
    assert image.cluster.brokers[1].static_configs == (("log.dirs", "/a"),)
    assert image_losses(image, MV.IBP_4_4_IV1) == ()
    assert image_losses(image, MV.IBP_4_4_IV0) == ("the static configs of one or more brokers",)
    again = replay(reread(write_image(image)))
    assert again == image
