"""KIP-866's migration driver on a KRaft controller (Kafka's ``KRaftMigrationDriver``), sans-I/O.

The driver decides; the runtime does the ZooKeeper work. It is fed the committed image after every
batch (:meth:`MigrationDriver.publish`) and raft's leader changes, and :meth:`MigrationDriver.poll`
hands out at most one :data:`Action` at a time (claim ``/controller``, copy the ZooKeeper tree into
the log, write KRaft's metadata to ZooKeeper); the runtime reports each outcome back (``claimed``,
``migrated``, ``zk_written``, ``zk_failed``). States and their allowed transitions are Kafka 3.9's
(``MigrationDriverState``); the ZooKeeper-side leadership state is Kafka's
``ZkMigrationLeadershipState`` (what ``/migration`` and ``/controller_epoch`` hold).

The KIP's lag bound, which Kafka never built: while committed KRaft metadata is not yet in
ZooKeeper, the driver measures how long it has been waiting (from the append time of the oldest
such batch); past ``max_lag_ms`` the controller refuses client metadata writes
(:meth:`MigrationDriver.writes_blocked`) until ZooKeeper catches up, and the time spent refusing is
``ZooKeeperBlockingKRaftMillis``.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.migration_propagator import delta_requests, full_requests
from kraftwerk.controller.zk_controller import BrokerRequest
from kraftwerk.image.model import MetadataImage, ZkMigrationState
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion

log = logging.getLogger(__name__)

MIGRATION_ENABLE_CONFIG = "zookeeper.metadata.migration.enable"
MIGRATION_MAX_LAG_CONFIG = "zookeeper.metadata.migration.max.lag.ms"
NOT_REGISTERED_WITH_KRAFT = ("not registered with the KRaft quorum (controller.quorum.voters and "
                             "controller.listener.names set?)")


class MigrationDriverState(enum.Enum):
    """Kafka's ``MigrationDriverState`` (memory only, never persisted); the value is Kafka's ordinal."""

    UNINITIALIZED = 0
    INACTIVE = 1
    WAIT_FOR_CONTROLLER_QUORUM = 2
    WAIT_FOR_BROKERS = 3
    BECOME_CONTROLLER = 4
    ZK_MIGRATION = 5
    SYNC_KRAFT_TO_ZK = 6
    KRAFT_CONTROLLER_TO_BROKER_COMM = 7
    DUAL_WRITE = 8


S = MigrationDriverState
ALLOWED_TRANSITIONS: dict[MigrationDriverState, frozenset[MigrationDriverState]] = {
    S.UNINITIALIZED: frozenset({S.INACTIVE}),
    S.INACTIVE: frozenset({S.WAIT_FOR_CONTROLLER_QUORUM}),
    S.WAIT_FOR_CONTROLLER_QUORUM: frozenset({S.INACTIVE, S.BECOME_CONTROLLER, S.WAIT_FOR_BROKERS}),
    S.WAIT_FOR_BROKERS: frozenset({S.INACTIVE, S.BECOME_CONTROLLER}),
    S.BECOME_CONTROLLER: frozenset({S.INACTIVE, S.ZK_MIGRATION, S.SYNC_KRAFT_TO_ZK}),
    S.ZK_MIGRATION: frozenset({S.INACTIVE, S.SYNC_KRAFT_TO_ZK}),
    S.SYNC_KRAFT_TO_ZK: frozenset({S.INACTIVE, S.KRAFT_CONTROLLER_TO_BROKER_COMM}),
    S.KRAFT_CONTROLLER_TO_BROKER_COMM: frozenset({S.INACTIVE, S.DUAL_WRITE}),
    S.DUAL_WRITE: frozenset({S.INACTIVE}),
}
"""Kafka 3.9's ``isValidStateChange``: a same-state change is a no-op, nothing returns to UNINITIALIZED."""

DUAL_WRITE_STATES = frozenset({S.KRAFT_CONTROLLER_TO_BROKER_COMM, S.DUAL_WRITE})
"""Where committed KRaft changes are written to ZooKeeper as they come (Kafka's ``allowDualWrite``)."""


class InvalidMigrationTransitionError(Exception):
    """A transition Kafka's driver refuses (a bug in the caller, never a user error)."""


def is_valid_transition(current: MigrationDriverState, new: MigrationDriverState) -> bool:
    return current is new or new in ALLOWED_TRANSITIONS[current]


