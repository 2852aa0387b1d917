"""``kraftwerk cluster up|status|down``: a local cluster of real node processes on loopback.

``up`` formats every node (the storage layer's ``format_node``, what ``kraftwerk storage format``
runs), picks free ports, starts the processes detached (pids in ``D/cluster.json``), waits until
each is ready and prints the brokers' bootstrap list on its last line. ``status`` asks every node
for ApiVersions (software version, finalized features and their epoch). ``down`` sends SIGTERM
and SIGKILLs what is still running after the grace period.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from kraftwerk.cli.output import add_output_flag, print_json


def register(groups: Any) -> None:
    parser = groups.add_parser("cluster", help="run a local cluster of real processes on loopback")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    up = commands.add_parser("up", help="format and start a local cluster")
    up.add_argument("--dir", required=True, type=Path, help="the cluster's directory")
    up.add_argument("--controllers", type=int, default=3, help="number of controllers (default 3)")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument("--release-version", "-r", help="metadata.version to format at (default: latest stable)")
    up.add_argument("--software-version", help="the Kafka release every node's software acts as "
                                               "(kraftwerk.software.version; default: this software)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness (default 60)")
    add_output_flag(up)
    up.set_defaults(func=_up)
    status = commands.add_parser("status", help="show each node, its role, software and finalized features")
    status.add_argument("--dir", required=True, type=Path)
    add_output_flag(status)
    status.set_defaults(func=_status)
    down = commands.add_parser("down", help="stop every node (SIGTERM, then SIGKILL)")
    down.add_argument("--dir", required=True, type=Path)
    down.add_argument("--grace", type=float, default=10.0, help="seconds before SIGKILL (default 10)")
    down.set_defaults(func=_down)


def _up(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.errors import NodeError
    from kraftwerk.runtime.local_cluster import STATE_FILE, LocalCluster, format_cluster, plan_cluster
    from kraftwerk.storage.format import random_cluster_id

    root: Path = args.dir
    if (root / STATE_FILE).exists() and any(n.pid for n in LocalCluster.load(root).nodes):
        raise NodeError(f"A cluster is already running in {root}; run `kraftwerk cluster down --dir {root}`")
    if args.brokers < 0:
        raise NodeError("--brokers must be at least 0")
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cluster = plan_cluster(root.resolve(), random_cluster_id(), args.controllers, args.brokers,
                           software_version=args.software_version)
    format_cluster(cluster, args.release_version)
    cluster.save()
    try:
        for node in cluster.controllers:
            cluster.start(node)
        cluster.wait_ready(cluster.controllers, args.timeout)
        for node in cluster.brokers:
            cluster.start(node)
        cluster.wait_ready(cluster.brokers, args.timeout)
    except BaseException:
        cluster.stop(cluster.nodes, grace_s=5)
        raise
    elapsed = time.monotonic() - started
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


async def _api_versions(address: str) -> dict[str, Any] | None:
    from kraftwerk.runtime.client import Connection
    from kraftwerk.runtime.errors import NetworkError

    host, port = address.rsplit(":", 1)
    try:
        conn = await Connection.open(host, int(port), client_id="kraftwerk-cluster-status",
                                     connect_timeout_s=2)
    except NetworkError:
        return None
    try:
        return await conn.request(18, 3, {"clientSoftwareName": "kraftwerk", "clientSoftwareVersion": "0"},
                                  timeout_s=5)
    except NetworkError:
        return None
    finally:
        await conn.close()


def _status(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster, pid_alive

    cluster = LocalCluster.load(args.dir)
    rows: list[dict[str, Any]] = []
    for node in cluster.nodes:
        alive = node.pid is not None and pid_alive(node.pid)
        info = cluster.ready_info(node) if alive else None
        body = asyncio.run(_api_versions(node.address)) if alive else None
        finalized = {f["name"]: f["maxVersionLevel"] for f in (body or {}).get("finalizedFeatures", [])}
        rows.append({
            "nodeId": node.node_id, "roles": node.roles, "address": node.address, "pid": node.pid,
            "state": "ready" if info else ("starting" if alive else "stopped"),
            "softwareVersion": (info or {}).get("softwareVersion", node.software_version),
            "finalizedFeaturesEpoch": (body or {}).get("finalizedFeaturesEpoch"),
            "finalizedFeatures": finalized,
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
              f"FinalizedFeatures: {feats}")
    return 0


def _down(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster

    cluster = LocalCluster.load(args.dir)
    # Brokers first, so they can shut down while a controller still answers.
    order = cluster.brokers + [n for n in cluster.nodes if not n.is_broker]
    killed = cluster.stop(order, grace_s=args.grace)
    print(f"Stopped {len(cluster.nodes)} node(s) in {args.dir}"
          + (f"; killed after {args.grace:g}s: {', '.join(map(str, killed))}" if killed else ""))
    return 0
