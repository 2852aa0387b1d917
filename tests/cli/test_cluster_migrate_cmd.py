"""``cluster migrate``'s progress: a board with one line per phase on a terminal, the plain lines the
tests and logs read elsewhere, and ``--output json``. The phases themselves run on real processes in
tests/cluster/test_migration_e2e.py; here they are replaced to see only what the command shows."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from kraftwerk.cli import main as cli_main
from kraftwerk.cli.cluster_migrate_cmd import PhaseBoard
from kraftwerk.runtime import local_cluster, migration_steps
from kraftwerk.runtime.migration_steps import PHASE_TEXT, PHASES, MigrationPhaseError


def render(board: PhaseBoard) -> list[str]:
    console = Console(file=io.StringIO(), width=120, record=True, color_system=None)
    console.print(board)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_the_board_has_a_line_per_phase_with_its_state() -> None:
    board = PhaseBoard(PHASES, PHASE_TEXT)
    board.start("controllers")
    board.finish("controllers", 2.74)
    board.start("brokers-migrating")
    board.finish("brokers-migrating", 7.8)
    board.start("dual-write")
    board.note("dual-write", "zkMigrationState=PRE_MIGRATION, driverState=WAIT_FOR_BROKERS")
    lines = [" ".join(line.split()) for line in render(board)]
    assert lines.pop(3) == "zkMigrationState=PRE_MIGRATION, driverState=WAIT_FOR_BROKERS"  # under it
    assert len(lines) == len(PHASES)
    assert lines[0] == f"✓ controllers {PHASE_TEXT['controllers']} 2.7s"
    assert lines[1] == f"✓ brokers-migrating {PHASE_TEXT['brokers-migrating']} 7.8s"
    assert lines[2].split()[1] == "dual-write" and lines[2].endswith(f"{PHASE_TEXT['dual-write']} 0s")
    assert lines[3] == f"· brokers-kraft {PHASE_TEXT['brokers-kraft']}" and lines[4].startswith("· finalize")
    board.fail("dual-write")
    failed = " ".join(render(board)[2].split())
    assert failed.startswith("✗ dual-write") and " failed after " in failed


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def phases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Phases that pass at once, except brokers-kraft, which fails."""
    ran: list[str] = []

    def run_phase(_cluster: object, phase: str, _timeout: float,
                  progress: Callable[[str], None] = lambda _step: None) -> None:
        ran.append(phase)
        progress(f"working on {phase}")
        if phase == "brokers-kraft":
            raise MigrationPhaseError(phase, "broker 1 came back fenced")

    monkeypatch.setattr(migration_steps, "run_phase", run_phase)
    monkeypatch.setattr(migration_steps, "current_phase", lambda _c: "controllers")
    monkeypatch.setattr(local_cluster.LocalCluster, "load", classmethod(lambda cls, root: object()))
    return ran


def test_plain_lines_without_a_terminal(phases: list[str], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["cluster", "migrate", "--dir", str(tmp_path), "--to-phase", "dual-write"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["[controllers]", "[brokers-migrating]", "[dual-write]"]
    assert lines[0].startswith(f"[controllers] {PHASE_TEXT['controllers']} (") and err == ""
    assert cli_main.main(["cluster", "migrate", "--dir", str(tmp_path), "--to-phase", "dual-write",
                          "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["phase"] for p in report["phases"]] == ["controllers", "brokers-migrating", "dual-write"]
    assert report["nextPhase"] == "brokers-kraft" and not report["finalized"]


def test_a_board_on_a_terminal_marks_the_failed_phase(phases: list[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    code = cli_main.main(["cluster", "migrate", "--dir", str(tmp_path)])
    assert code == 1 and phases == list(PHASES[:4])
    out = capsys.readouterr().out
    assert out.count("\n") == 3  # stdout is no terminal: the plain lines stay the record
    shown = terminal.getvalue()
    for phase in PHASES:
        assert phase in shown
    assert "failed after" in shown  # the last frame, drawn as the board closes
    assert "Migration phase brokers-kraft failed: broker 1 came back fenced" in shown


def test_on_a_terminal_the_board_stays_and_replaces_the_plain_lines(phases: list[str], tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    screen, out = Terminal(), Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    monkeypatch.setattr("sys.stdout", out)
    code = cli_main.main(["cluster", "migrate", "--dir", str(tmp_path), "--to-phase", "brokers-migrating"])
    assert code == 0
    assert "[controllers]" not in out.getvalue()
    assert "controllers" in screen.getvalue() and "brokers-migrating" in screen.getvalue()
    assert "dual-write" not in screen.getvalue()  # past --to-phase: not on the board
