"""Ports of Kafka's FeatureControlManagerTest / ClusterControlManagerTest / FeatureCommandTest
scenarios (upstream-kafka.md §9 rows 8-25 and 33-36) against the pure check functions."""

from __future__ import annotations

import pytest

from kraftwerk.controller import features as fc
from kraftwerk.controller.features import (
    ATOMIC_FAILURE_PREFIX,
    FeatureControlState,
    FeatureUpdate,
    NodeSupport,
    UpgradeType,
)
from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import EMPTY_IMAGE
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.features import VersionRange
from kraftwerk.versions.metadata_version import LATEST_TESTING, MetadataVersion

MV = MetadataVersion
LATEST = LATEST_TESTING.feature_level
UP, SAFE, UNSAFE = UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE
FULL_MV = VersionRange(7, LATEST)


def state(
    mv: MetadataVersion = MV.IBP_3_5_IV1,
    *,
    finalized: dict[str, int] | None = None,
    local: dict[str, VersionRange] | None = None,
    brokers: tuple[NodeSupport, ...] = (),
    controllers: tuple[NodeSupport, ...] = (),
    voters: tuple[int, ...] = (0,),
    node_id: int = 0,
    kraft: int = 0,
    migrating: bool = False,
) -> FeatureControlState:
    ranges = {
        "metadata.version": FULL_MV,
        "test.feature.version": VersionRange(0, 2),
        "transaction.version": VersionRange(0, 2),
        "kraft.version": VersionRange(0, 1),
        "eligible.leader.replicas.version": VersionRange(0, 1),
        "group.version": VersionRange(0, 1),
        "share.version": VersionRange(0, 1),
        "streams.version": VersionRange(0, 1),
    }
    if local is not None:
        ranges = local
    return FeatureControlState(
        node_id, mv, finalized or {}, ranges, brokers, controllers, voters, kraft, migrating
    )


def run(
    st: FeatureControlState,
    *updates: tuple[str, int, UpgradeType],
    validate_only: bool = False,
    allow_unsafe: bool = False,
) -> fc.UpdateFeaturesOutcome:
    ups = [FeatureUpdate(n, lvl, t) for n, lvl, t in updates]
    order = fc.java_hash_map_order([u.feature for u in ups])
    ordered = [next(u for u in ups if u.feature == n) for n in order]
    return fc.update_features(st, ordered, validate_only=validate_only, allow_unsafe_downgrade=allow_unsafe)


def failed(outcome: fc.UpdateFeaturesOutcome) -> str:
    assert outcome.error is Errors.INVALID_UPDATE_VERSION
    assert outcome.records == ()
    assert outcome.message is not None and outcome.message.startswith(ATOMIC_FAILURE_PREFIX)
    return outcome.message[len(ATOMIC_FAILURE_PREFIX) :]


def levels(outcome: fc.UpdateFeaturesOutcome) -> list[tuple[str, int]]:
    return [
        (r.value["name"], r.value["featureLevel"])
        for r in outcome.records
        if r.spec.name == "FeatureLevelRecord"
    ]


# ---------------------------------------------------------------- rows 8-9: testUpdateFeatures


def test_row8_local_controller_range() -> None:
    out = run(state(), ("test.feature.version", 3, UP))
    assert failed(out) == (
        "Invalid update version 3 for feature test.feature.version. Local controller 0 only "
        "supports versions 0-2"
    )


def test_row9_whole_request_fails_no_records() -> None:
    out = run(state(), ("test.feature.version", 1, UP), ("bar", 1, UP))
    assert (
        failed(out)
        == "Invalid update version 1 for feature bar. Local controller 0 does not support this feature."
    )
    assert set(out.feature_names) == {"test.feature.version", "bar"}


# ---------------------------------------------------------------- rows 10-12: testUpdateFeaturesErrorCases


def test_row10_broker_does_not_support() -> None:
    local = {"metadata.version": FULL_MV, "foo": VersionRange(0, 3)}
    broker5 = NodeSupport(5, {"metadata.version": FULL_MV})
    out = run(state(local=local, brokers=(broker5,)), ("foo", 3, UP))
    assert failed(out) == "Invalid update version 3 for feature foo. Broker 5 does not support this feature."


def test_broker_with_narrower_range() -> None:
    broker = NodeSupport(3, {"metadata.version": VersionRange(7, 20)})
    out = run(state(MV.IBP_3_8_IV0, brokers=(broker,)), ("metadata.version", 21, UP))
    assert (
        failed(out)
        == "Invalid update version 21 for feature metadata.version. Broker 3 only supports versions 7-20"
    )


