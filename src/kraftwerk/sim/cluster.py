"""Hosting raft nodes in the simulated world: delivery, timers, crashes, pauses, state machines.

A simulated node is a :class:`~kraftwerk.raft.RaftNode` plus an optional :class:`StateMachine`
(built per incarnation by a factory), so later layers (the controller) run inside the same
simulator by passing their own state machine. Messages go through the real codec (``wire=True``)
so the bodies the core emits are exactly what the TCP runtime encodes.
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kraftwerk.protocol import codec, registry
from kraftwerk.protocol.schema import Kind
from kraftwerk.raft import (
    Body,
    Committed,
    CommittedBatch,
    Effect,
    RaftConfig,
    RaftNode,
    Role,
    SendRequest,
    SnapshotLoad,
)
from kraftwerk.raft.log import MemoryRaftLog
from kraftwerk.sim.checker import Ack, Checker, InvariantViolation
from kraftwerk.sim.world import Disk, EventQueue, LinkFaults, Network


class StateMachine(Protocol):
    """What a simulated node runs on top of raft (one instance per process incarnation)."""

    def apply(self, items: Sequence[Committed], node: RaftNode, now_ms: int) -> None:
        """Consume committed batches / snapshot loads in order; may call ``node.create_snapshot``."""


StateMachineFactory = Callable[[int, RaftNode], StateMachine]
"""Makes the state machine of a node's new incarnation, given its id and its new raft core."""


class KVStateMachine:
    """A key/value register used by the raft simulations: records are ``key=value`` bytes, the
    state is a dict, its digest is checked across nodes and against snapshots, and it snapshots
    every ``snapshot_every`` applied records (0: never)."""

    def __init__(self, node_id: int, checker: Checker | None, snapshot_every: int = 0) -> None:
        self.node_id = node_id
        self.checker = checker
        self.snapshot_every = snapshot_every
        self.state: dict[bytes, bytes] = {}
        self.applied = 0
        self.since_snapshot = 0
        self.snapshots_loaded = 0
        self.snapshots_taken = 0

    def digest(self) -> str:
        h = hashlib.blake2b(digest_size=8)
        for k in sorted(self.state):
            h.update(k + b"=" + self.state[k] + b";")
        return h.hexdigest()

    def records(self) -> list[bytes]:
        return [k + b"=" + self.state[k] for k in sorted(self.state)]

    def apply(self, items: Sequence[Committed], node: RaftNode, now_ms: int) -> None:
        for item in items:
            if isinstance(item, SnapshotLoad):
                self.state = {}
                for rec in item.records:
                    k, _, v = rec.partition(b"=")
                    self.state[k] = v
                self.applied = item.end_offset
                self.snapshots_loaded += 1
                if self.checker is not None:
                    self.checker.observe_digest(
                        self.node_id, item.end_offset, self.digest(), from_snapshot=True
                    )
                continue
            if not item.is_control:
                for rec in item.records:
                    k, _, v = rec.partition(b"=")
                    self.state[k] = v
                self.since_snapshot += len(item.records)
            self.applied = item.last_offset + 1
            if self.checker is not None:
                self.checker.observe_digest(self.node_id, self.applied, self.digest(), from_snapshot=False)
        if self.snapshot_every and self.since_snapshot >= self.snapshot_every and items:
            last = items[-1]
            if isinstance(last, CommittedBatch):
                node.create_snapshot(last.last_offset + 1, self.records(), now_ms)
                self.since_snapshot = 0
                self.snapshots_taken += 1


@dataclass(slots=True)
class SimNode:
    node_id: int
    config: RaftConfig
    disk: Disk = field(default_factory=Disk)
    raft: RaftNode | None = None
    log: MemoryRaftLog | None = None
    machine: StateMachine | None = None
    paused: bool = False
    deferred: list[Callable[[], None]] = field(default_factory=list)
    timer_gen: int = 0
    timer_at: int | None = None
    incarnation: int = 0

    @property
    def up(self) -> bool:
        return self.raft is not None


