"""KIP-866's migration under faults in the simulator: seeded runs hold every invariant, each
invariant fails on a deliberate bug, and the seeds that found real bugs stay fixed."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest

from kraftwerk.cli.sim_cmd import register_migration
from kraftwerk.image.model import TopicsImage
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.sim.migration import MigrationSim, run_migration, run_migration_seeds
from kraftwerk.sim.migration_checker import (
    CONVERGENCE_INVARIANT,
    FENCING_INVARIANT,
    LAG_INVARIANT,
    MISSING_INVARIANT,
    MigrationChecker,
)
from kraftwerk.sim.migration_types import MigrationConfig, MigrationSabotage
from kraftwerk.sim.zookeeper import SimZooKeeper
from tests.sim.seeds import seeds


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """The drivers log every ZooKeeper error and refusal; thousands of lines would only slow CI down."""
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


def test_seeded_migrations_under_faults_hold_every_invariant() -> None:
    batch = run_migration_seeds(MigrationConfig(), 100, seeds(12), keep_going=True)
    assert not batch.failures, batch.failures[0].report()
    s = batch.stats
    # not vacuous: the faults happened and the checks ran
    assert s["writes_checked"] > 100 and s["writes_refused_for_lag"] > 0 and s["zk_errors"] > 0
    assert s.get("crashes_during_migration", 0) > 0
    assert s["fault_leader_crash"] + s["fault_leader_isolate"] + s["fault_leader_pause"] > 0


@pytest.mark.parametrize(("sabotage", "seed", "invariant"), [
    (MigrationSabotage.IGNORE_LAG_BOUND, 0, LAG_INVARIANT),
    # a paused active controller wakes up after another claimed ZooKeeper and sends its write
    (MigrationSabotage.SKIP_EPOCH_CHECK, 9, FENCING_INVARIANT),
])
def test_each_invariant_fails_on_a_deliberate_bug(sabotage: MigrationSabotage, seed: int,
                                                  invariant: str) -> None:
    assert run_migration(MigrationConfig(seed=seed)).ok
    result = run_migration(MigrationConfig(seed=seed, sabotage=sabotage))
    assert not result.ok and result.invariant == invariant, result.report()
    report = result.report()
    assert f"seed {seed} violated" in report and "replay: kraftwerk sim migration --seeds 1 --start" in report
    assert result.trace_tail


@pytest.mark.parametrize("seed", [
    1,  # the active controller crashed after the copy committed, before /migration was written: the
    # next one went INACTIVE for good (Kafka's behaviour) and accepted writes without any lag bound
    5,  # IncrementalAlterConfigs right after DeleteTopics left a config for the deleted topic in KRaft
    24,  # a controller elected before it could read /migration (ZooKeeper down) took writes without bound
    202,  # a broker fenced right after DeleteTopics got a PartitionChangeRecord for the deleted topic
])
def test_seeds_that_found_bugs(seed: int) -> None:
    result = run_migration(MigrationConfig(seed=seed))
    assert result.ok, result.report()


def test_a_controller_elected_after_a_quiet_spell_counts_what_it_forgot() -> None:
    """Seed 1000 (3 brokers, 12 faults, bound 1 s) found it: no batch committed for 4.5 s while the
    leader was down, the new active controller had forgotten the last one ZooKeeper lacked (past its
    horizon) and took a write before it read /migration."""
    result = run_migration(MigrationConfig(seed=1000, brokers=3, events=12, max_lag_ms=1000))
    assert result.ok, result.report()


def test_the_convergence_check_sees_a_change_missing_from_zookeeper() -> None:
    sim = MigrationSim(MigrationConfig(seed=2, events=2))
    sim.run()
    image = sim._leader_host().controller.image  # type: ignore[union-attr]
    assert image.metadata_version is not None
    reader = sim.zk.connect(owner=-1)
    sim.mchecker.check_converged(image, reader, image.metadata_version)
    reader.delete("/brokers/topics/after-heal", recursive=True)  # what a lost dual write would leave
    with pytest.raises(InvariantViolation) as lost:
        sim.mchecker.check_converged(image, reader, image.metadata_version)
    assert lost.value.invariant == CONVERGENCE_INVARIANT and "after-heal" in lost.value.detail
    # both stores agree without the topic, but the committed log created it: a committed change is missing
    topic = image.topics.by_name["after-heal"]
    without = replace(image, topics=TopicsImage(image.topics.by_id.delete(topic.id),
                                                image.topics.by_name.delete("after-heal")))
    with pytest.raises(InvariantViolation) as missing:
        sim.mchecker.check_converged(without, reader, image.metadata_version)
    assert missing.value.invariant == MISSING_INVARIANT and "after-heal" in missing.value.detail


def test_the_fencing_check_attributes_writes_to_the_claimant() -> None:
    zk = SimZooKeeper(lambda: 0)
    checker = MigrationChecker(zk, 1000, 100, frozenset(), frozenset({1, 2}))
    old, new = zk.connect(1001), zk.connect(2001)
    old.create("/controller", b"1")
    old.create("/topic-a", b"")
    checker.check_fencing()
    tx = new.transaction()
    tx.delete("/controller")
    tx.create("/controller", b"2")
    tx.commit()
    checker.check_fencing()
    old.create("/topic-b", b"")  # the old claimant's write after the new claim
    with pytest.raises(InvariantViolation, match=r"controller 1 .* after controller 2"):
        checker.check_fencing()


def test_cli_runs_seeds_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="kraftwerk sim")
    register_migration(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["migration", "--seeds", "1", "--start", "3", "--events", "2"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: 1 seeds (3 controllers, 2 ZooKeeper brokers)")
    assert "refused for ZooKeeper's lag" in out
    args = parser.parse_args(["migration", "--seeds", "1", "--events", "1", "--output", "json"])
    assert args.func(args) == 0
    assert '"seeds":1' in capsys.readouterr().out