def test_row11_downgrade_needs_type() -> None:
    st = state(MV.IBP_4_0_IV3, finalized={"transaction.version": 2})
    out = run(st, ("transaction.version", 1, UP))
    assert failed(out) == (
        "Invalid update version 1 for feature transaction.version. Can't downgrade the version "
        "of this feature without setting the upgrade type to either safe or unsafe downgrade."
    )


def test_row12_safe_downgrade_of_feature() -> None:
    st = state(MV.IBP_4_0_IV3, finalized={"transaction.version": 2})
    out = run(st, ("transaction.version", 1, SAFE))
    assert out.ok and levels(out) == [("transaction.version", 1)]


# ---------------------------------------------------------------- rows 13-19: metadata.version


@pytest.mark.parametrize("kind", [SAFE, UNSAFE])
def test_row13_cannot_downgrade_to_higher(kind: UpgradeType) -> None:
    out = run(state(MV.IBP_3_4_IV0), ("metadata.version", 9, kind))
    assert (
        failed(out)
        == "Invalid update version 9 for feature metadata.version. Can't downgrade to a newer version."
    )


def test_row14_cannot_upgrade_to_lower() -> None:
    out = run(state(MV.IBP_3_5_IV1), ("metadata.version", 9, UP))
    assert failed(out) == (
        "Invalid update version 9 for feature metadata.version. Can't downgrade the version of "
        "this feature without setting the upgrade type to either safe or unsafe downgrade."
    )


def test_row15_upgrade_validate_only() -> None:
    out = run(state(MV.IBP_3_4_IV0), ("metadata.version", 9, UP), validate_only=True)
    assert out.error is Errors.NONE and out.records == ()


def test_row16_safe_downgrade_refused_when_metadata_changed() -> None:
    out = run(state(MV.IBP_3_4_IV0), ("metadata.version", 7, SAFE))
    assert failed(out) == (
        "Unsupported metadata.version downgrade from 8 to 7. Refusing to perform the requested "
        "downgrade because it might delete metadata information."
    )


def test_row17_unsafe_downgrade_kafka_text_when_refused() -> None:
    out = run(state(MV.IBP_3_4_IV0), ("metadata.version", 7, UNSAFE), allow_unsafe=False)
    assert failed(out) == (
        "Unsupported metadata.version downgrade from 8 to 7. Unsafe metadata downgrade is not "
        "supported in this version."
    )


def test_row17_extension_unsafe_downgrade_accepted() -> None:
    def losses(mv: MetadataVersion) -> tuple[str, ...]:
        assert mv is MV.IBP_3_3_IV3
        return ("the isMigratingZkBroker state of one or more brokers",)

    ups = [FeatureUpdate("metadata.version", 7, UNSAFE)]
    out = fc.update_features(state(MV.IBP_3_4_IV0), ups, losses_at=losses)
    assert out.error is Errors.NONE
    assert levels(out) == [("metadata.version", 7)]
    assert out.downgrade is not None and out.downgrade.lossy
    assert out.message == (
        "Metadata has been lost because the following could not be represented in "
        "metadata.version 3.3-IV3: the isMigratingZkBroker state of one or more brokers"
    )


def test_row18_safe_downgrade_without_metadata_change() -> None:
    out = run(state(MV.IBP_3_5_IV0), ("metadata.version", 8, SAFE))
    assert out.ok and levels(out) == [("metadata.version", 8)]
    assert out.downgrade is not None and not out.downgrade.lossy


def test_row19_below_minimum_version() -> None:
    out = run(state(MV.IBP_3_3_IV3), ("metadata.version", 6, UNSAFE))
    assert failed(out) == (
        f"Invalid update version 6 for feature metadata.version. Local controller 0 only "
        f"supports versions 7-{LATEST}"
    )


# ---------------------------------------------------------------- rows 20-22


def test_row20_create_and_remove_feature_level() -> None:
    st = state(MV.IBP_3_5_IV1)
    up = run(st, ("test.feature.version", 1, UP))
    assert levels(up) == [("test.feature.version", 1)]
    delta = MetadataDelta(EMPTY_IMAGE)
    delta.replay_all([fc.feature_level_record("metadata.version", 10), *up.records])
    image = delta.apply()
    assert image.features.finalized == {"test.feature.version": 1}
    st2 = state(MV.IBP_3_5_IV1, finalized=dict(image.features.finalized))
    down = run(st2, ("test.feature.version", 0, UNSAFE))
    assert levels(down) == [("test.feature.version", 0)]
    delta = MetadataDelta(image)
    delta.replay_all(down.records)
    assert delta.apply().features.finalized == {}


