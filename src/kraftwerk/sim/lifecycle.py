"""Seeded simulations of the metadata.version lifecycle (KIP-778) on the raft simulator.

Every simulated voter hosts a :class:`~kraftwerk.controller.QuorumController` and every observer
a :class:`~kraftwerk.broker.BrokerNode`, on top of the raft nodes, network, disks and clock of
:class:`~kraftwerk.sim.cluster.Cluster`. The glue follows the TCP runtime (``runtime/node.py``):

- committed batches are replayed into the core (control batches as empty record lists), snapshot
  loads reset its image; ``WriteSnapshot`` effects become ``RaftNode.create_snapshot`` right after;
- a controller is told about a new leader as soon as raft reports it, and activates (bootstrap or
  transaction abort) only once its LeaderChange record has committed;
- ``AppendThenRespond`` → one raft append, the response waits until the high watermark passes the
  last record in the same epoch (NOT_CONTROLLER if leadership is lost first or after 10 s);
- the active controller runs ``tick`` and appends a NoOpRecord on an idle log every 500 ms; a
  standby sends ControllerRegistration when its image asks for it;
- brokers register and heartbeat with the active controller as raft knows it;
- a ``FatalFaultError`` is KIP-778's fail-stop: the process exits (a registered broker sends its
  UnregisterBroker first); it is restarted later on new software by the heal phase.

The simulator reports, never repairs: at heal time a live node that stopped applying the log is a
violation unless the seed explains it (a never-registered broker handed a level its software cannot
run, which stays fenced as Kafka's does); only such brokers, and nodes that fail-stopped or were
crashed, are restarted on new software by the operator. Every error the glue swallows is counted
and must be one the seed explains (a snapshot superseded by a newer one, or inside a batch).

Controller RPCs and the admin client's UpdateFeatures travel over the simulated network (same
drops, delays and partitions as raft traffic) and through the real codec. A seed plays a workload
of updates, dry runs, safe/unsafe downgrades and invalid requests mixed with faults (leader crash
and isolation, restarts, rolls to other software, old-software brokers joining, lossy links),
then heals and waits for convergence; :mod:`kraftwerk.sim.lifecycle_checker` checks the four
lifecycle invariants after every event, the raft checker keeps checking the log itself.
"""

from __future__ import annotations

import enum
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kraftwerk.broker.node import BrokerNode, ControllerCall
from kraftwerk.controller.activation import default_bootstrap_records
from kraftwerk.controller.common import finalized_levels
from kraftwerk.controller.effects import (
    AppendThenRespond,
    Body,
    Effect,
    MetadataVersionChanged,
    Respond,
    WriteSnapshot,
)
from kraftwerk.controller.features import KRAFT_VERSION, feature_level_record
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.errors import KraftwerkError
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import Endpoint
from kraftwerk.image.replay import as_record
from kraftwerk.node import NodeHost
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.protocol.schema import Kind
from kraftwerk.raft import Committed, CommittedBatch, RaftNode, SnapshotLoad
from kraftwerk.sim.checker import Ack, Checker, InvariantViolation
from kraftwerk.sim.cluster import Cluster
from kraftwerk.sim.lifecycle_checker import SNAPSHOT_INVARIANT, LifecycleChecker, NodeView, ReferenceTables
from kraftwerk.sim.world import LinkFaults
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion
from kraftwerk.versions.software import LATEST_RELEASE, SoftwareVersion, known_releases

CLIENT_ID = 900
"""The admin client's address on the simulated network."""
TICK_MS = 100
RPC_TIMEOUT_MS = 3000
COMMIT_TIMEOUT_MS = 10_000
IDLE_NOOP_MS = 500
REGISTRATION_RETRY_MS = 1000
CLIENT_DEADLINE_MS = 30_000
"""How long the admin client retries NOT_CONTROLLER and timeouts (``default.api.timeout.ms`` is 60 s)."""
CLIENT_BACKOFF_MS = 200
SESSION_TIMEOUT_MS = 9000
HEARTBEAT_MS = 2000

#: metadata.version levels the workload moves between (3.6-IV2 ... 4.3-IV0) and their neighbours
MV_LADDER = (14, 19, 20, 21, 25, 27, 28, 29, 30)
#: the release whose latest production metadata.version each ladder level is
RELEASE_OF_LEVEL = {14: "3.6", 19: "3.7", 20: "3.8", 21: "3.9", 25: "4.0", 27: "4.1", 29: "4.2", 30: "4.3"}
OTHER_FEATURES = (
    ("group.version", 1),
    ("transaction.version", 2),
    ("eligible.leader.replicas.version", 1),
    ("share.version", 1),
    ("streams.version", 1),
)
AUTO_UPGRADE_INTERVAL_MS = 500
OLD_RELEASES = tuple(r for r in known_releases() if "3.6" <= r < LATEST_RELEASE)


class Mix(enum.Enum):
    """Which workload and faults a seed plays."""

    RANDOM = "random"
    """Everything: updates, dry runs, downgrades, invalid requests, failover, restarts, rolls."""
    ROLLING = "rolling"
    """A cluster on old software rolled node by node to this software while upgrades are tried."""
    DOWNGRADE = "downgrade"
    """A cluster at the latest level downgraded (safe, unsafe, dry runs), old software restarted."""
    FAILOVER = "failover"
    """Updates under repeated crashes and isolations of the active controller."""
    NONE = "none"
    """No workload and no faults (scripted scenarios add their own)."""


