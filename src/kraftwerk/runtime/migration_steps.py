"""The steps of a KIP-866 migration on a local ZooKeeper-mode cluster (``cluster up --zookeeper``),
as Kafka's documentation orders them: KRaft controllers in migration mode join, then the ZooKeeper
brokers are rolled with the migration flag and the controllers' quorum."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator

from kraftwerk.runtime.errors import NodeError
from kraftwerk.runtime.local_cluster import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    HOST,
    ZK_BROKER_ROLE,
    LocalCluster,
    LocalNode,
    free_ports,
    pid_alive,
)

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
FIRST_CONTROLLER_ID = 3000
"""KRaft controller ids must not collide with the brokers' (Kafka's documentation uses 3000)."""


def zk_brokers(cluster: LocalCluster) -> list[LocalNode]:
    return [n for n in cluster.nodes if n.roles == ZK_BROKER_ROLE]


def add_migration_controllers(cluster: LocalCluster, count: int = 3) -> list[LocalNode]:
    """Plan and format ``count`` KRaft controllers in migration mode (not started), with the
    ZooKeeper cluster's id and the brokers' ``inter.broker.protocol.version`` as metadata.version."""
    from kraftwerk.storage.format import format_node

    if cluster.zookeeper is None:
        raise NodeError(f"{cluster.root} is not a ZooKeeper-mode cluster (run `kraftwerk cluster up "
                        "--zookeeper`)")
    if cluster.controllers:
        return cluster.controllers
    brokers = zk_brokers(cluster)
    ibps = {cluster.properties(b)["inter.broker.protocol.version"] for b in brokers}
    if len(ibps) != 1:
        raise NodeError(f"The brokers run different inter.broker.protocol.version values ({sorted(ibps)}): "
                        "roll them to one before migrating")
    (ibp,) = ibps
    extra = {MIGRATION_FLAG: "true", "zookeeper.connect": cluster.zookeeper.connect_string}
    nodes = [LocalNode(FIRST_CONTROLLER_ID + i, "controller", port, brokers[0].software_version,
                       extra=dict(extra)) for i, port in enumerate(free_ports(count))]
    cluster.nodes.extend(nodes)
    cluster.static_quorum = True  # the ZooKeeper brokers name the voters (controller.quorum.voters)
    for node in nodes:
        cluster.write_config(node)
        data = node.data_dir(cluster.root)
        format_node(cluster_id=cluster.cluster_id, node_id=node.node_id, log_dirs=[data],
                    metadata_log_dir=data, release_version=ibp, controller_listener_name=CONTROLLER_LISTENER)
    cluster.save()
    return nodes


def broker_migration_configs(cluster: LocalCluster) -> dict[str, str]:
    """What a ZooKeeper broker needs to take part in the migration (Kafka's documented step 3)."""
    return {
        MIGRATION_FLAG: "true",
        "controller.quorum.voters": cluster.quorum_voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
    }


# ---------------------------------------------------------------------------- the whole procedure

PHASES = ("controllers", "brokers-migrating", "dual-write", "brokers-kraft", "finalize")
"""``cluster migrate``'s phases in order (``--to-phase`` names one)."""
PHASE_TEXT = {
    "controllers": "KRaft controllers in migration mode started",
    "brokers-migrating": "ZooKeeper brokers rolled with the migration flag and the controller quorum",
    "dual-write": "metadata migrated; the KRaft controller dual-writes to ZooKeeper",
    "brokers-kraft": "brokers rolled into KRaft mode",
    "finalize": "controllers rolled without the migration flag: migration finalized",
}
WAIT_S = 120.0


class MigrationPhaseError(NodeError):
    """A phase failed; the message names it."""

    def __init__(self, phase: str, reason: str) -> None:
        super().__init__(f"Migration phase {phase} failed: {reason}")
        self.phase = phase


def current_phase(cluster: LocalCluster) -> str | None:
    """The first phase the cluster has not completed (None: the migration is finalized), read from
    the cluster's own state, so that a second ``cluster migrate`` continues where the first stopped."""
    if not cluster.controllers:
        if cluster.zookeeper is None:
            raise NodeError(f"{cluster.root} is a KRaft cluster: there is nothing to migrate")
        return "controllers"
    if zk_brokers(cluster) and any(cluster.ready_info(c) is None for c in cluster.controllers):
        return "controllers"  # planned, or started but never seen ready
    brokers = zk_brokers(cluster)
    if any(b.extra.get(MIGRATION_FLAG) != "true" for b in brokers):
        return "brokers-migrating"
    if brokers:
        return "dual-write"
    if any(c.extra.get(MIGRATION_FLAG) == "true" for c in cluster.controllers):
        return "finalize"
    return None


def controller_gauges(cluster: LocalCluster) -> dict[str, float] | None:
    """The active KRaft controller's gauges (None while there is none)."""
    from kraftwerk.runtime.metrics import scrape

    active = cluster.active_controller()
    info = None if active is None else cluster.ready_info(cluster.node(active))
    if info is None or not info.get("metricsPort"):
        return None
    return scrape(HOST, info["metricsPort"])


def migration_state(cluster: LocalCluster) -> dict[str, str] | None:
    """The active controller's ZkMigrationState and driver state."""
    from kraftwerk.runtime.metrics import migration_summary

    gauges = controller_gauges(cluster)
    return migration_summary(gauges) if gauges else None


def run_phase(cluster: LocalCluster, phase: str, timeout_s: float = WAIT_S,
              progress: Callable[[str], None] = lambda _step: None) -> None:
    """Carry out one phase (each is idempotent: a phase cut short runs again from its start);
    ``progress`` hears what it is doing now (the broker it rolls, the migration state it waits on)."""
    try:
        if phase == "controllers":
            nodes = add_migration_controllers(cluster)
            for node in nodes:
                if node.pid is None or not pid_alive(node.pid):
                    cluster.start(node)
            progress(f"waiting for controllers {', '.join(str(n.node_id) for n in nodes)}")
            cluster.wait_ready(nodes, timeout_s)
        elif phase == "brokers-migrating":
            configs = broker_migration_configs(cluster)
            todo = [b for b in zk_brokers(cluster) if b.extra.get(MIGRATION_FLAG) != "true"]
            for broker in todo:
                progress(f"rolling broker {broker.node_id}")
                broker.extra.update(configs)
                cluster.roll(None, [broker.node_id], timeout_s=timeout_s, keep_software=True)
        elif phase == "dual-write":
            _wait(cluster, "MIGRATION", "DUAL_WRITE", timeout_s, progress)
        elif phase == "brokers-kraft":
            for broker in zk_brokers(cluster):
                progress(f"rolling broker {broker.node_id} into KRaft mode")
                _roll_into_kraft(cluster, broker, timeout_s)
        elif phase == "finalize":
            for controller in cluster.controllers:
                controller.extra[MIGRATION_FLAG] = "false"
            progress("rolling the controllers")
            cluster.roll(None, [c.node_id for c in cluster.roll_order() if c.is_controller],
                         timeout_s=timeout_s, keep_software=True)
            _wait(cluster, "POST_MIGRATION", None, timeout_s, progress)
        else:
            raise NodeError(f"unknown phase {phase}")
    except (NodeError, OSError) as exc:
        if isinstance(exc, MigrationPhaseError):
            raise
        raise MigrationPhaseError(phase, str(exc).splitlines()[0]) from None


def _roll_into_kraft(cluster: LocalCluster, broker: LocalNode, timeout_s: float) -> None:
    """A ZooKeeper broker restarts as a KRaft broker: same id, port and log dirs (its partitions stay)."""
    cluster.stop([broker])
    broker.roles = "broker"
    for key in (*broker_migration_configs(cluster), "zookeeper.connect", "zookeeper.session.timeout.ms"):
        broker.extra.pop(key, None)
    cluster.start(broker)
    fenced = cluster.wait_ready([broker], timeout_s)
    if fenced:
        raise NodeError(f"broker {broker.node_id} came back fenced in KRaft mode: {fenced[broker.node_id]}")


def _wait(cluster: LocalCluster, zk_state: str, driver_state: str | None, timeout_s: float,
          progress: Callable[[str], None]) -> None:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, str] | None = None
    while True:
        seen = migration_state(cluster)
        progress(", ".join(f"{k}={v}" for k, v in seen.items()) if seen else "no active controller yet")
        if seen is not None and seen.get("zkMigrationState") == zk_state and (
                driver_state is None or seen.get("driverState") == driver_state):
            return
        if time.monotonic() > deadline:
            raise NodeError(f"timed out after {timeout_s:g}s waiting for ZkMigrationState {zk_state}"
                            + (f" and driver state {driver_state}" if driver_state else "")
                            + f" (last seen: {seen or 'no active controller'})")
        time.sleep(0.2)


