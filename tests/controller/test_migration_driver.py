"""The KIP-866 migration driver: Kafka's transitions, the path to dual write, the lag bound."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.controller.migration_driver import (
    ALLOWED_TRANSITIONS,
    ClaimZkController,
    InvalidMigrationTransitionError,
    MigrateMetadata,
    MigrationDriver,
    MigrationDriverState,
    ReadZkBrokers,
    RecoverMigrationState,
    WriteToZk,
    ZkMigrationLeadership,
    controllers_not_ready,
    is_valid_transition,
)
from kraftwerk.image.model import (
    BrokerRegistration,
    ClusterImage,
    ControllerRegistration,
    FeaturesImage,
    MetadataImage,
    ZkMigrationState,
)
from kraftwerk.versions.metadata_version import MetadataVersion

S = MigrationDriverState
MV = MetadataVersion.IBP_3_9_IV0

# Kafka 3.9's MigrationDriverState diagram, written out edge by edge (not derived from the table).
KAFKA_EDGES = {
    ("UNINITIALIZED", "INACTIVE"),
    ("INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM"),
    ("WAIT_FOR_CONTROLLER_QUORUM", "INACTIVE"),
    ("WAIT_FOR_CONTROLLER_QUORUM", "BECOME_CONTROLLER"),
    ("WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS"),
    ("WAIT_FOR_BROKERS", "INACTIVE"),
    ("WAIT_FOR_BROKERS", "BECOME_CONTROLLER"),
    ("BECOME_CONTROLLER", "INACTIVE"),
    ("BECOME_CONTROLLER", "ZK_MIGRATION"),
    ("BECOME_CONTROLLER", "SYNC_KRAFT_TO_ZK"),
    ("ZK_MIGRATION", "INACTIVE"),
    ("ZK_MIGRATION", "SYNC_KRAFT_TO_ZK"),
    ("SYNC_KRAFT_TO_ZK", "INACTIVE"),
    ("SYNC_KRAFT_TO_ZK", "KRAFT_CONTROLLER_TO_BROKER_COMM"),
    ("KRAFT_CONTROLLER_TO_BROKER_COMM", "INACTIVE"),
    ("KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE"),
    ("DUAL_WRITE", "INACTIVE"),
}


def image(state: ZkMigrationState, *, ready: tuple[int, ...] = (1, 2, 3), brokers: tuple[int, ...] = (),
          mv: MetadataVersion = MV) -> MetadataImage:
    controllers = {i: ControllerRegistration(i, uuid.UUID(int=i), zk_migration_ready=True) for i in ready}
    regs = {b: BrokerRegistration(b, 10, uuid.UUID(int=b), is_migrating_zk_broker=True) for b in brokers}
    return MetadataImage(features=FeaturesImage(metadata_version=mv, zk_migration_state=state),
                         cluster=ClusterImage(brokers=regs, controllers=controllers))


def driver_at(state: MigrationDriverState) -> MigrationDriver:
    d = MigrationDriver(1, max_lag_ms=1000)
    d.state = state
    return d


@given(st.sampled_from(list(S)), st.sampled_from(list(S)))
def test_transitions_are_kafkas(current: MigrationDriverState, new: MigrationDriverState) -> None:
    allowed = current is new or (current.name, new.name) in KAFKA_EDGES
    assert is_valid_transition(current, new) is allowed
    d = driver_at(current)
    if allowed:
        d.transition_to(new)
        assert d.state is new
    else:
        with pytest.raises(InvalidMigrationTransitionError, match=f"from {current.name} to {new.name}"):
            d.transition_to(new)
        assert d.state is current


def test_table_has_every_state() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(S)
    assert all(S.UNINITIALIZED not in targets for targets in ALLOWED_TRANSITIONS.values())


def run_to_dual_write(d: MigrationDriver, now: int = 0) -> None:
    """The first migration on an active controller with one ZooKeeper broker (4), already registered."""
    d.voters = (1, 2, 3)
    d.on_leader_change(1, 5)
    assert isinstance(d.poll(now), RecoverMigrationState)
    d.recovered(ZkMigrationLeadership(migration_zk_version=0))
    assert d.state is S.WAIT_FOR_CONTROLLER_QUORUM
    d.publish(image(ZkMigrationState.PRE_MIGRATION, brokers=(4,)), 10, 5, now)
    assert d.poll(now) is None and d.state is S.WAIT_FOR_BROKERS
    assert isinstance(d.poll(now), ReadZkBrokers)
    d.zk_brokers(frozenset({4}))
    claim = d.poll(now)
    assert isinstance(claim, ClaimZkController) and claim.leadership.kraft_controller_epoch == 5
    d.claimed(ZkMigrationLeadership(1, 5, -1, -1, 0, 7, 7))
    migrate = d.poll(now)
    assert isinstance(migrate, MigrateMetadata) and migrate.metadata_version is MV
    d.publish(image(ZkMigrationState.MIGRATION), 20, 5, now)
    d.migrated(20, 5)
    sync = d.poll(now)
    assert isinstance(sync, WriteToZk) and sync.full and sync.offset == 20
    d.zk_written(sync, 1)
    assert d.state is S.DUAL_WRITE


def test_first_migration_reaches_dual_write_and_writes_each_change() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    assert d.poll(0) is None  # ZooKeeper holds offset 20 already
    d.publish(image(ZkMigrationState.MIGRATION), 25, 5, 100)
    write = d.poll(100)
    assert isinstance(write, WriteToZk) and not write.full and write.previous is not None
    assert d.zk_lag_records() == 5
    d.zk_written(write, 2)
    assert d.leadership.kraft_metadata_offset == 25 and d.zk_lag_records() == 0


def test_waits_for_every_controller_and_zk_broker() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    d.voters = (1, 2, 3)
    d.on_leader_change(1, 5)
    d.poll(0)
    d.recovered(ZkMigrationLeadership())
    d.publish(image(ZkMigrationState.PRE_MIGRATION, ready=(1, 2)), 10, 5, 0)
    assert d.poll(0) is None and d.state is S.WAIT_FOR_CONTROLLER_QUORUM
    assert d.last_error == "No registration found for controller 3"
    d.publish(image(ZkMigrationState.PRE_MIGRATION, brokers=(4,)), 11, 5, 0)
    d.poll(0)
    assert d.state is S.WAIT_FOR_BROKERS
    assert isinstance(d.poll(0), ReadZkBrokers)
    d.zk_brokers(frozenset({4, 5}))
    assert d.state is S.WAIT_FOR_BROKERS
    d.publish(image(ZkMigrationState.PRE_MIGRATION, brokers=(4, 5)), 12, 5, 0)
    d.poll(0)
    d.zk_brokers(frozenset({4, 5}))
    assert d.state is S.BECOME_CONTROLLER


def test_no_broker_in_zookeeper_waits_as_kafka_does(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's driver stays in WAIT_FOR_BROKERS while /brokers/ids is empty, logging why once."""
    d = MigrationDriver(1, max_lag_ms=1000)
    d.voters = (1,)
    d.on_leader_change(1, 5)
    d.poll(0)
    d.recovered(ZkMigrationLeadership())
    d.publish(image(ZkMigrationState.PRE_MIGRATION, ready=(1,), brokers=(4,)), 10, 5, 0)
    d.poll(0)
    caplog.set_level("INFO", logger="kraftwerk.controller.migration_driver")
    for now in (100, 200, 300):
        assert isinstance(d.poll(now), ReadZkBrokers)
        d.zk_brokers(frozenset())
        assert d.state is S.WAIT_FOR_BROKERS and d.unready_brokers == {}
    waiting = [r.getMessage() for r in caplog.records if "No brokers are registered in ZK" in r.getMessage()]
    assert waiting == ["[KRaftMigrationDriver id=1] No brokers are registered in ZK, waiting for brokers to "
                       "register."]
    assert isinstance(d.poll(400), ReadZkBrokers)
    d.zk_brokers(frozenset({4}))  # broker 4 came up in ZooKeeper and is registered with the quorum
    assert d.state is S.BECOME_CONTROLLER


