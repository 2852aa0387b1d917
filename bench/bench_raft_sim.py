"""Raft in the simulator: committed appends/s and commit latency (virtual ms) for 3 voters, and
seeds per second per core of the fault-mix simulation.

    python bench/bench_raft_sim.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

from kraftwerk.sim import Scenario, SimConfig, run_seed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=200)
    args = parser.parse_args()
    # steady state: 3 voters, no faults, one append every 5 virtual ms for 60 s
    cfg = SimConfig(seed=1, voters=3, scenario=Scenario.NONE, fault_phase_ms=60_000, append_interval_ms=5)
    t = time.perf_counter()
    r = run_seed(cfg)
    wall = time.perf_counter() - t
    lat = sorted(r.commit_latencies_ms)
    p50 = lat[len(lat) // 2]
    p99 = lat[int(len(lat) * 0.99)]
    print(
        f"3 voters, no faults: {r.stats['acked']} committed appends in {r.virtual_ms / 1000:.0f} virtual s "
        f"= {r.stats['acked'] / (r.virtual_ms / 1000):.0f} appends/s (virtual), "
        f"{r.stats['acked'] / wall:.0f} appends/s wall; commit latency p50 {p50} ms p99 {p99} ms "
        f"(virtual; linger 25 ms, link delay 1-8 ms); mean {statistics.mean(lat):.1f}"
    )
    for voters, observers in ((3, 1), (5, 2)):
        t = time.perf_counter()
        events = 0
        for seed in range(args.seeds):
            res = run_seed(SimConfig(seed=seed, voters=voters, observers=observers, events=8))
            assert res.ok, res.report()
            events += res.events
        wall = time.perf_counter() - t
        print(
            f"{voters} voters + {observers} observers, 8 faults/seed: {args.seeds} seeds in {wall:.1f} s = "
            f"{args.seeds / wall:.1f} seeds/s/core ({events / wall:.0f} events/s)"
        )


if __name__ == "__main__":
    main()
