"""Seeded simulations of the metadata.version lifecycle (KIP-778) on the raft simulator.

Every simulated node runs the production :class:`~kraftwerk.node.NodeHost` (a controller on
every voter, a broker on every observer) on top of the raft nodes, network, disks and clock of
:class:`~kraftwerk.sim.cluster.Cluster`; this module is its second driver (``SimNodeHost``, the first
is ``runtime/node.py``): it supplies the host's I/O over the simulated network, disk and clock, and
adds the simulator's probes (the lifecycle checker's views, statistics) and deliberate bugs
(:class:`Sabotage`) through the host's hook methods. Replay, fail-stop, activation, the
controller's timers and NoOps, registration, heartbeats and serving controller RPCs are the host's
code, the same as in production.

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

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kraftwerk.broker.node import BrokerNode
from kraftwerk.controller.activation import default_bootstrap_records
from kraftwerk.controller.effects import (
    WriteSnapshot,
)
from kraftwerk.errors import KraftwerkError
from kraftwerk.image.replay import as_record
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.schema import Kind
from kraftwerk.raft import Committed, CommittedBatch, RaftNode
from kraftwerk.sim.checker import Checker, InvariantViolation
from kraftwerk.sim.cluster import Cluster
from kraftwerk.sim.lifecycle_checker import SNAPSHOT_INVARIANT, LifecycleChecker, NodeView, ReferenceTables
from kraftwerk.sim.lifecycle_host import SimNodeHost
from kraftwerk.sim.lifecycle_types import (
    CLIENT_BACKOFF_MS,
    CLIENT_DEADLINE_MS,
    CLIENT_ID,
    MV_LADDER,
    OLD_RELEASES,
    RELEASE_OF_LEVEL,
    RPC_TIMEOUT_MS,
    TICK_MS,
    LifecycleConfig,
    LifecycleResult,
    Mix,
    UpdateOutcome,
)
from kraftwerk.sim.lifecycle_workload import (
    CONFIGS_LADDER,
    CONFIGS_RELEASE,
    draw_static_configs,
    schedule_mix,
)
from kraftwerk.sim.seed_runs import BatchSummary, play_seeds
from kraftwerk.sim.world import LinkFaults
from kraftwerk.versions.features import KRAFT_VERSION
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion
from kraftwerk.versions.software import LATEST_RELEASE, SoftwareVersion

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

    controller_configs: dict[str, str] = {}
    """Every controller's extra ``controller.properties`` (the migration simulation's flags)."""
    broker_class: type[BrokerNode] = BrokerNode
    """What runs on an observer (the migration simulation's migrating ZooKeeper brokers)."""

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
        self.static_configs: dict[int, dict[str, str]] = {}
        """Each broker's ``server.properties`` (the configs mix draws them; checked by (f))."""
        if config.mix is Mix.CONFIGS:
            self.static_configs = draw_static_configs(self)
            self.lifecycle.static_configs = self.static_configs
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
        self.operator_fixes: list[Callable[[], None]] = []
        """What the workload's operator also does at heal time (and while waiting to converge)."""
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
        if mix is Mix.CONFIGS:
            return self.rng.choice(CONFIGS_LADDER[:-1])
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
            elif cfg.mix is Mix.CONFIGS:
                out[nid] = CONFIGS_RELEASE
            elif cfg.mix is Mix.RANDOM and able and self.rng.random() < 0.3:
                out[nid] = self.rng.choice(able)
            else:
                out[nid] = LATEST_RELEASE
        return out

    def _make_machine(self, nid: int, raft: RaftNode) -> SimNodeHost:
        n = self.cluster.nodes[nid] if hasattr(self, "cluster") else None
        incarnation = n.incarnation if n is not None else 1
        return SimNodeHost(self, nid, raft, incarnation, self.releases[nid])

    # ------------------------------------------------------------------ plumbing
    @property
    def now(self) -> int:
        return self.cluster.queue.now if hasattr(self, "cluster") else 0

    def at(self, t: int, fn: Callable[[], None]) -> None:
        self.cluster.queue.schedule(t, fn)

    def raft_of(self, nid: int) -> RaftNode | None:
        return self.cluster.nodes[nid].raft

    def machine(self, nid: int) -> SimNodeHost | None:
        m = self.cluster.nodes[nid].machine
        return m if isinstance(m, SimNodeHost) and not m.dead else None

    def run_machine(self, m: SimNodeHost, fn: Callable[[RaftNode], None]) -> None:
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
        if isinstance(m, SimNodeHost):
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

    def write_snapshot(self, m: SimNodeHost, place: Callable[[], WriteSnapshot]) -> None:
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
        skip_config_audit: bool = False,
        on_done: Callable[[UpdateOutcome], None] | None = None,
    ) -> UpdateOutcome:
        """Send UpdateFeatures (feature, level, upgrade type) like ``kafka-features``: to a
        controller, retrying NOT_CONTROLLER and timeouts on another one (``skip_config_audit``:
        kraftwerk's tagged field of v3)."""
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
        if skip_config_audit:
            body["skipConfigAudit"] = True
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
            for fix in self.operator_fixes:
                fix()
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
            "config_checks": sim.lifecycle.config_checks,
            "sent": c.net.sent,
            "dropped": c.net.dropped,
        }
        result.outcomes = list(sim.outcomes)
        result.final_levels = sim.committed_levels()
        if not result.ok:
            result.trace_tail = [f"t={t} {text}" for t, text in c.trace]
    return result


def run_lifecycle_seeds(
    base: LifecycleConfig,
    start: int,
    count: int,
    *,
    mixes: Sequence[Mix] | None = None,
    keep_going: bool = False,
    progress: Callable[[LifecycleResult], None] | None = None,
) -> BatchSummary[LifecycleResult]:
    """Seeds ``start .. start+count-1``; with several ``mixes`` seed ``s`` plays ``mixes[s % n]``."""
    configs = (
        replace(base, seed=seed, mix=mixes[seed % len(mixes)]) if mixes else replace(base, seed=seed)
        for seed in range(start, start + count)
    )
    return play_seeds(configs, run_lifecycle, keep_going=keep_going, progress=progress)
