"""``kraftwerk sim migration``: seeded KIP-866 migrations under faults; fails on any invariant violation."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kraftwerk.cli.args import non_negative_int, positive_int
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.sim.migration import run_migration_seeds
from kraftwerk.sim.migration_types import MigrationConfig


def register_migration(commands: Any) -> None:
    """Add ``migration`` to the ``kraftwerk sim`` sub-commands."""
    p = commands.add_parser(
        "migration",
        help="run seeded KIP-866 ZooKeeper migrations under faults and check their invariants",
        description="Run COUNT seeds starting at SEED: three KRaft controllers in migration mode and "
        "migrating ZooKeeper brokers take over an in-memory ZooKeeper holding a 3.9 cluster's tree, copy it "
        "and dual-write while clients create and delete topics, alter configs and create ACLs, ZooKeeper "
        "goes away, expires sessions or slows down, and the active controller crashes, pauses or is "
        "isolated. Once the faults heal ZooKeeper must hold what KRaft committed; no write may be accepted "
        "while ZooKeeper lags past the bound; the copy happens once; a fenced controller's write never "
        "lands. Exits 1 on a violation, printing the seed, the event trace tail and the command that "
        "replays it.",
    )
    p.add_argument("--brokers", type=positive_int, default=2, help="number of ZooKeeper brokers (default 2)")
    p.add_argument("--seeds", type=positive_int, default=100, metavar="COUNT",
                   help="how many seeds (default 100)")
    p.add_argument("--start", type=non_negative_int, default=0, metavar="SEED", help="first seed (default 0)")
    p.add_argument("--events", type=non_negative_int, default=8, help="fault events per seed (default 8)")
    p.add_argument("--max-lag-ms", type=positive_int, default=2000,
                   help="zookeeper.metadata.migration.max.lag.ms on the controllers (default 2000)")
    p.add_argument("--no-wire", action="store_true", help="pass bodies without encoding them (faster)")
    p.add_argument("--keep-going", action="store_true", help="run every seed even after a failure")
    add_output_flag(p)
    p.set_defaults(func=_migration)


def _migration(args: argparse.Namespace) -> int:
    base = MigrationConfig(brokers=args.brokers, events=args.events, max_lag_ms=args.max_lag_ms,
                           wire=not args.no_wire)
    bar: Any = None
    task: Any = None
    if args.output == "text" and sys.stdout.isatty():
        from rich.progress import Progress

        bar = Progress(transient=True)
        bar.start()
        task = bar.add_task("migration sim", total=args.seeds)
    try:
        summary = run_migration_seeds(base, args.start, args.seeds, keep_going=args.keep_going,
                                      progress=(lambda _r: bar.advance(task)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.stop()
    if args.output == "json":
        print_json({
            "seeds": summary.seeds,
            "failures": [f.to_json() for f in summary.failures],
            "events": summary.events,
            "seconds": round(summary.seconds, 3),
            "seeds_per_second": round(summary.seeds_per_second, 2),
            "stats": summary.stats,
        })
    else:
        for f in summary.failures:
            print(f.report())
        s = summary.stats
        print(
            f"{'FAILED' if summary.failures else 'OK'}: {summary.seeds} seeds (3 controllers, {args.brokers} "
            f"ZooKeeper brokers), {summary.events} events in {summary.seconds:.1f} s "
            f"({summary.seeds_per_second:.1f} seeds/s); {s.get('writes_ok', 0)} metadata writes accepted, "
            f"{s.get('writes_refused_for_lag', 0)} refused for ZooKeeper's lag, {s.get('zk_fenced', 0)} "
            f"fenced ZooKeeper writes, {s.get('crashes_during_migration', 0)} crashes during the copy"
        )
        for f in summary.failures:
            print(f"failing seed {f.config.seed}: replay with: {f.config.replay_command()}")
    return 1 if summary.failures else 0
