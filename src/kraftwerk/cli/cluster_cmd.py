"""``kraftwerk cluster up|status|roll|down``: a local cluster of real node processes on loopback.

``up`` formats every node (the storage layer's ``format_node``, what ``kraftwerk storage format``
runs), picks free ports, starts the processes detached (pids in ``D/cluster.json``), waits until
each is ready and prints the brokers' bootstrap list on its last line. A broker whose software
cannot support the finalized features stays fenced (the controller refuses its registration):
``up`` does not wait for it forever; it reports it with Kafka's refusal text and exits 1, leaving
the cluster running so that ``roll --node N --software-version S`` can fix it. ``status`` asks
every node for ApiVersions (software version, finalized features and their epoch). ``roll``
restarts nodes one at a time on another software version. ``down`` sends SIGTERM and SIGKILLs
what is still running after the grace period.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import (
    input_dir,
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


def register(groups: Any) -> None:
    parser = groups.add_parser("cluster", help="run a local cluster of real processes on loopback")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    up = commands.add_parser("up", help="format and start a local cluster")
    up.add_argument("--dir", required=True, type=output_dir, help="the cluster's directory")
    up.add_argument("--controllers", type=positive_int, default=3, help="number of controllers (default 3)")
    up.add_argument("--brokers", type=non_negative_int, default=3, help="number of brokers (default 3)")
    up.add_argument("--release-version", "-r", type=release_version,
                    help="metadata.version to format at (default: latest stable)")
    up.add_argument("--software-version", type=software_version,
                    help="the Kafka release every node's software acts as (kraftwerk.software.version; "
                         "default: this software)")
    up.add_argument("--node-software-version", action="append", type=node_software_version, default=[],
                    metavar="ID=VERSION", help="run node ID on another software version (repeatable)")
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
    roll.add_argument("--software-version", required=True, type=software_version,
                      help="the Kafka release the restarted nodes' software acts as "
                           "('latest': this software)")
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
    add_output_flag(status)
    status.set_defaults(func=_status)
    down = commands.add_parser("down", help="stop every node (SIGTERM, then SIGKILL)")
    down.add_argument("--dir", required=True, type=input_dir)
    down.add_argument("--grace", type=non_negative_float, default=10.0,
                      help="seconds before SIGKILL (default 10)")
    down.set_defaults(func=_down)


def _up(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import STATE_FILE, LocalCluster, format_cluster, plan_cluster
    from kraftwerk.storage.format import random_cluster_id
    from kraftwerk.versions.metadata_version import MetadataVersion

    root: Path = args.dir
    if (root / STATE_FILE).exists() and any(n.pid for n in LocalCluster.load(root).nodes):
        raise NodeError(f"A cluster is already running in {root}; run `kraftwerk cluster down --dir {root}`")
    if args.release_version is not None:  # refused before anything is written, as format would
        MetadataVersion.from_version_string(args.release_version)
    started = time.monotonic()
    software = None if args.software_version == "latest" else args.software_version
    cluster = plan_cluster(root.resolve(), random_cluster_id(), args.controllers, args.brokers,
                           software_version=software)
    for node_id, version in args.node_software_version:
        cluster.node(node_id).software_version = None if version == "latest" else version
    root.mkdir(parents=True, exist_ok=True)
    format_cluster(cluster, args.release_version)
    cluster.save()
    try:
        for node in cluster.controllers:
            cluster.start(node)
        fenced = cluster.wait_ready(cluster.controllers, args.timeout)
        for node in cluster.brokers:
            if not node.is_controller:
                cluster.start(node)
        fenced.update(cluster.wait_ready(cluster.brokers, args.timeout))
        cluster.wait_brokers_visible([b for b in cluster.brokers if b.node_id not in fenced], args.timeout)
    except BaseException:
        cluster.stop(cluster.nodes, grace_s=5)
        raise
    elapsed = time.monotonic() - started
    if fenced:
        for node_id, reason in sorted(fenced.items()):
            print(f"Broker {node_id} is fenced: {reason}", file=sys.stderr)
        ids = ", ".join(map(str, sorted(fenced)))
        raise NodeError(f"Broker(s) {ids} stay fenced because their software cannot support the finalized "
                        f"features; the other nodes are up in {root}. Restart them on newer software with "
                        f"`kraftwerk cluster roll --dir {root} --node ID --software-version VERSION`, "
                        f"or stop the cluster with `kraftwerk cluster down --dir {root}`.")
    if args.output == "json":
        print_json({"clusterId": cluster.cluster_id, "startupSeconds": round(elapsed, 3),
                    "bootstrapServers": cluster.bootstrap_servers,
                    "bootstrapControllers": cluster.bootstrap_controllers,
                    "nodes": [{"nodeId": n.node_id, "roles": n.roles, "address": n.address, "pid": n.pid}
                              for n in cluster.nodes]})
        return 0
    print(f"Cluster {cluster.cluster_id} is up in {root} ({len(cluster.controllers)} controller(s), "
          f"{len(cluster.brokers)} broker(s), {elapsed:.1f}s)")
    print(f"Controllers: {cluster.bootstrap_controllers}")
    print(cluster.bootstrap_servers or cluster.bootstrap_controllers)
    return 0


def _status(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster, api_versions, pid_alive

    cluster = LocalCluster.load(args.dir)
    rows: list[dict[str, Any]] = []
    for node in cluster.nodes:
        alive = node.pid is not None and pid_alive(node.pid)
        info = cluster.ready_info(node) if alive else None
        refused = cluster.fenced_info(node) if alive and info is None else None
        body = api_versions(node.address, 2.0) if alive else None
        finalized = {f["name"]: f["maxVersionLevel"] for f in (body or {}).get("finalizedFeatures", [])}
        state = "ready" if info else ("fenced" if refused else ("starting" if alive else "stopped"))
        rows.append({
            "nodeId": node.node_id, "roles": node.roles, "address": node.address, "pid": node.pid,
            "state": state,
            "softwareVersion": (info or refused or {}).get("softwareVersion", node.software_version),
            "finalizedFeaturesEpoch": (body or {}).get("finalizedFeaturesEpoch"),
            "finalizedFeatures": finalized,
            "reason": (refused or {}).get("reason"),
        })
    if args.output == "json":
        print_json({"clusterId": cluster.cluster_id, "nodes": rows})
        return 0
    print(f"Cluster {cluster.cluster_id} in {args.dir}")
    for r in rows:
        levels: dict[str, int] = r["finalizedFeatures"]
        feats = ", ".join(f"{k}={v}" for k, v in sorted(levels.items())) or "-"
        print(f"NodeId: {r['nodeId']}\tRoles: {r['roles']}\tAddress: {r['address']}\tState: {r['state']}\t"
              f"SoftwareVersion: {r['softwareVersion'] or 'latest'}\tEpoch: {r['finalizedFeaturesEpoch']}\t"
              f"FinalizedFeatures: {feats}" + (f"\tReason: {r['reason']}" if r["reason"] else ""))
    return 0


def _roll(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster, LocalNode

    software = None if args.software_version == "latest" else args.software_version
    cluster = LocalCluster.load(args.dir)
    restarted: list[dict[str, Any]] = []

    def report(node: LocalNode, seconds: float) -> None:
        restarted.append({"nodeId": node.node_id, "roles": node.roles,
                          "softwareVersion": args.software_version, "seconds": round(seconds, 3)})
        if args.output != "json":
            print(f"Restarted node {node.node_id} ({node.roles}) on software {args.software_version} "
                  f"in {seconds:.1f}s", flush=True)

    cluster.roll(software, args.node, timeout_s=args.timeout, grace_s=args.grace, on_restart=report)
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
    print(f"Stopped {len(cluster.nodes)} node(s) in {args.dir}"
          + (f"; killed after {args.grace:g}s: {', '.join(map(str, killed))}" if killed else ""))
    return 0