def test_row21_kraft_version_records_ignored_on_replay() -> None:
    delta = MetadataDelta(EMPTY_IMAGE)
    delta.replay_all(
        [fc.feature_level_record("metadata.version", 21), fc.feature_level_record("kraft.version", 1)]
    )
    image = delta.apply()
    assert image.metadata_version is MV.IBP_3_9_IV0 and image.features.finalized == {}


def test_row22_elr_upgrade_and_dependency() -> None:
    out = run(state(MV.IBP_4_0_IV1), ("eligible.leader.replicas.version", 1, UP))
    assert levels(out) == [("eligible.leader.replicas.version", 1)]
    bad = run(state(MV.IBP_3_9_IV0), ("eligible.leader.replicas.version", 1, UP))
    assert failed(bad) == (
        "Invalid update version 1 for feature eligible.leader.replicas.version. "
        "eligible.leader.replicas.version could not be set to 1 because it depends on "
        "metadata.version level 23"
    )
    # The dependency is checked against the proposed map: upgrading both at once works.
    both = run(
        state(MV.IBP_3_9_IV0), ("eligible.leader.replicas.version", 1, UP), ("metadata.version", 23, UP)
    )
    assert sorted(levels(both)) == [("eligible.leader.replicas.version", 1), ("metadata.version", 23)]


def test_row23_no_metadata_version_change_during_migration() -> None:
    out = run(state(MV.IBP_3_5_IV2, migrating=True), ("metadata.version", 12, UP))
    assert failed(out) == (
        "Invalid metadata.version 12. Unable to modify metadata.version while a ZK migration is in progress."
    )
    assert run(state(MV.IBP_3_5_IV2), ("metadata.version", 12, UP)).ok


# ---------------------------------------------------------------- rows 24-25: registration


def test_row24_registration_missing_feature() -> None:
    err = fc.registration_feature_error(
        {"metadata.version": FULL_MV}, MV.IBP_3_7_IV0, {"test.feature.version": 1}
    )
    assert err is not None and err.error is Errors.UNSUPPORTED_VERSION
    assert str(err) == (
        "Unable to register because the broker does not support finalized version 1 of "
        "test.feature.version. The broker wants a version between 0 and 0, inclusive."
    )


def test_row25_registration_unsupported_metadata_version() -> None:
    err = fc.registration_feature_error({"metadata.version": VersionRange(7, 8)}, MV.IBP_3_5_IV0, {})
    assert err is not None and err.error is Errors.UNSUPPORTED_VERSION
    assert str(err) == (
        "Unable to register because the broker does not support finalized version 9 of "
        "metadata.version. The broker wants a version between 7 and 8, inclusive."
    )


def test_registration_without_metadata_version() -> None:
    err = fc.registration_feature_error({"kraft.version": VersionRange(0, 1)}, MV.IBP_3_7_IV0, {})
    assert err is not None and err.error is Errors.INVALID_REGISTRATION
    assert str(err) == "Request features do not contain 'metadata.version'"


# ---------------------------------------------------------------- rows 33-36: FeatureCommandTest


def test_row33_disable_metadata_version() -> None:
    out = run(state(MV.IBP_3_4_IV0, node_id=3000, voters=(3000,)), ("metadata.version", 0, SAFE))
    assert failed(out) == (
        f"Invalid update version 0 for feature metadata.version. Local controller 3000 only "
        f"supports versions 7-{LATEST}"
    )


def test_row34_downgrade_metadata_3_3() -> None:
    st = state(MV.IBP_3_4_IV0, node_id=3000, voters=(3000,))
    assert "Refusing to perform the requested downgrade" in failed(run(st, ("metadata.version", 7, SAFE)))
    assert "Unsafe metadata downgrade is not supported in this version." in failed(
        run(st, ("metadata.version", 7, UNSAFE), allow_unsafe=False)
    )


