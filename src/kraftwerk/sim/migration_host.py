"""The migration simulation's controller host: the production node host plus the migration driver's
ZooKeeper actions (:mod:`kraftwerk.node.migration_zk`, the runtime's code) run against the in-memory
ZooKeeper, each outcome handed back after the simulated time its calls took (the simulator's
counterpart of ``runtime/migration_io.MigrationRunner``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import KazooException

from kraftwerk.controller.migration_driver import (
    Action,
    ClaimZkController,
    MigrateMetadata,
    MigrationDriver,
    ReadZkBrokers,
    RecoverMigrationState,
)
from kraftwerk.migration.errors import MigrationError
from kraftwerk.node.migration_zk import ControllerEpochMovedError, MigrationZk
from kraftwerk.raft import Committed, RaftNode
from kraftwerk.sim.lifecycle_host import SimNodeHost
from kraftwerk.sim.migration_types import MigrationSabotage
from kraftwerk.sim.zookeeper import SimTransaction, SimZkClient

if TYPE_CHECKING:
    from kraftwerk.sim.migration import MigrationSim

CONNECT_TIMEOUT_MS = 1000
"""What a failed connection attempt costs (kazoo's connect timeout, shortened)."""
RECORDS_PER_BATCH = 7
"""The migration transaction's batch size here: small, so a failover can leave part of it in the log."""


class _UncheckedTransaction(SimTransaction):
    """Sabotage: a transaction that drops its version checks."""

    def check(self, path: str, version: int) -> None:
        pass


class _UncheckedClient(SimZkClient):
    """Sabotage: a session whose transactions drop their version checks."""

    def transaction(self) -> SimTransaction:
        return _UncheckedTransaction(self)


class SimMigrationZk(MigrationZk):
    """The driver's ZooKeeper actions over one simulated session, reopened after an error."""

    def __init__(self, host: MigrationHost) -> None:
        sim = host.sim
        super().__init__(node_id=host.nid, cluster_id=sim.cluster_id, now_ms=lambda: sim.now)
        self.host = host
        self.session: SimZkClient | None = None
        self.records_per_batch = RECORDS_PER_BATCH

    def client(self) -> Any:
        if self.session is None:
            sim = self.host.sim
            unchecked = sim.mconfig.sabotage is MigrationSabotage.SKIP_EPOCH_CHECK
            self.session = sim.zk.connect(self.host.nid * 1000 + self.host.incarnation,
                                          _UncheckedClient if unchecked else None)
        return self.session

    def spent_ms(self) -> int:
        return 0 if self.session is None else self.session.spent_ms

    def close(self) -> None:
        if self.session is not None:
            self.session.stop()
        self.session = None


class MigrationHost(SimNodeHost):
    """A node of the migration simulation; on a controller, also its migration driver's I/O."""

    sim: MigrationSim

    def __init__(self, sim: MigrationSim, nid: int, raft: RaftNode, incarnation: int, release: str) -> None:
        super().__init__(sim, nid, raft, incarnation, release)
        self.zk = SimMigrationZk(self)
        self.zk_busy = False
        driver = self.driver
        if driver is not None and sim.mconfig.sabotage is MigrationSabotage.IGNORE_LAG_BOUND:
            driver.max_lag_ms = 1 << 40

    @property
    def driver(self) -> MigrationDriver | None:
        return None if self.controller is None else self.controller.migration

    # ------------------------------------------------------------------ probes
    def applied(self, item: Committed) -> None:
        super().applied(item)
        if self.controller is not None:
            self.sim.mchecker.check_image(self.nid, self.controller.image)

    def tick_on(self, raft: RaftNode) -> None:
        super().tick_on(raft)
        self.drive()

    # ------------------------------------------------------------------ the driver's actions
    def drive(self) -> None:
        """Hand the driver's next action to ZooKeeper; its outcome comes back after the time it took."""
        driver, sim = self.driver, self.sim
        if driver is None or self.zk_busy or self.dead or self.frozen:
            return
        action = driver.poll(sim.now)
        if driver.broker_requests:
            sim.stats["zk_broker_requests"] += len(driver.broker_requests)
            driver.broker_requests.clear()
        if action is None:
            return
        self.zk_busy = True
        latency = sim.zk.latency_ms
        if latency:  # the requests reach ZooKeeper one trip later (unsent if the process crashed meanwhile)
            sim.at(sim.now + latency, lambda: self._when_running(lambda: self._issue(driver, action)))
        else:
            self._issue(driver, action)

    def _when_running(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` now, or when this paused process resumes (a process paused after deciding a
        ZooKeeper write sends it when it wakes up, however stale by then)."""
        node = self.sim.cluster.nodes[self.nid]
        if node.paused:
            node.deferred.append(lambda: self._when_running(fn))
        else:
            fn()

    def _issue(self, driver: MigrationDriver, action: Action) -> None:
        sim = self.sim
        if self.sim.machine(self.nid) is not self:
            return  # crashed before sending
        before = self.zk.spent_ms()
        outcome, took = self._run(driver, action)
        took = max(1, took if took >= 0 else self.zk.spent_ms() - before)
        sim.mchecker.check_fencing()
        sim.mchecker.note_zk(sim.now)

        def finish(_raft: RaftNode) -> None:
            self.zk_busy = False
            outcome()
            self.drive()

        sim.at(sim.now + took, lambda: self._when_running(lambda: sim.run_machine(self, finish)))

    def _run(self, driver: MigrationDriver, action: Action) -> tuple[Callable[[], None], int]:
        """Run ``action``'s ZooKeeper calls now: (what to tell the driver, how long it took or -1)."""
        zk, sim = self.zk, self.sim
        sim.stats[f"zk_{type(action).__name__}"] += 1
        try:
            if isinstance(action, RecoverMigrationState):
                state = zk.recover()
                return lambda: driver.recovered(state), -1
            if isinstance(action, ReadZkBrokers):
                ids = zk.broker_ids()
                reasons = zk.unready_reasons(ids)
                return lambda: driver.zk_brokers(ids, reasons), -1
            if isinstance(action, ClaimZkController):
                claimed = zk.claim(action.leadership)
                return lambda: driver.claimed(claimed), -1
            if isinstance(action, MigrateMetadata):
                batches = zk.translation_batches(action)
                return lambda: self._append_migration(driver, action, batches), -1
            before = zk.spent_ms()
            version = zk.write(action)
            took = zk.spent_ms() - before
            return lambda: driver.zk_written(action, version, took), took
        except ControllerEpochMovedError as exc:
            sim.stats["zk_fenced"] += 1
            reason = str(exc)
            return lambda: driver.zk_failed(action, reason, sim.now, fenced=True), -1
        except (MigrationError, KazooException) as exc:
            sim.stats["zk_errors"] += 1
            reason = f"{type(exc).__name__}: {exc}"
            unreachable = not sim.zk.reachable
            zk.close()
            return (lambda: driver.zk_failed(action, reason, sim.now),
                    CONNECT_TIMEOUT_MS if unreachable else -1)

    def _append_migration(self, driver: MigrationDriver, action: MigrateMetadata, batches: list[list[bytes]]
                          ) -> None:
        """Append the translated tree as one metadata transaction and report once it committed (the
        runtime's ``MigrationRunner._migrate``); the simulation may crash the leader meanwhile."""
        epoch = self.raft.epoch
        offset = None
        for batch in batches:
            offset = self.write(batch)
            if offset is None or self.raft.epoch != epoch:
                offset = None
                break
        if offset is None:
            driver.zk_failed(action, "the migration records were not appended", self.sim.now)
            return
        self.sim.migration_appended(self.nid)
        self.zk_busy = True
        last = offset

        def committed(ok: bool) -> None:
            self.zk_busy = False
            if ok:
                driver.migrated(last, epoch)
            else:
                driver.zk_failed(action, "the migration records did not commit", self.sim.now)

        self.wait_committed(last, epoch, committed)