@pytest.mark.parametrize(("mv", "expected"), [
    (MetadataVersion.IBP_3_3_IV3, "The metadata.version too low at 3.3-IV3"),
    (MetadataVersion.IBP_3_6_IV2, None),  # no controller registrations before 3.7-IV0
])
def test_quorum_readiness_by_metadata_version(mv: MetadataVersion, expected: str | None) -> None:
    assert controllers_not_ready(image(ZkMigrationState.PRE_MIGRATION, ready=(), mv=mv), (1,)) == expected


@pytest.mark.parametrize("state", [ZkMigrationState.NONE, ZkMigrationState.POST_MIGRATION])
def test_no_migration_outside_pre_migration_and_migration(state: ZkMigrationState) -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    d.on_leader_change(1, 5)
    d.poll(0)
    d.recovered(ZkMigrationLeadership())
    d.publish(image(state), 10, 5, 0)
    assert d.poll(0) is None and d.state is S.INACTIVE


def test_restarted_controller_skips_the_copy() -> None:
    d = MigrationDriver(2, max_lag_ms=1000)
    d.voters = (1, 2, 3)
    d.on_leader_change(2, 9)
    d.poll(0)
    d.recovered(ZkMigrationLeadership(1, 5, 40, 5, 3, 7, 7))
    d.publish(image(ZkMigrationState.MIGRATION), 60, 9, 0)
    d.poll(0)
    assert d.state is S.BECOME_CONTROLLER
    d.poll(0)
    d.claimed(ZkMigrationLeadership(2, 9, 40, 5, 3, 8, 8))
    sync = d.poll(0)
    assert d.state is S.SYNC_KRAFT_TO_ZK and isinstance(sync, WriteToZk) and sync.full


