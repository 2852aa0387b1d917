"""``kraftwerk sim raft|lifecycle|migration``: run seeded simulations and fail on any invariant violation."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from kraftwerk.cli.args import non_negative_int, positive_int
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.errors import KraftwerkError
from kraftwerk.sim.lifecycle import run_lifecycle_seeds
from kraftwerk.sim.lifecycle_types import ALL_MIXES, LifecycleConfig, Mix
from kraftwerk.sim.migration import run_migration_seeds
from kraftwerk.sim.migration_types import MigrationConfig
from kraftwerk.sim.runner import Scenario, SeedResult, SimConfig, run_seed
from kraftwerk.sim.seed_runs import BatchSummary


def register(groups: Any) -> None:
    parser = groups.add_parser(
        "sim", help="deterministic simulations: the KRaft quorum, the metadata.version lifecycle, the "
        "ZooKeeper migration")
    parser.set_defaults(default_log_level="CRITICAL")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    raft = commands.add_parser(
        "raft",
        help="run seeded raft simulations with faults and check every invariant",
        description="Run COUNT seeds starting at SEED: a fault phase (crashes, partitions, pauses, lossy "
        "links, torn writes), healing, then a liveness phase. Exits 1 on the first violation "
        "(after the remaining seeds with --keep-going), printing the seed, its config, the "
        "event trace tail and the command that replays it.",
    )
    raft.add_argument("--voters", type=positive_int, default=3, help="number of voters (default 3)")
    raft.add_argument("--observers", type=non_negative_int, default=0, help="number of observers (default 0)")
    raft.add_argument("--seeds", type=positive_int, default=100, metavar="COUNT",
                      help="how many seeds (default 100)")
    raft.add_argument("--start", type=non_negative_int, default=0, metavar="SEED",
                      help="first seed (default 0)")
    raft.add_argument("--events", type=non_negative_int, default=8, help="fault events per seed (default 8)")
    raft.add_argument(
        "--scenario",
        choices=[s.value for s in Scenario],
        default=Scenario.RANDOM.value,
        help="random mix (default) or one targeted scenario",
    )
    raft.add_argument(
        "--no-wire",
        action="store_true",
        help="pass message bodies without encoding them (faster, less faithful)",
    )
    raft.add_argument("--keep-going", action="store_true", help="run every seed even after a failure")
    add_output_flag(raft)
    raft.set_defaults(func=_raft)
    register_lifecycle(commands)
    register_migration(commands)


def _raft(args: argparse.Namespace) -> int:
    base = SimConfig(
        voters=args.voters,
        observers=args.observers,
        events=args.events,
        scenario=Scenario(args.scenario),
        wire=not args.no_wire,
    )
    show_bar = args.output == "text" and sys.stdout.isatty()
    started = time.perf_counter()
    failures: list[SeedResult] = []
    events = 0
    done = 0

    def seeds() -> Any:
        yield from range(args.start, args.start + args.seeds)

    progress = None
    task = None
    if show_bar:
        from rich.progress import Progress

        progress = Progress(transient=True)
        progress.start()
        task = progress.add_task(f"raft sim ({args.voters} voters)", total=args.seeds)
    try:
        for seed in seeds():
            result = run_seed(_with_seed(base, seed))
            done += 1
            events += result.events
            if progress is not None and task is not None:
                progress.advance(task)
            if not result.ok:
                failures.append(result)
                if not args.keep_going:
                    break
    finally:
        if progress is not None:
            progress.stop()
    elapsed = time.perf_counter() - started
    if args.output == "json":
        print_json(
            {
                "seeds": done,
                "failures": [f.to_json() for f in failures],
                "events": events,
                "seconds": round(elapsed, 3),
                "seeds_per_second": round(done / elapsed, 2) if elapsed else None,
            }
        )
    else:
        for f in failures:
            print(f.report())
        status = "FAILED" if failures else "OK"
        print(
            f"{status}: {done} seeds ({args.voters} voters, {args.observers} observers, {args.events} fault "
            f"events, scenario {args.scenario}), {events} events in {elapsed:.1f} s "
            f"({done / elapsed if elapsed else 0:.1f} seeds/s)"
        )
        for f in failures:
            print(f"failing seed {f.config.seed}: replay with: {f.config.replay_command()}")
    return 1 if failures else 0


def _with_seed(cfg: SimConfig, seed: int) -> SimConfig:
    from dataclasses import replace

    return replace(cfg, seed=seed)


def register_lifecycle(commands: Any) -> None:
    """Add ``lifecycle`` to the ``kraftwerk sim`` sub-commands."""
    p = commands.add_parser(
        "lifecycle",
        help="run seeded metadata.version lifecycle simulations (KIP-778) and check its invariants",
        description="Run COUNT seeds starting at SEED: controllers and brokers on the simulated raft quorum "
        "take UpdateFeatures upgrades, dry runs, safe and unsafe downgrades and invalid requests while the "
        "active controller crashes or is isolated, nodes restart and nodes on old software join or are "
        "rolled; then the faults heal and every node must converge. Exits 1 on a violation, printing the "
        "seed, the event trace tail and the command that replays it.",
    )
    p.add_argument("--voters", type=int, default=3, help="number of controllers (default 3)")
    p.add_argument("--brokers", type=int, default=2, help="number of brokers (default 2)")
    p.add_argument("--seeds", type=int, default=100, metavar="COUNT", help="how many seeds (default 100)")
    p.add_argument("--start", type=int, default=0, metavar="SEED", help="first seed (default 0)")
    p.add_argument("--events", type=int, default=6, help="workload and fault events per seed (default 6)")
    p.add_argument(
        "--mix",
        choices=["all", *(m.value for m in Mix)],
        default="all",
        help="workload mix; 'all' (default) rotates random, rolling, downgrade and failover over the seeds; "
        "'configs' plays KIP-1294's static configs, overrides and audited upgrades",
    )
    p.add_argument("--no-wire", action="store_true", help="pass bodies without encoding them (faster)")
    p.add_argument("--keep-going", action="store_true", help="run every seed even after a failure")
    add_output_flag(p)
    p.set_defaults(func=_lifecycle)




def _lifecycle(args: argparse.Namespace) -> int:
    if args.voters < 1 or args.brokers < 0 or args.seeds < 1 or args.events < 0:
        raise KraftwerkError("--voters and --seeds must be at least 1, --brokers and --events at least 0")
    mixes = ALL_MIXES if args.mix == "all" else (Mix(args.mix),)
    base = LifecycleConfig(
        voters=args.voters, brokers=args.brokers, events=args.events, wire=not args.no_wire
    )
    with seed_progress(args, "lifecycle sim") as progress:
        summary = run_lifecycle_seeds(
            base, args.start, args.seeds, mixes=mixes, keep_going=args.keep_going, progress=progress
        )
    if args.output == "json":
        print_summary_json(summary)
    else:
        for f in summary.failures:
            print(f.report())
        status = "FAILED" if summary.failures else "OK"
        s = summary.stats
        print(
            f"{status}: {summary.seeds} seeds ({args.voters} controllers, {args.brokers} brokers, "
            f"mix {args.mix}), "
            f"{summary.events} events in {summary.seconds:.1f} s ({summary.seeds_per_second:.1f} seeds/s); "
            f"{s.get('updates_ok', 0)} updates accepted, {s.get('updates_refused', 0)} refused, "
            f"{s.get('dry_runs', 0)} dry runs, {s.get('fail_stops', 0)} fail-stops, "
            f"{s.get('lossy_rewrites', 0)} lossy rewrites, {s.get('rolls', 0)} rolls"
        )
        for f in summary.failures:
            print(f"failing seed {f.config.seed}: replay with: {f.config.replay_command()}")
    return 1 if summary.failures else 0


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
    with seed_progress(args, "migration sim") as progress:
        summary = run_migration_seeds(base, args.start, args.seeds, keep_going=args.keep_going,
                                      progress=progress)
    if args.output == "json":
        print_summary_json(summary)
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


@contextlib.contextmanager
def seed_progress(args: argparse.Namespace, label: str) -> Iterator[Callable[[Any], None] | None]:
    """A rich progress bar over ``args.seeds`` on a terminal in text mode: the per-seed callback."""
    if args.output != "text" or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import Progress

    bar = Progress(transient=True)
    bar.start()
    task = bar.add_task(label, total=args.seeds)
    try:
        yield lambda _result: bar.advance(task)
    finally:
        bar.stop()


def print_summary_json(summary: BatchSummary[Any]) -> None:
    print_json({
        "seeds": summary.seeds,
        "failures": [f.to_json() for f in summary.failures],
        "events": summary.events,
        "seconds": round(summary.seconds, 3),
        "seeds_per_second": round(summary.seeds_per_second, 2),
        "stats": summary.stats,
    })
