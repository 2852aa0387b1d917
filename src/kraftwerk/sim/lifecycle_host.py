"""The simulator's driver of the node host: one node incarnation's I/O over the simulated world."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kraftwerk.broker.node import BrokerNode, ControllerCall
from kraftwerk.controller.common import finalized_levels
from kraftwerk.controller.effects import (
    AppendThenRespond,
    Body,
    Effect,
    MetadataVersionChanged,
    Respond,
    WriteSnapshot,
)
from kraftwerk.controller.features import feature_level_record
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import Endpoint
from kraftwerk.image.replay import as_record
from kraftwerk.node import NodeHost
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.raft import Committed, CommittedBatch, RaftNode, SnapshotLoad
from kraftwerk.sim.checker import Ack, InvariantViolation
from kraftwerk.sim.lifecycle_checker import NodeView
from kraftwerk.sim.lifecycle_types import (
    AUTO_UPGRADE_INTERVAL_MS,
    COMMIT_TIMEOUT_MS,
    HEARTBEAT_MS,
    IDLE_NOOP_MS,
    REGISTRATION_RETRY_MS,
    RPC_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    Sabotage,
)
from kraftwerk.versions.software import SoftwareVersion

if TYPE_CHECKING:
    from kraftwerk.sim.lifecycle import LifecycleSim


@dataclass(slots=True)
class _Waiter:
    offset: int
    epoch: int
    deadline: int
    done: Callable[[bool], None]


class SimNodeHost(NodeHost):
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
                static_configs={**static, **sim.controller_configs},
            )
        else:
            broker = sim.broker_class(
                nid,
                sim.cluster_id,
                self.software,
                [Endpoint("PLAINTEXT", f"node{nid}", 9092, 0)],
                [uuid.UUID(int=nid)],
                incarnation_id=incarnation_id,
                heartbeat_interval_ms=HEARTBEAT_MS,
                request_timeout_ms=RPC_TIMEOUT_MS * 2,
                static_configs=sim.static_configs.get(nid),
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