class Sabotage(enum.Enum):
    """Deliberate bugs that prove each invariant check can fail (tests only)."""

    IGNORE_FEATURE_RECORD = "ignore-feature-record"
    """Node 2 drops FeatureLevelRecords from what it replays (breaks a)."""
    UNCHECKED_UPGRADE = "unchecked-upgrade"
    """The host appends a metadata.version upgrade past the checks; brokers do not fail-stop (b)."""
    DRY_RUN_APPENDS = "dry-run-appends"
    """The host appends the records of accepted dry runs (breaks c)."""
    FROZEN_NODE = "frozen-node"
    """The last broker stops applying the log once the faults heal (breaks d)."""
    STALLED_BROKER = "stalled-broker"
    """The last broker stops applying the log 4 s into the fault phase (breaks e: reported at heal,
    never rolled away)."""


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Everything that determines a run; with the seed it replays exactly."""

    seed: int = 0
    voters: int = 3
    brokers: int = 2
    mix: Mix = Mix.RANDOM
    events: int = 6
    initial_level: int | None = None
    """metadata.version level the cluster is formatted at (None: drawn for the mix)."""
    software: tuple[str, ...] | None = None
    """Release of each node, voters first (None: drawn for the mix)."""
    fault_phase_ms: int | None = None
    convergence_bound_ms: int = 30_000
    wire: bool = True
    sabotage: Sabotage | None = None
    retain_log: bool = False
    """Keep the whole metadata log (``metadata.max.retention.ms=-1``): raft does not clean it
    behind snapshots, so every committed record can be read back."""
    auto_upgrade_targets: tuple[str | None, ...] | None = None
    """KIP-920: each voter's static metadata.version (None: none), with auto-upgrade on every
    AUTO_UPGRADE_INTERVAL_MS; None: off everywhere."""

    @property
    def fault_ms(self) -> int:
        return self.fault_phase_ms if self.fault_phase_ms is not None else 4000 + 1500 * self.events

    def replay_command(self) -> str:
        cmd = (
            f"kraftwerk sim lifecycle --seeds 1 --start {self.seed} --mix {self.mix.value} "
            f"--voters {self.voters} --brokers {self.brokers} --events {self.events}"
        )
        if not self.wire:
            cmd += " --no-wire"
        return cmd

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["mix"] = self.mix.value
        out["sabotage"] = None if self.sabotage is None else self.sabotage.value
        out["software"] = None if self.software is None else list(self.software)
        return out


@dataclass(slots=True)
class UpdateOutcome:
    """What the admin client finally got for one UpdateFeatures request."""

    request_id: int
    updates: tuple[tuple[str, int, int], ...]
    validate_only: bool
    version: int
    sent_ms: int
    done_ms: int = -1
    error: str = "PENDING"
    message: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.error == "NONE"

    def describe(self) -> str:
        ups = ", ".join(f"{n}={lv}/{t}" for n, lv, t in self.updates)
        dry = " dry-run" if self.validate_only else ""
        return f"#{self.request_id} v{self.version}{dry} [{ups}] -> {self.error}" + (
            f": {self.message}" if self.message else ""
        )


@dataclass(slots=True)
class LifecycleResult:
    config: LifecycleConfig
    ok: bool
    invariant: str | None = None
    violation: str | None = None
    events: int = 0
    virtual_ms: int = 0
    converged_ms: int | None = None
    wall_s: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)
    outcomes: list[UpdateOutcome] = field(default_factory=list)
    final_levels: dict[str, int] = field(default_factory=dict)
    trace_tail: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.config.seed,
            "ok": self.ok,
            "invariant": self.invariant,
            "violation": self.violation,
            "events": self.events,
            "virtual_ms": self.virtual_ms,
            "converged_ms": self.converged_ms,
            "wall_s": round(self.wall_s, 4),
            "stats": self.stats,
            "final_levels": self.final_levels,
            "updates": [o.describe() for o in self.outcomes],
            "config": self.config.to_json(),
            "replay": self.config.replay_command(),
            "trace_tail": self.trace_tail,
        }

    def report(self) -> str:
        lines = [
            f"seed {self.config.seed} violated {self.invariant}: {self.violation}",
            f"config: {self.config.to_json()}",
            f"replay: {self.config.replay_command()}",
            "updates:",
            *(f"  {o.describe()}" for o in self.outcomes[-10:]),
            f"trace (last {len(self.trace_tail)} events):",
            *(f"  {t}" for t in self.trace_tail),
        ]
        return "\n".join(lines)


# =============================================================================== the simulator's driver


@dataclass(slots=True)
class _Waiter:
    offset: int
    epoch: int
    deadline: int
    done: Callable[[bool], None]


class _Machine(NodeHost):
    """One process incarnation: the node host of a controller or a broker, driven by the simulated
    network, disk and clock (this class is also its :class:`HostIO`), plus the simulator's probes:
    the lifecycle checker's views, statistics, and the deliberate bugs of :class:`Sabotage`."""

    def __init__(self, sim: LifecycleSim, nid: int, raft: RaftNode, incarnation: int, release: str) -> None:
        self.sim = sim
        self.nid = nid
        self.incarnation = incarnation
        self.release = release
        self.software = SoftwareVersion.for_release(release)
        controller: QuorumController | None = None
        broker: BrokerNode | None = None
        # A new incarnation id per process start, as the runtime's uuid4 but drawn from the seed (and
        # the node and its incarnation) so that a seed replays without shifting the sim's own RNG.
        seeded = random.Random(f"{sim.config.seed}/{nid}/{incarnation}")
        incarnation_id = uuid.UUID(int=seeded.getrandbits(128))
        if nid in sim.cluster_voters:
            targets = sim.config.auto_upgrade_targets
            target = None if targets is None else targets[sim.cluster_voters.index(nid)]
            static = {} if targets is None else {
                "auto.upgrade.metadata.version": "true",
                "auto.upgrade.metadata.version.interval.ms": str(AUTO_UPGRADE_INTERVAL_MS),
                **({} if target is None else {"metadata.version": target}),
            }
            controller = QuorumController(
                nid,
                sim.cluster_id,
                self.software,
                sim.cluster_voters,
                sim.bootstrap,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                listeners=[Endpoint("CONTROLLER", f"node{nid}", 9093, 0)],
                incarnation_id=incarnation_id,
                static_configs=static,
            )
        else:
            broker = BrokerNode(
                nid,
                sim.cluster_id,
                self.software,
                [Endpoint("PLAINTEXT", f"node{nid}", 9092, 0)],
                [uuid.UUID(int=nid)],
                incarnation_id=incarnation_id,
                heartbeat_interval_ms=HEARTBEAT_MS,
                request_timeout_ms=RPC_TIMEOUT_MS * 2,
            )
        self.waiters: list[_Waiter] = []
        super().__init__(
            nid,
            raft,
            self,
            controller=controller,
            broker=broker,
            idle_interval_ms=IDLE_NOOP_MS,
            registration_retry_ms=REGISTRATION_RETRY_MS,
        )
        self.dead = False
        self.frozen = False
        self.drained_to = -1
        self.stalled_at: int | None = None
        self.stall_explained = False
        """This broker stopped applying the log at a level its software cannot run, unregistered."""
        self._reply: Respond | AppendThenRespond | None = None

    @property
    def core(self) -> QuorumController | BrokerNode:
        core = self.controller if self.controller is not None else self.broker
        assert core is not None
        return core

    @property
    def applied_offset(self) -> int:
        if self.controller is not None:
            return self.controller.last_committed_offset
        assert self.broker is not None
        return self.broker.metadata_offset

    def view(self) -> NodeView:
        image = self.core.image
        broker = self.broker
        return NodeView(
            self.nid,
            self.applied_offset,
            finalized_levels(image),
            image.features_epoch,
            is_broker=broker is not None,
            registered=broker is None or broker.broker_epoch >= 0,
            fenced=broker is not None and broker.fenced,
            stalled=self.applied_offset < self.drained_to,
        )

    # ------------------------------------------------------------------ raft → host (StateMachine)
    def apply(self, items: Sequence[Committed], node: RaftNode, now_ms: int) -> None:
        sim = self.sim
        sim.observe_committed(items)
        if self.dead:
            return
        if self.nid == sim.broker_ids[-1] and (
            (sim.config.sabotage is Sabotage.FROZEN_NODE and sim.healed_at is not None)
            or (sim.config.sabotage is Sabotage.STALLED_BROKER and now_ms > 4000)
        ):
            self.frozen = True
        for item in items:
            if self.frozen:  # raft hands these out; the core does not apply them
                self.drained_to = item.end_offset - 1 if isinstance(item, SnapshotLoad) else item.last_offset
                continue
            if self.dead:
                return
            self.drained_to = item.end_offset - 1 if isinstance(item, SnapshotLoad) else item.last_offset
            self.on_committed([item])
            if self.frozen:
                return

    def records_to_replay(self, item: CommittedBatch) -> list[Any]:
        records = super().records_to_replay(item)
        if self.sim.config.sabotage is Sabotage.IGNORE_FEATURE_RECORD and self.nid == 2:
            records = [r for r in records if as_record(r).spec.name != "FeatureLevelRecord"]
        return records

    def applied(self, item: Committed) -> None:
        sim = self.sim
        if isinstance(item, SnapshotLoad):
            sim.stats["core_snapshot_loads"] += 1
            source = f"snapshot {item.end_offset}-{item.epoch}"
        else:
            source = f"batch {item.base_offset}-{item.last_offset}"
        applied = self.applied_offset
        if applied >= 0:
            sim.lifecycle.check_view(self.nid, applied, finalized_levels(self.core.image), source=source)
        if self.broker is not None and applied < self.drained_to and self.broker.broker_epoch < 0:
            # Kafka-compatible refusal of a never-registered broker: it stays fenced.
            sim.lifecycle.incarnation_ended(self.nid, self.incarnation, "stalled before registering")
            if self.stalled_at is None:  # the core never applies again: judge the batch it stopped at
                self.stalled_at = self.drained_to
                handed = sim.lifecycle.reference(self.drained_to).levels
                self.stall_explained = not all(self.software.supports(n, lv) for n, lv in handed.items())

    def effect(self, effect: Effect, source: str) -> None:
        if isinstance(effect, MetadataVersionChanged):
            self.sim.stats["mv_changes"] += 1
            if effect.losses:
                self.sim.stats["lossy_rewrites"] += 1
            self.sim.cluster.note(f"node {self.nid} metadata.version {effect.previous} -> {effect.current}")
        super().effect(effect, source)

    # ------------------------------------------------------------------ raft state, timers
    def on_event(self, raft: RaftNode) -> None:
        sim = self.sim
        self.on_raft_event()
        if self.waiters:
            hw = raft.high_watermark
            keep = []
            resolved: list[tuple[_Waiter, bool]] = []
            for w in self.waiters:
                if raft.epoch == w.epoch and raft.is_leader and hw is not None and hw > w.offset:
                    resolved.append((w, True))
                elif raft.epoch != w.epoch or not raft.is_leader or sim.now > w.deadline:
                    resolved.append((w, False))
                else:
                    keep.append(w)
            self.waiters = keep
            for w, ok in resolved:
                w.done(ok)

    def tick_on(self, raft: RaftNode) -> None:
        if self.waiters:
            self.on_event(raft)  # expire waiters past their deadline
        self.tick()

    def broker_answered(self, call: ControllerCall, response: Body) -> None:
        if call.api_key == ApiKey.BROKER_REGISTRATION:
            key = "registrations" if response.get("errorCode", 0) == 0 else "registrations_refused"
            self.sim.stats[key] += 1

    # ------------------------------------------------------------------ controller RPCs
    def serve(
        self,
        raft: RaftNode,
        api_key: int,
        version: int,
        body: dict[str, Any],
        respond: Callable[[dict[str, Any]], None],
    ) -> None:
        sim = self.sim
        validate_only = api_key == ApiKey.UPDATE_FEATURES and version >= 1 and bool(body.get("validateOnly"))
        log = sim.cluster.nodes[self.nid].log
        assert log is not None
        end_before = log.end_offset
        self._reply = None
        self.serve_controller(api_key, version, body, respond)
        reply = self._reply
        records = reply.records if isinstance(reply, AppendThenRespond) else ()
        if validate_only:
            sim.stats["dry_runs_checked"] += 1
            text = ", ".join(
                f"{u['feature']}={u['maxVersionLevel']}" for u in body.get("featureUpdates") or ()
            )
            sim.lifecycle.check_dry_run(self.nid, end_before, log.end_offset, records, f"[{text}]")

    def controller_reply(
        self, reply: Respond | AppendThenRespond, api_key: int, version: int, body: Body
    ) -> Respond | AppendThenRespond:
        validate_only = api_key == ApiKey.UPDATE_FEATURES and version >= 1 and bool(body.get("validateOnly"))
        if (
            self.sim.config.sabotage is Sabotage.DRY_RUN_APPENDS
            and validate_only
            and isinstance(reply, Respond)
            and reply.body.get("errorCode", 0) == 0
        ):
            recs = tuple(
                feature_level_record(u["feature"], u["maxVersionLevel"]) for u in body["featureUpdates"]
            )
            reply = AppendThenRespond(recs, reply.body)
        self._reply = reply
        return reply

    def acknowledged(self, offset: int, epoch: int, values: list[bytes]) -> None:
        # The raft checker then proves the acknowledged records stay committed.
        self.sim.cluster.checker.acks.append(Ack(offset, epoch, values[-1]))

    # ------------------------------------------------------------------ HostIO over the simulated world
    def now_ms(self) -> int:
        return self.sim.now

    def later(self, fn: Callable[[], None]) -> None:
        sim = self.sim
        sim.at(sim.now, lambda: sim.run_machine(self, lambda _r: fn()))

    def append(self, values: list[bytes]) -> int:
        offset = self.raft.append(values, self.sim.now)
        self.sim.stats["appends"] += 1
        return offset

    def upgrade_kraft_version(self, level: int) -> None:
        self.raft.upgrade_kraft_version(level, self.sim.now)

    def wait_committed(self, offset: int, epoch: int, done: Callable[[bool], None]) -> None:
        self.waiters.append(_Waiter(offset, epoch, self.sim.now + COMMIT_TIMEOUT_MS, done))

    def call_controller(
        self,
        leader: int,
        api_key: int,
        version: int,
        body: Body,
        on_response: Callable[[Body], None],
        on_failure: Callable[[], None],
    ) -> None:
        sim = self.sim
        if api_key == ApiKey.CONTROLLER_REGISTRATION:
            # its answer is only logged: it arrives without running the node
            sim.send_rpc(self.nid, leader, api_key, version, body, on_response, on_failure)
            return
        sim.send_rpc(
            self.nid,
            leader,
            api_key,
            version,
            body,
            lambda response: sim.run_machine(self, lambda _r: on_response(response)),
            lambda: sim.run_machine(self, lambda _r: on_failure()),
        )

    def write_snapshot(self, request: WriteSnapshot, place: Callable[[], WriteSnapshot]) -> None:
        sim = self.sim
        sim.at(sim.now, lambda: sim.write_snapshot(self, place))

    def close_client_connections(self, reason: str) -> None:
        self.sim.stats["client_closes"] += 1

    def mark_ready(self) -> None:
        pass  # nobody polls for marker files in the simulation

    def mark_fenced(self, reason: str | None) -> None:
        pass

    def fail_stop(self, fault: FatalFaultError) -> None:
        """KIP-778: log, unregister (a registered broker), exit."""
        sim = self.sim
        if fault.feature and fault.level >= 0 and self.software.supports(fault.feature, fault.level):
            raise InvariantViolation(
                "fail-stop only on unsupported levels",
                f"node {self.nid} on {self.software} fail-stopped on {fault.feature}={fault.level}: {fault}",
            )
        if sim.config.sabotage is Sabotage.UNCHECKED_UPGRADE and self.broker is not None:
            self.frozen = True  # the deliberate bug: keep running without the level
            self.failed = False
            return
        self.dead = True
        sim.stats["fail_stops"] += 1
        sim.cluster.note(f"node {self.nid} fail-stop: {fault}")
        sim.failstopped.add(self.nid)
        sim.lifecycle.incarnation_ended(self.nid, self.incarnation, "fail-stop")
        leader = self.raft.leader_id
        for call in fault.cleanup:
            if leader is not None and isinstance(call, ControllerCall):
                sim.stats["unregistrations"] += 1
                body = call.body_for(call.max_version)
                sim.send_rpc(
                    self.nid, leader, call.api_key, call.max_version, body, lambda _b: None, lambda: None
                )
        sim.at(sim.now, lambda: sim.kill(self.nid, self.incarnation))


