"""Hypothesis: whatever sequence of updates, dry runs and broker registrations arrives, the
controller never finalizes a level that a registered broker does not support, dry runs never
touch the log, and every node ends with the same image."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kraftwerk.controller import features as fc
from kraftwerk.image.model import MetadataImage
from kraftwerk.versions.features import PRODUCTION_FEATURES
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker

FEATURES = ["metadata.version", *(f.feature_name for f in PRODUCTION_FEATURES)]
RELEASES = ["3.7", "3.9", "4.0", "4.2", "4.3"]

update_step = st.tuples(
    st.just("update"), st.sampled_from(FEATURES), st.integers(-1, 35), st.integers(0, 4), st.booleans()
)
join_step = st.tuples(
    st.just("join"), st.sampled_from(RELEASES), st.integers(2, 6), st.integers(0, 0), st.booleans()
)


def supported(image: MetadataImage) -> None:
    levels = dict(image.features.finalized)
    assert image.metadata_version is not None
    levels["metadata.version"] = image.metadata_version.feature_level
    for b in image.cluster.brokers.values():
        for name, level in levels.items():
            rng = b.feature_range(name)
            lo, hi = (rng.min, rng.max) if rng is not None else (0, 0)
            assert lo <= level <= hi, (b.id, name, level, rng)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.sampled_from([15, 21, 25, 29]), steps=st.lists(st.one_of(update_step, join_step), max_size=12)
)
# found on a fresh clone: a 3.7 broker joining after an unsafe downgrade to 3.3-IV3 starts from the
# snapshot of that downgrade, not from the 3.9 records it cannot run (the harness once replayed them)
@example(start=21, steps=[("update", "metadata.version", 7, 3, False), ("join", "3.7", 2, 0, False)])
def test_never_finalize_unsupported_level(start: int, steps: list[tuple[str, str, int, int, bool]]) -> None:
    log = Log()
    ctl = controller(1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", start)])
    log.controllers.append(ctl)
    activate(log, ctl)
    now = 0
    for kind, a, b_, c, flag in steps:
        now += 10
        if kind == "join":
            node_id = b_
            if any(x.node_id == node_id for x in log.brokers):
                continue
            node = broker(node_id, release=a)
            log.join(node)
            drive_broker(log, ctl, node, now)
            drive_broker(log, ctl, node, now + 1)
        else:
            before = list(log.records)
            body = {
                "timeoutMs": 1,
                "validateOnly": flag,
                "featureUpdates": [{"feature": a, "maxVersionLevel": b_, "upgradeType": c}],
            }
            resp = call(log, ctl, 57, 2, body, now)
            if flag or resp["errorCode"] != 0:
                assert log.records == before
        supported(ctl.image)
        for node in log.brokers:
            if node.broker_epoch >= 0:
                assert node.image == ctl.image
