"""``kraftwerk cluster migrate``: KIP-866's ZooKeeper-to-KRaft migration of a local
``cluster up --zookeeper`` cluster, phase by phase, resumable (a second run continues from the phase
the cluster is in); ``kraftwerk cluster rollback-migration`` goes back to ZooKeeper mode before
finalization."""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kraftwerk.cli.args import input_dir, positive_float
from kraftwerk.cli.output import add_output_flag, print_json

if TYPE_CHECKING:
    from rich.console import Console, RenderableType


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


class PhaseBoard:
    """One line per phase with its state: pending, running (a spinner and the time so far), done
    (its time) or failed; rich's ``Live`` redraws it in place."""

    def __init__(self, phases: Sequence[str], texts: Mapping[str, str], *, stays: bool = True) -> None:
        self.texts = texts
        self.stays = stays
        """Whether it stays on screen at the end (then it is the record, not the plain lines)."""
        self.states: dict[str, str] = dict.fromkeys(phases, "pending")
        self.doing: dict[str, str] = {}
        """What a running phase is doing now (the broker it rolls, the state it waits on)."""
        self.seconds: dict[str, float] = {}
        self._started: dict[str, float] = {}

    def start(self, phase: str) -> None:
        self.states[phase] = "running"
        self._started[phase] = time.monotonic()

    def note(self, phase: str, doing: str) -> None:
        self.doing[phase] = doing

    def finish(self, phase: str, seconds: float) -> None:
        self.states[phase], self.seconds[phase] = "done", seconds

    def fail(self, phase: str) -> None:
        self.states[phase] = "failed"
        self.seconds[phase] = time.monotonic() - self._started.get(phase, time.monotonic())

    def __rich__(self) -> RenderableType:
        from rich.markup import escape
        from rich.spinner import Spinner
        from rich.table import Table

        table = Table.grid(padding=(0, 1))
        for phase, state in self.states.items():
            text = self.texts.get(phase, "")
            if state == "running":
                elapsed = time.monotonic() - self._started[phase]
                doing = escape(self.doing.get(phase, ""))
                table.add_row(Spinner("dots", style="cyan"), f"[bold]{phase}[/]",
                              f"{text}\n[dim]{doing}[/]" if doing else text, f"{elapsed:.0f}s")
            elif state == "pending":
                table.add_row("[dim]·[/]", f"[dim]{phase}[/]", f"[dim]{text}[/]", "")
            elif state == "done":
                table.add_row("[green]✓[/]", phase, text, f"{self.seconds[phase]:.1f}s")
            else:
                failed = f"[red]failed after {self.seconds[phase]:.1f}s[/]"
                table.add_row("[red]✗[/]", f"[red]{phase}[/]", text, failed)
        return table


@contextlib.contextmanager
def phase_board(phases: Sequence[str], texts: Mapping[str, str], *, transient: bool,
                console: Console | None = None) -> Iterator[PhaseBoard | None]:
    """The board on ``console`` (default: stderr when it is a terminal; None otherwise, where the
    plain lines are the record, as in a log or CI)."""
    if console is None:
        if not sys.stderr.isatty():
            yield None
            return
        from rich.console import Console

        console = Console(stderr=True)
    from rich.live import Live

    board = PhaseBoard(phases, texts, stays=not transient)
    with Live(board, console=console, transient=transient, refresh_per_second=8, redirect_stdout=False,
              redirect_stderr=False):
        yield board


def _report(args: argparse.Namespace, done: list[dict[str, Any]], phase: str, text: str,
            started: float, board: PhaseBoard | None = None) -> None:
    """A phase passed: into the JSON report, onto the board, and as a plain line unless the board
    stays on the terminal as the record."""
    seconds = round(time.monotonic() - started, 3)
    done.append({"phase": phase, "seconds": seconds})
    if board is not None:
        board.finish(phase, seconds)
    if args.output != "json" and (board is None or not board.stays):
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
    last = PHASES.index(args.to_phase) if args.to_phase is not None else len(PHASES) - 1
    planned = [] if phase is None else PHASES[PHASES.index(phase):last + 1]
    on_screen = args.output != "json" and sys.stdout.isatty()  # else the board is transient
    with phase_board(planned, PHASE_TEXT, transient=not on_screen) as board:
        while phase is not None:
            started = time.monotonic()
            if board is not None:
                board.start(phase)
            try:
                if board is None:
                    run_phase(cluster, phase, args.timeout)
                else:
                    run_phase(cluster, phase, args.timeout, functools.partial(board.note, phase))
            except BaseException:
                if board is not None:
                    board.fail(phase)
                raise
            _report(args, done, phase, PHASE_TEXT[phase], started, board)
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
