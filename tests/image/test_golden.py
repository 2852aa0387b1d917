"""Replaying real Kafka metadata logs (3.7 cluster, 4.3 standalone) and writing them back."""

from __future__ import annotations

import pytest

from kraftwerk.image.model import MetadataImage, SupportedRange
from kraftwerk.image.source import load_log_dir
from kraftwerk.image.writer import image_losses, write_image
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from kraftwerk.versions.metadata_version import check_if_metadata_changed
from tests.conftest import golden_path
from tests.image.helpers import replay, reread


@pytest.fixture(scope="module")
def image37() -> MetadataImage:
    return load_log_dir(golden_path("kafka-3.7-cluster", "__cluster_metadata-0"))


@pytest.fixture(scope="module")
def image43() -> MetadataImage:
    return load_log_dir(golden_path("kafka-4.3-standalone"))


def test_kafka_37_log(image37: MetadataImage) -> None:
    assert image37.metadata_version is MV.IBP_3_7_IV4
    assert image37.metadata_version.feature_level == 19
    assert dict(image37.features.finalized) == {}
    assert image37.features_epoch == 2  # the offset of the FeatureLevelRecord
    (broker,) = image37.cluster.brokers.values()
    assert broker.id == 1 and broker.epoch == 8
    assert [(e.name, e.host, e.port) for e in broker.listeners] == [("PLAINTEXT", "kafka", 9092)]
    assert broker.supported_features == (("metadata.version", SupportedRange(1, 19)),)
    assert len(broker.directories) == 1
    (controller,) = image37.cluster.controllers.values()
    assert controller.id == 1 and controller.listeners[0].name == "CONTROLLER"
    assert sorted(image37.topics.by_name) == [
        "Retry.TestTopicPatient",
        "TestTopicPatient",
        "__consumer_offsets",
        "batch2.work.notification.SHR_PROD.persistence",
        "subscription.matching.SHR_PROD.persistence",
    ]
    assert len(image37.topics.by_name["__consumer_offsets"].partitions) == 50
    assert image37.topics.partition_count() == 54
    part = image37.topics.by_name["TestTopicPatient"].partitions[0]
    assert part.replicas == (1,) and part.isr == (1,) and part.directories == broker.directories
    assert image37.producer_ids_next == 1000
    assert image37.features.zk_migration_state.name == "NONE"
    assert image37.provenance.last_offset == 4928


def test_kafka_43_log(image43: MetadataImage) -> None:
    assert image43.metadata_version is MV.IBP_4_3_IV0
    assert dict(image43.features.finalized) == {
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "share.version": 1,
        "streams.version": 1,
        "transaction.version": 2,
    }
    assert image43.features_epoch == 111  # transaction.version re-enabled at offset 111
    (broker,) = image43.cluster.brokers.values()
    assert broker.id == 1 and broker.epoch == 13 and not broker.fenced
    assert uuid_to_str(broker.incarnation_id) == "57zlZUURQie1Y8zM_naNRw"
    assert broker.feature_range("metadata.version") == SupportedRange(7, 30)
    assert broker.cordoned_directories == ()
    (controller,) = image43.cluster.controllers.values()
    assert uuid_to_str(controller.incarnation_id) == "sv6NG4WqSIyRNmKNwB8O8w"
    assert controller.feature_range("transaction.version") == SupportedRange(0, 2)
    assert len(image43.topics) == 0
    assert {(r.type, r.name): dict(c) for r, c in image43.configs.items()} == {
        (4, ""): {"min.insync.replicas": "1"}
    }


@pytest.mark.parametrize("which", ["image37", "image43"])
def test_identity_at_own_version(which: str, request: pytest.FixtureRequest) -> None:
    image: MetadataImage = request.getfixturevalue(which)
    result = write_image(image)
    assert result.lossless
    assert replay(reread(result)) == image
    assert reread(result)[0].value == {
        "name": "metadata.version",
        "featureLevel": image.metadata_version.feature_level,
    }  # type: ignore[union-attr]


@pytest.mark.parametrize("which", ["image37", "image43"])
def test_lower_versions_lossless_where_metadata_did_not_change(
    which: str, request: pytest.FixtureRequest
) -> None:
    image: MetadataImage = request.getfixturevalue(which)
    source = image.metadata_version
    assert source is not None
    for target in MV:
        if target > source:
            continue
        losses = image_losses(image, target)
        if not check_if_metadata_changed(source, target):
            assert losses == (), target
            again = replay(reread(write_image(image, target)))
            assert again.cluster == image.cluster and again.topics == image.topics, target


def test_kafka_37_losses_by_version(image37: MetadataImage) -> None:
    dirs = [
        "the online log directories of one or more brokers",
        "the directory assignment state of one or more replicas",
    ]
    assert list(image_losses(image37, MV.IBP_3_7_IV1)) == dirs
    assert list(image_losses(image37, MV.IBP_3_7_IV0)) == dirs
    assert list(image_losses(image37, MV.IBP_3_6_IV2)) == [dirs[0], "controller registration data", dirs[1]]
    # the 3.7 broker was in controlled shutdown when the log ended
    assert list(image_losses(image37, MV.IBP_3_3_IV2)) == [
        "the inControlledShutdown state of one or more brokers",
        dirs[0],
        "controller registration data",
        dirs[1],
    ]


def test_kafka_43_losses_by_version(image43: MetadataImage) -> None:
    assert image_losses(image43, MV.IBP_4_2_IV1) == ()  # nothing 4.3-only is in use
    assert image_losses(image43, MV.IBP_4_0_IV0) == (
        "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version level 23",
    )
    assert "controller registration data" in image_losses(image43, MV.IBP_3_6_IV2)
