"""Seeded simulations of KIP-866's online migration under faults.

Three KRaft controllers in migration mode and migrating ZooKeeper brokers (registered with
``IsMigratingZkBroker``) run the production node host (:class:`~kraftwerk.sim.migration_host.MigrationHost`)
on the raft simulator, over the in-memory ZooKeeper (:mod:`kraftwerk.sim.zookeeper`) holding a 3.9
cluster's tree written with :mod:`kraftwerk.migration.encode` (topics, configs, an ACL, a producer id
block, broker registrations, the ZooKeeper controller). The controllers' drivers claim ZooKeeper, copy
it into the log and dual-write, with the runtime's own ZooKeeper code (:mod:`kraftwerk.node.migration_zk`).

A seed plays client metadata writes (CreateTopics, DeleteTopics, IncrementalAlterConfigs, CreateAcls
through the controllers' real handlers, retried as an admin client retries) mixed with faults:
ZooKeeper unreachable, every session expired, ZooKeeper slow, the active controller crashed or
isolated (also right as it appends the migration), broker restarts. Then faults heal, and the run
waits for ZooKeeper to catch up, checks a write is accepted again, and compares both stores
(:mod:`kraftwerk.sim.migration_checker` holds the invariants).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from kraftwerk.broker.zk_broker import MigratingZkBrokerLifecycle
from kraftwerk.controller.migration_driver import (
    MIGRATION_ENABLE_CONFIG,
    MIGRATION_MAX_LAG_CONFIG,
    MigrationDriverState,
)
from kraftwerk.errors import KraftwerkError
from kraftwerk.image.model import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from kraftwerk.migration.encode import (
    PERSISTENT_PATHS,
    BrokerInfo,
    ZkEndpoint,
    acl_path,
    config_path,
    encode_acls,
    encode_broker,
    encode_cluster_id,
    encode_controller,
    encode_controller_epoch,
    encode_entity_config,
    encode_feature,
    encode_partition_state,
    encode_producer_id_block,
    encode_topic,
    partition_state_path,
    topic_path,
)
from kraftwerk.migration.znodes import AclEntry, KRaftMigrationInfo, ProducerIdBlock
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.raft import Committed, CommittedBatch, RaftNode
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.sim.lifecycle import LifecycleSim
from kraftwerk.sim.lifecycle_types import (
    CLIENT_BACKOFF_MS,
    CLIENT_DEADLINE_MS,
    CLIENT_ID,
    TICK_MS,
    LifecycleConfig,
    Mix,
)
from kraftwerk.sim.migration_checker import (
    CONVERGENCE_INVARIANT,
    WRITES_RESUME_INVARIANT,
    MigrationChecker,
)
from kraftwerk.sim.migration_host import MigrationHost
from kraftwerk.sim.migration_types import MigrationConfig, MigrationResult
from kraftwerk.sim.seed_runs import BatchSummary, play_seeds
from kraftwerk.sim.zookeeper import SimZkClient, SimZooKeeper

RELEASE = "3.9"
LEVEL = 21
"""3.9-IV0: the migration's metadata.version (3.9 software, the last release with ZooKeeper)."""
INITIAL_TOPICS = ("orders", "payments", "audit")
ZK_CONTROLLER_EPOCH = 5
FAULTS = ("zk_outage", "zk_expire", "zk_slow", "leader_crash", "leader_isolate", "leader_pause",
          "broker_restart")
ZK_BROKER_CHECK_MS = 500