# =============================================================================== the simulation


@dataclass(slots=True)
class _ClientRequest:
    outcome: UpdateOutcome
    body: dict[str, Any]
    on_done: Callable[[UpdateOutcome], None] | None = None


class LifecycleSim:
    """One seeded world of controllers and brokers; scripted scenarios drive it through
    ``at`` / ``update_features`` / ``crash`` / ``restart`` / ``isolate_leader`` / ``heal`` and
    ``run_until`` / ``run_until_converged``; :meth:`run` plays the config's mix."""

    def __init__(self, config: LifecycleConfig, tables: ReferenceTables | None = None) -> None:
        self.config = config
        self.rng = random.Random(config.seed * 1_000_003 + 17)
        self.cluster_id = "sim-cluster"
        self.cluster_voters = tuple(range(1, config.voters + 1))
        self.broker_ids = tuple(range(config.voters + 1, config.voters + config.brokers + 1))
        self.all_ids = self.cluster_voters + self.broker_ids
        self.initial_level = config.initial_level or self._draw_initial_level()
        self.bootstrap = default_bootstrap_records(MetadataVersion.from_feature_level(self.initial_level))
        self.releases: dict[int, str] = self._draw_software()
        self.lifecycle = LifecycleChecker(tables or ReferenceTables.of_this_software())
        self.stats: dict[str, int] = {
            k: 0
            for k in (
                "appends",
                "updates_ok",
                "updates_refused",
                "updates_failed",
                "dry_runs",
                "dry_runs_checked",
                "not_controller_retries",
                "fail_stops",
                "mv_changes",
                "lossy_rewrites",
                "snapshot_writes",
                "snapshot_superseded",
                "snapshot_mid_batch",
                "core_snapshot_loads",
                "client_closes",
                "registrations",
                "registrations_refused",
                "rolls",
                "refused_brokers_rolled",
                "rpcs",
                "unregistrations",
            )
        }
        self.failstopped: set[int] = set()
        self.outcomes: list[UpdateOutcome] = []
        self.healed_at: int | None = None
        self.converged_at: int | None = None
        self._requests = 0
        self._operator_restart = False
        self.cluster = Cluster(
            voters=config.voters,
            observers=config.brokers,
            seed=config.seed,
            state_machine=self._make_machine,
            checker=Checker(self.cluster_voters),
            wire=config.wire,
            raft_overrides={"clean_log_behind_snapshot": False} if config.retain_log else None,
        )
        self.cluster.event_listeners.append(self.node_event)
        self.cluster.crash_listeners.append(self.before_crash)
        self.cluster.set_link_faults(LinkFaults(0.0, 0.0, 1, 8))
        for nid in self.all_ids:
            self._schedule_tick(nid)

    # ------------------------------------------------------------------ set-up
    def _draw_initial_level(self) -> int:
        mix = self.config.mix
        if mix is Mix.DOWNGRADE:
            return 30
        if mix is Mix.ROLLING:
            return self.rng.choice((19, 20, 21, 25))
        return self.rng.choice(MV_LADDER)

    def _draw_software(self) -> dict[int, str]:
        cfg = self.config
        if cfg.software is not None:
            if len(cfg.software) != len(self.all_ids):
                raise KraftwerkError(
                    f"--software needs {len(self.all_ids)} releases, got {len(cfg.software)}"
                )
            return dict(zip(self.all_ids, cfg.software, strict=True))
        level = self.initial_level
        able = [r for r in OLD_RELEASES if SoftwareVersion.for_release(r).supports(FEATURE_NAME, level)]
        out = {}
        for nid in self.all_ids:
            if cfg.mix is Mix.ROLLING:
                out[nid] = RELEASE_OF_LEVEL.get(level, "3.9")
            elif cfg.mix is Mix.RANDOM and able and self.rng.random() < 0.3:
                out[nid] = self.rng.choice(able)
            else:
                out[nid] = LATEST_RELEASE
        return out

    def _make_machine(self, nid: int, raft: RaftNode) -> _Machine:
        n = self.cluster.nodes[nid] if hasattr(self, "cluster") else None
        incarnation = n.incarnation if n is not None else 1
        return _Machine(self, nid, raft, incarnation, self.releases[nid])

    # ------------------------------------------------------------------ plumbing
    @property
    def now(self) -> int:
        return self.cluster.queue.now if hasattr(self, "cluster") else 0

    def at(self, t: int, fn: Callable[[], None]) -> None:
        self.cluster.queue.schedule(t, fn)

    def raft_of(self, nid: int) -> RaftNode | None:
        return self.cluster.nodes[nid].raft

    def machine(self, nid: int) -> _Machine | None:
        m = self.cluster.nodes[nid].machine
        return m if isinstance(m, _Machine) and not m.dead else None

    def run_machine(self, m: _Machine, fn: Callable[[RaftNode], None]) -> None:
        """Run ``fn`` on ``m``'s node if ``m`` is still that node's live incarnation."""
        if self.machine(m.nid) is not m:
            return
        self.cluster.run_on(m.nid, fn)

    def node_event(self, nid: int) -> None:
        m = self.machine(nid)
        raft = self.raft_of(nid)
        if m is not None and raft is not None:
            m.on_event(raft)

    def before_crash(self, nid: int) -> None:
        m = self.cluster.nodes[nid].machine
        if isinstance(m, _Machine):
            # A fail-stop or an injected crash before the record was applied pays a fail-stop
            # debt; the operator restarting a node that kept running at the heal does not.
            if m.dead:
                self.lifecycle.incarnation_ended(nid, m.incarnation, "fail-stop")
            elif not self._operator_restart:
                self.lifecycle.incarnation_ended(nid, m.incarnation, "crashed")
            m.waiters.clear()

    def _schedule_tick(self, nid: int) -> None:
        m = self.machine(nid)
        if m is None:
            return

        def tick() -> None:
            if self.machine(nid) is not m:
                return
            self.cluster.run_on(nid, m.tick_on)
            self.at(self.now + TICK_MS, tick)

        self.at(self.now + self.rng.randint(1, TICK_MS), tick)

    def observe_committed(self, items: Sequence[Committed]) -> None:
        for item in items:
            if not isinstance(item, CommittedBatch) or item.base_offset in self.lifecycle.batches:
                continue
            decoded = [] if item.is_control else [as_record(r) for r in item.records]
            for offset, feature, level in self.lifecycle.observe_batch(
                item.base_offset, item.last_offset, decoded
            ):
                self.lifecycle.owe_fail_stops(offset, feature, level, self.live_brokers())

    def live_brokers(self) -> dict[int, int]:
        out = {}
        for nid in self.broker_ids:
            m = self.machine(nid)
            if m is not None:
                out[nid] = m.incarnation
        return out

    def write_snapshot(self, m: _Machine, place: Callable[[], WriteSnapshot]) -> None:
        """Write the snapshot the core asked for, at a batch boundary as the runtime does. It runs
        after the batch that asked for it, so a newer snapshot may already cover it (loaded from the
        leader, or the log cleaned past it), and the image before a version change has no boundary
        when its record sits inside a batch: both are skipped and counted; any other refusal is a
        violation."""

        def write(raft: RaftNode) -> None:
            at = place()
            end, log = at.end_offset, raft.log
            latest = log.latest_snapshot()
            if (latest is not None and latest.end_offset >= end) or log.start_offset >= end:
                self.stats["snapshot_superseded"] += 1
                self.cluster.note(f"node {m.nid} snapshot at {end} superseded")
                return
            found = log.batches(end - 1, end)
            if found and found[-1][0].last_offset != end - 1:
                # the image before a version change whose record sits inside a batch: raft has no
                # boundary there (the runtime skips it too)
                self.stats["snapshot_mid_batch"] += 1
                self.cluster.note(f"node {m.nid} snapshot at {end} is inside a batch")
                return
            try:
                raft.create_snapshot(end, at.render().encoded(), self.now)
            except KraftwerkError as exc:
                detail = f"node {m.nid} could not write its snapshot at {end}: {exc}"
                raise InvariantViolation(SNAPSHOT_INVARIANT, detail) from None
            self.stats["snapshot_writes"] += 1

        self.run_machine(m, write)

    def kill(self, nid: int, incarnation: int) -> None:
        n = self.cluster.nodes[nid]
        if n.up and n.incarnation == incarnation:
            self.cluster.crash(nid)

    def send_rpc(
        self,
        src: int,
        dst: int,
        api_key: int,
        version: int,
        body: dict[str, Any],
        on_response: Callable[[dict[str, Any]], None],
        on_timeout: Callable[[], None],
        timeout_ms: int = RPC_TIMEOUT_MS,
    ) -> None:
        """A request over the simulated network to a controller; exactly one of the callbacks runs."""
        self.stats["rpcs"] += 1
        state = {"done": False}
        request = self.cluster.through_wire(Kind.REQUEST, api_key, version, body)

        def expire() -> None:
            if not state["done"]:
                state["done"] = True
                on_timeout()

        def respond(response: dict[str, Any]) -> None:
            wired = self.cluster.through_wire(Kind.RESPONSE, api_key, version, response)
            for delay in self.cluster.net.deliveries(dst, src)[:1]:
                self.at(self.now + delay, lambda: arrive(wired))

        def arrive(response: dict[str, Any]) -> None:
            if not state["done"]:
                state["done"] = True
                on_response(response)

        def deliver() -> None:
            m = self.machine(dst)
            if m is None or m.controller is None or m.frozen:
                return
            self.cluster.run_on(dst, lambda raft: m.serve(raft, api_key, version, request, respond))

        self.at(self.now + timeout_ms, expire)
        for delay in self.cluster.net.deliveries(src, dst)[:1]:
            self.at(self.now + delay, deliver)

    # ------------------------------------------------------------------ the admin client
    def update_features(
        self,
        updates: Sequence[tuple[str, int, int]],
        *,
        validate_only: bool = False,
        version: int = 1,
        on_done: Callable[[UpdateOutcome], None] | None = None,
    ) -> UpdateOutcome:
        """Send UpdateFeatures (feature, level, upgrade type) like ``kafka-features``: to a
        controller, retrying NOT_CONTROLLER and timeouts on another one."""
        self._requests += 1
        outcome = UpdateOutcome(self._requests, tuple(updates), validate_only, version, self.now)
        items = []
        for name, level, utype in updates:
            item: dict[str, Any] = {"feature": name, "maxVersionLevel": level}
            if version == 0:
                item["allowDowngrade"] = utype != 1
            else:
                item["upgradeType"] = utype
            items.append(item)
        body: dict[str, Any] = {"timeoutMs": 60000, "featureUpdates": items}
        if version >= 1:
            body["validateOnly"] = validate_only
        if validate_only:
            self.stats["dry_runs"] += 1
        self.outcomes.append(outcome)
        self._attempt(_ClientRequest(outcome, body, on_done))
        return outcome

    def _attempt(self, req: _ClientRequest) -> None:
        req.outcome.attempts += 1
        leader = self.cluster.leader()
        ups = [v for v in self.cluster_voters if self.cluster.nodes[v].up]
        if leader is not None and leader in self.cluster_voters and self.rng.random() < 0.6:
            target = leader
        else:
            target = self.rng.choice(ups or list(self.cluster_voters))
        self.send_rpc(
            CLIENT_ID,
            target,
            ApiKey.UPDATE_FEATURES,
            req.outcome.version,
            req.body,
            lambda body: self._client_response(req, body),
            lambda: self._client_retry(req, "REQUEST_TIMED_OUT", None),
        )

    def _client_response(self, req: _ClientRequest, body: dict[str, Any]) -> None:
        error = Errors.for_code(body.get("errorCode", 0))
        if error is Errors.NOT_CONTROLLER:
            self.stats["not_controller_retries"] += 1
            self._client_retry(req, error.name, body.get("errorMessage"))
            return
        self._finish(req, error.name, body.get("errorMessage"))

    def _client_retry(self, req: _ClientRequest, error: str, message: str | None) -> None:
        if self.now - req.outcome.sent_ms >= CLIENT_DEADLINE_MS or self.healed_at is not None:
            self._finish(req, error, message)
            return
        self.at(self.now + CLIENT_BACKOFF_MS, lambda: self._attempt(req))

    def _finish(self, req: _ClientRequest, error: str, message: str | None) -> None:
        o = req.outcome
        o.error, o.message, o.done_ms = error, message, self.now
        if error == "NONE":
            self.stats["updates_ok"] += 1
        elif error == "INVALID_UPDATE_VERSION":
            self.stats["updates_refused"] += 1
        else:
            self.stats["updates_failed"] += 1
        self.cluster.note(f"client: {o.describe()}")
        if req.on_done is not None:
            req.on_done(o)

    # ------------------------------------------------------------------ faults
    def crash(self, nid: int, restart_after_ms: int | None = None, release: str | None = None) -> None:
        if self.cluster.nodes[nid].up:
            self.cluster.crash(nid)
        if restart_after_ms is not None:
            self.at(self.now + restart_after_ms, lambda: self.restart(nid, release))

    def restart(self, nid: int, release: str | None = None) -> None:
        """Start a down node, on ``release`` software when given (a roll)."""
        if self.cluster.nodes[nid].up:
            return
        if release is not None and release != self.releases[nid]:
            self.releases[nid] = release
            self.stats["rolls"] += 1
        self.failstopped.discard(nid)
        self.cluster.start(nid)
        self.cluster.stats["restarts"] += 1
        self.cluster.note(f"node {nid} runs {self.releases[nid]} software")
        self._schedule_tick(nid)

    def roll(self, nid: int, release: str, down_ms: int = 500) -> None:
        """Restart a node on other software (crash, then start after ``down_ms``)."""
        self.crash(nid, down_ms, release)

    def leader(self) -> int | None:
        return self.cluster.leader()

    def isolate_leader(self, heal_after_ms: int | None = None) -> int | None:
        leader = self.leader()
        if leader is None:
            return None
        self.cluster.net.isolate(leader, [*self.all_ids, CLIENT_ID])
        self.cluster.stats["partitions"] += 1
        self.cluster.note(f"isolate leader {leader}")
        if heal_after_ms is not None:
            self.at(self.now + heal_after_ms, self.cluster.heal_network)
        return leader

    def committed_levels(self) -> dict[str, int]:
        return dict(self.lifecycle.reference(self.lifecycle.committed_end - 1).levels)

    def heal(self) -> None:
        """Faults end: links heal; a live node that stopped applying the log is reported unless the
        seed explains it; then every node runs (the operator's fixes, see :meth:`_fix_nodes`)."""
        self.healed_at = self.now
        self.cluster.note("heal")
        self.cluster.heal_network()
        self.cluster.set_link_faults(LinkFaults(0.0, 0.0, 1, 8))
        for nid in self.all_ids:
            m = self.machine(nid)
            stuck = m is not None and (m.frozen or m.applied_offset < m.drained_to)
            if m is None or not stuck or not self.cluster.nodes[nid].up:
                continue
            detail = (
                f"node {nid} on {m.release} software stopped applying the log at offset {m.applied_offset} "
                f"while raft had handed it up to {m.drained_to}"
            )
            explained = m.stall_explained and not m.frozen
            self.lifecycle.check_stall(nid, m.incarnation, detail, explained=explained)
        self._operator_fixups()

    def _operator_fixups(self) -> None:
        self._operator_restart = True
        try:
            self._fix_nodes()
        finally:
            self._operator_restart = False

    def finalized_levels(self) -> dict[str, int]:
        """The committed levels with kraft.version, which lives in raft's control records."""
        levels = self.committed_levels()
        kraft = 0
        for nid in self.cluster_voters:
            raft = self.raft_of(nid)
            if raft is not None and raft.high_watermark is not None:
                kraft = max(kraft, raft.kraft_version_at(raft.high_watermark))
        if kraft:
            levels[KRAFT_VERSION] = kraft
        return levels

    def _fix_nodes(self) -> None:
        """What the operator does once faults heal: start every node that is down (on this software
        when it fail-stopped or its software cannot run the finalized levels), and roll a broker the
        controller refuses as Kafka's does: one that never registered, on software that cannot run a
        finalized level (it stalled on it, or its registration is refused). A live node is never
        rolled for being stuck otherwise."""
        levels = self.finalized_levels()
        for nid in self.all_ids:
            sw = SoftwareVersion.for_release(self.releases[nid])
            able = all(sw.supports(n, lv) for n, lv in levels.items())
            if not self.cluster.nodes[nid].up:
                self.restart(nid, LATEST_RELEASE if (nid in self.failstopped or not able) else None)
                continue
            m = self.machine(nid)
            if m is None or m.frozen or m.broker is None:
                continue
            if m.stall_explained or (m.broker.broker_epoch < 0 and not able):
                self.stats["refused_brokers_rolled"] += 1
                self.roll(nid, LATEST_RELEASE, 200)

    def views(self) -> list[NodeView]:
        out = []
        for nid in self.all_ids:
            m = self.machine(nid)
            if m is not None and self.cluster.nodes[nid].up:
                out.append(m.view())
        return out

    # ------------------------------------------------------------------ running
    def run_until(self, t: int) -> None:
        q = self.cluster.queue
        while True:
            nxt = q.next_time()
            if nxt is None or nxt > t:
                break
            q.run_next()
        q.now = max(q.now, t)

    def run_until_converged(self) -> int:
        """Heal (if not yet) and run until every node agrees; returns the virtual time."""
        if self.healed_at is None:
            self.heal()
        healed = self.healed_at
        assert healed is not None
        while True:
            self.run_until(self.now + TICK_MS)
            if self.lifecycle.check_converged(
                self.views(), self.now - healed, self.config.convergence_bound_ms
            ):
                if not self._one_active_controller():
                    continue
                self.converged_at = self.now
                # A leader acknowledges once the high watermark passes a write, but hands batches
                # to its state machine only after its own flush: let the last ones drain first.
                self.run_until(self.now + 2000)
                self.lifecycle.check_debts()
                self.cluster.checker.check_acks(final=True)
                return self.now
            self._operator_fixups()

    def _one_active_controller(self) -> bool:
        active = [
            m.nid
            for nid in self.cluster_voters
            if (m := self.machine(nid)) and m.controller and m.controller.is_active
        ]
        return len(active) == 1 and active[0] == self.leader()

    def run(self) -> None:
        """Play the config's mix: workload and faults, heal, converge."""
        schedule_mix(self)
        self.run_until(self.config.fault_ms)
        self.run_until_converged()


