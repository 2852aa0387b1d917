"""``kraftwerk cluster up|status|roll|down|add-controller|remove-controller``: a local cluster of
real node processes on loopback (``cluster rehearse`` lives in :mod:`kraftwerk.cli.rehearse_cmd`,
``cluster migrate`` in :mod:`kraftwerk.cli.cluster_migrate_cmd`).

``up`` formats every node (the storage layer's ``format_node``, what ``kraftwerk storage format``
runs; a dynamic quorum unless ``--static-quorum``), picks free ports, starts the processes detached
(pids in ``D/cluster.json``), waits until each is ready and prints the brokers' bootstrap list on
its last line. On a directory that already holds a cluster, ``up`` starts its stopped nodes again
(same ids, ports and data) instead of formatting. A broker whose software
cannot support the finalized features stays fenced (the controller refuses its registration):
``up`` does not wait for it forever; it reports it with Kafka's refusal text and exits 1, leaving
the cluster running so that ``roll --node N --software-version S`` can fix it. ``status`` asks
every node for ApiVersions (software version, finalized features and their epoch). ``roll``
restarts nodes one at a time on another software version. ``down`` sends SIGTERM and SIGKILLs
what is still running after the grace period. ``add-controller`` formats and starts one more
controller and adds it to the voters with AddRaftVoter; ``remove-controller`` removes one with
RemoveRaftVoter and stops it (KIP-853; a static quorum answers with Kafka's errors).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftwerk.cli.args import (
    directory_id,
    input_dir,
    input_file,
    key_value,
    node_software_version,
    non_negative_float,
    non_negative_int,
    output_dir,
    positive_float,
    positive_int,
    release_version,
    software_version,
)
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.protocol.json_form import uuid_to_str

if TYPE_CHECKING:
    from kraftwerk.runtime.local_cluster import LocalCluster, LocalNode


def register(groups: Any) -> None:
    parser = groups.add_parser("cluster", help="run a local cluster of real processes on loopback")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    up = commands.add_parser("up", help="format and start a local cluster")
    up.add_argument("--dir", required=True, type=output_dir, help="the cluster's directory")
    up.add_argument("--controllers", type=positive_int, help="number of controllers (default 3)")
    up.add_argument("--brokers", type=non_negative_int, help="number of brokers (default 3)")
    up.add_argument("--release-version", "-r", type=release_version,
                    help="metadata.version to format at (default: latest stable)")
    up.add_argument("--zookeeper", action="store_true",
                    help="a ZooKeeper-mode cluster (Kafka 3.x, the starting point of a KIP-866 migration): a "
                         "real ZooKeeper and --brokers ZK-mode brokers (software 3.9 unless "
                         "--software-version), no KRaft controllers")
    up.add_argument("--static-quorum", action="store_true",
                    help="name the voters in controller.quorum.voters (kraft.version 0) instead of "
                         "formatting the controllers with --initial-controllers (a dynamic quorum, "
                         "kraft.version 1)")
    up.add_argument("--software-version", type=software_version,
                    help="the Kafka release every node's software acts as (kraftwerk.software.version; "
                         "default: this software)")
    up.add_argument("--node-software-version", action="append", type=node_software_version, default=[],
                    metavar="ID=VERSION", help="run node ID on another software version (repeatable)")
    up.add_argument("--config", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                    help="a server.properties setting for every node started (repeatable; kept for later "
                         "restarts)")
    up.add_argument("--timeout", type=positive_float, default=60.0,
                    help="seconds to wait for readiness (default 60)")
    add_output_flag(up)
    up.set_defaults(func=_up)
    roll = commands.add_parser(
        "roll", help="restart nodes one at a time on another software version (a rolling upgrade)",
        description="Restart nodes one at a time (SIGTERM, wait for the exit, start, wait until ready) with "
                    "kraftwerk.software.version set to --software-version: standby controllers first, then "
                    "the active controller, then brokers, or the --node ids in the order given.")
    roll.add_argument("--dir", required=True, type=input_dir)
    roll.add_argument("--software-version", type=software_version,
                      help="the Kafka release the restarted nodes' software acts as "
                           "('latest': this software; default: each node keeps its own)")
    roll.add_argument("--config", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                      help="a server.properties setting for the restarted nodes (repeatable)")
    roll.add_argument("--node", type=non_negative_int, action="append", default=[], metavar="ID",
                      help="restart only this node (repeatable; default: every node)")
    roll.add_argument("--timeout", type=positive_float, default=60.0,
                      help="seconds to wait for each node (default 60)")
    roll.add_argument("--grace", type=non_negative_float, default=10.0,
                      help="seconds before SIGKILL (default 10)")
    add_output_flag(roll)
    roll.set_defaults(func=_roll)
    status = commands.add_parser("status", help="show each node, its role, software and finalized features")
    status.add_argument("--dir", required=True, type=input_dir)
    add_command_config_flag(status)
    add_output_flag(status)
    status.set_defaults(func=_status)
    down = commands.add_parser("down", help="stop every node (SIGTERM, then SIGKILL)")
    down.add_argument("--dir", required=True, type=input_dir)
    down.add_argument("--grace", type=non_negative_float, default=10.0,
                      help="seconds before SIGKILL (default 10)")
    down.set_defaults(func=_down)
    add = commands.add_parser(
        "add-controller", help="start one more controller and add it to the voters (AddRaftVoter)",
        description="Format a new controller with --no-initial-controllers, start it (it catches up as an "
                    "observer), then add it to the KRaft voters with AddRaftVoter, as "
                    "kafka-metadata-quorum.sh add-controller does.")
    add.add_argument("--dir", required=True, type=input_dir)
    add.add_argument("--timeout", type=positive_float, default=60.0, help="seconds to wait (default 60)")
    add_command_config_flag(add)
    add_output_flag(add)
    add.set_defaults(func=_add_controller)
    remove = commands.add_parser(
        "remove-controller", help="remove a controller from the voters (RemoveRaftVoter) and stop it",
        description="Remove a controller from the KRaft voters with RemoveRaftVoter, as "
                    "kafka-metadata-quorum.sh remove-controller does, then stop its process.")
    remove.add_argument("--dir", required=True, type=input_dir)
    remove.add_argument("--controller-id", "-i", type=non_negative_int, required=True,
                        help="the id of the controller")
    remove.add_argument("--controller-directory-id", "-d", type=directory_id,
                        help="its metadata directory id (default: read from its meta.properties)")
    add_command_config_flag(remove)
    add_output_flag(remove)
    remove.set_defaults(func=_remove_controller)
    from kraftwerk.cli.cluster_migrate_cmd import register_command as register_migrate
    from kraftwerk.cli.rehearse_cmd import register_command

    register_command(commands)
    register_migrate(commands)


def add_command_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--command-config", type=input_file,
                        help="client settings (security.protocol, sasl.*, ssl.* trust store) for every node; "
                             "default: each node's listener as its own server.properties secures it")


def _up(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import STATE_FILE, LocalCluster, format_cluster, plan_cluster
    from kraftwerk.storage.format import random_cluster_id
    from kraftwerk.versions.software import SoftwareVersion

    root: Path = args.dir
    started = time.monotonic()
    if (root / STATE_FILE).exists():
        cluster = LocalCluster.load(root)
        _check_restart_flags(args, cluster)
        apply_configs(cluster, cluster.nodes, dict(args.config))
        restarted = True
    elif args.zookeeper:
        cluster = _plan_zookeeper_mode(args, root)
        restarted = False
    else:
        software = None if args.software_version == "latest" else args.software_version
        if args.release_version is not None:  # refused before anything is written, as format would
            bounds = SoftwareVersion.for_release(software) if software else SoftwareVersion.latest()
            bounds.parse_metadata_version(args.release_version)
        cluster = plan_cluster(root.resolve(), random_cluster_id(),
                               3 if args.controllers is None else args.controllers,
                               3 if args.brokers is None else args.brokers,
                               software_version=software, static_quorum=args.static_quorum)
        for node_id, version in args.node_software_version:
            cluster.node(node_id).software_version = None if version == "latest" else version
        apply_configs(cluster, cluster.nodes, dict(args.config))
        format_cluster(cluster, args.release_version)  # refuses bad server.properties before writing
        root.mkdir(parents=True, exist_ok=True)
        cluster.save()
        restarted = False
    fenced = cluster.start_all(args.timeout)
    elapsed = time.monotonic() - started
    if fenced:
        for node_id, reason in sorted(fenced.items()):
            print(f"Broker {node_id} is fenced: {reason}", file=sys.stderr)
        ids = ", ".join(map(str, sorted(fenced)))
        raise NodeError(f"Broker(s) {ids} stay fenced because their software cannot support the finalized "
                        f"features; the other nodes are up in {root}. Restart them on newer software with "
                        f"`kraftwerk cluster roll --dir {root} --node ID --software-version VERSION`, "
                        f"or stop the cluster with `kraftwerk cluster down --dir {root}`.")
    quorum = "zookeeper" if cluster.zookeeper else ("static" if cluster.static_quorum else "dynamic")
    if args.output == "json":
        print_json({"clusterId": cluster.cluster_id, "restarted": restarted, "quorum": quorum,
                    "startupSeconds": round(elapsed, 3),
                    "bootstrapServers": cluster.bootstrap_servers,
                    "bootstrapControllers": cluster.bootstrap_controllers,
                    "zookeeper": cluster.zookeeper.connect_string if cluster.zookeeper else None,
                    "nodes": [{"nodeId": n.node_id, "roles": n.roles, "address": n.address, "pid": n.pid}
                              for n in cluster.nodes]})
        return 0
    print(f"Cluster {cluster.cluster_id} is {'back ' if restarted else ''}up in {root} "
          f"({len(cluster.controllers)} controller(s), {len(cluster.brokers)} broker(s), {quorum} quorum, "
          f"{elapsed:.1f}s)")
    if cluster.zookeeper is not None:
        print(f"ZooKeeper: {cluster.zookeeper.connect_string}")
    else:
        print(f"Controllers: {cluster.bootstrap_controllers}")
    print(cluster.bootstrap_servers or cluster.bootstrap_controllers)
    return 0


def _plan_zookeeper_mode(args: argparse.Namespace, root: Path) -> LocalCluster:
    """A new ZooKeeper-mode cluster: brokers on software 3.x, nothing formatted (ZK-mode brokers
    write their meta.properties themselves)."""
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import ZK_SOFTWARE_VERSION, plan_zk_cluster
    from kraftwerk.storage.format import random_cluster_id
    from kraftwerk.versions.software import SoftwareVersion

    refused = [flag for flag, value in (("--controllers", args.controllers), ("--release-version",
               args.release_version), ("--static-quorum", args.static_quorum or None)) if value is not None]
    if refused:
        raise NodeError(f"{', '.join(refused)} cannot be used with --zookeeper: a ZooKeeper-mode cluster "
                        "has no KRaft controllers and no metadata.version")
    software = args.software_version if args.software_version not in (None, "latest") else ZK_SOFTWARE_VERSION
    if not SoftwareVersion.for_release(software).release.startswith("3."):
        raise NodeError(f"ZooKeeper mode was removed in Kafka 4.0: --software-version {software} cannot run "
                        "a ZooKeeper-mode cluster")
    brokers = 3 if args.brokers is None else args.brokers
    cluster = plan_zk_cluster(root.resolve(), random_cluster_id(), brokers, software_version=software)
    for node_id, version in args.node_software_version:
        cluster.node(node_id).software_version = version
    apply_configs(cluster, cluster.nodes, dict(args.config))
    root.mkdir(parents=True, exist_ok=True)
    cluster.save()
    return cluster


def apply_configs(cluster: LocalCluster, nodes: Sequence[LocalNode], configs: Mapping[str, str]) -> None:
    """Set ``--config`` values in the nodes' ``server.properties`` overrides (kept in the cluster
    state), after checking each node's resulting config as the node itself would: a value its
    config refuses fails here, before any node is touched."""
    from kraftwerk.config import parse_broker_config
    from kraftwerk.runtime.local_cluster import ZK_BROKER_ROLE
    from kraftwerk.runtime.zk_config import ZkServerConfig

    if not configs:
        return
    for node in nodes:
        props = {**cluster.properties(node), **configs}
        if node.roles == ZK_BROKER_ROLE and cluster.zookeeper is not None and cluster.zookeeper.port:
            ZkServerConfig.from_properties(props)  # (before `up` starts ZooKeeper its address is unknown)
        else:
            parse_broker_config(props)
    for node in nodes:
        node.extra.update(configs)


def _check_restart_flags(args: argparse.Namespace, cluster: LocalCluster) -> None:
    """A second ``up`` brings the same cluster back: flags that would change it are refused."""
    from kraftwerk.runtime.errors import NodeError

    changes = []
    if args.controllers is not None and args.controllers != len(cluster.controllers):
        changes.append(f"--controllers {args.controllers}")
    if args.brokers is not None and args.brokers != len(cluster.brokers):
        changes.append(f"--brokers {args.brokers}")
    if args.static_quorum and not cluster.static_quorum:
        changes.append("--static-quorum")
    for flag, value in (("--release-version", args.release_version),
                        ("--software-version", args.software_version)):
        if value is not None:
            changes.append(f"{flag} {value}")
    if args.node_software_version:
        changes.append("--node-software-version")
    if changes:
        raise NodeError(f"{cluster.root} already holds cluster {cluster.cluster_id}: `cluster up` starts it "
                        f"again as it is and cannot apply {', '.join(changes)} (use `kraftwerk cluster roll` "
                        "to change software, or another --dir for a new cluster)")


def _status(args: argparse.Namespace) -> int:
    from kraftwerk.cli.features_cmd import command_config_security
    from kraftwerk.runtime.errors import NetworkError
    from kraftwerk.runtime.local_cluster import LocalCluster, ask_api_versions, pid_alive
    from kraftwerk.runtime.metrics import migration_summary, scrape

    cluster = LocalCluster.load(args.dir)
    given = command_config_security(args.command_config)
    rows: list[dict[str, Any]] = []
    migration: dict[str, Any] | None = None
    for node in cluster.nodes:
        alive = node.pid is not None and pid_alive(node.pid)
        info = cluster.ready_info(node) if alive else None
        refused = cluster.fenced_info(node) if alive and info is None else None
        security = given if given is not None else cluster.client_security(node)
        body, no_answer = None, None
        if alive:
            try:
                body = ask_api_versions(node.address, 2.0, security)
            except NetworkError as exc:
                no_answer = str(exc)
        finalized = {f["name"]: f["maxVersionLevel"] for f in (body or {}).get("finalizedFeatures", [])}
        state = "ready" if info else ("fenced" if refused else ("starting" if alive else "stopped"))
        gauges = scrape("127.0.0.1", info["metricsPort"]) if info and info.get("metricsPort") else None
        migration = migration or (migration_summary(gauges) if gauges else None)
        rows.append({
            "nodeId": node.node_id, "roles": node.roles, "address": node.address, "pid": node.pid,
            "state": state,
            "softwareVersion": (info or refused or {}).get("softwareVersion", node.software_version),
            "finalizedFeaturesEpoch": (body or {}).get("finalizedFeaturesEpoch"),
            "finalizedFeatures": finalized,
            "reason": (refused or {}).get("reason"),
            "noAnswer": no_answer,
        })
    zookeeper = None
    if cluster.zookeeper is not None:
        running = cluster.zookeeper.pid is not None and pid_alive(cluster.zookeeper.pid)
        zookeeper = {"connect": cluster.zookeeper.connect_string, "pid": cluster.zookeeper.pid,
                     "state": "running" if running else "stopped"}
    if args.output == "json":
        print_json({"clusterId": cluster.cluster_id, "zookeeper": zookeeper, "nodes": rows,
                    "migration": migration})
        return 0
    print(f"Cluster {cluster.cluster_id} in {args.dir}")
    if zookeeper is not None:
        print(f"ZooKeeper: {zookeeper['connect']}\tState: {zookeeper['state']}")
    if migration is not None:
        print("ZooKeeper migration: " + ", ".join(f"{k}={v}" for k, v in migration.items()))
    for r in rows:
        levels: dict[str, int] = r["finalizedFeatures"]
        feats = ", ".join(f"{k}={v}" for k, v in sorted(levels.items())) or "-"
        print(f"NodeId: {r['nodeId']}\tRoles: {r['roles']}\tAddress: {r['address']}\tState: {r['state']}\t"
              f"SoftwareVersion: {r['softwareVersion'] or 'latest'}\tEpoch: {r['finalizedFeaturesEpoch']}\t"
              f"FinalizedFeatures: {feats}" + (f"\tReason: {r['reason']}" if r["reason"] else "")
              + (f"\tNoAnswer: {r['noAnswer']}" if r["noAnswer"] else ""))
    return 0


def _roll(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster

    software = None if args.software_version == "latest" else args.software_version
    cluster = LocalCluster.load(args.dir)
    apply_configs(cluster, cluster.roll_order(args.node), dict(args.config))
    restarted: list[dict[str, Any]] = []

    def report(node: LocalNode, seconds: float) -> None:
        version = node.software_version or "latest"
        restarted.append({"nodeId": node.node_id, "roles": node.roles, "softwareVersion": version,
                          "seconds": round(seconds, 3)})
        if args.output != "json":
            print(f"Restarted node {node.node_id} ({node.roles}) on software {version} in {seconds:.1f}s",
                  flush=True)

    cluster.roll(software, args.node, timeout_s=args.timeout, grace_s=args.grace, on_restart=report,
                 keep_software=args.software_version is None)
    if args.output == "json":
        print_json({"restarted": restarted})
    return 0


def _down(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster

    cluster = LocalCluster.load(args.dir)
    # Brokers first, and only then the controllers: a broker's controlled shutdown is a heartbeat
    # that the active controller answers (Kafka's shouldShutDown), so the quorum must outlive it.
    killed = cluster.stop(cluster.brokers, grace_s=args.grace)
    killed += cluster.stop([n for n in cluster.nodes if not n.is_broker], grace_s=args.grace)
    if cluster.zookeeper is not None:
        cluster.zookeeper.stop(args.grace)
        cluster.save()
    print(f"Stopped {len(cluster.nodes)} node(s){' and ZooKeeper' if cluster.zookeeper else ''} in {args.dir}"
          + (f"; killed after {args.grace:g}s: {', '.join(map(str, killed))}" if killed else ""))
    return 0


def _add_controller(args: argparse.Namespace) -> int:
    from kraftwerk.cli.features_cmd import command_config_security
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import (
        CONTROLLER_LISTENER,
        HOST,
        LocalCluster,
        add_controller_node,
        free_ports,
        metadata_directory_id,
    )
    from kraftwerk.storage.format import random_uuid

    cluster = LocalCluster.load(args.dir)
    security = command_config_security(args.command_config)
    if cluster.static_quorum:
        # Kafka's answer comes from the leader before any node would be started: a static quorum
        # (kraft.version 0) cannot change its voters
        node_id, (port,), dir_id = max(n.node_id for n in cluster.nodes) + 1, free_ports(1), random_uuid()
    else:
        node = add_controller_node(cluster)
        cluster.start(node)
        cluster.wait_ready([node], args.timeout)
        node_id, port, dir_id = node.node_id, node.port, metadata_directory_id(cluster, node)
    endpoints = [(CONTROLLER_LISTENER, HOST, port)]
    with cluster.controller_admin(security=security, api_timeout_s=args.timeout) as admin:
        result = admin.add_raft_voter(node_id, dir_id, endpoints, timeout_ms=int(args.timeout * 1000))
    if not result.ok:
        raise NodeError(result.describe())
    shown = ", ".join(f"{n}://{h}:{p}" for n, h, p in endpoints)
    if args.output == "json":
        print_json({"added": node_id, "directoryId": uuid_to_str(dir_id), "endpoints": shown})
    else:
        print(f"Added controller {node_id} with directory id {uuid_to_str(dir_id)} and endpoints: {shown}")
    return 0


def _remove_controller(args: argparse.Namespace) -> int:
    from kraftwerk.cli.features_cmd import command_config_security
    from kraftwerk.protocol.json_form import uuid_from_str
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import LocalCluster, metadata_directory_id

    cluster = LocalCluster.load(args.dir)
    node = cluster.node(args.controller_id)
    if not node.is_controller:
        raise NodeError(f"Node {node.node_id} is not a controller")
    if args.controller_directory_id is not None:
        try:
            dir_id = uuid_from_str(args.controller_directory_id)
        except Exception:  # the codec's error type is an implementation detail
            raise NodeError(f"Invalid directory id {args.controller_directory_id!r}") from None
    else:
        dir_id = metadata_directory_id(cluster, node)
    with cluster.controller_admin(security=command_config_security(args.command_config)) as admin:
        result = admin.remove_raft_voter(node.node_id, dir_id)
    if not result.ok:
        raise NodeError(result.describe())
    cluster.stop([node])
    cluster.nodes.remove(node)
    cluster.save()
    if args.output == "json":
        print_json({"removed": node.node_id, "directoryId": uuid_to_str(dir_id)})
    else:
        print(f"Removed KRaft controller {node.node_id} with directory id {uuid_to_str(dir_id)}")
    return 0