@dataclass(frozen=True, slots=True)
class ZkMigrationLeadership:
    """What the driver knows of ZooKeeper (Kafka's ``ZkMigrationLeadershipState``): the ``/migration``
    znode's content and version, and the controller epoch it claimed in ``/controller_epoch``."""

    kraft_controller_id: int = -1
    kraft_controller_epoch: int = -1
    kraft_metadata_offset: int = -1
    """The last KRaft offset written to ZooKeeper (-1: the initial migration has not happened)."""
    kraft_metadata_epoch: int = -1
    migration_zk_version: int = -2
    """``/migration``'s data version for a conditional write (-2: not read yet)."""
    zk_controller_epoch: int = -1
    zk_controller_epoch_zk_version: int = -2
    """``/controller_epoch``'s data version after our claim: every write checks it (-2: not claimed)."""

    @property
    def initial_migration_complete(self) -> bool:
        return self.kraft_metadata_offset > 0

    @property
    def claimed(self) -> bool:
        return self.zk_controller_epoch_zk_version >= 0


# ---------------------------------------------------------------------------- actions (effects out)


@dataclass(frozen=True, slots=True)
class RecoverMigrationState:
    """Read ``/migration`` (create it, empty, if missing); answer with :meth:`MigrationDriver.recovered`."""


@dataclass(frozen=True, slots=True)
class ReadZkBrokers:
    """List the broker ids ZooKeeper knows (``/brokers/ids`` and topic assignments); answer with
    :meth:`MigrationDriver.zk_brokers`."""


@dataclass(frozen=True, slots=True)
class ClaimZkController:
    """Take ``/controller`` (persistent, ``kraftControllerEpoch``) and bump ``/controller_epoch``
    unless a higher KRaft epoch holds it; answer with :meth:`MigrationDriver.claimed`."""

    leadership: ZkMigrationLeadership


@dataclass(frozen=True, slots=True)
class MigrateMetadata:
    """Read the whole tree, translate it at ``metadata_version`` and append it as one metadata
    transaction ending in ZkMigrationStateRecord(MIGRATION); answer with :meth:`MigrationDriver.migrated`
    once it committed."""

    metadata_version: MetadataVersion


@dataclass(frozen=True, slots=True)
class WriteToZk:
    """Make ZooKeeper hold ``image`` (committed up to ``offset``/``epoch``): the whole image compared
    with what ZooKeeper holds when ``full`` (reconciliation), else the change from ``previous``;
    every write guarded by ``leadership``'s controller epoch, ``/migration`` set to the offset.
    Answer with :meth:`MigrationDriver.zk_written`."""

    previous: MetadataImage | None
    image: MetadataImage
    offset: int
    epoch: int
    leadership: ZkMigrationLeadership
    full: bool


Action = RecoverMigrationState | ReadZkBrokers | ClaimZkController | MigrateMetadata | WriteToZk


@dataclass(slots=True)
class _Published:
    image: MetadataImage
    offset: int
    epoch: int