# =============================================================================== workloads


def _levels_now(sim: LifecycleSim) -> dict[str, int]:
    levels = sim.committed_levels()
    levels.setdefault(FEATURE_NAME, sim.initial_level)
    return levels


def random_update(
    sim: LifecycleSim, rng: random.Random, kind: str | None = None
) -> tuple[list[tuple[str, int, int]], bool]:
    """A request drawn against the committed levels: (updates, validate_only)."""
    levels = _levels_now(sim)
    mv = levels[FEATURE_NAME]
    kind = kind or rng.choice(
        ("upgrade", "upgrade", "safe_downgrade", "unsafe_downgrade", "feature", "feature", "multi", "invalid")
    )
    validate_only = rng.random() < 0.3
    higher = [lv for lv in MV_LADDER if lv > mv]
    lower = sorted({lv for lv in (*MV_LADDER, mv - 1) if lv < mv and lv >= 7})
    if kind == "upgrade":
        return [(FEATURE_NAME, rng.choice(higher or [mv]), 1)], validate_only
    if kind == "safe_downgrade":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 2)], validate_only
    if kind == "unsafe_downgrade":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 3)], validate_only
    if kind in ("feature", "multi"):
        name, top = rng.choice(OTHER_FEATURES)
        cur = levels.get(name, 0)
        level = rng.randint(0, top)
        utype = 1 if level >= cur else rng.choice((2, 3))
        ups = [(name, level, utype)]
        if kind == "multi":
            ups.append((FEATURE_NAME, rng.choice(higher or [mv]), 1))
        return ups, validate_only
    bad = rng.choice(("negative", "type", "unknown", "direction", "kraft"))
    if bad == "negative":
        return [(FEATURE_NAME, -1, 1)], validate_only
    if bad == "type":
        return [(FEATURE_NAME, mv, rng.choice((0, 4)))], validate_only
    if bad == "unknown":
        return [("no.such.feature", 1, 1)], validate_only
    if bad == "direction":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 1)], validate_only
    return [("kraft.version", 1, 1)], validate_only


