"""Raft on loopback: committed appends/s and commit latency for a 3-voter quorum of real processes.

Three OS processes (this file's ``--worker`` entry, started with ``sys.executable``), each a
:class:`~kraftwerk.raft.RaftNode` driven by a :class:`~kraftwerk.runtime.raft_host.RaftHost` over
TCP on 127.0.0.1, with the file-backed ``__cluster_metadata-0`` log (fsync on every leader flush)
in a temp dir. The elected leader measures, with ~100 B metadata-record frames (ConfigRecord):

- one append at a time, each waited for until committed (commit latency p50/p99);
- a window of appends in flight, one and ``--batch`` records per append (records/s, batches/s).

Then the same steady state runs in the simulator (3 voters, no faults, virtual clock) for the
same-run comparison.

    python -m bench.bench_raft_loopback [--seconds 5] [--in-flight 64] [--batch 10] [--linger-ms 25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kraftwerk.protocol import codec
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.raft import RaftConfig, RaftNode
from kraftwerk.runtime.raft_host import RAFT_APIS, RaftHost, wall_clock_ms
from kraftwerk.runtime.raft_log_files import open_metadata_log
from kraftwerk.runtime.server import KafkaServer, Request
from kraftwerk.sim import Scenario, SimConfig, run_seed

VOTERS = (1, 2, 3)
ROOT = Path(__file__).resolve().parents[1]


def record_frame(size: int, n: int) -> bytes:
    """A ConfigRecord frame of about ``size`` bytes (the value pads it), distinct per ``n``."""
    spec = lookup_record("ConfigRecord")
    base = {"resourceType": 2, "resourceName": "bench-topic", "name": f"bench.key.{n % 1000}", "value": ""}
    pad = max(0, size - len(encode_metadata_record(spec, 0, base)))
    return encode_metadata_record(spec, 0, {**base, "value": "v" * pad})


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


# --- worker process ---------------------------------------------------------------------------


class _RaftOnly:
    """The controller listener's handler: raft RPCs only."""

    def __init__(self) -> None:
        self.host: RaftHost | None = None

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return RAFT_APIS

    async def handle(self, request: Request) -> codec.Value | None:
        assert self.host is not None
        return await self.host.handle(request)


async def _stdin_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def _say(kind: str, payload: Any) -> None:
    sys.stdout.write(json.dumps({"kind": kind, "payload": payload}) + "\n")
    sys.stdout.flush()


async def _sequential(host: RaftHost, frames: list[bytes], seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    n = 0
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        offset = host.append([frames[n % len(frames)]])
        if not await host.wait_committed(offset, timeout_s=10):
            raise RuntimeError(f"append at offset {offset} did not commit (leadership lost?)")
        latencies.append((time.perf_counter() - t0) * 1000)
        n += 1
    wall = time.perf_counter() - start
    latencies.sort()
    return {"records": n, "batches": n, "wall_s": wall, "p50_ms": percentile(latencies, 0.50),
            "p99_ms": percentile(latencies, 0.99), "mean_ms": statistics.mean(latencies)}


async def _pipelined(host: RaftHost, frames: list[bytes], seconds: float, in_flight: int,
                     batch: int) -> dict[str, Any]:
    """Keep ``in_flight`` appends outstanding; each completes when the high watermark passes it."""
    pending: deque[tuple[int, float]] = deque()
    latencies: list[float] = []
    batches = 0
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        now = time.perf_counter()
        while now < deadline and len(pending) < in_flight:
            records = [frames[(n + i) % len(frames)] for i in range(batch)]
            n += batch
            pending.append((host.append(records), time.perf_counter()))
        if not pending:
            break
        offset, _ = pending[0]
        if not await host.wait_committed(offset, timeout_s=10):
            raise RuntimeError(f"append at offset {offset} did not commit (leadership lost?)")
        hw = host.node.high_watermark or 0
        done = time.perf_counter()
        while pending and pending[0][0] < hw:
            latencies.append((done - pending.popleft()[1]) * 1000)
            batches += 1
    wall = time.perf_counter() - start
    latencies.sort()
    return {"records": batches * batch, "batches": batches, "wall_s": wall,
            "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
            "mean_ms": statistics.mean(latencies)}


async def _worker(node_id: int, data_dir: Path) -> None:
    handler = _RaftOnly()
    server = KafkaServer(handler, "127.0.0.1", 0, listener="CONTROLLER")
    await server.start()
    _say("port", server.port)
    setup = json.loads(await _stdin_line())
    peers = {int(k): ("127.0.0.1", int(v)) for k, v in setup["peers"].items()}
    raft_log, state_store = open_metadata_log(data_dir, VOTERS)
    config = RaftConfig(node_id=node_id, voters=VOTERS, cluster_id="bench-raft-loopback",
                        append_linger_ms=setup["linger_ms"])
    node = RaftNode(config, raft_log, state_store, now_ms=wall_clock_ms(), seed=node_id)
    host = RaftHost(node, peers, client_id=f"raft-client-{node_id}", request_timeout_ms=2000)
    handler.host = host
    host.start()
    try:
        while node.leader_id is None:
            await asyncio.sleep(0.01)
        if not host.is_leader:
            _say("follower", node_id)
        else:
            frames = [record_frame(setup["record_bytes"], n) for n in range(1000)]
            # the LeaderChange record and a warm-up must commit before anything is timed
            await _sequential(host, frames, 0.3)
            await _pipelined(host, frames, 0.3, setup["in_flight"], 1)
            result = {
                "record_bytes": len(frames[0]),
                "sequential": await _sequential(host, frames, setup["seconds"]),
                "pipelined_1": await _pipelined(host, frames, setup["seconds"], setup["in_flight"], 1),
                "pipelined_b": await _pipelined(host, frames, setup["seconds"], setup["in_flight"],
                                                setup["batch"]),
            }
            _say("result", result)
        await _stdin_line()  # the parent closes stdin (or says "stop") when every node reported
    finally:
        await host.close()
        raft_log.close()
        await server.close()


# --- parent --------------------------------------------------------------------------------------


def _read(proc: subprocess.Popen[str], node_id: int) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"worker {node_id} exited (code {proc.wait()}) before reporting")
    message: dict[str, Any] = json.loads(line)
    return message