def test_losing_leadership_goes_inactive_and_refused_claim_retries() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    d.on_leader_change(2, 6)
    assert d.state is S.INACTIVE and d.poll(0) is None
    d.on_leader_change(1, 7)
    assert isinstance(d.poll(0), RecoverMigrationState)  # /migration is read again when active
    d.recovered(ZkMigrationLeadership(2, 6, 30, 6, 5, 9, 9))
    assert d.leadership.kraft_controller_epoch == 7 and d.leadership.kraft_metadata_offset == 30
    d.poll(0)
    assert d.state is S.BECOME_CONTROLLER
    assert isinstance(d.poll(0), ClaimZkController)
    d.claimed(None)
    assert d.state is S.BECOME_CONTROLLER and isinstance(d.poll(0), ClaimZkController)


def test_lag_bound_refuses_writes_until_zookeeper_catches_up() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    d.publish(image(ZkMigrationState.MIGRATION), 21, 5, 1000)
    write = d.poll(1000)
    assert isinstance(write, WriteToZk)
    d.zk_failed(write, "ConnectionLoss", 1000)
    assert not d.writes_blocked(2000) and d.zk_lag_ms(2000) == 1000
    assert d.writes_blocked(2001) and d.blocking_ms(2500) == 499
    retry = d.poll(3000)
    assert isinstance(retry, WriteToZk) and retry.offset == 21
    d.zk_written(retry, 2)
    assert not d.writes_blocked(3000)
    assert d.blocking_ms(9000) == 999  # the total, kept after unblocking
    assert d.zk_lag_ms(9000) == 0


def test_the_lag_clock_restarts_at_the_oldest_batch_zookeeper_still_lacks() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    d.publish(image(ZkMigrationState.MIGRATION), 21, 5, 1000)
    write = d.poll(1000)
    assert isinstance(write, WriteToZk)
    d.publish(image(ZkMigrationState.MIGRATION), 22, 5, 1800)  # committed while 21 was being written
    d.zk_written(write, 2)
    assert d.zk_lag_ms(2500) == 700 and not d.writes_blocked(2500)
    assert d.writes_blocked(2801)