def _fault(sim: LifecycleSim, rng: random.Random, kind: str) -> None:
    if sim.healed_at is not None:
        return
    c = sim.cluster
    c.note(f"fault {kind}")
    ups = [n for n in sim.all_ids if c.nodes[n].up]
    leader = sim.leader()
    if kind == "crash_leader" and leader is not None:
        sim.crash(leader, rng.randint(300, 5000))
    elif kind == "isolate_leader":
        sim.isolate_leader(rng.randint(1000, 6000))
    elif kind in ("crash", "crash_leader") and ups:
        sim.crash(rng.choice(ups), rng.randint(300, 5000))
    elif kind == "roll" and ups:
        nid = rng.choice(ups)
        release = LATEST_RELEASE if rng.random() < 0.6 else rng.choice(OLD_RELEASES)
        sim.roll(nid, release, rng.randint(200, 1500))
    elif kind == "join_old" and sim.broker_ids:
        nid = rng.choice(sim.broker_ids)
        sim.roll(nid, rng.choice(OLD_RELEASES), rng.randint(200, 1500))
    elif kind == "lossy":
        c.set_link_faults(LinkFaults(rng.uniform(0.0, 0.2), 0.0, 1, rng.randint(5, 40)))
        sim.at(sim.now + rng.randint(1000, 4000), lambda: c.set_link_faults(LinkFaults(0.0, 0.0, 1, 8)))