def rollback(cluster: LocalCluster, timeout_s: float = WAIT_S) -> Iterator[tuple[str, str]]:
    """Back to ZooKeeper mode before finalization, in the order Kafka's documentation gives: brokers
    already in KRaft mode back to ZooKeeper mode (still migrating), the KRaft controllers stopped
    and deprovisioned, ``/controller`` and ``/migration`` deleted (a ZooKeeper broker becomes the
    controller again), then the brokers rolled without the migration configs. What was dual-written
    stays in ZooKeeper. Yields (phase, text) as each step completes."""
    if cluster.zookeeper is None:
        raise NodeError(f"{cluster.root} is not a ZooKeeper-mode cluster: there is nothing to roll back")
    if current_phase(cluster) is None:
        raise NodeError("The migration is finalized (POST_MIGRATION): it cannot be rolled back")
    try:
        kraft_brokers = [n for n in cluster.nodes if n.roles == "broker"]
        if kraft_brokers:
            configs = broker_migration_configs(cluster)
            for broker in kraft_brokers:
                cluster.stop([broker])
                broker.roles = ZK_BROKER_ROLE
                broker.extra.update(configs)
                cluster.start(broker)
                cluster.wait_ready([broker], timeout_s)
            yield "brokers-zookeeper", "brokers rolled back into ZooKeeper mode"
        controllers = cluster.controllers
        cluster.stop(controllers)
        for node in controllers:
            cluster.nodes.remove(node)
            shutil.rmtree(node.directory(cluster.root), ignore_errors=True)
        cluster.static_quorum = False
        cluster.save()
        yield "controllers", "KRaft controllers stopped and deprovisioned"
        _delete_migration_znodes(cluster.zookeeper.connect_string)
        yield "znodes", "/controller and /migration deleted"
        for broker in zk_brokers(cluster):
            for key in broker_migration_configs(cluster):
                broker.extra.pop(key, None)
            cluster.roll(None, [broker.node_id], timeout_s=timeout_s, keep_software=True)
        yield "brokers", "brokers rolled without the migration flag: the cluster runs in ZooKeeper mode"
    except (NodeError, OSError) as exc:
        raise MigrationPhaseError("rollback", str(exc).splitlines()[0]) from None


def _delete_migration_znodes(connect_text: str) -> None:
    from kazoo.exceptions import NoNodeError

    from kraftwerk.migration.reader import connect

    with connect(connect_text, 30.0) as client:
        for path in ("/controller", "/migration"):
            with contextlib.suppress(NoNodeError):
                client.delete(path)
