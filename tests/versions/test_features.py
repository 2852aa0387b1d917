"""Feature flags: ports of Kafka's FeatureTest and the reference tables (§2)."""

from __future__ import annotations

import pytest

from kraftwerk.versions import (
    LATEST_PRODUCTION,
    PRODUCTION_FEATURES,
    VERSIONS,
    Feature,
    FeatureDependencyError,
    FeatureLevel,
    MetadataVersion,
    UnknownFeatureError,
    UnknownFeatureLevelError,
    VersionError,
    VersionRange,
    check_catalogue,
    default_levels,
    feature_names_sorted,
    validate_version,
)

MV = MetadataVersion
ORDER = [
    "kraft.version", "transaction.version", "group.version", "eligible.leader.replicas.version",
    "share.version", "streams.version",
]


def test_enum_order_and_names() -> None:
    assert [f.feature_name for f in PRODUCTION_FEATURES] == ORDER
    assert [str(f) for f in Feature] == ORDER
    assert feature_names_sorted() == tuple(sorted(ORDER))
    assert Feature.from_name("group.version") is Feature.GROUP_VERSION
    assert Feature.lookup("metadata.version") is None
    with pytest.raises(UnknownFeatureError, match=r"^Unknown feature: foo\.bar$"):
        Feature.from_name("foo.bar")


@pytest.mark.parametrize(
    ("feature", "levels", "latest_production", "latest_testing"),
    [
        (Feature.KRAFT_VERSION, [(0, MV.IBP_3_3_IV3), (1, MV.IBP_3_9_IV0)], 1, 1),
        (Feature.TRANSACTION_VERSION,
         [(0, MV.IBP_3_3_IV3), (1, MV.IBP_4_0_IV2), (2, MV.IBP_4_0_IV2)], 2, 2),
        (Feature.GROUP_VERSION, [(0, MV.IBP_3_3_IV3), (1, MV.IBP_4_0_IV0)], 1, 1),
        (Feature.ELIGIBLE_LEADER_REPLICAS_VERSION, [(0, MV.IBP_3_3_IV3), (1, MV.IBP_4_1_IV0)], 1, 1),
        (Feature.SHARE_VERSION,
         [(0, MV.IBP_3_3_IV3), (1, MV.IBP_4_2_IV0), (2, MV.IBP_4_4_IV2)], 1, 2),
        (Feature.STREAMS_VERSION, [(0, MV.IBP_3_3_IV3), (1, MV.IBP_4_2_IV1)], 1, 1),
    ],
)
def test_catalogue(
    feature: Feature, levels: list[tuple[int, MetadataVersion]], latest_production: int, latest_testing: int
) -> None:
    assert [(lv.level, lv.bootstrap_metadata_version) for lv in feature.levels] == levels
    assert all(lv.feature_name == feature.feature_name for lv in feature.levels)
    assert feature.latest_production == latest_production
    assert feature.latest_testing == latest_testing
    assert feature.minimum_production == 0
    assert feature.supported_version_range() == VersionRange(0, latest_testing)
    assert feature.supported_version_range(unstable=False) == VersionRange(0, latest_production)


def test_dependencies() -> None:
    elr1 = Feature.ELIGIBLE_LEADER_REPLICAS_VERSION.from_feature_level(1)
    assert elr1.dependency_map() == {"metadata.version": 23}
    assert str(elr1) == "eligible.leader.replicas.version=1"
    others = [lv for f in Feature for lv in f.levels if lv is not elr1]
    assert all(lv.dependencies == () for lv in others)


def test_from_feature_level() -> None:
    """``fromFeatureLevel(level, allowUnstable)``, with Kafka's error."""
    assert Feature.SHARE_VERSION.from_feature_level(2, allow_unstable=True).level == 2
    with pytest.raises(UnknownFeatureLevelError) as info:
        Feature.SHARE_VERSION.from_feature_level(2)
    assert str(info.value) == "No feature:share.version with feature level 2"
    for bad in (-1, 3, 100):
        with pytest.raises(UnknownFeatureLevelError) as info:
            Feature.KRAFT_VERSION.from_feature_level(bad, allow_unstable=True)
        assert str(info.value) == f"No feature:kraft.version with feature level {bad}"


def test_static_invariants() -> None:
    """FeatureTest: validateDefaultValueAndLatestProductionValue rules 1-6 hold."""
    check_catalogue()
    for feature in Feature:
        production = feature.from_feature_level(feature.latest_production)
        default = feature.default_version(LATEST_PRODUCTION)
        assert default.level <= feature.latest_production  # rule 2
        for dep, level in production.dependencies:  # rules 3 and 5
            if dep == "metadata.version":
                assert level <= LATEST_PRODUCTION.feature_level
            else:
                assert level <= Feature.from_name(dep).latest_production
        for mv in VERSIONS:  # rules 4 and 6
            chosen = feature.default_version(mv)
            for dep, level in chosen.dependencies:
                if dep == "metadata.version":
                    assert level <= chosen.bootstrap_metadata_version.feature_level
                else:
                    assert level <= Feature.from_name(dep).default_level(mv)