def schedule_mix(sim: LifecycleSim) -> None:
    """Schedule the workload and faults of ``sim.config.mix`` over the fault phase."""
    cfg = sim.config
    rng = random.Random(cfg.seed * 7_919 + 3)
    end = cfg.fault_ms
    mix = cfg.mix
    if cfg.sabotage is Sabotage.UNCHECKED_UPGRADE:
        sim.at(max(3000, end // 2), lambda: _unchecked_upgrade(sim))
    if mix is Mix.NONE:
        sim.at(end, sim.heal)
        return

    def times(count: int, lo: int = 2500) -> list[int]:
        return sorted(rng.randint(lo, max(lo + 1, end - 800)) for _ in range(count))

    def op(kind: str | None = None, dry: bool | None = None) -> Callable[[], None]:
        def go() -> None:
            if sim.healed_at is not None:
                return
            updates, validate_only = random_update(sim, rng, kind)
            if dry is not None:
                validate_only = dry
            sim.update_features(
                updates,
                validate_only=validate_only,
                version=rng.choice((0, 1, 1, 2)) if not validate_only else rng.choice((1, 2)),
            )

        return go

    def fault(kind: str) -> Callable[[], None]:
        return lambda: _fault(sim, rng, kind)

    if mix is Mix.RANDOM:
        for t in times(cfg.events + 2):
            sim.at(t, op())
        kinds = ("crash_leader", "isolate_leader", "crash", "roll", "join_old", "lossy")
        for t in times(cfg.events):
            sim.at(t, fault(rng.choice(kinds)))
    elif mix is Mix.ROLLING:
        order = list(sim.all_ids)
        rng.shuffle(order)
        step = max(600, (end - 3000) // (len(order) + 1))
        for i, nid in enumerate(order):
            keep_old = i == len(order) - 1 and rng.random() < 0.3  # one node may be left behind
            if not keep_old:
                sim.at(2000 + i * step, _roller(sim, nid, rng.randint(200, 800)))
        for t in times(cfg.events + 2):
            sim.at(t, op("upgrade"))
        sim.at(rng.randint(2500, end - 800), fault("crash_leader"))
    elif mix is Mix.DOWNGRADE:
        for t in times(cfg.events + 2):
            sim.at(
                t,
                op(
                    rng.choice(
                        ("safe_downgrade", "unsafe_downgrade", "unsafe_downgrade", "upgrade", "feature")
                    )
                ),
            )
        for t in times(max(1, cfg.events // 2)):
            sim.at(t, fault(rng.choice(("crash_leader", "isolate_leader", "roll", "join_old"))))
    elif mix is Mix.FAILOVER:
        for t in times(cfg.events + 2):
            sim.at(t, op())
        for t in times(cfg.events):
            sim.at(t, fault(rng.choice(("crash_leader", "crash_leader", "isolate_leader", "lossy"))))
    sim.at(end, sim.heal)


def _roller(sim: LifecycleSim, nid: int, down_ms: int) -> Callable[[], None]:
    return lambda: sim.roll(nid, LATEST_RELEASE, down_ms)


def _unchecked_upgrade(sim: LifecycleSim) -> None:
    """(Sabotage) append a metadata.version upgrade straight through raft, past every check."""
    leader = sim.leader()
    if leader is None:
        sim.at(sim.now + 200, lambda: _unchecked_upgrade(sim))
        return
    m = sim.machine(leader)
    if m is None:
        return
    rec = feature_level_record(FEATURE_NAME, 30)
    value = encode_metadata_record(rec.spec, rec.version, rec.value)

    def append(_raft: RaftNode) -> None:
        m.write([value])

    sim.cluster.run_on(leader, append)


# =============================================================================== driver


def run_lifecycle_seed(
    seed: int, *, tables: ReferenceTables | None = None, **overrides: Any
) -> LifecycleResult:
    """Play one seed (``overrides`` are :class:`LifecycleConfig` fields; ``tables`` the checker's
    Kafka facts, this software's by default); never raises for a violation: it is in the result,
    with the replay command."""
    config = overrides.pop("config", None) or LifecycleConfig()
    config = replace(config, seed=seed, **overrides)
    return run_lifecycle(config, tables)


def run_lifecycle(config: LifecycleConfig, tables: ReferenceTables | None = None) -> LifecycleResult:
    started = time.perf_counter()
    result = LifecycleResult(config, ok=True)
    sim: LifecycleSim | None = None
    try:
        sim = LifecycleSim(config, tables)
        sim.run()
    except InvariantViolation as exc:
        result.ok, result.invariant, result.violation = False, exc.invariant, exc.detail
    except KraftwerkError as exc:  # a raft safety check (RaftStateError) or a core refusing its input
        result.ok, result.invariant, result.violation = False, type(exc).__name__, str(exc)
    result.wall_s = time.perf_counter() - started
    if sim is not None:
        c = sim.cluster
        result.events = c.queue.executed
        result.virtual_ms = c.now
        result.converged_ms = (
            None if sim.converged_at is None or sim.healed_at is None else sim.converged_at - sim.healed_at
        )
        result.stats = {
            **c.stats,
            **sim.stats,
            "flr_commits": sim.lifecycle.flr_commits,
            "fail_stop_debts_paid": len(sim.lifecycle.paid),
            "view_checks": sim.lifecycle.checks,
            "sent": c.net.sent,
            "dropped": c.net.dropped,
        }
        result.outcomes = list(sim.outcomes)
        result.final_levels = sim.committed_levels()
        if not result.ok:
            result.trace_tail = [f"t={t} {text}" for t, text in c.trace]
    return result


@dataclass(slots=True)
class BatchSummary:
    seeds: int = 0
    failures: list[LifecycleResult] = field(default_factory=list)
    events: int = 0
    seconds: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def seeds_per_second(self) -> float:
        return self.seeds / self.seconds if self.seconds else 0.0


def run_lifecycle_seeds(
    base: LifecycleConfig,
    start: int,
    count: int,
    *,
    mixes: Sequence[Mix] | None = None,
    keep_going: bool = False,
    progress: Callable[[LifecycleResult], None] | None = None,
) -> BatchSummary:
    """Seeds ``start .. start+count-1``; with several ``mixes`` seed ``s`` plays ``mixes[s % n]``."""
    summary = BatchSummary()
    began = time.perf_counter()
    for seed in range(start, start + count):
        cfg = replace(base, seed=seed, mix=mixes[seed % len(mixes)]) if mixes else replace(base, seed=seed)
        result = run_lifecycle(cfg)
        summary.seeds += 1
        summary.events += result.events
        for k, v in result.stats.items():
            summary.stats[k] = summary.stats.get(k, 0) + v
        if progress is not None:
            progress(result)
        if not result.ok:
            summary.failures.append(result)
            if not keep_going:
                break
    summary.seconds = time.perf_counter() - began
    return summary


ALL_MIXES = (Mix.RANDOM, Mix.ROLLING, Mix.DOWNGRADE, Mix.FAILOVER)
"""The mixes ``--mix all`` rotates over the seeds."""
