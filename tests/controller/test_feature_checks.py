"""The feature checks' finer points (``controller/features.py``): the levels a state reports, which
nodes the support check visits, the majority, error codes and Kafka's log lines, the outcome of a
dry run, registration checks, and Java's HashMap order (pinned from OpenJDK 17)."""

from __future__ import annotations

import logging

import pytest

from kraftwerk.controller import features as fc
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.features import FeatureUpdate, MetadataVersionDowngrade, NodeSupport, UpgradeType
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.features import VersionRange
from kraftwerk.versions.metadata_version import LATEST_TESTING, MetadataVersion
from tests.controller.test_upstream_features import FULL_MV, SAFE, UNSAFE, UP, failed, run, state

MV = MetadataVersion
LOGGER = "kraftwerk.controller.features"


def test_a_feature_never_finalized_is_at_level_zero() -> None:
    st = state(MV.IBP_4_3_IV0, finalized={"group.version": 1}, kraft=1)
    assert [st.current_level(n) for n in ("group.version", "share.version", "kraft.version")] == [1, 0, 1]
    assert st.current_level("metadata.version") == MV.IBP_4_3_IV0.feature_level
    # "upgrading" an unset feature to 0 is no change, not a downgrade without a downgrade type
    out = run(st, ("share.version", 0, UP))
    assert out.ok and [(r.value["name"], r.value["featureLevel"]) for r in out.records] == [
        ("share.version", 0)]


def test_the_local_controller_is_skipped_only_where_it_appears_among_the_controllers() -> None:
    mv = MV.IBP_3_7_IV0
    local = NodeSupport(0, {"metadata.version": FULL_MV})
    old = NodeSupport(5, {"metadata.version": VersionRange(7, 16)})
    out = run(state(mv, node_id=0, voters=(0, 5), controllers=(local, old)), ("metadata.version", 17, UP))
    assert failed(out).endswith("Controller 5 only supports versions 7-16")


def test_a_majority_of_five_voters_is_three() -> None:
    mv = MV.IBP_3_7_IV0
    one = NodeSupport(1, {"metadata.version": FULL_MV})
    out = run(state(mv, node_id=0, voters=(0, 1, 2, 3, 4), controllers=(one,)), ("metadata.version", 17, UP))
    assert failed(out).endswith(
        "controller 2 has not registered, and may not support this feature; only 2 of 5 controller quorum "
        "voters are known to support it and a majority (3) is required")
    two = NodeSupport(2, {"metadata.version": FULL_MV})
    assert run(state(mv, node_id=0, voters=(0, 1, 2, 3, 4), controllers=(one, two)),
               ("metadata.version", 17, UP)).ok


def test_before_controller_registration_kafka_logs_what_it_verified(caplog: pytest.LogCaptureFixture) -> None:
    broker = NodeSupport(3, {"metadata.version": FULL_MV})
    with caplog.at_level(logging.INFO, LOGGER):
        assert run(state(MV.IBP_3_6_IV2, brokers=(broker,)), ("metadata.version", 15, UP)).ok
    assert ("Verified that 1 broker(s) and 1 controller(s) supported changing metadata.version to feature "
            "level 15. Note: unable to verify controller support in the current MetadataVersion.") \
        in caplog.messages


def _check(st: fc.FeatureControlState, name: str, level: int, utype: UpgradeType) -> ApiError:
    with pytest.raises(ApiError) as err:
        fc.check_update(st, FeatureUpdate(name, level, utype), {}, fc._Work())
    return err.value


def test_refusals_carry_invalid_update_version_and_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, LOGGER):
        err = _check(state(), "group.version", 1, UpgradeType.UNKNOWN)
    assert err.error is Errors.INVALID_UPDATE_VERSION
    text = "Invalid update version 1 for feature group.version. The controller does not support the given " \
           "upgrade type."
    assert str(err) == text and caplog.messages == [text]
    # a level the local controller accepts but metadata.version does not define
    wide = state(local={"metadata.version": VersionRange(7, 99)})
    err = _check(wide, "metadata.version", 99, UP)
    assert err.error is Errors.INVALID_UPDATE_VERSION
    latest = LATEST_TESTING.feature_level
    assert str(err) == f"Invalid metadata.version 99. Valid versions are from 7 to {latest}."
    refused = _check(state(MV.IBP_4_3_IV0), "metadata.version", 25, SAFE)
    assert refused.error is Errors.INVALID_UPDATE_VERSION


def test_feature_levels_beyond_production_and_unknown_levels() -> None:
    """Unstable levels the local controller advertises are accepted; a level the feature does not
    define is refused with the catalogue's text."""
    wide = state(MV.IBP_4_3_IV0, local={"metadata.version": FULL_MV, "share.version": VersionRange(0, 2),
                                        "group.version": VersionRange(0, 5)})
    assert run(wide, ("share.version", 2, UP)).ok
    assert failed(run(wide, ("group.version", 5, UP))) == (
        "Invalid update version 5 for feature group.version. No feature:group.version with feature level 5")


