"""Replaying a real Kafka 4.3 metadata log and writing it back (the 3.7 log: ``tests/kafka37``)."""

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
def image43() -> MetadataImage:
    return load_log_dir(golden_path("kafka-4.3-standalone"))


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


def test_identity_at_own_version(image43: MetadataImage) -> None:
    check_identity_at_own_version(image43)


def check_identity_at_own_version(image: MetadataImage) -> None:
    """Written at its own metadata.version, a real image loses nothing and replays to itself."""
    result = write_image(image)
    assert result.lossless
    assert replay(reread(result)) == image
    assert reread(result)[0].value == {
        "name": "metadata.version",
        "featureLevel": image.metadata_version.feature_level,
    }  # type: ignore[union-attr]


def test_lower_versions_lossless_where_metadata_did_not_change(image43: MetadataImage) -> None:
    check_lower_versions_lossless(image43)


def check_lower_versions_lossless(image: MetadataImage) -> None:
    """Every lower metadata.version without a metadata change holds the image without a loss."""
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


def test_kafka_43_losses_by_version(image43: MetadataImage) -> None:
    assert image_losses(image43, MV.IBP_4_2_IV1) == ()  # nothing 4.3-only is in use
    assert image_losses(image43, MV.IBP_4_0_IV0) == (
        "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version level 23",
    )
    assert "controller registration data" in image_losses(image43, MV.IBP_3_6_IV2)
