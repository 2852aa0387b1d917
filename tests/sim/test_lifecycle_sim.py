"""Seeded metadata.version lifecycle simulations (issue #7): mixes, targeted scenarios, and proof
that each of the four lifecycle invariant checks fails on an inconsistent history."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator

import pytest

from kraftwerk.cli.sim_cmd import register_lifecycle
from kraftwerk.controller.effects import WriteSnapshot
from kraftwerk.controller.features import feature_level_record
from kraftwerk.image.writer import ImageWriterOptions
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.sim.lifecycle import LifecycleSim, run_lifecycle_seed
from kraftwerk.sim.lifecycle_checker import (
    BROKER_INVARIANT,
    CONVERGENCE_INVARIANT,
    DRY_RUN_INVARIANT,
    LEVELS_INVARIANT,
    SNAPSHOT_INVARIANT,
    STALL_INVARIANT,
    LifecycleChecker,
    NodeView,
    ReferenceTables,
)
from kraftwerk.sim.lifecycle_types import (
    ALL_MIXES,
    LifecycleConfig,
    LifecycleResult,
    Mix,
    Sabotage,
    UpdateOutcome,
)
from tests.sim.seeds import seeds

MV = "metadata.version"
UPGRADE, SAFE, UNSAFE = 1, 2, 3

#: The checker's reference folds the log with Kafka's facts, pinned here rather than taken from the
#: tables the cores run on: the metadata.version levels whose ``didMetadataChange`` is true
#: (server-common/.../MetadataVersion.java, tags 4.0.0-4.2.0 for levels 1-29; 4.3-IV0, 4.4-IV1 and
#: 4.4-IV2 from PR #23235 and the 4.4 notes, upstream-kafka.md §1.3), and the feature levels that
#: depend on a metadata.version (Features.java; ``kafka-storage feature-dependencies`` of Kafka 4.3:
#: only eligible.leader.replicas.version=1, on 4.0-IV1).
KAFKA_TABLES = ReferenceTables(
    metadata_changed=frozenset({1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33}),
    mv_dependencies={("eligible.leader.replicas.version", 1): 23},
)


def run_seed(seed: int, **overrides: object) -> LifecycleResult:
    return run_lifecycle_seed(seed, tables=KAFKA_TABLES, **overrides)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """The cores log every refusal and fail-stop; thousands of lines would only slow CI down."""
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


# (voters, brokers, first seed, seeds): 440 seeds in all by default (see tests/sim/seeds.py for
# the nightly profile), the four mixes rotating by seed; 1 + 1 is the cheap bulk (~30 seeds/s)
SEED_MIXES = [(3, 2, 0, seeds(80)), (1, 1, 1000, seeds(330)), (5, 3, 2000, seeds(30))]


@pytest.mark.parametrize(("voters", "brokers", "start", "count"), SEED_MIXES)
def test_seeded_mixes_find_no_violation(voters: int, brokers: int, start: int, count: int) -> None:
    failures = []
    totals: dict[str, int] = {}
    for seed in range(start, start + count):
        result = run_seed(seed, mix=ALL_MIXES[seed % 4], voters=voters, brokers=brokers)
        if not result.ok:
            failures.append(result.report())
        for k, v in result.stats.items():
            totals[k] = totals.get(k, 0) + v
    assert not failures, "\n\n".join(failures[:2])
    # the mixes really exercise the lifecycle, not an idle cluster
    assert totals["updates_ok"] > count and totals["updates_refused"] > 0
    assert totals["dry_runs_checked"] > 0 and totals["flr_commits"] > count
    # snapshots at version changes are written; the ones skipped are explained (a violation otherwise)
    assert totals["snapshot_writes"] > totals["snapshot_superseded"] + totals["snapshot_mid_batch"]
    if voters > 1:
        assert totals["lossy_rewrites"] > 0 and totals["fail_stops"] > 0 and totals["rolls"] > 0
        assert totals["refused_brokers_rolled"] > 0  # old-software brokers refused, then rolled


def test_same_seed_same_history() -> None:
    a = run_seed(11, mix=Mix.RANDOM)
    b = run_seed(11, mix=Mix.RANDOM)
    assert (a.events, a.virtual_ms, a.stats, a.final_levels) == (
        b.events,
        b.virtual_ms,
        b.stats,
        b.final_levels,
    )
    assert [o.describe() for o in a.outcomes] == [o.describe() for o in b.outcomes]


# --------------------------------------------------------------------------- targeted scenarios


def _scripted(**kw: object) -> LifecycleSim:
    return LifecycleSim(LifecycleConfig(mix=Mix.NONE, **kw), KAFKA_TABLES)  # type: ignore[arg-type]


def _views_levels(sim: LifecycleSim) -> set[tuple[tuple[str, int], ...]]:
    return {tuple(sorted(v.levels.items())) for v in sim.views()}


def test_upgrade_with_a_broker_on_old_software_is_rejected_naming_it() -> None:
    sim = _scripted(seed=1, initial_level=21, software=("4.3", "4.3", "4.3", "4.3", "3.9"))
    outcomes: list[UpdateOutcome] = []
    sim.at(3000, lambda: outcomes.append(sim.update_features([(MV, 30, UPGRADE)])))
    sim.run_until(6000)
    refused = outcomes[0]
    assert refused.error == "INVALID_UPDATE_VERSION"
    assert refused.message is not None and "Broker 5 only supports versions 1-21" in refused.message
    assert sim.committed_levels()[MV] == 21
    # roll the broker left behind (a crash and a restart: its new incarnation is refused with
    # DUPLICATE_BROKER_REGISTRATION until the old one's session expires and it is fenced), then the
    # same upgrade goes through and every node adopts it
    sim.roll(5, "4.3", 300)
    sim.at(25_000, lambda: outcomes.append(sim.update_features([(MV, 30, UPGRADE)])))
    sim.run_until(28_000)
    assert outcomes[1].error == "NONE", outcomes[1].describe()
    sim.run_until_converged()
    assert _views_levels(sim) == {((MV, 30),)}
    assert len(sim.views()) == 5 and len({v.epoch for v in sim.views()}) == 1


def test_unsafe_downgrade_to_3_6_converges_with_the_lossy_snapshot_everywhere() -> None:
    sim = _scripted(seed=2, initial_level=30, brokers=2)
    outcomes: list[UpdateOutcome] = []
    sim.at(2500, lambda: sim.crash(4))  # a broker down during the downgrade catches up afterwards
    sim.at(3000, lambda: outcomes.append(sim.update_features([(MV, 14, SAFE)])))
    sim.at(4000, lambda: outcomes.append(sim.update_features([(MV, 14, UNSAFE)], validate_only=True)))
    sim.at(5000, lambda: outcomes.append(sim.update_features([(MV, 14, UNSAFE)])))
    sim.run_until(8000)
    safe, dry, unsafe = outcomes
    assert safe.error == "INVALID_UPDATE_VERSION" and safe.message is not None
    assert "Refusing to perform the requested downgrade because it might delete metadata" in safe.message
    assert dry.error == "NONE" and dry.message is not None and "Metadata has been lost" in dry.message
    assert (
        unsafe.error == "NONE" and unsafe.message is not None and "Metadata has been lost" in unsafe.message
    )
    assert sim.committed_levels() == {MV: 14}
    assert sim.stats["lossy_rewrites"] == 4  # every running node rewrote its image
    # restart a controller and the other broker on 3.6 software, and the crashed broker
    sim.roll(3, "3.6", 300)
    sim.roll(5, "3.6", 300)
    sim.restart(4, "3.6")
    loads_before = sim.stats["core_snapshot_loads"]
    sim.run_until_converged()
    assert _views_levels(sim) == {((MV, 14),)}
    assert sim.stats["core_snapshot_loads"] >= loads_before + 3  # they start from the lossy snapshot
    assert sim.stats["fail_stops"] == 0
    change = max(o for o, _ in _flr_offsets(sim))
    for nid in sim.all_ids:
        log = sim.cluster.nodes[nid].log
        assert log is not None
        snap = log.latest_snapshot()
        assert snap is not None and snap.end_offset >= change + 1, (nid, snap, change)


def _flr_offsets(sim: LifecycleSim) -> list[tuple[int, int]]:
    return [(off, p[1]) for off, _, kind, p in sim.lifecycle.events if kind == "flr" and p[0] == MV]


@pytest.mark.parametrize("seed", range(4))
def test_active_controller_crash_mid_update(seed: int) -> None:
    sim = _scripted(seed=seed, initial_level=21)
    outcomes: list[UpdateOutcome] = []
    sim.run_until(3000)
    leader = sim.leader()
    assert leader is not None
    outcomes.append(sim.update_features([(MV, 30, UPGRADE)]))
    sim.at(sim.now + 10, lambda: sim.crash(leader, 2000))  # appended, not yet committed
    sim.run_until(15_000)
    assert outcomes[0].error == "NONE", outcomes[0].describe()
    sim.run_until_converged()
    assert sim.leader() != leader or sim.cluster.stats["elections"] >= 2
    assert _views_levels(sim) == {((MV, 30),)}


def test_dry_run_during_failover_never_changes_the_log() -> None:
    sim = _scripted(seed=5, initial_level=25)
    outcomes: list[UpdateOutcome] = []
    sim.run_until(3000)
    old = sim.isolate_leader(heal_after_ms=4000)
    assert old is not None
    for i in range(12):
        sim.at(
            3000 + 300 * i,
            lambda: outcomes.append(sim.update_features([(MV, 30, UPGRADE)], validate_only=True)),
        )
    sim.run_until(12_000)
    sim.run_until_converged()
    assert sim.committed_levels() == {MV: 25}
    assert _views_levels(sim) == {((MV, 25),)}
    assert sim.stats["dry_runs_checked"] >= 12
    assert any(o.error == "NONE" for o in outcomes)
    assert all(o.error in ("NONE", "NOT_CONTROLLER", "REQUEST_TIMED_OUT") for o in outcomes)


# --------------------------------------------------------------------------- each check can fail


def _flr(name: str, level: int) -> MetadataRecord:
    return feature_level_record(name, level)


def _register(broker_id: int, mv_max: int) -> MetadataRecord:
    value = {
        "brokerId": broker_id,
        "incarnationId": None,
        "brokerEpoch": 1,
        "endPoints": [],
        "features": [{"name": MV, "minSupportedVersion": 1, "maxSupportedVersion": mv_max}],
        "rack": None,
        "fenced": True,
    }
    return MetadataRecord(lookup_record("RegisterBrokerRecord"), 1, value)


def test_levels_check_fails_on_a_level_before_its_record() -> None:
    checker = LifecycleChecker(KAFKA_TABLES)
    checker.observe_batch(0, 0, [_flr(MV, 21)])
    checker.observe_batch(1, 1, [])
    checker.observe_batch(2, 2, [_flr(MV, 25)])
    checker.check_view(1, 1, {MV: 21}, source="test")
    checker.check_view(1, 2, {MV: 25}, source="test")
    with pytest.raises(InvariantViolation, match=LEVELS_INVARIANT):
        checker.check_view(2, 1, {MV: 25}, source="test")  # adopted before offset 2 committed
    with pytest.raises(InvariantViolation, match=LEVELS_INVARIANT):
        checker.check_view(2, 3, {MV: 25}, source="test")  # applied past the committed log
    with pytest.raises(InvariantViolation, match=LEVELS_INVARIANT):
        checker.check_view(2, 2, {MV: 25, "group.version": 1}, source="test")


def test_levels_reference_follows_transactions_and_the_lossy_rewrite() -> None:
    checker = LifecycleChecker(KAFKA_TABLES)
    begin = MetadataRecord(lookup_record("BeginTransactionRecord"), 0, {"name": "x"})
    end = MetadataRecord(lookup_record("EndTransactionRecord"), 0, {})
    abort = MetadataRecord(lookup_record("AbortTransactionRecord"), 0, {"reason": "r"})
    checker.observe_batch(0, 2, [begin, _flr(MV, 30), end])
    checker.observe_batch(3, 4, [_flr("eligible.leader.replicas.version", 1), _flr("group.version", 1)])
    checker.observe_batch(5, 6, [begin, _flr(MV, 29)])
    checker.observe_batch(7, 7, [abort])
    assert checker.reference(7).levels == {MV: 30, "eligible.leader.replicas.version": 1, "group.version": 1}
    checker.observe_batch(8, 8, [_flr(MV, 14)])  # unsafe downgrade: ELR needs 4.0-IV1, dropped
    assert checker.reference(8).levels == {MV: 14, "group.version": 1}


def test_broker_check_fails_when_a_registered_broker_keeps_running() -> None:
    checker = LifecycleChecker(KAFKA_TABLES)
    checker.observe_batch(0, 1, [_flr(MV, 21), _register(5, 21)])
    effective = checker.observe_batch(2, 2, [_flr(MV, 25)])
    assert effective == [(2, MV, 25)]
    debts = checker.owe_fail_stops(2, MV, 25, {5: 1})
    assert [d.broker_id for d in debts] == [5]
    with pytest.raises(InvariantViolation, match=BROKER_INVARIANT):
        checker.check_debts()
    checker.incarnation_ended(5, 1, "fail-stop")  # KIP-778: the broker fail-stopped
    checker.check_debts()
    assert checker.owe_fail_stops(2, MV, 21, {5: 2}) == []  # a supported level owes nothing


def test_dry_run_check_fails_when_the_log_moves() -> None:
    checker = LifecycleChecker(KAFKA_TABLES)
    checker.check_dry_run(1, 10, 10, [], "[metadata.version=30]")
    with pytest.raises(InvariantViolation, match=DRY_RUN_INVARIANT):
        checker.check_dry_run(1, 10, 11, [], "[metadata.version=30]")
    with pytest.raises(InvariantViolation, match=DRY_RUN_INVARIANT):
        checker.check_dry_run(1, 10, 10, [_flr(MV, 30)], "[metadata.version=30]")


def test_convergence_check_fails_after_the_bound() -> None:
    checker = LifecycleChecker(KAFKA_TABLES)
    checker.observe_batch(0, 0, [_flr(MV, 30)])
    same = [NodeView(1, 0, {MV: 30}, 0), NodeView(4, 0, {MV: 30}, 0, is_broker=True)]
    assert checker.check_converged(same, 0, 1000)
    behind = [NodeView(1, 0, {MV: 30}, 0), NodeView(4, 0, {MV: 30}, -1, is_broker=True)]
    assert not checker.check_converged(behind, 500, 1000)
    with pytest.raises(InvariantViolation, match=CONVERGENCE_INVARIANT):
        checker.check_converged(behind, 1500, 1000)
    fenced = [NodeView(1, 0, {MV: 30}, 0), NodeView(4, 0, {MV: 30}, 0, is_broker=True, fenced=True)]
    assert checker.convergence_problem(fenced) == "broker 4 is fenced"


@pytest.mark.parametrize(
    ("sabotage", "invariant", "overrides"),
    [
        (Sabotage.IGNORE_FEATURE_RECORD, LEVELS_INVARIANT, {"mix": Mix.RANDOM}),
        (Sabotage.DRY_RUN_APPENDS, DRY_RUN_INVARIANT, {"mix": Mix.DOWNGRADE, "seed": 1}),
        # a frozen node shows only when a level changes after the heal: seed 0 no longer has one
        # since controllers answer writes after their own replay (a few virtual ms later)
        (Sabotage.FROZEN_NODE, CONVERGENCE_INVARIANT, {"mix": Mix.RANDOM, "seed": 1}),
        (Sabotage.STALLED_BROKER, STALL_INVARIANT, {"mix": Mix.FAILOVER}),
        (
            Sabotage.UNCHECKED_UPGRADE,
            BROKER_INVARIANT,
            {"mix": Mix.NONE, "initial_level": 21, "software": ("4.3", "4.3", "4.3", "4.3", "3.9")},
        ),
    ],
)
def test_each_invariant_fails_end_to_end_on_a_deliberate_bug(
    sabotage: Sabotage, invariant: str, overrides: dict[str, object]
) -> None:
    seed = int(overrides.pop("seed", 0))  # type: ignore[call-overload]
    result = run_seed(seed, sabotage=sabotage, **overrides)
    assert not result.ok and result.invariant == invariant, result.report()
    report = result.report()
    assert f"seed {seed} violated" in report and "replay: kraftwerk sim lifecycle --seeds 1 --start" in report
    assert result.trace_tail


def test_cli_registration_runs_seeds_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="kraftwerk sim")
    register_lifecycle(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["lifecycle", "--seeds", "4", "--start", "3", "--brokers", "1"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: 4 seeds (3 controllers, 1 brokers, mix all)") and "seeds/s" in out
    args = parser.parse_args(["lifecycle", "--seeds", "1", "--mix", "downgrade", "--output", "json"])
    assert args.func(args) == 0
    assert '"seeds":1' in capsys.readouterr().out


def test_seed_10188_a_stalled_broker_applies_no_part_of_the_batch_it_cannot_run() -> None:
    """Found by the simulator: a 3.7 broker half-applied a batch (metadata.version=20, then an
    unsupported streams.version=1) and reported a level its offset had not reached."""
    result = run_seed(10188, mix=Mix.RANDOM)
    assert result.ok, result.report()


def test_kraft_version_upgrade_reaches_every_node_and_survives_a_leader_crash() -> None:
    sim = _scripted(seed=4, initial_level=30)
    outcomes: list[UpdateOutcome] = []
    sim.at(3000, lambda: outcomes.append(sim.update_features([("kraft.version", 1, UPGRADE)])))
    sim.run_until(6000)
    assert outcomes[0].error == "NONE", outcomes[0].describe()
    leader = sim.leader()
    assert leader is not None
    sim.crash(leader, restart_after_ms=500)
    sim.run_until(12_000)
    sim.run_until_converged()
    for nid in sim.cluster.nodes:
        raft, machine = sim.raft_of(nid), sim.machine(nid)
        assert raft is not None and raft.kraft_version == 1, nid
        assert machine is not None and machine.core.kraft_version == 1, nid


def test_seed_31474_registration_and_upgrade_racing_uncommitted() -> None:
    """Found by an offline run: a 3.9 broker's registration and a streams.version upgrade were both
    accepted while neither had committed, so a level the broker cannot run was finalized."""
    result = run_seed(31474, mix=Mix.DOWNGRADE, voters=3, brokers=2, events=6)
    assert result.ok, result.report()


def test_the_reference_tables_are_kafkas() -> None:
    """What the cores run on agrees with Kafka's facts pinned above (so ``kraftwerk sim``, which
    uses this software's tables, checks against the same reference as the tests)."""
    assert ReferenceTables.of_this_software() == KAFKA_TABLES
    assert KAFKA_TABLES.metadata_changed_between(30, 25)  # 4.3-IV0 changed the metadata
    assert not KAFKA_TABLES.metadata_changed_between(29, 24)
    assert KAFKA_TABLES.lost_in_rewrite("eligible.leader.replicas.version", 1, 22)
    assert not KAFKA_TABLES.lost_in_rewrite("group.version", 1, 14)


def test_a_snapshot_the_node_cannot_write_is_reported_not_swallowed() -> None:
    sim = _scripted(seed=2, initial_level=30)
    sim.run_until(5000)
    m = sim.machine(1)
    assert m is not None and m.controller is not None
    image = m.controller.image
    beyond = WriteSnapshot(m.applied_offset + 5, 1, image, ImageWriterOptions(image.metadata_version), "test")
    with pytest.raises(InvariantViolation, match=SNAPSHOT_INVARIANT):
        sim.write_snapshot(m, lambda: beyond)


def test_seed_1124_a_broker_refused_for_kraft_version_is_rolled_not_left_fenced() -> None:
    """Found by a seed sweep: a broker rolled to 3.7 during the faults is refused registration
    because kraft.version=1 is finalized (it lives in raft, not in the committed feature records);
    the operator must roll it, as for any level its software cannot run."""
    result = run_seed(1124, mix=Mix.RANDOM, voters=3, brokers=2)
    assert result.ok, result.report()
    assert result.stats["refused_brokers_rolled"] > 0
