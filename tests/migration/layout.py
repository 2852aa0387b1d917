"""Kafka 3.x's ZooKeeper layout, written the way a 3.9 ZK-mode cluster writes it (the JSON of
``ZkData.scala``, as ``reference/zookeeper-layout.md`` records it), for tests and fleet dumps.

A :class:`Layout` is a list of znodes to create (parents first), each with how many times its data
was set after creation (a partition state's dataVersion is its partition epoch). It is written to a
real ZooKeeper with kazoo, or turned into a :class:`ZkTree` with made-up but consistent stats.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.migration.encode import kafka_uuid
from kraftwerk.migration.tree import ZkTree, Znode, ZnodeStat

#: Paths every 3.x broker creates with null data (KafkaZkClient.createTopLevelPaths).
PERSISTENT_PATHS = ("/consumers", "/brokers", "/brokers/ids", "/brokers/topics", "/brokers/seqid", "/config",
                    "/config/changes", "/admin", "/admin/delete_topics", "/isr_change_notification",
                    "/latest_producer_id_block", "/log_dir_event_notification", "/config/topics",
                    "/config/clients", "/config/users", "/config/brokers", "/config/ips", "/cluster")


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass
class Spec:
    path: str
    data: bytes | None
    ephemeral: bool = False
    sequential: bool = False
    updates: int = 0


@dataclass
class Layout:
    specs: list[Spec] = field(default_factory=list)
    _paths: set[str] = field(default_factory=set)
    _changes: int = 0

    def put(self, path: str, data: bytes | None, *, ephemeral: bool = False, updates: int = 0) -> None:
        parent = path.rsplit("/", 1)[0]
        if parent and parent not in self._paths:
            self.put(parent, None)
        if path in self._paths:
            for s in self.specs:
                if s.path == path:
                    s.data, s.updates = data, s.updates + 1
            return
        self._paths.add(path)
        self.specs.append(Spec(path, data, ephemeral, updates=updates))

    def _change(self, entity_path: str) -> None:
        """A config change notification (ZK sequential node), as AdminZkClient writes it."""
        self.specs.append(Spec(f"/config/changes/config_change_{self._changes:010d}",
                               _json({"version": 2, "entity_path": entity_path}), sequential=True))
        self._changes += 1

    # ------------------------------------------------------------------ Kafka's znodes

    def cluster(self, cluster_id: str, controller: int = 1, controller_epoch: int = 1) -> Layout:
        for p in PERSISTENT_PATHS:
            self.put(p, None)
        self.put("/cluster/id", _json({"version": "1", "id": cluster_id}))
        self.put("/controller_epoch", str(controller_epoch).encode(), updates=controller_epoch)
        self.put("/controller", _json({"version": 2, "brokerid": controller, "timestamp": "1700000000000",
                                       "kraftControllerEpoch": -1}), ephemeral=True)
        self.put("/feature", _json({"features": {}, "version": 2, "status": 1}))
        return self

    def broker(self, broker_id: int, *, version: int = 5, rack: str | None = None,
               migration: dict[str, Any] | None = None) -> Layout:
        host, port = f"b{broker_id}.example", 9092
        reg: dict[str, Any] = {"features": {}, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                               "endpoints": [f"PLAINTEXT://{host}:{port}"], "jmx_port": -1, "port": port,
                               "host": host, "version": version, "timestamp": "1700000000000"}
        if version < 5:
            del reg["features"]
        if rack is not None:
            reg["rack"] = rack
        if migration is not None:
            reg["kraftMigration"] = migration
        self.put(f"/brokers/ids/{broker_id}", _json(reg), ephemeral=True)
        return self

    def topic(self, name: str, assignment: dict[int, list[int]], *, topic_id: uuid.UUID | None,
              leader_epoch: int = 0, partition_epoch: int = 0, isr: dict[int, list[int]] | None = None,
              adding: dict[int, list[int]] | None = None, recovering: tuple[int, ...] = (),
              states: bool = True) -> Layout:
        znode: dict[str, Any] = {"partitions": {str(p): r for p, r in assignment.items()},
                                 "adding_replicas": {str(p): r for p, r in (adding or {}).items()},
                                 "removing_replicas": {}, "version": 3}
        if topic_id is not None:
            znode["topic_id"] = kafka_uuid(topic_id)
        else:
            znode["version"] = 2
        self.put(f"/brokers/topics/{name}", _json(znode))
        self.put(f"/brokers/topics/{name}/partitions", None)
        for p, replicas in assignment.items():
            self.put(f"/brokers/topics/{name}/partitions/{p}", None)
            if not states:
                continue
            state: dict[str, Any] = {"controller_epoch": 1, "leader": replicas[0], "version": 1,
                                     "leader_epoch": leader_epoch, "isr": (isr or {}).get(p, replicas)}
            if p in recovering:
                state["leader_recovery_state"] = 1
            self.put(f"/brokers/topics/{name}/partitions/{p}/state", _json(state), updates=partition_epoch)
        return self

    def config(self, entity_type: str, entity: str, config: dict[str, str]) -> Layout:
        self.put(f"/config/{entity_type}/{entity}", _json({"version": 1, "config": config}))
        self._change(f"{entity_type}/{entity}")
        return self

    def acl(self, resource_type: str, name: str, entries: list[dict[str, str]], *, prefixed: bool = False
            ) -> Layout:
        store = "/kafka-acl-extended/prefixed" if prefixed else "/kafka-acl"
        self.put(f"{store}/{resource_type}/{name}", _json({"version": 1, "acls": entries}))
        return self

    def producer_ids(self, broker: int, start: int) -> Layout:
        block = {"version": 1, "broker": broker, "block_start": str(start), "block_end": str(start + 999)}
        self.put("/latest_producer_id_block", _json(block))
        return self

    def delete_topic(self, name: str) -> Layout:
        self.put(f"/admin/delete_topics/{name}", None)
        return self

    # ------------------------------------------------------------------ outputs

    def tree(self) -> ZkTree:
        """The tree ZooKeeper would hold, with stats numbered in creation order."""
        nodes = [Znode("/", None, ZnodeStat())]
        for zxid, s in enumerate(self.specs, 1):
            nodes.append(Znode(s.path, s.data, ZnodeStat(
                czxid=zxid, mzxid=zxid + s.updates, ctime=1700000000000 + zxid, mtime=1700000000000 + zxid,
                version=s.updates, ephemeral_owner=0x1234 if s.ephemeral else 0,
                data_length=len(s.data or b""), pzxid=zxid)))
        return ZkTree(nodes)

    def write(self, client: Any) -> None:
        """Create every znode through a kazoo client (ephemeral ones live as long as its session)."""
        for s in self.specs:
            data = s.data or b""
            if s.sequential:
                client.create(s.path.rsplit("_", 1)[0] + "_", data, sequence=True)
                continue
            client.create(s.path, data, ephemeral=s.ephemeral)
            for _ in range(s.updates):
                client.set(s.path, data)


def sample_layout(cluster_id: str = "MkU3OEVBNTcwNTJENDM2Qk") -> tuple[Layout, dict[str, uuid.UUID]]:
    """A 3-broker 3.9 cluster with several topics (ids, configs, a recovering partition), a broker default
    config, a per-broker config, SCRAM and quotas for users and clients, literal and prefixed ACLs and a
    producer id block. Returns the layout and the topic ids."""
    ids = {name: uuid.uuid5(uuid.NAMESPACE_URL, f"kraftwerk-test/{name}") for name in ("orders", "payments",
                                                                                     "audit")}
    layout = Layout().cluster(cluster_id)
    for b in (1, 2, 3):
        layout.broker(b, rack=f"r{b}")
    layout.topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, topic_id=ids["orders"], leader_epoch=4,
                 partition_epoch=6, isr={1: [2, 3]})
    layout.topic("payments", {0: [2, 1]}, topic_id=ids["payments"], recovering=(0,))
    layout.topic("audit", {0: [3], 1: [1]}, topic_id=ids["audit"], partition_epoch=1)
    layout.config("topics", "orders", {"retention.ms": "86400000", "cleanup.policy": "compact"})
    layout.config("topics", "audit", {"min.insync.replicas": "1"})
    layout.config("brokers", "<default>", {"log.cleaner.threads": "2"})
    layout.config("brokers", "2", {"log.retention.bytes": "1073741824"})
    layout.config("users", "alice", {
        "SCRAM-SHA-256": "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
        "producer_byte_rate": "1048576"})
    layout.config("users", "<default>", {"consumer_byte_rate": "2097152"})
    layout.config("clients", "reporting", {"request_percentage": "25"})
    layout.config("users", "bob%40EX.COM/clients/app1", {"producer_byte_rate": "4096"})
    layout.acl("Topic", "orders", [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"},
        {"principal": "User:bob", "permissionType": "Deny", "operation": "Write", "host": "10.0.0.1"}])
    layout.acl("Cluster", "kafka-cluster", [
        {"principal": "User:admin", "permissionType": "Allow", "operation": "ClusterAction", "host": "*"}])
    layout.acl("Group", "app-", [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}],
        prefixed=True)
    layout.producer_ids(1, 5000)
    return layout, ids


@dataclass(frozen=True)
class FleetCluster:
    """One generated cluster of a fleet and the blockers it was built with."""

    name: str
    lines: list[str]
    blockers: frozenset[str]


def fleet(count: int, seed: int = 7) -> list[FleetCluster]:
    """``count`` clusters of varied size and readiness (KIP-866 v6 registrations, so each blocker is
    known from the tree alone); every 50th dump is unreadable. Deterministic for a seed."""
    import random

    from kraftwerk.migration.tree import dump_lines

    rng = random.Random(seed)
    out = []
    for i in range(count):
        name = f"cluster-{i:04d}"
        if i % 50 == 49:
            out.append(FleetCluster(name, ['{"path":"/"}', "not json"], frozenset({"dump"})))
            continue
        brokers = list(range(1, rng.randint(1, 6) + 1))
        layout = Layout().cluster(kafka_uuid(uuid.UUID(int=rng.getrandbits(128))))
        blockers: set[str] = set()
        off = rng.random() < 0.2 and len(brokers) > 1
        for b in brokers:
            ready = not (off and b == brokers[-1])
            ibp = rng.choice(["3.4", "3.6-IV1", "3.9"])
            layout.broker(b, version=6, migration={"isReady": ready, "ibp": ibp})
        if off:
            blockers.add("migration-enabled")
        for t in range(rng.randint(0, 12)):
            parts = {p: rng.sample(brokers, min(len(brokers), 3)) for p in range(rng.randint(1, 8))}
            layout.topic(f"t{t}", parts, topic_id=uuid.UUID(int=rng.getrandbits(128)),
                         partition_epoch=rng.randint(0, 3))
            if rng.random() < 0.3:
                layout.config("topics", f"t{t}", {"retention.ms": str(rng.randint(1, 10**9))})
        if rng.random() < 0.1:
            layout.topic("ghost", {0: [99]}, topic_id=uuid.UUID(int=i + 1))
            blockers.add("offline-brokers")
        if rng.random() < 0.1:
            layout.topic("doomed", {0: [brokers[0]]}, topic_id=uuid.UUID(int=10**6 + i))
            layout.delete_topic("doomed")
            blockers.add("pending-deletions")
        if rng.random() < 0.5:
            layout.acl("Topic", "t0", [{"principal": "User:app", "permissionType": "Allow",
                                        "operation": "Read", "host": "*"}])
        if rng.random() < 0.05:
            layout.put("/config/topics/t0", b'{"version":2,"config":{}}')
            blockers.add("znodes")
        out.append(FleetCluster(name, list(dump_lines(layout.tree())), frozenset(blockers)))
    return out
