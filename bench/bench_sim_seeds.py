"""Seeds per second of the raft and lifecycle simulators for each seeded mix ``tests/sim`` plays,
and what the default run and a nightly profile cost on one core.

    python -m bench.bench_sim_seeds [--seeds 30] [--nightly 10000]

Each mix plays ``--seeds`` seeds from its own first seed (as the tests do), timed in CPU seconds
of this process (a shared machine disturbs those least); the projection is count / rate per mix,
summed. The peer is the mixes themselves: a rate reads against the
single-voter mix of the same simulator, measured in the same run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import logging
import time

from tests.sim.seeds import DEFAULT_TOTAL
from tests.sim.test_lifecycle_sim import SEED_MIXES
from tests.sim.test_raft_sim import MIXES

from kraftwerk.sim import SimConfig, run_seed
from kraftwerk.sim.lifecycle import run_lifecycle_seed
from kraftwerk.sim.lifecycle_types import ALL_MIXES


def raft_rate(voters: int, observers: int, start: int, seeds: int) -> float:
    began = time.process_time()
    for seed in range(start, start + seeds):
        run_seed(SimConfig(seed=seed, voters=voters, observers=observers, events=6))
    return seeds / (time.process_time() - began)


def lifecycle_rate(voters: int, brokers: int, start: int, seeds: int) -> float:
    began = time.process_time()
    for seed in range(start, start + seeds):
        run_lifecycle_seed(seed, mix=ALL_MIXES[seed % 4], voters=voters, brokers=brokers)
    return seeds / (time.process_time() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--nightly", type=int, default=10_000)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # as the tests do: thousands of refusals would be logged
    rows = []
    for voters, observers, start, count in MIXES:
        rows.append(("raft", f"{voters} voters + {observers} observer(s)", count,
                     raft_rate(voters, observers, start, args.seeds)))
    for voters, brokers, start, count in SEED_MIXES:
        rows.append(("lifecycle", f"{voters} controller(s) + {brokers} broker(s)", count,
                     lifecycle_rate(voters, brokers, start, args.seeds)))
    print("| simulator | cluster | seeds per CPU s | vs its single-voter mix | default seeds | CPU s |")
    print("|---|---|---:|---:|---:|---:|")
    total_seeds = total_s = 0.0
    for sim in ("raft", "lifecycle"):
        mine = [r for r in rows if r[0] == sim]
        single = next(r[3] for r in mine if r[1].startswith("1 "))
        for _, cluster, count, rate in mine:
            print(f"| {sim} | {cluster} | {rate:.1f} | {rate / single:.2f}x | {count} | {count / rate:.1f} |")
            total_seeds += count
            total_s += count / rate
    scale = args.nightly / DEFAULT_TOTAL
    nightly_s = total_s * scale
    print(f"\nseeded mixes: {total_seeds:.0f} seeds in {total_s:.0f} CPU s by default; "
          f"KRAFTWERK_SIM_SEEDS={args.nightly}: ~{total_seeds * scale:.0f} seeds in ~{nightly_s / 60:.0f} "
          f"CPU min (~{nightly_s / 120:.0f} min on two cores)")


if __name__ == "__main__":
    main()
