"""KIP-1294's simulator property (issue #20): no committed metadata.version ever has an effective
config that breaks its rules, over seeded runs of the configs mix; proof that the seeds exercise
the audit both ways, and that the check fails once the audit is switched off."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kraftwerk.controller.features import feature_level_record
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.sim.lifecycle import run_lifecycle_seed
from kraftwerk.sim.lifecycle_checker import CONFIG_INVARIANT, LifecycleChecker
from kraftwerk.sim.lifecycle_types import LifecycleResult, Mix, Sabotage, UpdateOutcome

MV = "metadata.version"
IV1 = 32
SEEDS = range(24)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


def _audit_refused(o: UpdateOutcome) -> bool:
    return o.error == "INVALID_UPDATE_VERSION" and "config audit" in (o.message or "")


def _accepted_after_refusal(result: LifecycleResult) -> bool:
    """An upgrade the audit refused, then the same upgrade accepted (after an override)."""
    refused: set[int] = set()
    for o in sorted(result.outcomes, key=lambda o: o.done_ms):
        (name, level, utype), *_ = o.updates
        if o.validate_only or name != MV or utype != 1:
            continue
        if _audit_refused(o):
            refused.add(level)
        elif o.ok and level in refused:
            return True
    return False


def test_no_committed_level_has_an_effective_config_that_breaks_its_rules() -> None:
    results = [run_lifecycle_seed(seed, mix=Mix.CONFIGS) for seed in SEEDS]
    failures = [r.report() for r in results if not r.ok]
    assert not failures, "\n\n".join(failures[:2])
    # not vacuous: the property was checked after every relevant batch; some seeds had an upgrade
    # refused by the audit, some had one accepted after an override; config changes were refused
    assert all(r.stats["config_checks"] > 5 for r in results)
    refused = [r.config.seed for r in results if any(_audit_refused(o) for o in r.outcomes)]
    fixed = [r.config.seed for r in results if _accepted_after_refusal(r)]
    assert len(refused) >= 5 and len(fixed) >= 3, (refused, fixed)
    assert sum(r.stats.get("config_requests_refused", 0) for r in results) > 0
    reached_iv1 = [r for r in results if r.final_levels[MV] >= IV1]
    assert reached_iv1, "no seed ended at 4.4-IV1"


def test_the_check_fails_when_the_audit_is_skipped() -> None:
    """``--skip-config-audit`` (UpdateFeatures v3's tagged field) switches the controller's audit
    off: the seeds then commit levels their configs break, and the checker reports it."""
    skip = Sabotage.SKIP_CONFIG_AUDIT
    results = [run_lifecycle_seed(seed, mix=Mix.CONFIGS, sabotage=skip) for seed in range(4)]
    caught = [r for r in results if r.invariant == CONFIG_INVARIANT]
    assert caught, [r.invariant for r in results]
    assert "log.segment.bytes" in (caught[0].violation or "")
    assert "replay: kraftwerk sim lifecycle --seeds 1" in caught[0].report()


def _config(rtype: int, rname: str, name: str, value: str | None) -> MetadataRecord:
    value_ = {"resourceType": rtype, "resourceName": rname, "name": name, "value": value}
    return MetadataRecord(lookup_record("ConfigRecord"), 0, value_)


def _register(broker_id: int) -> MetadataRecord:
    value = {"brokerId": broker_id, "incarnationId": None, "brokerEpoch": 1, "endPoints": [],
             "features": [{"name": MV, "minSupportedVersion": 7, "maxSupportedVersion": IV1}],
             "rack": None, "fenced": True}
    return MetadataRecord(lookup_record("RegisterBrokerRecord"), 1, value)


def test_the_check_folds_static_and_dynamic_configs_per_broker_and_topic() -> None:
    checker = LifecycleChecker(static_configs={4: {"log.segment.bytes": "2097152"}})
    cover = _config(4, "", "log.segment.bytes", "4194304")
    checker.observe_batch(0, 2, [feature_level_record(MV, 30), _register(4), cover])
    checker.observe_batch(3, 3, [feature_level_record(MV, IV1)])  # the cluster default covers broker 4
    checker.observe_batch(4, 4, [_config(2, "t", "segment.bytes", "3145728")])
    with pytest.raises(InvariantViolation, match=r"broker 4 has log\.segment\.bytes=2097152"):
        checker.observe_batch(5, 5, [_config(4, "", "log.segment.bytes", None)])
    checker = LifecycleChecker(static_configs={})
    checker.observe_batch(0, 0, [feature_level_record(MV, IV1)])
    with pytest.raises(InvariantViolation, match=r"topic t has segment\.bytes=1048576"):
        checker.observe_batch(1, 1, [_config(2, "t", "segment.bytes", "1048576")])
