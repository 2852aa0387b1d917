"""Spark's own output stays off the command's streams: the JVM (and what it starts) writes to a log
file; and the listing of ``_``-named partition dirs logs no "All paths were ignored" warning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kraftwerk.spark.quiet import jvm_output_to
from tests.conftest import REPO, golden_path


def test_processes_started_inside_write_to_the_log(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "logs" / "spark.log"
    with jvm_output_to(log):
        child = "import sys; print('child out'); print('child err', file=sys.stderr)"
        subprocess.run([sys.executable, "-c", child], check=True)
    print("parent out")
    out, err = capfd.readouterr()
    assert out == "parent out\n" and err == ""
    assert log.read_text().splitlines() == ["child out", "child err"]
    with jvm_output_to(None):  # verbose: nothing changes
        subprocess.run([sys.executable, "-c", "print('shown')"], check=True)
    assert capfd.readouterr().out == "shown\n"


@pytest.mark.spark
def test_pipeline_scan_keeps_spark_quiet(tmp_path: Path) -> None:
    """A real `kraftwerk pipeline scan` process over a log dir holding __cluster_metadata-0: only the
    command's own lines on its streams, Spark's in spark.log, and no listing warning there."""
    data = tmp_path / "data"
    shutil.copytree(golden_path("kafka-4.3-standalone"), data / "__cluster_metadata-0")
    out_dir = tmp_path / "scan"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    argv = ["pipeline", "scan", "--log-dirs", str(data), "--out", str(out_dir), "--master", "local[1]",
            "--output", "json"]
    done = subprocess.run([sys.executable, "-m", "kraftwerk.cli.main", *argv], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["totals"]["partitions"] == 1
    spark_log = (out_dir / "spark.log").read_text()
    assert "All paths were ignored" not in spark_log
