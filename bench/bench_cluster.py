"""Local cluster of real processes on loopback: start-up, registration, propagation, commits.

    python -m bench.bench_cluster [--controllers 3] [--brokers 3] [--updates 40] [--clients 4]

- start-up: ``kraftwerk cluster up`` wall time (format + start + every node ready);
- broker registration latency: from a broker's listener being bound to its successful
  BrokerRegistration (its own log timestamps);
- metadata propagation: an UpdateFeatures answered by the active controller (committed) until
  every broker's ApiVersions reports the new level (polled in parallel, ~1 ms apart);
- commits: UpdateFeatures round trips to the active controller of the 3-voter quorum (the
  response is sent once the record batch has committed): latency p50/p99 with one client, and
  committed appends/s with ``--clients`` concurrent clients.

Numbers on a shared machine are indicative; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kraftwerk.runtime.client import Connection
from kraftwerk.runtime.local_cluster import LocalCluster

TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def _ts(line: str) -> float | None:
    m = TS.match(line)
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() if m else None


def registration_latencies(cluster: LocalCluster) -> list[float]:
    out = []
    for node in cluster.brokers:
        bound = registered = None
        for line in node.log_path(cluster.root).read_text().splitlines():
            if bound is None and "Awaiting socket connections" in line:
                bound = _ts(line)
            if registered is None and "Successfully registered broker" in line:
                registered = _ts(line)
        if bound is not None and registered is not None:
            out.append(registered - bound)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def update_body(level: int) -> dict[str, Any]:
    return {"timeoutMs": 60000, "validateOnly": False,
            "featureUpdates": [{"feature": "transaction.version", "maxVersionLevel": level,
                                "upgradeType": 1 if level == 2 else 2}]}


async def open_conn(address: str) -> Connection:
    host, port = address.rsplit(":", 1)
    return await Connection.open(host, int(port), client_id="bench", connect_timeout_s=5)


async def propagation(cluster: LocalCluster, controller: str, updates: int) -> list[float]:
    ctl = await open_conn(controller)
    samples = []
    try:
        for i in range(updates):
            level = 1 if i % 2 == 0 else 2
            resp = await ctl.request(57, 1, update_body(level), timeout_s=30)
            assert resp["errorCode"] == 0, resp
            committed = time.perf_counter()

            async def until_seen(address: str, level: int = level) -> float:
                while True:
                    conn = await open_conn(address)  # brokers close connections on MV changes only
                    try:
                        body = await conn.request(18, 3, {"clientSoftwareName": "bench",
                                                          "clientSoftwareVersion": "0"}, timeout_s=5)
                    finally:
                        await conn.close()
                    got = {f["name"]: f["maxVersionLevel"] for f in body.get("finalizedFeatures", [])}
                    if got.get("transaction.version", 0) == level:
                        return time.perf_counter()
                    await asyncio.sleep(0.001)

            seen = await asyncio.gather(*(until_seen(b.address) for b in cluster.brokers))
            samples.append(max(seen) - committed)
    finally:
        await ctl.close()
    return samples


async def commit_latency(controller: str, updates: int) -> list[float]:
    conn = await open_conn(controller)
    out = []
    try:
        for i in range(updates):
            start = time.perf_counter()
            resp = await conn.request(57, 1, update_body(1 if i % 2 == 0 else 2), timeout_s=30)
            out.append(time.perf_counter() - start)
            assert resp["errorCode"] == 0, resp
    finally:
        await conn.close()
    return out


async def commit_throughput(controller: str, clients: int, seconds: float) -> float:
    conns = [await open_conn(controller) for _ in range(clients)]
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(conn: Connection, k: int) -> None:
        nonlocal done
        i = k
        while time.perf_counter() < deadline:
            # validate-free same-level updates still append a FeatureLevelRecord each (Kafka does too)
            resp = await conn.request(57, 1, update_body(2 if i % 2 else 1), timeout_s=30)
            if resp["errorCode"] == 0:
                done += 1
            i += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(c, k) for k, c in enumerate(conns)))
    elapsed = time.perf_counter() - start
    for c in conns:
        await c.close()
    return done / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controllers", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kraftwerk-bench-"))
    cmd = [sys.executable, "-m", "kraftwerk.cli.main", "cluster", "up", "--dir", str(root),
           "--controllers", str(args.controllers), "--brokers", str(args.brokers), "--output", "json"]
    started = time.perf_counter()
    up = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    info = json.loads(up.stdout)
    try:
        cluster = LocalCluster.load(root)
        active = cluster.active_controller()
        controller = cluster.node(active).address if active is not None else cluster.controllers[0].address
        reg = registration_latencies(cluster)
        prop = asyncio.run(propagation(cluster, controller, args.updates))
        lat = asyncio.run(commit_latency(controller, args.updates))
        rate = asyncio.run(commit_throughput(controller, args.clients, args.seconds))
    finally:
        subprocess.run([sys.executable, "-m", "kraftwerk.cli.main", "cluster", "down", "--dir", str(root)],
                       check=False, capture_output=True)
    ms = 1000.0
    print(f"cluster: {args.controllers} controllers + {args.brokers} brokers on loopback")
    print(f"start-up (cluster up, format + start + all ready): {info['startupSeconds']:.2f} s "
          f"(command wall time {wall:.2f} s)")
    print(f"broker registration (listener bound -> registered): median {statistics.median(reg) * ms:.0f} ms, "
          f"max {max(reg) * ms:.0f} ms over {len(reg)} brokers")
    print("metadata propagation (commit acknowledged -> every broker's ApiVersions): "
          f"p50 {pct(prop, .5) * ms:.1f} ms, p99 {pct(prop, .99) * ms:.1f} ms over {len(prop)} updates")
    print("commit latency (UpdateFeatures to the active controller, 1 client): "
          f"p50 {pct(lat, .5) * ms:.1f} ms, p99 {pct(lat, .99) * ms:.1f} ms over {len(lat)} updates")
    print(f"committed appends/s ({args.clients} concurrent clients, {args.seconds:g} s): {rate:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