def run_loopback(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """Start the 3 worker processes, let them elect a leader, return (leader id, its measurements)."""
    procs: dict[int, subprocess.Popen[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-raft-loopback-") as tmp:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                          os.environ.get("PYTHONPATH")]))}
        try:
            for node_id in VOTERS:
                procs[node_id] = subprocess.Popen(
                    [sys.executable, "-m", "bench.bench_raft_loopback", "--worker", str(node_id),
                     str(Path(tmp) / f"node-{node_id}")],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
            ports = {node_id: _read(p, node_id)["payload"] for node_id, p in procs.items()}
            setup = json.dumps({"peers": ports, "linger_ms": args.linger_ms, "seconds": args.seconds,
                                "in_flight": args.in_flight, "batch": args.batch,
                                "record_bytes": args.record_bytes})
            for p in procs.values():
                assert p.stdin is not None
                p.stdin.write(setup + "\n")
                p.stdin.flush()
            leader, result = -1, {}
            for node_id, p in procs.items():
                message = _read(p, node_id)
                if message["kind"] == "result":
                    leader, result = node_id, message["payload"]
            if leader < 0:
                raise RuntimeError("no worker reported as leader")
            return leader, result
        finally:
            for p in procs.values():
                if p.stdin is not None and not p.stdin.closed:
                    try:
                        p.stdin.write("stop\n")
                        p.stdin.close()
                    except BrokenPipeError:
                        pass
            for p in procs.values():
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def run_sim(seconds: int, interval_ms: int) -> dict[str, Any]:
    """The simulator's steady state: 3 voters, no faults, one append every ``interval_ms`` virtual ms."""
    cfg = SimConfig(seed=1, voters=3, scenario=Scenario.NONE, fault_phase_ms=seconds * 1000,
                    append_interval_ms=interval_ms)
    t = time.perf_counter()
    r = run_seed(cfg)
    wall = time.perf_counter() - t
    if not r.ok:
        raise RuntimeError(r.report())
    lat = sorted(float(x) for x in r.commit_latencies_ms)
    acked = int(r.stats["acked"])
    return {"acked": acked, "virtual_s": r.virtual_ms / 1000, "wall_s": wall,
            "p50_ms": percentile(lat, 0.50), "p99_ms": percentile(lat, 0.99), "mean_ms": statistics.mean(lat)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per loopback phase")
    parser.add_argument("--in-flight", type=int, default=64, help="appends outstanding when pipelined")
    parser.add_argument("--batch", type=int, default=10, help="records per append in the batched phase")
    parser.add_argument("--record-bytes", type=int, default=100, help="size of one metadata-record frame")
    parser.add_argument("--linger-ms", type=int, default=25,
                        help="controller.quorum.append.linger.ms of the leader (Kafka's default 25)")
    parser.add_argument("--sim-seconds", type=int, default=20, help="virtual seconds of the simulator run")
    parser.add_argument("--sim-interval-ms", type=int, default=5, help="simulator client append interval")
    parser.add_argument("--worker", nargs=2, metavar=("NODE_ID", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        asyncio.run(_worker(int(args.worker[0]), Path(args.worker[1])))
        return

    t = time.perf_counter()
    leader, res = run_loopback(args)
    total = time.perf_counter() - t
    print(f"3 voter processes on 127.0.0.1, file log + fsync, leader node {leader}, "
          f"{res['record_bytes']} B ConfigRecord frames, linger {args.linger_ms} ms "
          f"({total:.1f} s including start-up)")
    header = f"{'phase':<40} {'records/s':>10} {'batches/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}"
    print(header)
    print("-" * len(header))
    rows = [
        ("one append at a time (1 record)", res["sequential"]),
        (f"{args.in_flight} appends in flight, 1 record each", res["pipelined_1"]),
        (f"{args.in_flight} appends in flight, {args.batch} records each", res["pipelined_b"]),
    ]
    for label, r in rows:
        print(f"{label:<40} {r['records'] / r['wall_s']:>10,.0f} {r['batches'] / r['wall_s']:>10,.0f} "
              f"{r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['mean_ms']:>8.1f}")

    sim = run_sim(args.sim_seconds, args.sim_interval_ms)
    print()
    print(f"simulator, 3 voters, no faults, one append every {args.sim_interval_ms} virtual ms "
          f"(linger 25 ms, link delay 1-8 ms): {sim['acked']} committed in {sim['virtual_s']:.0f} virtual s")
    sim_wall_rate = sim["acked"] / sim["wall_s"]
    print(f"  commit latency (virtual) p50 {sim['p50_ms']:.0f} ms, p99 {sim['p99_ms']:.0f} ms, "
          f"mean {sim['mean_ms']:.1f} ms; {sim_wall_rate:,.0f} committed appends per wall second")
    seq = res["sequential"]
    pipe = res["pipelined_1"]
    print(f"  loopback / simulator: one-at-a-time p50 latency {seq['p50_ms'] / sim['p50_ms']:.2f}x; "
          f"pipelined 1-record appends/s per wall s {pipe['batches'] / pipe['wall_s'] / sim_wall_rate:.2f}x")


if __name__ == "__main__":
    main()