class MigrationSim(LifecycleSim):
    """One seeded world: the lifecycle simulation's nodes, in migration mode, over a ZooKeeper."""

    broker_class = MigratingZkBrokerLifecycle

    def __init__(self, config: MigrationConfig) -> None:
        self.mconfig = config
        self.controller_configs = {MIGRATION_ENABLE_CONFIG: "true",
                                   MIGRATION_MAX_LAG_CONFIG: str(config.max_lag_ms)}
        self.zk = SimZooKeeper(lambda: self.now)
        voters = frozenset({1, 2, 3})
        self.mchecker = MigrationChecker(self.zk, config.max_lag_ms, TICK_MS, frozenset(INITIAL_TOPICS),
                                         voters)
        self._seen: set[int] = set()
        self.broker_sessions: dict[int, SimZkClient] = {}
        self.crash_on_migration = False
        self.workload_topics: list[str] = []
        self.final_phase = False
        base = LifecycleConfig(seed=config.seed, voters=3, brokers=config.brokers, mix=Mix.NONE,
                               initial_level=LEVEL, software=(RELEASE,) * (3 + config.brokers),
                               wire=config.wire, convergence_bound_ms=config.convergence_bound_ms)
        self._write_initial_tree(base)
        super().__init__(base)
        self.stats = Counter(self.stats)
        self.crash_on_migration = self.rng.random() < 0.4
        self._check_zk_brokers()

    def _make_machine(self, nid: int, raft: RaftNode) -> MigrationHost:
        n = self.cluster.nodes[nid] if hasattr(self, "cluster") else None
        return MigrationHost(self, nid, raft, n.incarnation if n is not None else 1, self.releases[nid])

    # ------------------------------------------------------------------ ZooKeeper's initial tree
    def _write_initial_tree(self, base: LifecycleConfig) -> None:
        """A 3.9 ZooKeeper-mode cluster's tree: what its brokers and ZooKeeper controller wrote."""
        c = self.zk.connect(owner=0)
        brokers = list(range(4, 4 + base.brokers))
        for path in PERSISTENT_PATHS:
            c.create(path, makepath=True)
        c.create("/cluster/id", encode_cluster_id("sim-cluster"), makepath=True)
        c.create("/controller_epoch", encode_controller_epoch(ZK_CONTROLLER_EPOCH))
        c.create("/feature", encode_feature())
        for i, name in enumerate(INITIAL_TOPICS):
            assignment = {p: [brokers[(i + p + k) % len(brokers)] for k in range(min(2, len(brokers)))]
                          for p in range(1 + i % 3)}
            c.create(topic_path(name), encode_topic(assignment, uuid.UUID(int=0xA000 + i)))
            for p, replicas in assignment.items():
                c.create(partition_state_path(name, p),
                         encode_partition_state(replicas[0], 2, replicas, ZK_CONTROLLER_EPOCH), makepath=True)
        c.create(config_path("topics", INITIAL_TOPICS[0]), encode_entity_config({"retention.ms": "86400000"}))
        c.create(config_path("brokers", None), encode_entity_config({"log.cleaner.threads": "2"}))
        entry = AclEntry("User:alice", AclPermissionType.ALLOW, AclOperation.READ, "*")
        c.create(acl_path(AclPatternType.LITERAL, AclResourceType.TOPIC, INITIAL_TOPICS[0]),
                 encode_acls([entry]), makepath=True)
        c.set("/latest_producer_id_block", encode_producer_id_block(ProducerIdBlock(brokers[0], 0, 999)))
        for nid in brokers:
            self._register_zk_broker(nid)
        # the ZooKeeper controller (the first broker) holds /controller in its session
        zk_controller = self.broker_sessions[brokers[0]]
        zk_controller.create("/controller", encode_controller(brokers[0], 0), ephemeral=True)

    def _register_zk_broker(self, nid: int) -> None:
        session = self.zk.connect(owner=-nid)
        endpoint = ZkEndpoint("PLAINTEXT", f"node{nid}", 9092, "PLAINTEXT")
        info = BrokerInfo(nid, (endpoint,), self.now, version=6,
                          migration=KRaftMigrationInfo(True, "sim-cluster", "3.9-IV0"))
        session.create(f"/brokers/ids/{nid}", encode_broker(info), ephemeral=True)
        self.broker_sessions[nid] = session

    def _check_zk_brokers(self) -> None:
        """A ZooKeeper broker keeps its ``/brokers/ids`` registration: it re-registers after its
        session expired or it restarted, and its session ends with its process."""
        if self.zk.reachable:
            for nid in self.broker_ids:
                session = self.broker_sessions.get(nid)
                alive = session is not None and session.session in self.zk.live_sessions
                if self.cluster.nodes[nid].up and not alive:
                    self._register_zk_broker(nid)
                elif not self.cluster.nodes[nid].up and session is not None:
                    session.stop()
                    del self.broker_sessions[nid]
        self.at(self.now + ZK_BROKER_CHECK_MS, self._check_zk_brokers)

    # ------------------------------------------------------------------ probes
    def observe_committed(self, items: Sequence[Committed]) -> None:
        super().observe_committed(items)
        for item in items:
            if isinstance(item, CommittedBatch) and item.base_offset not in self._seen:
                self._seen.add(item.base_offset)
                self.mchecker.observe_batch(item, self.now)

    def migration_appended(self, nid: int) -> None:
        """The active controller appended the migration transaction: maybe crash it mid-replication."""
        if self.crash_on_migration and self.healed_at is None:
            self.crash_on_migration = False
            self.stats["crashes_during_migration"] += 1
            self.cluster.note(f"crash controller {nid} while its migration replicates")
            self.at(self.now + self.rng.randint(0, 40), lambda: self.crash(nid, self.rng.randint(500, 3000)))

    # ------------------------------------------------------------------ the admin client
    def client_write(self, api_key: ApiKey, version: int, body: dict[str, Any], results: str,
                     on_ok: Callable[[], None] | None = None, sent_ms: int | None = None) -> None:
        """An admin client's metadata write, retried on NOT_CONTROLLER, REQUEST_TIMED_OUT (the lag
        bound's refusal) and timeouts until its deadline."""
        sent = self.now if sent_ms is None else sent_ms

        def retry() -> None:
            if self.now - sent < CLIENT_DEADLINE_MS and (self.healed_at is None or self.final_phase):
                self.at(self.now + CLIENT_BACKOFF_MS,
                        lambda: self.client_write(api_key, version, body, results, on_ok, sent))
            else:
                self.stats["writes_gave_up"] += 1

        def answered(response: dict[str, Any]) -> None:
            codes = [r.get("errorCode", 0) for r in response.get(results) or ()]
            if Errors.NOT_CONTROLLER.code in codes:
                self.stats["writes_not_controller"] += 1
                retry()
            elif Errors.REQUEST_TIMED_OUT.code in codes:
                self.stats["writes_refused_for_lag"] += 1
                retry()
            elif any(codes):
                self.stats["writes_failed"] += 1
            else:
                self.stats["writes_ok"] += 1
                if on_ok is not None:
                    on_ok()

        leader = self.leader()
        target = leader if leader in self.cluster_voters and self.rng.random() < 0.8 else \
            self.rng.choice(self.cluster_voters)
        self.send_rpc(CLIENT_ID, target, api_key, version, body, answered, retry)

    def create_topic(self, name: str, on_ok: Callable[[], None] | None = None) -> None:
        topic = {"name": name, "numPartitions": self.rng.randint(1, 3),
                 "replicationFactor": self.rng.randint(1, len(self.broker_ids)), "assignments": [],
                 "configs": []}
        body = {"topics": [topic], "timeoutMs": 5000, "validateOnly": False}
        self.client_write(ApiKey.CREATE_TOPICS, 5, body, "topics", on_ok)

    def random_write(self) -> None:
        rng, n = self.rng, self.stats["writes_sent"]
        self.stats["writes_sent"] += 1
        kind = rng.random()
        topics = self.workload_topics
        if kind < 0.4 or not topics:
            name = f"t{n}"
            self.create_topic(name, lambda: topics.append(name))
        elif kind < 0.7:
            target = rng.choice([*topics, *INITIAL_TOPICS])
            op = {"name": "retention.ms", "configOperation": 0, "value": str(rng.randint(1, 9) * 3_600_000)}
            body = {"resources": [{"resourceType": 2, "resourceName": target, "configs": [op]}],
                    "validateOnly": False}
            self.client_write(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, "responses")
        elif kind < 0.85:
            acl = {"resourceType": int(AclResourceType.TOPIC), "resourceName": rng.choice(topics),
                   "resourcePatternType": int(AclPatternType.LITERAL), "principal": f"User:u{n}", "host": "*",
                   "operation": int(AclOperation.WRITE), "permissionType": int(AclPermissionType.ALLOW)}
            self.client_write(ApiKey.CREATE_ACLS, 2, {"creations": [acl]}, "results")
        else:
            name = topics.pop(rng.randrange(len(topics)))
            self.client_write(ApiKey.DELETE_TOPICS, 5, {"topicNames": [name], "timeoutMs": 5000}, "responses")

    # ------------------------------------------------------------------ faults
    def fault(self, kind: str) -> None:
        rng, zk = self.rng, self.zk
        self.stats[f"fault_{kind}"] += 1
        self.cluster.note(f"fault: {kind}")
        if kind == "zk_outage":
            zk.reachable = False
            self.at(self.now + rng.randint(500, 3 * self.mconfig.max_lag_ms), self._zk_back)
        elif kind == "zk_expire":
            zk.expire_sessions()
        elif kind == "zk_slow":
            zk.latency_ms = rng.choice((50, 200, 600))
            self.at(self.now + rng.randint(1000, 5000), self._zk_back)
        elif kind == "leader_crash":
            leader = self.leader()
            if leader in self.cluster_voters:
                self.crash(leader, rng.randint(500, 3000))
        elif kind == "leader_pause":
            leader = self.leader()
            if leader in self.cluster_voters:
                if rng.random() < 0.7:
                    zk.latency_ms = rng.choice((50, 200))
                    self.at(self.now + rng.randint(500, 2000), self._zk_back)
                self.at(self.now + rng.randint(0, 300), lambda: self.cluster.pause(leader))
                self.at(self.now + rng.randint(2000, 6000), lambda: self.cluster.resume(leader))
        elif kind == "leader_isolate":
            if rng.random() < 0.5:  # the same network trouble slows ZooKeeper down
                zk.latency_ms = rng.choice((200, 600, 1500))
                self.at(self.now + rng.randint(2000, 6000), self._zk_back)
            self.isolate_leader(rng.randint(1000, 4000))
        else:
            self.crash(rng.choice(self.broker_ids), rng.randint(500, 3000))

    def _zk_back(self) -> None:
        self.zk.reachable, self.zk.latency_ms = True, 0

    def schedule(self) -> None:
        rng, end, events = self.rng, self.mconfig.fault_ms, self.mconfig.events
        for t in sorted(rng.randint(2000, end) for _ in range(events * 4)):
            self.at(t, self.random_write)
        for t in sorted(rng.randint(3000, end - 1000) for _ in range(events)):
            kind = rng.choice(FAULTS)
            self.at(t, lambda kind=kind: self.fault(kind))  # type: ignore[misc]

    # ------------------------------------------------------------------ heal and converge
    def run(self) -> None:
        self.schedule()
        self.run_until(self.mconfig.fault_ms)
        self._zk_back()
        self.run_until_converged()
        self.converge_migration()

    def _leader_host(self) -> MigrationHost | None:
        leader = self.leader()
        m = self.machine(leader) if leader in self.cluster_voters else None
        return m if isinstance(m, MigrationHost) else None

    def _wait_zk_caught_up(self, what: str) -> MigrationHost:
        """Run until ZooKeeper holds everything the active controller committed."""
        assert self.healed_at is not None
        deadline = self.now + self.mconfig.convergence_bound_ms
        while True:
            m = self._leader_host()
            if m is not None and m.controller is not None and m.driver is not None and \
                    m.driver.state is MigrationDriverState.DUAL_WRITE and \
                    self.mchecker.zk_offset() >= m.controller.last_committed_offset:
                return m
            if self.now > deadline:
                driver = None if m is None else m.driver
                state = "no active controller" if m is None or driver is None else (
                    f"controller {m.nid} in {driver.state.name}, last error {driver.last_error}")
                raise InvariantViolation(CONVERGENCE_INVARIANT, f"{what}: ZooKeeper at offset "
                                         f"{self.mchecker.zk_offset()}, committed "
                                         f"{self.mchecker.committed_end}; {state}")
            self.run_until(self.now + TICK_MS)

    def converge_migration(self) -> None:
        self._wait_zk_caught_up("after the heal")
        self.final_phase = True
        done: list[bool] = []
        self.create_topic("after-heal", lambda: done.append(True))
        deadline = self.now + CLIENT_DEADLINE_MS + 5000
        while not done and self.now < deadline:
            self.run_until(self.now + TICK_MS)
        if not done:
            raise InvariantViolation(WRITES_RESUME_INVARIANT, "a CreateTopics after the heal was not "
                                     "accepted within the client's deadline")
        m = self._wait_zk_caught_up("after a write")
        assert m.controller is not None and m.controller.image.metadata_version is not None
        reader = self.zk.connect(owner=-1000)
        try:
            self.mchecker.check_converged(m.controller.image, reader, m.controller.image.metadata_version)
        finally:
            reader.stop()
        self.mchecker.check_fencing()
        self.converged_at = self.now


