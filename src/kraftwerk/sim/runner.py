"""Seeded raft simulations: a fault phase, then a liveness phase once everything heals.

``run_seed(SimConfig(...))`` plays one seed and returns a :class:`SeedResult`; a failure carries
the violated invariant, the tail of the event trace and the command that replays it.
"""

from __future__ import annotations

import enum
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from kraftwerk.raft import RaftNode, RaftStateError, Role
from kraftwerk.sim.checker import Checker, InvariantViolation
from kraftwerk.sim.cluster import Cluster, KVStateMachine
from kraftwerk.sim.seed_runs import SeedRun
from kraftwerk.sim.world import LinkFaults


class Scenario(enum.Enum):
    """``random`` mixes every fault; the others are the targeted scenarios of issue #5."""

    RANDOM = "random"
    LEADER_CRASH = "leader-crash"
    LEADER_ISOLATED = "leader-isolated"
    BACK_TO_BACK = "back-to-back"
    ALL_KILLED = "all-killed"
    BEHIND_SNAPSHOT = "behind-snapshot"
    NONE = "none"


FAULT_KINDS = (
    "crash",
    "crash_leader",
    "isolate_leader",
    "partition",
    "pause",
    "lossy",
    "kill_all",
    "back_to_back",
)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Everything that determines a run (with the seed it replays exactly)."""

    seed: int = 0
    voters: int = 3
    observers: int = 0
    events: int = 8
    scenario: Scenario = Scenario.RANDOM
    fault_phase_ms: int | None = None  # default: 1500 ms per fault event + 3 s
    liveness_bound_ms: int = 30_000
    append_interval_ms: int = 40
    snapshot_every: int = 60
    drop: float = 0.0
    duplicate: float = 0.02
    min_delay_ms: int = 1
    max_delay_ms: int = 8
    torn_writes: bool = True
    wire: bool = True
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    #: test hook: alter what this node commits, to prove the checker catches it
    corrupt_node: int | None = None

    @property
    def fault_ms(self) -> int:
        return self.fault_phase_ms if self.fault_phase_ms is not None else 3000 + 1500 * self.events

    def replay_command(self) -> str:
        cmd = (
            f"kraftwerk sim raft --voters {self.voters} --observers {self.observers} --seeds 1 "
            f"--start {self.seed} --events {self.events} --scenario {self.scenario.value}"
        )
        if not self.wire:
            cmd += " --no-wire"
        return cmd

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["scenario"] = self.scenario.value
        return out


@dataclass(slots=True)
class SeedResult(SeedRun[SimConfig]):
    commit_latencies_ms: list[int] = field(default_factory=list)


class _Run:
    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        checker = Checker(tuple(range(1, cfg.voters + 1)))
        self.checker = checker
        snap_every = cfg.snapshot_every
        if cfg.scenario is Scenario.BEHIND_SNAPSHOT:
            snap_every = min(snap_every, 20) or 20
        self.machines: dict[int, KVStateMachine] = {}

        def factory(nid: int, _raft: RaftNode) -> KVStateMachine:
            m = KVStateMachine(nid, checker, snap_every)
            self.machines[nid] = m
            return m

        self.cluster = Cluster(
            voters=cfg.voters,
            observers=cfg.observers,
            seed=cfg.seed,
            state_machine=factory,
            checker=checker,
            wire=cfg.wire,
            torn_writes=cfg.torn_writes,
            raft_overrides={
                "election_timeout_ms": cfg.election_timeout_ms,
                "fetch_timeout_ms": cfg.fetch_timeout_ms,
            },
        )
        self.cluster.corrupt_node = cfg.corrupt_node
        self.base_faults = LinkFaults(cfg.drop, cfg.duplicate, cfg.min_delay_ms, cfg.max_delay_ms)
        self.cluster.set_link_faults(self.base_faults)
        self.rng = self.cluster.rng
        self.counter = 0
        self.healed_at: int | None = None
        self.marker: tuple[int, int, int] | None = None  # leader, epoch, offset of the liveness write
        self.done = False
        self.latencies: list[int] = []
        self.inflight_writes: dict[tuple[int, int, int], int] = {}

    # ------------------------------------------------------------------ scheduling helpers
    def at(self, t: int, fn: Any) -> None:
        self.cluster.queue.schedule(t, fn)

    def all_ids(self) -> list[int]:
        return list(self.cluster.nodes)

    def up_ids(self) -> list[int]:
        return [n for n, s in self.cluster.nodes.items() if s.up]

    def restart_later(self, nid: int, lo: int, hi: int) -> None:
        self.at(self.cluster.now + self.rng.randint(lo, hi), lambda: self.restart(nid))

    def restart(self, nid: int) -> None:
        if not self.cluster.nodes[nid].up:
            self.cluster.start(nid)
            self.cluster.stats["restarts"] += 1

    # ------------------------------------------------------------------ faults
    def fault(self, kind: str) -> None:
        c = self.cluster
        rng = self.rng
        if self.healed_at is not None:
            return
        c.note(f"fault {kind}")
        leader = c.leader()
        if kind == "crash" or (kind in ("crash_leader", "back_to_back") and leader is None):
            ups = self.up_ids()
            if ups:
                victim = rng.choice(ups)
                c.crash(victim)
                self.restart_later(victim, 300, 5000)
        elif kind == "crash_leader" and leader is not None:
            c.crash(leader)
            self.restart_later(leader, 300, 5000)
        elif kind == "back_to_back" and leader is not None:
            c.crash(leader)
            self.restart_later(leader, 4000, 8000)
            self.at(c.now + rng.randint(1500, 3500), lambda: self.fault("crash_leader"))
        elif kind == "isolate_leader":
            target = leader if leader is not None else rng.choice(self.all_ids())
            c.net.isolate(target, self.all_ids())
            c.stats["partitions"] += 1
            self.at(c.now + rng.randint(1000, 6000), c.heal_network)
        elif kind == "partition":
            ids = self.all_ids()
            rng.shuffle(ids)
            cut = rng.randint(1, max(1, len(ids) - 1))
            c.net.split(ids[:cut], ids[cut:])
            c.stats["partitions"] += 1
            self.at(c.now + rng.randint(1000, 6000), c.heal_network)
        elif kind == "pause":
            ups = self.up_ids()
            if ups:
                victim = leader if (leader is not None and rng.random() < 0.4) else rng.choice(ups)
                c.pause(victim)
                self.at(c.now + rng.randint(300, 4000), lambda: c.resume(victim))
        elif kind == "lossy":
            c.set_link_faults(LinkFaults(rng.uniform(0.0, 0.3), rng.uniform(0.0, 0.2), 1, rng.randint(5, 60)))
            self.at(c.now + rng.randint(1000, 5000), lambda: c.set_link_faults(self.base_faults))
        elif kind == "kill_all":
            for nid in self.up_ids():
                c.crash(nid)
                self.restart_later(nid, 100, 3000)

    def schedule_faults(self) -> None:
        cfg = self.cfg
        end = cfg.fault_ms
        sc = cfg.scenario
        if sc is Scenario.RANDOM:
            for _ in range(cfg.events):
                kind = self.rng.choice(FAULT_KINDS)
                self.at(self.rng.randint(1000, max(1001, end - 500)), lambda k=kind: self.fault(k))
        elif sc is Scenario.LEADER_CRASH:
            self.at(3000, lambda: self.fault("crash_leader"))
        elif sc is Scenario.LEADER_ISOLATED:
            self.at(3000, lambda: self.fault("isolate_leader"))
        elif sc is Scenario.BACK_TO_BACK:
            self.at(3000, lambda: self.fault("back_to_back"))
        elif sc is Scenario.ALL_KILLED:
            self.at(3000, lambda: self.fault("kill_all"))
        elif sc is Scenario.BEHIND_SNAPSHOT:

            def isolate_follower() -> None:
                c = self.cluster
                leader = c.leader()
                followers = [v for v in c.voter_ids if v != leader] + list(c.observer_ids)
                if followers:
                    victim = followers[-1]
                    c.crash(victim)
                    self.at(end - 200, lambda: self.restart(victim))

            self.at(1500, isolate_follower)
        self.at(end, self.heal)

    def heal(self) -> None:
        c = self.cluster
        self.healed_at = c.now
        c.note("heal: network, link faults, pauses, crashed nodes")
        c.heal_network()
        c.set_link_faults(self.base_faults)
        for nid, n in c.nodes.items():
            if n.paused:
                c.resume(nid)
        for nid, n in c.nodes.items():
            if not n.up:
                self.restart(nid)

    # ------------------------------------------------------------------ client + liveness
    def client_tick(self) -> None:
        if self.done:
            return
        c = self.cluster
        self.counter += 1
        value = b"k%d=v%d" % (self.counter % 16, self.counter)
        placed = c.client_append(value)
        if placed is not None:
            leader, offset = placed
            raft = c.nodes[leader].raft
            assert raft is not None
            self.inflight_writes[(leader, raft.epoch, offset)] = c.now
            if self.healed_at is not None and self.marker is None:
                self.marker = (leader, raft.epoch, offset)
        self.track_latency()
        if self.healed_at is not None:
            self.check_liveness()
        if not self.done:
            self.at(c.now + self.cfg.append_interval_ms, self.client_tick)

    def track_latency(self) -> None:
        c = self.cluster
        for key in list(self.inflight_writes):
            leader, epoch, offset = key
            raft = c.nodes[leader].raft
            if raft is None or raft.epoch != epoch or raft.role is not Role.LEADER:
                del self.inflight_writes[key]
            elif raft.high_watermark is not None and raft.high_watermark > offset:
                self.latencies.append(c.now - self.inflight_writes.pop(key))

    def check_liveness(self) -> None:
        c = self.cluster
        assert self.healed_at is not None
        if self.marker is not None:
            leader, epoch, offset = self.marker
            raft = c.nodes[leader].raft
            if raft is None or raft.epoch != epoch or raft.role is not Role.LEADER:
                self.marker = None  # lost leadership before committing: write again
            elif all(
                (v := c.nodes[n].raft) is not None
                and v.high_watermark is not None
                and v.high_watermark > offset
                for n in c.voter_ids
            ):
                self.done = True
                return
        if c.now - self.healed_at > self.cfg.liveness_bound_ms:
            roles = {
                n: (s.raft.role.value, s.raft.epoch, s.raft.high_watermark) if s.raft else "down"
                for n, s in c.nodes.items()
            }
            raise InvariantViolation(
                "liveness",
                f"no leader committed a write on every voter within "
                f"{self.cfg.liveness_bound_ms} ms after healing; nodes {roles}",
            )

    def run(self) -> None:
        self.schedule_faults()
        self.at(200, self.client_tick)
        q = self.cluster.queue
        last_time, same_time = -1, 0
        while not self.done and q.run_next():
            if q.now == last_time:
                same_time += 1
                if same_time > 50_000:
                    raise InvariantViolation(
                        "progress", f"more than 50000 events at virtual time {q.now} (livelock)"
                    )
            else:
                last_time, same_time = q.now, 0
        self.checker.check_acks(final=True)
        if self.cfg.scenario is Scenario.BEHIND_SNAPSHOT and self.cluster.stats["snapshot_loads"] == 0:
            raise InvariantViolation("behind-snapshot scenario", "no follower loaded a snapshot")


def run_seed(cfg: SimConfig) -> SeedResult:
    """Play one seed; never raises for an invariant violation (it is in the result)."""
    started = time.perf_counter()
    run = _Run(cfg)
    result = SeedResult(cfg, ok=True)
    try:
        run.run()
        run.checker.check_acks()
    except InvariantViolation as exc:
        result.ok = False
        result.invariant = exc.invariant
        result.violation = exc.detail
    except RaftStateError as exc:
        result.ok = False
        result.invariant = "raft safety check"
        result.violation = str(exc)
    c = run.cluster
    result.events = c.queue.executed
    result.virtual_ms = c.now
    result.wall_s = time.perf_counter() - started
    result.stats = dict(
        c.stats,
        sent=c.net.sent,
        dropped=c.net.dropped,
        duplicated=c.net.duplicated,
        torn_writes=sum(n.disk.torn_writes for n in c.nodes.values()),
    )
    result.commit_latencies_ms = run.latencies
    if not result.ok:
        result.trace_tail = [f"t={t} {text}" for t, text in c.trace]
    return result
