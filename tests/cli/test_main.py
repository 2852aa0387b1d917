"""The ``kraftwerk`` entry point: logging defaults per command group."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftwerk.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_simulations_keep_their_simulated_nodes_quiet_unless_asked() -> None:
    quiet = _run("sim", "lifecycle", "--seeds", "1", "--start", "3")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.startswith("OK: 1 seeds")
    assert quiet.stderr == ""
    chatty = _run("--log-level", "WARNING", "sim", "lifecycle", "--seeds", "1", "--start", "3")
    assert chatty.returncode == 0
    assert "WARNING" in chatty.stderr
