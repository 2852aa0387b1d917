"""KIP-920's "no flip-flop" as a simulator property: controllers with different static
metadata.version values, auto-upgrade on, failing over back and forth (crashes and isolations of
the active controller) while clients send feature updates. Over seeded runs the committed
metadata.version never goes down, every lifecycle invariant holds, and the level ends at the
highest target among the controllers that led (never above any target, never below the start)."""

from __future__ import annotations

import random

import pytest

from kraftwerk.controller import features as fc
from kraftwerk.controller.feature_control import FeatureControlManager
from kraftwerk.image.writer import image_losses
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.sim.lifecycle import LifecycleSim
from kraftwerk.sim.lifecycle_types import MV_LADDER, LifecycleConfig, Mix
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion

SEEDS = range(12)


def _config(seed: int) -> LifecycleConfig:
    rng = random.Random(seed)
    initial = rng.choice(MV_LADDER[:-2])
    versions = [MetadataVersion.from_feature_level(lv).version for lv in MV_LADDER]
    targets = tuple(rng.choice([None, *versions]) for _ in range(3))
    return LifecycleConfig(
        seed=seed,
        voters=3,
        brokers=2,
        mix=Mix.FAILOVER,
        events=6,
        initial_level=initial,
        auto_upgrade_targets=targets,
    )


def _committed_levels(sim: LifecycleSim) -> list[int]:
    """metadata.version after each committed FeatureLevelRecord for it, in log order."""
    checker = sim.lifecycle
    return [
        checker.reference(offset).levels.get(FEATURE_NAME, 0)
        for offset, _, kind, payload in checker.events
        if kind == "flr" and payload[0] == FEATURE_NAME
    ]


def _run(seed: int) -> tuple[LifecycleConfig, LifecycleSim]:
    config = _config(seed)
    sim = LifecycleSim(config)
    sim.run()
    return config, sim


@pytest.mark.parametrize("seed", SEEDS)
def test_auto_upgrade_never_lowers_the_level(seed: int) -> None:
    config, sim = _run(seed)
    levels = [lv for lv in _committed_levels(sim) if lv]
    assert levels == sorted(levels), f"seed {seed}: metadata.version went down: {levels}"
    final = sim.lifecycle.reference(sim.lifecycle.committed_end - 1).levels[FEATURE_NAME]
    targets = [
        MetadataVersion.from_version_string(t).feature_level
        for t in config.auto_upgrade_targets or ()
        if t is not None
    ]
    assert config.initial_level is not None
    assert final >= config.initial_level
    assert final <= max([config.initial_level, *targets])


def test_some_seeds_upgrade_automatically() -> None:
    """The property is not vacuous: in some seeds the level rises with no manual upgrade accepted."""
    rose = 0
    for seed in SEEDS[:6]:
        config, sim = _run(seed)
        levels = [lv for lv in _committed_levels(sim) if lv]
        assert config.initial_level is not None
        rose += any(lv > config.initial_level for lv in levels)
    assert rose >= 2


def test_the_property_catches_a_flip_flop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller that also *lowers* the level to its target (the KIP's rejected alternative)
    flip-flops under failover, and the property sees it."""

    def both_ways(self: FeatureControlManager, now_ms: int) -> list[MetadataRecord]:
        settings = self.auto_upgrade_settings()
        if not self._auto_upgrade_timer.due(settings, now_ms) or settings.target is None:
            return []
        state = self.feature_state()
        target = settings.target.feature_level
        if target == state.metadata_version.feature_level:
            return []
        kind = (
            fc.UpgradeType.UPGRADE
            if target > state.metadata_version.feature_level
            else fc.UpgradeType.UNSAFE_DOWNGRADE
        )
        image = self._c.image
        outcome = fc.update_features(
            state,
            [fc.FeatureUpdate(FEATURE_NAME, target, kind)],
            losses_at=lambda mv: image_losses(image, mv),
        )
        return list(outcome.records) if outcome.ok else []

    monkeypatch.setattr(FeatureControlManager, "auto_upgrade", both_ways)
    found = False
    for seed in SEEDS:
        _, sim = _run(seed)
        levels = [lv for lv in _committed_levels(sim) if lv]
        if levels != sorted(levels):
            found = True
            break
    assert found