class MigrationDriver:
    """One controller's driver. ``max_lag_ms`` is ``zookeeper.metadata.migration.max.lag.ms``."""

    def __init__(self, node_id: int, *, max_lag_ms: int, retry_backoff_ms: int = 100,
                 max_retry_backoff_ms: int = 10_000) -> None:
        self.node_id = node_id
        self.max_lag_ms = max_lag_ms
        self.backoff = ExponentialBackoff(retry_backoff_ms, max_retry_backoff_ms)
        """Kafka's driver polls again after 100 ms, doubling after each failure."""
        self.state = S.UNINITIALIZED
        self.leadership = ZkMigrationLeadership()
        self.kraft_leader: tuple[int | None, int] = (None, -1)
        self._published: _Published | None = None
        self._zk_image: MetadataImage | None = None
        """The image last written to ZooKeeper (the base of the next delta)."""
        self._in_flight: Action | None = None
        self._recovery_due = False
        """Re-read ``/migration`` before acting as the new active controller."""
        self._retry_at_ms = 0
        self._failures = 0
        self._waiting: deque[tuple[int, int | None]] = deque()
        """Committed batches ZooKeeper lacks: (last offset, append time); a batch without an append
        time starts its clock at the next poll."""
        self._blocked_since_ms: int | None = None
        self._blocked_total_ms = 0
        self.last_error: str | None = None
        self.last_snapshot_write_ms = 0
        self.last_delta_write_ms = 0
        self.unready_brokers: dict[int, str] = {}
        """WAIT_FOR_BROKERS: the ZooKeeper brokers not registered as migrating, and why."""
        self._waiting_for: str | None = None
        """What WAIT_FOR_BROKERS last logged it waits for."""
        self.broker_requests: list[BrokerRequest] = []
        """LeaderAndIsr / UpdateMetadata / StopReplica for the ZooKeeper brokers, for the runtime to
        send (it empties the list)."""
        self._sent_image: MetadataImage | None = None
        """The image the ZooKeeper brokers were last told about (the base of the next delta)."""
        self.voters: tuple[int, ...] = ()
        """The quorum's voters (kept current by the controller): each must be ready to migrate."""

    # ------------------------------------------------------------------ transitions

    def transition_to(self, new: MigrationDriverState) -> None:
        if not is_valid_transition(self.state, new):
            raise InvalidMigrationTransitionError(
                f"Invalid transition in migration driver from {self.state.name} to {new.name}")
        if new is not self.state:
            self.unready_brokers = {}
            self._waiting_for = None
            log.info("[KRaftMigrationDriver id=%d] %d transitioning from %s to %s state",
                     self.node_id, self.node_id, self.state.name, new.name)
            self._retry_at_ms = 0
            self._failures = 0
        self.state = new

    # ------------------------------------------------------------------ events in

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """Raft's leader changed: the active controller starts over at WAIT_FOR_CONTROLLER_QUORUM."""
        self.kraft_leader = (leader_id, epoch)
        if self.state is S.UNINITIALIZED:
            return  # recovered() applies it
        self._in_flight = None
        if leader_id == self.node_id:
            self.leadership = replace(self.leadership, kraft_controller_id=self.node_id,
                                      kraft_controller_epoch=epoch, zk_controller_epoch_zk_version=-2)
            if self.state is not S.INACTIVE:
                self.transition_to(S.INACTIVE)
            self.transition_to(S.WAIT_FOR_CONTROLLER_QUORUM)
            self._recovery_due = True
        else:
            known = -1 if leader_id is None else leader_id
            self.leadership = replace(self.leadership, kraft_controller_id=known,
                                      kraft_controller_epoch=epoch)
            self.transition_to(S.INACTIVE)
            self._zk_image = None
            self._sent_image = None
            self.broker_requests.clear()
            self._waiting.clear()
            self._end_blocking(None)

    def publish(self, image: MetadataImage, offset: int, epoch: int, append_time_ms: int) -> None:
        """A committed batch was replayed (``offset`` its last offset); ``append_time_ms`` starts the
        lag clock when ZooKeeper does not hold it yet."""
        if image.metadata_version is None:
            return  # an empty log's image (before the bootstrap records commit) says nothing yet
        self._published = _Published(image, offset, epoch)
        if self.state in DUAL_WRITE_STATES and offset > self.leadership.kraft_metadata_offset:
            self._waiting.append((offset, append_time_ms if append_time_ms >= 0 else None))

    # ------------------------------------------------------------------ outcomes of actions

    def recovered(self, leadership: ZkMigrationLeadership) -> None:
        """``/migration`` as read at start-up, and again on becoming active (another controller may
        have moved it since), as Kafka's driver reads it."""
        self._done(RecoverMigrationState)
        if self.state is not S.UNINITIALIZED:
            self._recovery_due = False
            self.leadership = replace(leadership, kraft_controller_id=self.leadership.kraft_controller_id,
                                      kraft_controller_epoch=self.leadership.kraft_controller_epoch)
            return
        self.leadership = leadership
        log.info("[KRaftMigrationDriver id=%d] Initial migration of ZK metadata is %s.", self.node_id,
                 "done" if leadership.initial_migration_complete else "not done")
        self.transition_to(S.INACTIVE)
        leader, epoch = self.kraft_leader
        if leader is not None:
            self.on_leader_change(leader, epoch)
            self._recovery_due = False  # just read

    def zk_brokers(self, broker_ids: frozenset[int], reasons: Mapping[int, str] | None = None) -> None:
        """The broker ids ZooKeeper knows; WAIT_FOR_BROKERS moves on once each has registered with
        the quorum as a migrating ZooKeeper broker. None in ZooKeeper: wait, as Kafka does, for
        brokers to register (a migration with every broker down would strand their partitions).
        ``reasons``: why a broker cannot be ready, as its ``/brokers/ids`` znode tells (no migration
        flag, an old IBP, not running), named in the log and :attr:`unready_brokers`."""
        self._done(ReadZkBrokers)
        if self.state is not S.WAIT_FOR_BROKERS or self._published is None:
            return
        if not broker_ids:
            self.unready_brokers = {}
            self._note_waiting("No brokers are registered in ZK, waiting for brokers to register.")
            return
        registered = self._published.image.cluster.brokers
        missing = sorted(b for b in broker_ids
                         if b not in registered or not registered[b].is_migrating_zk_broker)
        self.unready_brokers = {b: (reasons or {}).get(b, NOT_REGISTERED_WITH_KRAFT) for b in missing}
        if missing:
            if self._note_waiting(f"Still waiting for ZK brokers {missing} to register with KRaft."):
                for broker_id, reason in self.unready_brokers.items():
                    log.warning("[KRaftMigrationDriver id=%d] ZK broker %d is not ready for the migration: "
                                "%s", self.node_id, broker_id, reason)
            return
        log.info("[KRaftMigrationDriver id=%d] Zk brokers are registered and ready for migration",
                 self.node_id)
        self.transition_to(S.BECOME_CONTROLLER)

    def claimed(self, leadership: ZkMigrationLeadership | None) -> None:
        """The claim's outcome: the new leadership state, or None when a newer KRaft controller holds
        ``/controller`` (retried until raft names another leader)."""
        self._done(ClaimZkController)
        if self.state is not S.BECOME_CONTROLLER:
            return
        if leadership is None:
            log.info("[KRaftMigrationDriver id=%d] Unable to claim leadership, will retry until we learn of "
                     "a different KRaft leader", self.node_id)
            return
        self.leadership = leadership
        self.transition_to(S.SYNC_KRAFT_TO_ZK if leadership.initial_migration_complete else S.ZK_MIGRATION)

    def migrated(self, offset: int, epoch: int) -> None:
        """The migration transaction committed at ``offset`` (its last record) in ``epoch``."""
        self._done(MigrateMetadata)
        if self.state is not S.ZK_MIGRATION:
            return
        self.leadership = replace(self.leadership, kraft_metadata_offset=offset, kraft_metadata_epoch=epoch)
        log.info("[KRaftMigrationDriver id=%d] Completed migration of metadata from ZooKeeper to KRaft. "
                 "The current metadata offset is now %d with an epoch of %d.", self.node_id, offset, epoch)
        self.transition_to(S.SYNC_KRAFT_TO_ZK)

    def zk_written(self, action: WriteToZk, migration_zk_version: int, took_ms: int = 0) -> None:
        """ZooKeeper now holds ``action.image``; ``/migration`` is at ``migration_zk_version``;
        ``took_ms`` is the write's duration (``ZkWriteSnapshotTimeMs`` / ``ZkWriteDeltaTimeMs``)."""
        self._done(WriteToZk)
        if action.leadership.kraft_controller_epoch != self.leadership.kraft_controller_epoch:
            return  # started before a leader change: the new term reads /migration again anyway
        if action.full:
            self.last_snapshot_write_ms = took_ms
        else:
            self.last_delta_write_ms = took_ms
        self.leadership = replace(self.leadership, kraft_metadata_offset=action.offset,
                                  kraft_metadata_epoch=action.epoch,
                                  migration_zk_version=migration_zk_version)
        self._zk_image = action.image
        self.last_error = None
        while self._waiting and self._waiting[0][0] <= action.offset:
            self._waiting.popleft()
        epoch = self.leadership.zk_controller_epoch
        if self.state is S.SYNC_KRAFT_TO_ZK:
            self.transition_to(S.KRAFT_CONTROLLER_TO_BROKER_COMM)
            self.broker_requests += full_requests(action.image, self.node_id, epoch)
            self._sent_image = action.image
            self.transition_to(S.DUAL_WRITE)
        elif self.state is S.DUAL_WRITE:
            sent = self._sent_image
            self.broker_requests += (full_requests(action.image, self.node_id, epoch) if sent is None
                                     else delta_requests(sent, action.image, self.node_id, epoch))
            self._sent_image = action.image

    def zk_failed(self, action: Action, reason: str, now_ms: int, *, fenced: bool = False) -> None:
        """The action failed (ZooKeeper unreachable, a version check lost): retried with backoff.
        ``fenced``: another controller moved ``/controller_epoch``; we must claim again."""
        self._done(type(action))
        self.last_error = reason
        self._zk_image = None  # what ZooKeeper holds is unknown now: the retry reconciles in full
        log.info("[KRaftMigrationDriver id=%d] Encountered ZooKeeper error during %s: %s. Will retry.",
                 self.node_id, type(action).__name__, reason)
        if fenced and self.state in (S.SYNC_KRAFT_TO_ZK, *DUAL_WRITE_STATES):
            self.leadership = replace(self.leadership, zk_controller_epoch_zk_version=-2)
        self._retry_at_ms = now_ms + self.backoff.delay_ms(self._failures)
        self._failures += 1

    # ------------------------------------------------------------------ next action

    def poll(self, now_ms: int) -> Action | None:
        """The next ZooKeeper action to run, or None (one in flight, a backoff, nothing to do)."""
        self._update_blocking(now_ms)
        if self._in_flight is not None or now_ms < self._retry_at_ms:
            return None
        action = self._next(now_ms)
        self._in_flight = action
        return action

    def _next(self, now_ms: int) -> Action | None:
        state, published = self.state, self._published
        if state is S.UNINITIALIZED:
            return RecoverMigrationState()
        if state is S.INACTIVE or published is None:
            return None
        image = published.image
        if state is S.WAIT_FOR_CONTROLLER_QUORUM:
            if self._recovery_due:
                return RecoverMigrationState()
            self._check_quorum(image)
            return None
        if state is S.WAIT_FOR_BROKERS:
            return ReadZkBrokers()
        if state is S.BECOME_CONTROLLER:
            return ClaimZkController(self.leadership)
        if state is S.ZK_MIGRATION:
            assert image.metadata_version is not None
            return MigrateMetadata(image.metadata_version)
        if not self.leadership.claimed:
            # fenced while syncing or dual-writing: take /controller again before any write
            self.transition_to(S.INACTIVE)
            self.transition_to(S.WAIT_FOR_CONTROLLER_QUORUM)
            self._recovery_due = True
            return None
        if published.offset < self.leadership.kraft_metadata_offset:
            return None  # this image lacks what ZooKeeper already holds: wait for a newer one
        if state is S.SYNC_KRAFT_TO_ZK:
            return WriteToZk(None, image, published.offset, published.epoch, self.leadership, full=True)
        if published.offset > self.leadership.kraft_metadata_offset:
            previous = self._zk_image
            return WriteToZk(previous, image, published.offset, published.epoch, self.leadership,
                             full=previous is None)
        return None

    def _check_quorum(self, image: MetadataImage) -> None:
        zk_state = image.features.zk_migration_state
        if zk_state is ZkMigrationState.NONE:
            log.error("The controller's ZkMigrationState is NONE which means this cluster should not be "
                      "migrated from ZooKeeper. This controller should not be configured with "
                      "'zookeeper.metadata.migration.enable' set to true. Will not proceed with a migration.")
            self.transition_to(S.INACTIVE)
        elif zk_state is ZkMigrationState.PRE_MIGRATION:
            reason = controllers_not_ready(image, self.voters)
            if reason is None:
                log.info("[KRaftMigrationDriver id=%d] Controller Quorum is ready for Zk to KRaft migration. "
                         "Now waiting for ZK brokers.", self.node_id)
                self.transition_to(S.WAIT_FOR_BROKERS)
            else:
                self.last_error = reason
                log.warning("[KRaftMigrationDriver id=%d] Still waiting for all controller nodes ready to "
                            "begin the migration. Not ready due to:%s", self.node_id, reason)
        elif zk_state is ZkMigrationState.MIGRATION:
            if not self.leadership.initial_migration_complete:
                log.error("KRaft controller indicates an active migration, but the ZK state does not.")
                self.transition_to(S.INACTIVE)
            else:
                log.info("[KRaftMigrationDriver id=%d] Migration is in already progress, not waiting on ZK "
                         "brokers.", self.node_id)
                self.transition_to(S.BECOME_CONTROLLER)
        else:
            log.error("KRaft controller indicates a completed migration, but the migration driver is somehow "
                      "active.")
            self.transition_to(S.INACTIVE)

    def _note_waiting(self, why: str) -> bool:
        """Log why WAIT_FOR_BROKERS still waits, once per reason (the driver re-reads every poll)."""
        if why == self._waiting_for:
            return False
        self._waiting_for = why
        log.info("[KRaftMigrationDriver id=%d] %s", self.node_id, why)
        return True

    def _done(self, kind: type) -> None:
        if isinstance(self._in_flight, kind):
            self._in_flight = None

    # ------------------------------------------------------------------ the lag bound

    def zk_lag_ms(self, now_ms: int) -> int:
        """How long committed KRaft metadata has been waiting for ZooKeeper (0: caught up)."""
        since = self._waiting[0][1] if self._waiting else None
        return 0 if since is None else max(0, now_ms - since)

    def zk_lag_records(self) -> int:
        """``ZooKeeperWriteBehindLag``: committed offsets not yet in ZooKeeper (active controller only)."""
        published = self._published
        if published is None or self.state not in DUAL_WRITE_STATES:
            return 0
        return max(0, published.offset - self.leadership.kraft_metadata_offset)

    def writes_blocked(self, now_ms: int) -> bool:
        """Whether client metadata writes are refused now: ZooKeeper is behind by more than the bound."""
        self._update_blocking(now_ms)
        return self._blocked_since_ms is not None

    def blocking_ms(self, now_ms: int) -> int:
        """``ZooKeeperBlockingKRaftMillis``: the total time KRaft writes were refused for ZooKeeper's lag."""
        current = 0 if self._blocked_since_ms is None else now_ms - self._blocked_since_ms
        return self._blocked_total_ms + max(0, current)

    def _update_blocking(self, now_ms: int) -> None:
        if self._waiting and self._waiting[0][1] is None:
            self._waiting[0] = (self._waiting[0][0], now_ms)
        over = self.state in DUAL_WRITE_STATES and self.zk_lag_ms(now_ms) > self.max_lag_ms
        if over and self._blocked_since_ms is None:
            self._blocked_since_ms = now_ms
            log.warning("[KRaftMigrationDriver id=%d] ZooKeeper is %d ms behind KRaft (bound %d ms): "
                        "refusing metadata writes until it catches up", self.node_id, self.zk_lag_ms(now_ms),
                        self.max_lag_ms)
        elif not over:
            self._end_blocking(now_ms)

    def _end_blocking(self, now_ms: int | None) -> None:
        if self._blocked_since_ms is not None:
            end = self._blocked_since_ms if now_ms is None else now_ms
            self._blocked_total_ms += max(0, end - self._blocked_since_ms)
            self._blocked_since_ms = None