def run_migration(config: MigrationConfig) -> MigrationResult:
    """Play one seed; never raises for a violation: it is in the result, with the replay command."""
    started = time.perf_counter()
    result = MigrationResult(config, ok=True)
    sim: MigrationSim | None = None
    try:
        sim = MigrationSim(config)
        sim.run()
    except InvariantViolation as exc:
        result.ok, result.invariant, result.violation = False, exc.invariant, exc.detail
    except KraftwerkError as exc:
        result.ok, result.invariant, result.violation = False, type(exc).__name__, str(exc)
    result.wall_s = time.perf_counter() - started
    if sim is not None:
        c = sim.cluster
        result.events = c.queue.executed
        result.virtual_ms = c.now
        if sim.converged_at is not None and sim.healed_at is not None:
            result.converged_ms = sim.converged_at - sim.healed_at
        result.stats = {**c.stats, **sim.stats, "writes_checked": sim.mchecker.writes_checked,
                        "max_lag_seen_ms": sim.mchecker.max_lag_seen_ms, "zk_commits": len(sim.zk.commits)}
        if not result.ok:
            result.trace_tail = [f"t={t} {text}" for t, text in c.trace]
    return result


def run_migration_seeds(base: MigrationConfig, start: int, count: int, *, keep_going: bool = False,
                        progress: Callable[[MigrationResult], None] | None = None
                        ) -> BatchSummary[MigrationResult]:
    configs = (replace(base, seed=seed) for seed in range(start, start + count))
    return play_seeds(configs, run_migration, keep_going=keep_going, progress=progress)