def test_default_level_all_features() -> None:
    """FeatureTest.testDefaultLevelAllFeatures: the default at a level's bootstrap MV is that level
    (or a higher one sharing the bootstrap MV)."""
    for feature in Feature:
        for lv in feature.levels:
            default = feature.default_version(lv.bootstrap_metadata_version)
            assert default.level >= lv.level
            assert default.bootstrap_metadata_version is lv.bootstrap_metadata_version
        # and just below a bootstrap MV the default is lower
        for lv in feature.levels[1:]:
            below = lv.bootstrap_metadata_version.previous()
            assert below is not None and feature.default_level(below) < lv.level


@pytest.mark.parametrize(
    ("mv", "expected"),
    [
        (MV.IBP_3_0_IV1, [0, 0, 0, 0, 0, 0]),
        (MV.IBP_3_3_IV3, [0, 0, 0, 0, 0, 0]),
        (MV.IBP_3_8_IV0, [0, 0, 0, 0, 0, 0]),
        (MV.IBP_3_9_IV0, [1, 0, 0, 0, 0, 0]),
        (MV.IBP_4_0_IV0, [1, 0, 1, 0, 0, 0]),
        (MV.IBP_4_0_IV2, [1, 2, 1, 0, 0, 0]),
        (MV.IBP_4_0_IV3, [1, 2, 1, 0, 0, 0]),
        (MV.IBP_4_1_IV1, [1, 2, 1, 1, 0, 0]),
        (MV.IBP_4_2_IV0, [1, 2, 1, 1, 1, 0]),
        (MV.IBP_4_2_IV1, [1, 2, 1, 1, 1, 1]),
        (MV.IBP_4_3_IV0, [1, 2, 1, 1, 1, 1]),
        (MV.IBP_4_4_IV2, [1, 2, 1, 1, 2, 1]),
    ],
)
def test_default_levels_table(mv: MetadataVersion, expected: list[int]) -> None:
    """§2.2's version-mapping table."""
    assert list(default_levels(mv).values()) == expected
    assert list(default_levels(mv)) == ORDER


def test_defaults_validate_at_every_production_version() -> None:
    """What ``format`` does: every default passes validate_version alongside the others."""
    for mv in VERSIONS:
        if not mv.is_supported or not mv.is_production:
            continue
        proposed = {"metadata.version": mv.feature_level, **default_levels(mv)}
        for feature in Feature:
            validate_version(feature.default_version(mv), proposed)


def test_validate_version_needs_minimum_metadata_version() -> None:
    """FeatureTest.testInvalidValidateVersion: a level >= 1 needs metadata.version >= 7."""
    group1 = Feature.GROUP_VERSION.from_feature_level(1)
    for proposed in ({}, {"metadata.version": 1}, {"metadata.version": 6}):
        with pytest.raises(FeatureDependencyError) as info:
            validate_version(group1, proposed)
        assert str(info.value) == (
            "group.version could not be set to 1 because it depends on metadata.version=7 (3.3-IV3)"
        )
    validate_version(group1, {"metadata.version": 7})
    validate_version(Feature.GROUP_VERSION.from_feature_level(0), {})  # level 0 needs nothing


def test_validate_version_dependencies() -> None:
    """§5.2 example: ELR=1 below 4.0-IV1 fails; at 4.0-IV1 it passes."""
    elr1 = Feature.ELIGIBLE_LEADER_REPLICAS_VERSION.from_feature_level(1)
    for level in (21, 22):
        with pytest.raises(FeatureDependencyError) as info:
            validate_version(elr1, {"metadata.version": level})
        assert str(info.value) == (
            "eligible.leader.replicas.version could not be set to 1 because it depends on "
            "metadata.version level 23"
        )
    validate_version(elr1, {"metadata.version": 23})


def test_validate_version_feature_dependency() -> None:
    """A dependency on another feature (as test.feature.version has) uses the same rule."""
    level = FeatureLevel("test.feature.version", 2, MV.IBP_4_3_IV0, (("transaction.version", 2),))
    with pytest.raises(FeatureDependencyError, match=r"depends on transaction\.version level 2$"):
        validate_version(level, {"metadata.version": 30, "transaction.version": 1})
    with pytest.raises(FeatureDependencyError, match=r"depends on transaction\.version level 2$"):
        validate_version(level, {"metadata.version": 30})
    validate_version(level, {"metadata.version": 30, "transaction.version": 2})


def test_version_range() -> None:
    r = VersionRange(0, 2)
    assert 1 in r and 3 not in r and "1" not in r
    assert str(r) == "0-2"
    with pytest.raises(VersionError):
        VersionRange(3, 2)