def controllers_not_ready(image: MetadataImage, voters: Iterable[int]) -> str | None:
    """Kafka's ``QuorumFeatures.reasonAllControllersZkMigrationNotReady``: None when every voter
    registered with ``ZkMigrationReady`` at a metadata.version that allows the migration."""
    mv = image.metadata_version
    if mv is None or not mv.is_migration_supported():
        return f"The metadata.version too low at {mv}"
    if not mv.is_controller_registration_supported():
        return None  # before KIP-919 Kafka cannot tell from the image either
    reasons = []
    for node_id in sorted(voters):
        registration = image.cluster.controllers.get(node_id)
        if registration is None:
            reasons.append(f"No registration found for controller {node_id}")
        elif not registration.zk_migration_ready:
            reasons.append(f"Controller {node_id} has not enabled zookeeper.metadata.migration.enable")
    return ", ".join(reasons) or None


def migration_write_refusal(image: MetadataImage, driver: MigrationDriver, now_ms: int) -> ApiError | None:
    """Why a client's metadata write is refused now, or None.

    PRE_MIGRATION: NOT_CONTROLLER, as Kafka 3.9 ("no metadata updates will be allowed until the ZK
    metadata has been migrated"). Past the lag bound: REQUEST_TIMED_OUT, retriable on every admin API,
    what Kafka's controller answers when a write cannot be done in time (see docs/compatibility.md).
    """
    if image.features.zk_migration_state is ZkMigrationState.PRE_MIGRATION:
        return ApiError(Errors.NOT_CONTROLLER, "The controller is in pre-migration mode.")
    if driver.writes_blocked(now_ms):
        return ApiError(Errors.REQUEST_TIMED_OUT,
                        f"ZooKeeper is {driver.zk_lag_ms(now_ms)} ms behind the metadata log, more than "
                        f"{MIGRATION_MAX_LAG_CONFIG}={driver.max_lag_ms}; metadata writes resume once it "
                        "catches up.")
    return None
