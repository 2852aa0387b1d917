"""MetadataVersion catalogue: ports of Kafka's MetadataVersionTest plus the reference tables."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.errors import KraftwerkError
from kraftwerk.versions import (
    LATEST_PRODUCTION,
    LATEST_TESTING,
    MINIMUM_VERSION,
    VERSIONS,
    MetadataVersion,
    UnknownMetadataVersionError,
    UnsupportedAtVersionError,
    VersionError,
    check_if_metadata_changed,
    metadata_versions_to_string,
)

MV = MetadataVersion

# (level, string, didMetadataChange) — upstream-kafka.md §1.3 with the 4.3 line's values.
TABLE = [
    (1, "3.0-IV1", True), (2, "3.1-IV0", False), (3, "3.2-IV0", True), (4, "3.3-IV0", False),
    (5, "3.3-IV1", True), (6, "3.3-IV2", True), (7, "3.3-IV3", True), (8, "3.4-IV0", True),
    (9, "3.5-IV0", False), (10, "3.5-IV1", False), (11, "3.5-IV2", True), (12, "3.6-IV0", False),
    (13, "3.6-IV1", True), (14, "3.6-IV2", True), (15, "3.7-IV0", True), (16, "3.7-IV1", False),
    (17, "3.7-IV2", True), (18, "3.7-IV3", False), (19, "3.7-IV4", False), (20, "3.8-IV0", False),
    (21, "3.9-IV0", False), (22, "4.0-IV0", False), (23, "4.0-IV1", True), (24, "4.0-IV2", False),
    (25, "4.0-IV3", False), (26, "4.1-IV0", False), (27, "4.1-IV1", False), (28, "4.2-IV0", False),
    (29, "4.2-IV1", False), (30, "4.3-IV0", True), (31, "4.4-IV0", False), (32, "4.4-IV1", True),
    (33, "4.4-IV2", True), (34, "4.5-IV0", False),
]

SUPPORTED_PRODUCTION = (
    "3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, "
    "3.7-IV2, 3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, "
    "4.1-IV1, 4.2-IV0, 4.2-IV1, 4.3-IV0"
)
SUPPORTED_TESTING = SUPPORTED_PRODUCTION + ", 4.4-IV0, 4.4-IV1, 4.4-IV2, 4.5-IV0"


@pytest.mark.parametrize(("level", "string", "changed"), TABLE)
def test_catalogue_row(level: int, string: str, changed: bool) -> None:
    mv = MV.from_feature_level(level, allow_legacy=True)
    assert mv.feature_level == level
    assert str(mv) == mv.version == string
    assert f"{mv.release}-{mv.sub_version}" == string
    assert mv.short_version == string.split("-")[0]
    assert mv.did_metadata_change is changed
    assert mv.is_production is (level <= 30)
    assert mv.is_supported is (level >= 7)
    assert mv.name == "IBP_" + string.replace(".", "_").replace("-", "_")


def test_catalogue_is_complete_and_constants() -> None:
    assert [mv.feature_level for mv in VERSIONS] == list(range(1, 35))  # testFeatureLevels
    assert MINIMUM_VERSION is MV.IBP_3_3_IV3
    assert LATEST_PRODUCTION is MV.IBP_4_3_IV0 is MV.latest_production()
    assert LATEST_TESTING is MV.IBP_4_5_IV0 is MV.latest_testing()
    assert MV.IBP_3_3_IV3.feature_name == "metadata.version"


def test_previous_and_next() -> None:
    """testPrevious: previous() is the prior enum entry."""
    assert MV.IBP_3_0_IV1.previous() is None
    assert LATEST_TESTING.next() is None
    for lower, higher in itertools.pairwise(VERSIONS):
        assert higher.previous() is lower
        assert lower.next() is higher
        assert lower < higher and lower <= higher and higher > lower and higher >= lower
        assert lower.is_less_than(higher) and higher.is_at_least(lower)
        assert not lower.is_at_least(higher)


def test_mixed_comparison_is_a_type_error() -> None:
    seven: object = 7
    with pytest.raises(TypeError):
        assert seven > MV.IBP_3_3_IV3
    assert seven != MV.IBP_3_3_IV3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3.3", MV.IBP_3_3_IV3), ("3.4", MV.IBP_3_4_IV0), ("3.5", MV.IBP_3_5_IV2),
        ("3.6", MV.IBP_3_6_IV2), ("3.7", MV.IBP_3_7_IV4), ("3.8", MV.IBP_3_8_IV0),
        ("3.9", MV.IBP_3_9_IV0), ("4.0", MV.IBP_4_0_IV3), ("4.1", MV.IBP_4_1_IV1),
        ("4.2", MV.IBP_4_2_IV1), ("4.3", MV.IBP_4_3_IV0),
        ("3.8-IV0", MV.IBP_3_8_IV0), ("3.8.1", MV.IBP_3_8_IV0), ("3.7-IV1", MV.IBP_3_7_IV1),
        ("4.0.0", MV.IBP_4_0_IV3), ("3.3-IV3", MV.IBP_3_3_IV3), ("4.3-IV0", MV.IBP_4_3_IV0),
    ],
)
def test_from_version_string(text: str, expected: MetadataVersion) -> None:
    """§9 row 1 and §1.4: first two segments; a bare release is its highest production IV."""
    assert MV.from_version_string(text) is expected
    assert MV.from_version_string(text, unstable=True) is expected


def test_unstable_levels_need_unstable() -> None:
    """§9 row 2, shifted to the 4.3 line: 4.4-IV0 is unknown unless unstable is enabled."""
    with pytest.raises(UnknownMetadataVersionError) as info:
        MV.from_version_string("4.4-IV0")
    assert str(info.value) == (
        f"Unknown metadata.version '4.4-IV0'. Supported metadata.version are: {SUPPORTED_PRODUCTION}"
    )
    assert MV.from_version_string("4.4-IV0", unstable=True) is MV.IBP_4_4_IV0
    assert MV.from_version_string("4.5-IV0", unstable=True) is MV.IBP_4_5_IV0


@pytest.mark.parametrize(
    "text",
    ["4.4", "4.5", "3.2", "3.3-IV1", "3.0-IV1", "2.8", "banana", "", "3", "3.8.", "3..8", ".3.8",
     "3.8-IV9", "3.3-iv3", " 3.3"],
)
def test_unknown_version_strings(text: str) -> None:
    """A release with no production IV is unknown bare; levels below 3.3-IV3 do not parse."""
    for unstable, listing in ((False, SUPPORTED_PRODUCTION), (True, SUPPORTED_TESTING)):
        with pytest.raises(UnknownMetadataVersionError) as info:
            MV.from_version_string(text, unstable=unstable)
        assert str(info.value) == (
            f"Unknown metadata.version '{text}'. Supported metadata.version are: {listing}"
        )


def test_errors_are_kraftwerk_and_value_errors() -> None:
    with pytest.raises(KraftwerkError):
        MV.from_version_string("nope")
    with pytest.raises(ValueError):
        MV.from_feature_level(0)
    assert issubclass(UnknownMetadataVersionError, VersionError)


@pytest.mark.parametrize("level", [-1, 0, 1, 6, 35, 32767])
def test_from_feature_level_errors(level: int) -> None:
    """§1.4 / §9 row 5: levels below 7 (or past the end) are unknown to a 4.x node."""
    with pytest.raises(UnknownMetadataVersionError) as info:
        MV.from_feature_level(level)
    assert str(info.value) == (
        f"No MetadataVersion with feature level {level}. Valid feature levels are from 7 to 34."
    )


def test_from_feature_level_legacy() -> None:
    assert MV.from_feature_level(1, allow_legacy=True) is MV.IBP_3_0_IV1
    assert MV.from_feature_level(7) is MV.IBP_3_3_IV3
    assert MV.from_feature_level(34) is MV.IBP_4_5_IV0
    with pytest.raises(UnknownMetadataVersionError, match="from 1 to 34"):
        MV.from_feature_level(0, allow_legacy=True)


@pytest.mark.parametrize(
    ("a", "b", "changed"),
    [
        # §9 row 3 (MetadataVersionTest.testMetadataChanged)
        (MV.IBP_3_4_IV0, MV.IBP_3_3_IV3, True),
        (MV.IBP_3_5_IV0, MV.IBP_3_4_IV0, False),
        (MV.IBP_3_5_IV1, MV.IBP_3_5_IV0, False),
        (MV.IBP_3_6_IV0, MV.IBP_3_5_IV1, True),
        (MV.IBP_3_6_IV1, MV.IBP_3_6_IV0, True),
        # §1.4: the target's own flag is not examined
        (MV.IBP_4_2_IV1, MV.IBP_4_0_IV1, False),
        (MV.IBP_4_2_IV1, MV.IBP_4_0_IV0, True),
        (MV.IBP_3_5_IV1, MV.IBP_3_4_IV0, False),
        (MV.IBP_4_3_IV0, MV.IBP_4_2_IV1, True),
        (MV.IBP_4_4_IV0, MV.IBP_4_3_IV0, False),
        (MV.IBP_3_9_IV0, MV.IBP_3_7_IV2, False),
        (MV.IBP_3_9_IV0, MV.IBP_3_7_IV1, True),
        (MV.IBP_3_3_IV3, MV.IBP_3_3_IV3, False),
    ],
)
def test_check_if_metadata_changed(a: MetadataVersion, b: MetadataVersion, changed: bool) -> None:
    assert check_if_metadata_changed(a, b) is changed
    assert check_if_metadata_changed(b, a) is changed


@given(st.sampled_from(VERSIONS), st.sampled_from(VERSIONS))
def test_check_if_metadata_changed_model(a: MetadataVersion, b: MetadataVersion) -> None:
    """Changed iff some level in (low, high] has didMetadataChange."""
    low, high = sorted((a, b), key=lambda mv: mv.feature_level)
    expected = any(mv.did_metadata_change for mv in VERSIONS if low < mv <= high)
    assert check_if_metadata_changed(a, b) is expected
    assert check_if_metadata_changed(b, a) is expected


def test_metadata_versions_to_string() -> None:
    assert metadata_versions_to_string(MINIMUM_VERSION, LATEST_PRODUCTION) == SUPPORTED_PRODUCTION
    assert metadata_versions_to_string(MV.IBP_3_9_IV0, MV.IBP_3_9_IV0) == "3.9-IV0"


@pytest.mark.parametrize(
    ("helper", "first"),
    [
        ("is_noop_record_supported", MV.IBP_3_3_IV1),
        ("is_broker_registration_change_record_supported", MV.IBP_3_3_IV2),
        ("is_in_controlled_shutdown_state_supported", MV.IBP_3_3_IV3),
        ("is_migration_supported", MV.IBP_3_4_IV0),
        ("is_api_forwarding_enabled", MV.IBP_3_4_IV0),
        ("is_scram_supported", MV.IBP_3_5_IV2),
        ("is_metadata_transaction_supported", MV.IBP_3_6_IV1),
        ("is_delegation_token_supported", MV.IBP_3_6_IV2),
        ("is_controller_registration_supported", MV.IBP_3_7_IV0),
        ("is_directory_assignment_supported", MV.IBP_3_7_IV2),
        ("is_elr_supported", MV.IBP_4_0_IV1),
        ("is_cordoned_log_dirs_supported", MV.IBP_4_3_IV0),
        ("is_cidr_acl_supported", MV.IBP_4_4_IV1),
        ("is_controller_unregistration_supported", MV.IBP_4_4_IV2),
        ("is_leader_recovery_supported", MV.IBP_3_2_IV0),
        ("is_kraft_supported", MV.IBP_3_0_IV1),
    ],
)
def test_predicates(helper: str, first: MetadataVersion) -> None:
    for mv in VERSIONS:
        assert getattr(mv, helper)() is (mv >= first), (helper, mv)


def test_leader_epoch_bump() -> None:
    assert MV.IBP_3_5_IV2.is_leader_epoch_bump_required_on_isr_shrink()
    assert not MV.IBP_3_6_IV0.is_leader_epoch_bump_required_on_isr_shrink()


def _steps(method: str) -> list[tuple[int, int]]:
    """(first level, version) for each change of a version-returning helper."""
    out: list[tuple[int, int]] = []
    for mv in VERSIONS:
        value = getattr(mv, method)()
        if not out or out[-1][1] != value:
            out.append((mv.feature_level, value))
    return out


def test_record_and_request_versions() -> None:
    assert _steps("register_broker_record_version") == [(1, 0), (7, 1), (8, 2), (17, 3), (30, 4), (32, 5)]
    assert _steps("partition_record_version") == [(1, 0), (17, 1), (23, 2)]
    assert _steps("partition_change_record_version") == [(1, 0), (17, 1), (23, 2)]
    assert _steps("fetch_request_version") == [
        (1, 12), (2, 13), (9, 14), (10, 15), (19, 16), (21, 17), (27, 18)
    ]
    assert _steps("list_offsets_request_version") == [(1, 7), (9, 8), (21, 9), (25, 10), (29, 11)]


def test_register_controller_record_version() -> None:
    assert MV.IBP_3_7_IV0.register_controller_record_version() == 0
    with pytest.raises(UnsupportedAtVersionError) as info:
        MV.IBP_3_6_IV2.register_controller_record_version()
    assert str(info.value) == "Controller registration is not supported in MetadataVersion 3.6-IV2"


@given(st.text(max_size=12))
def test_parse_never_crashes(text: str) -> None:
    """Garbage input is either a known version or a typed error, never another exception."""
    try:
        mv = MV.from_version_string(text, unstable=True)
    except UnknownMetadataVersionError:
        return
    assert mv.is_supported
