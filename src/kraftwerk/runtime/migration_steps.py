"""The steps of a KIP-866 migration on a local ZooKeeper-mode cluster (``cluster up --zookeeper``),
as Kafka's documentation orders them: KRaft controllers in migration mode join, then the ZooKeeper
brokers are rolled with the migration flag and the controllers' quorum."""

from __future__ import annotations

from kraftwerk.runtime.errors import NodeError
from kraftwerk.runtime.local_cluster import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    ZK_BROKER_ROLE,
    LocalCluster,
    LocalNode,
    free_ports,
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