def test_metadata_version_changes_are_announced_not_logged_here(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's WARN lines come back with the outcome: the controller logs them only once its other
    checks (KIP-1294's config audit) have passed too."""
    with caplog.at_level(logging.WARNING, LOGGER):
        same = run(state(MV.IBP_4_2_IV1), ("metadata.version", 29, UP))
        up = run(state(MV.IBP_4_2_IV1), ("metadata.version", 30, UP))
        down = run(state(MV.IBP_4_2_IV1), ("metadata.version", 27, SAFE))
        unsafe = run(state(MV.IBP_4_3_IV0), ("metadata.version", 25, UNSAFE), allow_unsafe=True)
    assert same.ok and same.downgrade is None and same.announcements == ()
    assert up.ok and up.downgrade is None
    assert down.downgrade == MetadataVersionDowngrade(MV.IBP_4_2_IV1, MV.IBP_4_1_IV1, lossy=False)
    assert unsafe.downgrade == MetadataVersionDowngrade(MV.IBP_4_3_IV0, MV.IBP_4_0_IV3, lossy=True)
    assert caplog.messages == []
    assert [*up.announcements, *down.announcements, *unsafe.announcements] == [
        "Upgrading metadata.version from 4.2-IV1 to 4.3-IV0.",
        "Downgrading metadata.version from 4.2-IV1 to 4.1-IV1.",
        "Downgrading metadata.version unsafely from 4.3-IV0 to 4.0-IV3; 0 loss(es).",
    ]


def test_a_refused_safe_downgrade_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, LOGGER):
        failed(run(state(MV.IBP_4_3_IV0), ("metadata.version", 25, SAFE)))
    assert caplog.messages == ["Unsupported metadata.version downgrade from 30 to 25. Refusing to perform "
                               "the requested downgrade because it might delete metadata information."]


def test_a_dry_run_describes_what_it_would_do_and_writes_nothing() -> None:
    out = run(state(MV.IBP_4_2_IV1), ("metadata.version", 27, SAFE), ("group.version", 1, UP),
              validate_only=True)
    assert out.ok and out.records == () and out.kraft_version_upgrade is None
    assert out.downgrade == MetadataVersionDowngrade(MV.IBP_4_2_IV1, MV.IBP_4_1_IV1, lossy=False)
    assert out.feature_names == ("group.version", "metadata.version")


def test_registration_checks_every_finalized_level_against_the_broker_ranges() -> None:
    mv = MV.IBP_4_3_IV0
    broker = {"metadata.version": FULL_MV, "group.version": VersionRange(0, 0),
              "share.version": VersionRange(1, 1)}
    err = fc.registration_feature_error(broker, mv, {"group.version": 1})
    assert err is not None and str(err) == (
        "Unable to register because the broker does not support finalized version 1 of group.version. The "
        "broker wants a version between 0 and 0, inclusive.")
    # a feature the broker reports but nothing finalized is checked at level 0
    wider = broker | {"group.version": VersionRange(0, 1)}
    err = fc.registration_feature_error(wider, mv, {"group.version": 1})
    assert err is not None and "finalized version 0 of share.version" in str(err)


# ---------------------------------------------------------------- Java's HashMap, pinned

#: ``new HashMap<>()`` filled in this order, then ``keySet()`` (OpenJDK 17.0.15).
JAVA_HASH_MAP_ORDERS = [
    ("metadata.version,kraft.version,transaction.version,group.version,eligible.leader.replicas.version,"
     "share.version,streams.version",
     "group.version,kraft.version,metadata.version,share.version,streams.version,transaction.version,"
     "eligible.leader.replicas.version"),
    ("k01,k02,k03,k04,k05,k06,k07,k08,k09,k10,k11,k12", "k06,k05,k08,k07,k09,k11,k10,k02,k01,k12,k04,k03"),
    ("k01,k02,k03,k04,k05,k06,k07,k08,k09,k10,k11,k12,k13",
     "k11,k10,k02,k13,k01,k12,k04,k03,k06,k05,k08,k07,k09"),
    ("k13,k12,k11,k10,k09,k08,k07,k06,k05,k04,k03,k02,k01,z1,z2,z3,z4,z5,z6,z7,z8,z9,y1,y2,y3",
     "k11,k10,k13,k12,y1,y2,y3,k02,k01,k04,k03,k06,k05,k08,k07,k09,z1,z2,z3,z4,z5,z6,z7,z8,z9"),
    ("b,a,Aa,BB,c", "Aa,BB,a,b,c"),
    ("zeta,alpha,mid,beta", "zeta,alpha,mid,beta"),
]


@pytest.mark.parametrize(("inserted", "iterated"), JAVA_HASH_MAP_ORDERS)
def test_java_hash_map_order_is_openjdks(inserted: str, iterated: str) -> None:
    assert ",".join(fc.java_hash_map_order(inserted.split(","))) == iterated


def test_java_string_hash_is_openjdks() -> None:
    """``String.hashCode()`` of OpenJDK 17, as an unsigned 32-bit value (UTF-16 code units)."""
    assert fc.java_string_hash("hello") == 99162322
    assert fc.java_string_hash("metadata.version") == 1098778905
    assert fc.java_string_hash("€") == 8364
    assert fc.java_string_hash("ÿ€\U0001F600") == 17407408