def release_updates(mv: MetadataVersion, kind: UpgradeType) -> list[tuple[str, int, UpgradeType]]:
    """What ``kafka-features upgrade/downgrade --release-version`` sends (upgrade skips zeros)."""
    from kraftwerk.versions.features import default_levels

    ups = [("metadata.version", mv.feature_level, kind)]
    for name, level in default_levels(mv).items():
        if kind is UP and level == 0:
            continue
        ups.append((name, level, kind))
    return ups


def test_row35_upgrade_with_release_version() -> None:
    st = state(MV.IBP_3_8_IV0)
    out = run(st, *release_updates(MV.IBP_3_7_IV3, UP))
    assert failed(out) == (
        "Invalid update version 18 for feature metadata.version. Can't downgrade the version of "
        "this feature without setting the upgrade type to either safe or unsafe downgrade."
    )
    out = run(st, *release_updates(MV.IBP_3_9_IV0, UP))
    assert out.ok
    assert out.kraft_version_upgrade == 1
    assert [r.spec.name for r in out.records] == ["NoOpRecord", "FeatureLevelRecord"]
    assert levels(out) == [("metadata.version", 21)]


def test_row36_downgrade_with_release_version() -> None:
    st = state(MV.IBP_3_8_IV0)
    out = run(st, *release_updates(MV.IBP_3_9_IV0, SAFE))
    assert (
        failed(out)
        == "Invalid update version 1 for feature kraft.version. Can't downgrade to a newer version."
    )
    out = run(st, *release_updates(MV.IBP_3_7_IV3, SAFE))
    assert out.ok
    assert sorted(levels(out)) == [
        ("eligible.leader.replicas.version", 0),
        ("group.version", 0),
        ("metadata.version", 18),
        ("share.version", 0),
        ("streams.version", 0),
        ("transaction.version", 0),
    ]


def test_kraft_version_is_upgrade_only() -> None:
    out = run(state(MV.IBP_4_3_IV0, kraft=1), ("kraft.version", 0, SAFE))
    assert (
        failed(out)
        == "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."
    )
    same = run(state(MV.IBP_4_3_IV0, kraft=1), ("kraft.version", 1, UP))
    assert same.ok and same.records == () and same.kraft_version_upgrade is None


def test_unknown_upgrade_type_and_negative_level() -> None:
    assert UpgradeType.from_code(0) is UpgradeType.UNKNOWN and UpgradeType.from_code(9) is UpgradeType.UNKNOWN
    out = run(state(), ("metadata.version", 10, UpgradeType.UNKNOWN))
    assert failed(out).endswith("The controller does not support the given upgrade type.")
    out = run(state(), ("metadata.version", -1, UP))
    assert (
        failed(out)
        == "Invalid update version -1 for feature metadata.version. A feature version cannot be less than 0."
    )


# ---------------------------------------------------------------- the quorum rule (kraftwerk)


def test_quorum_majority_rule() -> None:
    mv = MV.IBP_3_7_IV0
    c1 = NodeSupport(1, {"metadata.version": FULL_MV})
    old = NodeSupport(2, {"metadata.version": VersionRange(7, 16)})
    # a registered controller known not to support the level rejects, whatever the majority
    out = run(state(mv, node_id=0, voters=(0, 1, 2), controllers=(c1, old)), ("metadata.version", 17, UP))
    assert (
        failed(out)
        == "Invalid update version 17 for feature metadata.version. Controller 2 only supports versions 7-16"
    )
    # an unregistered minority does not block
    assert run(state(mv, node_id=0, voters=(0, 1, 2), controllers=(c1,)), ("metadata.version", 17, UP)).ok
    # without a majority known to support it, refuse and name the first unknown voter
    out = run(state(mv, node_id=0, voters=(0, 1, 2)), ("metadata.version", 17, UP))
    assert failed(out).startswith(
        "Invalid update version 17 for feature metadata.version. controller 1 has not "
        "registered, and may not support this feature"
    )
    # before 3.7-IV0 controllers cannot register: only the local controller is checked (Kafka)
    assert run(state(MV.IBP_3_6_IV2, node_id=0, voters=(0, 1, 2)), ("metadata.version", 15, UP)).ok


def test_java_hash_map_order() -> None:
    names = ["metadata.version", "kraft.version", "transaction.version", "group.version"]
    assert fc.java_hash_map_order(names) == [
        "group.version",
        "kraft.version",
        "metadata.version",
        "transaction.version",
    ]
    many = [f"f{i}" for i in range(20)]
    assert sorted(fc.java_hash_map_order(many)) == sorted(many)