def test_a_write_finishing_after_a_leader_change_is_ignored() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    d.publish(image(ZkMigrationState.MIGRATION), 21, 5, 0)
    write = d.poll(0)
    assert isinstance(write, WriteToZk)
    d.on_leader_change(2, 6)
    d.on_leader_change(1, 7)
    d.zk_written(write, 9)
    assert d.leadership.kraft_metadata_offset == 20 and d.state is S.WAIT_FOR_CONTROLLER_QUORUM


def test_failures_back_off_exponentially() -> None:
    d = MigrationDriver(1, max_lag_ms=1000, retry_backoff_ms=100, max_retry_backoff_ms=300)
    run_to_dual_write(d)
    d.publish(image(ZkMigrationState.MIGRATION), 21, 5, 0)
    now, waits = 0, []
    action = d.poll(now)
    for _ in range(4):
        assert action is not None
        d.zk_failed(action, "down", now)
        start = now
        while (action := d.poll(now)) is None:
            now += 10
        waits.append(now - start)
    assert waits == [100, 200, 300, 300]


def test_fenced_write_claims_again() -> None:
    d = MigrationDriver(1, max_lag_ms=1000)
    run_to_dual_write(d)
    d.publish(image(ZkMigrationState.MIGRATION), 21, 5, 0)
    write = d.poll(0)
    assert write is not None
    d.zk_failed(write, "BadVersion /controller_epoch", 0, fenced=True)
    d.poll(10_000)
    assert d.state is S.WAIT_FOR_CONTROLLER_QUORUM
    assert isinstance(d.poll(10_000), RecoverMigrationState)
    d.recovered(d.leadership)
    d.poll(10_000)
    assert d.state is S.BECOME_CONTROLLER


events = st.lists(st.sampled_from(["leader", "follower", "poll", "ok", "fail", "publish"]), max_size=40)


@given(events)
def test_any_event_order_keeps_kafkas_transitions(seq: list[str]) -> None:
    """Whatever arrives in whatever order, the driver only moves along Kafka's edges."""
    d = MigrationDriver(1, max_lag_ms=50)
    d.voters = (1,)
    seen = [d.state]
    offset, now, pending = 0, 0, None
    for ev in seq:
        now += 20
        if ev == "leader":
            d.on_leader_change(1, offset)
        elif ev == "follower":
            d.on_leader_change(2, offset)
        elif ev == "publish":
            offset += 1
            done = d.leadership.initial_migration_complete
            zk = ZkMigrationState.MIGRATION if done else ZkMigrationState.PRE_MIGRATION
            d.publish(image(zk, ready=(1,), brokers=(4,)), offset, 1, now)
        elif ev == "poll":
            pending = d.poll(now) or pending
        elif pending is not None and ev == "ok":
            if isinstance(pending, RecoverMigrationState):
                d.recovered(ZkMigrationLeadership())
            elif isinstance(pending, ReadZkBrokers):
                d.zk_brokers(frozenset({4}))
            elif isinstance(pending, ClaimZkController):
                d.claimed(ZkMigrationLeadership(1, 1, pending.leadership.kraft_metadata_offset, 1, 0, 1, 1))
            elif isinstance(pending, MigrateMetadata):
                offset += 1
                d.migrated(offset, 1)
            else:
                d.zk_written(pending, 1)
            pending = None
        elif pending is not None and ev == "fail":
            d.zk_failed(pending, "down", now)
            pending = None
        seen.append(d.state)
        assert d.blocking_ms(now) >= 0
        if d.writes_blocked(now):
            assert d.state in (S.KRAFT_CONTROLLER_TO_BROKER_COMM, S.DUAL_WRITE)
    for a, b in itertools.pairwise(seen):
        # one event may pass through several states; every hop along the way was checked by
        # transition_to, so adjacent observations must at least be reachable
        assert a is b or _reachable(a, b)


def _reachable(a: MigrationDriverState, b: MigrationDriverState) -> bool:
    frontier, seen = [a], {a}
    while frontier:
        cur = frontier.pop()
        for nxt in ALLOWED_TRANSITIONS[cur]:
            if nxt is b:
                return True
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return False
