"""``kraftwerk cluster migrate``: KIP-866's ZooKeeper-to-KRaft migration of a local
``cluster up --zookeeper`` cluster, phase by phase, resumable (a second run continues from the phase
the cluster is in); ``kraftwerk cluster rollback-migration`` goes back to ZooKeeper mode before
finalization."""

from __future__ import annotations

import argparse
import time
from typing import Any

from kraftwerk.cli.args import input_dir, positive_float
from kraftwerk.cli.output import add_output_flag, print_json


def register_command(commands: Any) -> None:
    from kraftwerk.runtime.migration_steps import PHASES

    migrate = commands.add_parser(
        "migrate", help="migrate a `cluster up --zookeeper` cluster to KRaft (KIP-866), phase by phase")
    migrate.add_argument("--dir", required=True, type=input_dir, help="the cluster's directory")
    migrate.add_argument("--to-phase", choices=PHASES, help="stop after this phase (e.g. dual-write)")
    add_timeout_flag(migrate)
    add_output_flag(migrate)
    migrate.set_defaults(func=_migrate)
    back = commands.add_parser(
        "rollback-migration",
        help="before finalization: back to ZooKeeper mode (Kafka's documented steps)")
    back.add_argument("--dir", required=True, type=input_dir, help="the cluster's directory")
    add_timeout_flag(back)
    add_output_flag(back)
    back.set_defaults(func=_rollback)


def add_timeout_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=positive_float, default=120.0,
                        help="seconds to wait for each node and state (default 120)")


def _report(args: argparse.Namespace, done: list[dict[str, Any]], phase: str, text: str,
            started: float) -> None:
    seconds = round(time.monotonic() - started, 3)
    done.append({"phase": phase, "seconds": seconds})
    if args.output != "json":
        print(f"[{phase}] {text} ({seconds:.1f}s)", flush=True)


def _rollback(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster
    from kraftwerk.runtime.migration_steps import rollback

    cluster = LocalCluster.load(args.dir)
    done: list[dict[str, Any]] = []
    started = time.monotonic()
    for step, text in rollback(cluster, args.timeout):
        _report(args, done, step, text, started)
        started = time.monotonic()
    if args.output == "json":
        print_json({"rolledBack": True, "phases": done})
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.local_cluster import LocalCluster
    from kraftwerk.runtime.migration_steps import PHASE_TEXT, PHASES, current_phase, run_phase

    cluster = LocalCluster.load(args.dir)
    done: list[dict[str, Any]] = []
    phase: str | None = current_phase(cluster)
    next_phase = phase
    if phase is not None and args.to_phase is not None and PHASES.index(phase) > PHASES.index(args.to_phase):
        phase = None  # past --to-phase already: nothing to do
    while phase is not None:
        started = time.monotonic()
        run_phase(cluster, phase, args.timeout)
        _report(args, done, phase, PHASE_TEXT[phase], started)
        following = PHASES.index(phase) + 1
        next_phase = PHASES[following] if following < len(PHASES) else None
        if phase == args.to_phase:
            break
        phase = next_phase
    remaining = next_phase if args.to_phase is not None and phase == args.to_phase else current_phase(cluster)
    if args.output == "json":
        print_json({"phases": done, "nextPhase": remaining, "finalized": remaining is None})
    elif remaining is None:
        print("Migration finalized: the cluster runs in KRaft mode (POST_MIGRATION)")
    return 0