class Cluster:
    """Voters ``1..voters`` and observers after them, all in one deterministic world."""

    def __init__(
        self,
        *,
        voters: int,
        observers: int,
        seed: int,
        raft_overrides: dict[str, int] | None = None,
        state_machine: StateMachineFactory | None = None,
        checker: Checker | None = None,
        wire: bool = True,
        torn_writes: bool = True,
        trace_size: int = 200,
    ) -> None:
        self.rng = random.Random(seed)
        self.queue = EventQueue()
        self.net = Network(random.Random(self.rng.getrandbits(64)))
        self.voter_ids = tuple(range(1, voters + 1))
        self.observer_ids = tuple(range(voters + 1, voters + observers + 1))
        self.checker = checker if checker is not None else Checker(self.voter_ids)
        self.state_machine = state_machine
        self.wire = wire
        self.torn_writes = torn_writes
        self.trace: deque[tuple[int, str]] = deque(maxlen=trace_size)
        self.pending_acks: dict[int, list[Ack]] = {}
        self.stats: dict[str, int] = {
            "crashes": 0,
            "restarts": 0,
            "pauses": 0,
            "partitions": 0,
            "appends": 0,
            "acked": 0,
            "elections": 0,
            "snapshot_loads": 0,
        }
        #: test hook: this node's committed batches are altered before the checker sees them
        self.corrupt_node: int | None = None
        #: called with a node's id after every event on it (the runtime's raft state listener)
        self.event_listeners: list[Callable[[int], None]] = []
        #: called with a node's id just before it crashes
        self.crash_listeners: list[Callable[[int], None]] = []
        overrides = raft_overrides or {}
        self.nodes: dict[int, SimNode] = {}
        for nid in self.voter_ids + self.observer_ids:
            cfg = RaftConfig(nid, self.voter_ids, cluster_id="sim-cluster", **overrides)  # type: ignore[arg-type]
            self.nodes[nid] = SimNode(nid, cfg)
        self._max_hw_checked = 0
        for nid in self.nodes:
            self.start(nid)

    @property
    def now(self) -> int:
        return self.queue.now

    def note(self, text: str) -> None:
        self.trace.append((self.queue.now, text))

    # ------------------------------------------------------------------ lifecycle
    def start(self, nid: int) -> None:
        n = self.nodes[nid]
        n.log = n.disk.open_log()
        n.incarnation += 1
        n.raft = RaftNode(n.config, n.log, n.disk.quorum, now_ms=self.now, seed=self.rng.getrandbits(32))
        n.machine = self.state_machine(nid, n.raft) if self.state_machine is not None else None
        n.paused = False
        self.checker.reset_node(nid)
        self.note(
            f"start node {nid} (incarnation {n.incarnation}, log {n.log.start_offset}..{n.log.end_offset}, "
            f"role {n.raft.role.value}, epoch {n.raft.epoch})"
        )
        self._dispatch(nid, n.raft.take_effects())
        self._after(nid)

    def crash(self, nid: int) -> None:
        for listener in self.crash_listeners:
            listener(nid)
        n = self.nodes[nid]
        if n.raft is None or n.log is None:
            return
        n.disk.crash(n.log, self.rng, self.torn_writes and self.rng.random() < 0.5)
        self.note(
            f"crash node {nid} (role {n.raft.role.value}, epoch {n.raft.epoch}, durable end "
            f"{n.log.flushed_offset}, lost {n.log.unflushed_bytes} bytes)"
        )
        n.raft = None
        n.log = None
        n.machine = None
        n.paused = False
        n.deferred.clear()
        n.timer_gen += 1
        n.timer_at = None  # the next incarnation arms its own timer
        self.pending_acks.pop(nid, None)
        self.stats["crashes"] += 1
        self.check_durability(force=True)

    def pause(self, nid: int) -> None:
        n = self.nodes[nid]
        if n.up and not n.paused:
            n.paused = True
            self.stats["pauses"] += 1
            self.note(f"pause node {nid}")

    def resume(self, nid: int) -> None:
        n = self.nodes[nid]
        if not n.paused:
            return
        n.paused = False
        self.note(f"resume node {nid} ({len(n.deferred)} deferred events)")
        deferred, n.deferred = n.deferred, []
        for action in deferred:
            action()
        self._after(nid)

    # ------------------------------------------------------------------ messaging
    def through_wire(self, kind: Kind, api_key: int, version: int, body: Body) -> Body:
        """``body`` as the peer decodes it (encoded and decoded by the real codec when ``wire``)."""
        if not self.wire:
            return body
        spec = registry.by_api_key(kind, api_key)
        return codec.decode(spec, version, codec.encode(spec, version, body))

    def _dispatch(self, src: int, effects: list[Effect]) -> None:
        for eff in effects:
            kind = Kind.REQUEST if isinstance(eff, SendRequest) else Kind.RESPONSE
            body = self.through_wire(kind, eff.api_key, eff.version, eff.body)
            for delay in self.net.deliveries(src, eff.destination):
                self.queue.schedule(self.now + delay, self._make_delivery(src, eff, body))

    def _make_delivery(self, src: int, eff: Effect, body: Body) -> Callable[[], None]:
        dst = eff.destination

        def deliver() -> None:
            n = self.nodes.get(dst)
            if n is None or n.raft is None:
                return
            if n.paused:
                n.deferred.append(deliver)
                return
            raft = n.raft
            if isinstance(eff, SendRequest):
                self.note(f"{src}->{dst} request {eff.api_key} corr {eff.correlation_id}")
                out = raft.handle_request(src, eff.api_key, eff.version, body, eff.correlation_id, self.now)
            else:
                self.note(f"{src}->{dst} response {eff.api_key} corr {eff.correlation_id}")
                out = raft.handle_response(src, eff.api_key, eff.version, body, eff.correlation_id, self.now)
            self._dispatch(dst, out)
            self._after(dst)

        return deliver

    def _poll(self, nid: int, gen: int) -> None:
        n = self.nodes[nid]
        if n.raft is None or gen != n.timer_gen:
            return
        if n.paused:
            n.deferred.append(lambda: self._poll(nid, n.timer_gen))
            return
        n.timer_at = None
        self._dispatch(nid, n.raft.poll(self.now))
        self._after(nid)

    def run_on(self, nid: int, fn: Callable[[RaftNode], None]) -> None:
        """Run host code ``fn`` on a live node's raft, then send what it produced and re-arm its timers."""
        n = self.nodes[nid]
        raft = n.raft
        if raft is None or n.paused:
            return
        fn(raft)
        if n.raft is raft:
            self._dispatch(nid, raft.take_effects())
            self._after(nid)

    def _after(self, nid: int) -> None:
        self._settle(nid)
        for listener in self.event_listeners:
            listener(nid)

    def _settle(self, nid: int) -> None:
        """After any event on a node: feed its state machine, check invariants, re-arm its timer."""
        n = self.nodes[nid]
        raft = n.raft
        if raft is None:
            return
        items = raft.drain_committed()
        if items:
            if self.corrupt_node == nid:
                items = [_corrupted(i) for i in items]
            self.checker.observe_committed(nid, items)
            self.stats["snapshot_loads"] += sum(1 for i in items if isinstance(i, SnapshotLoad))
            if n.machine is not None:
                n.machine.apply(items, raft, self.now)
        was_leader_epoch = self.checker.leaders.get(raft.epoch)
        self.checker.observe_node(nid, raft.role is Role.LEADER, raft.epoch, raft.high_watermark)
        if raft.role is Role.LEADER and was_leader_epoch is None:
            self.stats["elections"] += 1
            self.note(f"node {nid} is leader of epoch {raft.epoch}")
        self._settle_acks(nid)
        if n.log is not None and n.log.start_offset > 0:
            snaps = n.log.snapshots()
            if not any(s.end_offset == n.log.start_offset for s in snaps):
                raise InvariantViolation(
                    "snapshot at log start",
                    f"node {nid} log starts at {n.log.start_offset}; snapshots {snaps}",
                )
        if self.checker.max_hw > self._max_hw_checked:
            self.check_durability()
        deadline = raft.next_deadline_ms()
        if deadline <= self.now:
            deadline = self.now
        if n.timer_at is None or deadline < n.timer_at or n.timer_at < self.now:
            n.timer_gen += 1
            n.timer_at = deadline
            gen = n.timer_gen
            self.queue.schedule(deadline, lambda: self._poll(nid, gen))

    def check_durability(self, force: bool = False) -> None:
        hw = self.checker.max_hw
        if hw <= 0 or (not force and hw <= self._max_hw_checked):
            return
        self._max_hw_checked = hw
        ends: dict[int, tuple[int, int | None, int]] = {}
        for vid in self.voter_ids:
            n = self.nodes[vid]
            if n.log is not None:
                log = n.log
                end = log.flushed_offset
            else:
                log = MemoryRaftLog.recover(n.disk.image) if n.disk.image is not None else MemoryRaftLog()
                end = log.end_offset
            epoch_at = None
            if end >= hw and log.start_offset < hw:
                found = log.batches(hw - 1, hw)
                epoch_at = found[0][0].epoch if found else None
            snap = log.latest_snapshot()
            ends[vid] = (end, epoch_at, snap.end_offset if snap else 0)
        self.checker.check_majority(hw, ends)

    # ------------------------------------------------------------------ client
    def leader(self) -> int | None:
        best: tuple[int, int] | None = None
        for nid, n in self.nodes.items():
            if (
                n.raft is not None
                and not n.paused
                and n.raft.role is Role.LEADER
                and (best is None or n.raft.epoch > best[0])
            ):
                best = (n.raft.epoch, nid)
        return None if best is None else best[1]

    def client_append(self, value: bytes) -> tuple[int, int] | None:
        """Append one record at the current leader; returns (leader, offset) or None."""
        lid = self.leader()
        if lid is None:
            return None
        n = self.nodes[lid]
        assert n.raft is not None
        offset = n.raft.append([value], self.now)
        self.stats["appends"] += 1
        self.pending_acks.setdefault(lid, []).append(Ack(offset, n.raft.epoch, value))
        self._dispatch(lid, n.raft.take_effects())
        self._after(lid)
        return lid, offset

    def _settle_acks(self, nid: int) -> None:
        pending = self.pending_acks.get(nid)
        if not pending:
            return
        raft = self.nodes[nid].raft
        if raft is None or raft.role is not Role.LEADER:
            del self.pending_acks[nid]
            return
        hw = raft.high_watermark
        keep = []
        for ack in pending:
            if ack.epoch != raft.epoch:
                continue
            if hw is not None and hw > ack.offset:
                self.checker.acks.append(ack)
                self.stats["acked"] += 1
            else:
                keep.append(ack)
        self.pending_acks[nid] = keep

    # ------------------------------------------------------------------ faults
    def heal_network(self) -> None:
        self.net.heal()
        self.note("heal network")

    def set_link_faults(self, faults: LinkFaults) -> None:
        self.net.default = faults


def _corrupted(item: Committed) -> Committed:
    if isinstance(item, CommittedBatch) and not item.is_control and item.records:
        return CommittedBatch(
            item.base_offset,
            item.last_offset,
            item.epoch,
            item.append_time_ms,
            item.is_control,
            (item.records[0] + b"!", *item.records[1:]),
            item.control_types,
        )
    return item
