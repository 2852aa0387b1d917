"""SoftwareVersion: per-release support ranges, side by side."""

from __future__ import annotations

import pytest

from kraftwerk.versions import (
    LATEST_RELEASE,
    Feature,
    MetadataVersion,
    SoftwareVersion,
    UnknownMetadataVersionError,
    UnknownReleaseError,
    VersionRange,
    known_releases,
)

MV = MetadataVersion


def test_latest_is_43() -> None:
    sw = SoftwareVersion.latest()
    assert LATEST_RELEASE == "4.3" and sw.release == "4.3" and str(sw) == "4.3 software"
    assert sw == SoftwareVersion.for_release("4.3")
    assert dict(sw.supported_features()) == {
        "metadata.version": VersionRange(7, 30),
        "kraft.version": VersionRange(0, 1),
        "transaction.version": VersionRange(0, 2),
        "group.version": VersionRange(0, 1),
        "eligible.leader.replicas.version": VersionRange(0, 1),
        "share.version": VersionRange(0, 1),
        "streams.version": VersionRange(0, 1),
    }
    assert sw.max_metadata_version is MV.IBP_4_3_IV0


def test_unstable_raises_the_maximum() -> None:
    sw = SoftwareVersion.latest(unstable=True)
    assert sw.unstable_enabled and str(sw) == "4.3 software (unstable enabled)"
    assert sw.supported_range("metadata.version") == VersionRange(7, 34)
    assert sw.supported_range("share.version") == VersionRange(0, 2)
    assert sw.with_unstable(False) == SoftwareVersion.latest()
    assert sw.parse_metadata_version("4.4-IV0") is MV.IBP_4_4_IV0
    with pytest.raises(UnknownMetadataVersionError):
        sw.parse_metadata_version("4.4-IV0", unstable=False)


@pytest.mark.parametrize(
    ("release", "mv_range", "features"),
    [
        ("3.0", (1, 1), {}),
        ("3.3", (1, 7), {}),
        ("3.7", (1, 19), {}),
        ("3.9", (1, 21), {"kraft.version": (0, 1)}),
        ("4.0", (7, 25), {"kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
                          "eligible.leader.replicas.version": (0, 1)}),
        ("4.1", (7, 27), {"kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
                          "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1)}),
        ("4.2", (7, 29), {"kraft.version": (0, 1), "transaction.version": (0, 2), "group.version": (0, 1),
                          "eligible.leader.replicas.version": (0, 1), "share.version": (0, 1),
                          "streams.version": (0, 1)}),
    ],
)
def test_release_profiles(
    release: str, mv_range: tuple[int, int], features: dict[str, tuple[int, int]]
) -> None:
    sw = SoftwareVersion.for_release(release)
    expected = {"metadata.version": VersionRange(*mv_range)}
    expected.update({name: VersionRange(*r) for name, r in features.items()})
    assert dict(sw.supported_features()) == expected


def test_release_with_patch_and_unknown_release() -> None:
    assert SoftwareVersion.for_release("3.9.1") == SoftwareVersion.for_release("3.9")
    with pytest.raises(UnknownReleaseError, match=r"^Unknown software release '2\.8'"):
        SoftwareVersion.for_release("2.8")
    assert known_releases()[0] == "3.0" and known_releases()[-2:] == ("4.3", "4.4")


def test_release_4_4_carries_kip_1294() -> None:
    """kraftwerk's 4.4 accepts 4.4-IV1 (static config reporting, the 3 MiB rule) as production."""
    sw = SoftwareVersion.for_release("4.4")
    assert sw.latest_production is MetadataVersion.IBP_4_4_IV1
    assert sw.parse_metadata_version("4.4") is MetadataVersion.IBP_4_4_IV1
    assert sw.latest_production.is_broker_static_configs_supported()
    assert sw.supports("metadata.version", 32) and not sw.supports("metadata.version", 33)
    assert sw.with_unstable().supports("metadata.version", 34)
    assert SoftwareVersion.latest().latest_production is MetadataVersion.IBP_4_3_IV0


def test_old_and_new_node_side_by_side() -> None:
    old, new = SoftwareVersion.for_release("3.9"), SoftwareVersion.latest()
    assert old.supports("metadata.version", 21) and new.supports("metadata.version", 21)
    assert not old.supports("metadata.version", 22) and new.supports("metadata.version", 30)
    assert old.supports("metadata.version", 1) and not new.supports("metadata.version", 6)
    # a feature the node does not advertise is supported only disabled
    assert old.supports("group.version", 0) and not old.supports("group.version", 1)
    assert old.supports("transaction.version", 0) and not old.supports("transaction.version", 1)
    assert old.with_unstable().supports("transaction.version", 2)
    assert new.supports("group.version", 1)
    assert old.feature_range(Feature.GROUP_VERSION) is None


def test_release_parsing_uses_release_bounds() -> None:
    old = SoftwareVersion.for_release("3.9")
    assert old.parse_metadata_version("3.2") is MV.IBP_3_2_IV0
    assert old.parse_metadata_version("3.3-IV1") is MV.IBP_3_3_IV1
    with pytest.raises(UnknownMetadataVersionError) as info:
        old.parse_metadata_version("4.0")
    assert str(info.value).startswith(
        "Unknown metadata.version '4.0'. Supported metadata.version are: 3.0-IV1, "
    )
    assert str(info.value).endswith(", 3.8-IV0, 3.9-IV0")
    assert old.metadata_version_for_level(22) is MV.IBP_4_0_IV0
    with pytest.raises(UnknownMetadataVersionError, match="from 1 to 22"):
        old.metadata_version_for_level(23)
    new = SoftwareVersion.for_release("4.2")
    assert new.parse_metadata_version("4.2") is MV.IBP_4_2_IV1
    with pytest.raises(UnknownMetadataVersionError):
        new.parse_metadata_version("4.3")  # no production IV of 4.3 in 4.2 software
    assert new.with_unstable().parse_metadata_version("4.3-IV0") is MV.IBP_4_3_IV0
    with pytest.raises(UnknownMetadataVersionError, match="Valid feature levels are from 7 to 30"):
        new.metadata_version_for_level(6)


def test_is_hashable_value() -> None:
    assert len({SoftwareVersion.latest(), SoftwareVersion.for_release("4.3")}) == 1
