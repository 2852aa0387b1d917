"""The pipeline on a real Spark standalone cluster whose executors hold only pyspark and pyarrow.

One master and two workers (1 core each) on loopback for the module; the README's two cluster
blocks run as shown (the ``--master`` form and the printed ``spark-submit`` command), and their
results are compared with ``--no-spark``: the same tables, the same bytes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark.standalone import REPO, StandaloneCluster, start_cluster
from tests.storage.fleet import Fleet, build_fleet

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

KRAFTWERK = str(Path(sys.executable).with_name("kraftwerk"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    if shutil.which("java") is None:
        pytest.skip("no Java on this machine: Spark's master and workers run on a JVM")
    c = start_cluster(tmp_path_factory.mktemp("standalone"))
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return build_fleet(tmp_path_factory.mktemp("fleet"), log_dirs=2, partitions_per_dir=4)


def _readme_block(marker: str) -> str:
    """The README code block holding ``marker``."""
    blocks = re.findall(r"^```\n(.*?)^```$", (REPO / "README.md").read_text(), re.MULTILINE | re.DOTALL)
    [block] = [b for b in blocks if marker in b]
    return str(block)


def _run_as_shown(block: str, cluster: StandaloneCluster, fleet: Fleet,
                  out: Path) -> subprocess.CompletedProcess[str]:
    """The README block as a shell script, on this cluster, this fleet and under ``out``; the cluster's
    own spark-submit (the workers' environment) first on PATH, kraftwerk from this environment."""
    script = (block.replace("spark://master:7077", cluster.master_url)
              .replace("/usr/bin/python3", str(cluster.python))
              .replace("/mnt/fleet/broker-1/data", str(fleet.log_dirs[0]))
              .replace("/mnt/fleet/broker-2/data", str(fleet.log_dirs[1]))
              .replace("/mnt/fleet/", f"{out}/"))
    env = cluster.driver_env()
    env["PATH"] = os.pathsep.join([str(cluster.python.parent), str(Path(KRAFTWERK).parent), env["PATH"]])
    return subprocess.run(["sh", "-ec", script], cwd=out, env=env, capture_output=True, text=True,
                          timeout=600)


def _no_spark(*args: str) -> None:
    subprocess.run([KRAFTWERK, "pipeline", *args, "--no-spark"], check=True, capture_output=True)


def _rows(parquet_dir: Path) -> list[tuple[object, ...]]:
    import pyarrow.parquet as pq

    table = pq.read_table(str(parquet_dir))
    return sorted(zip(*(table.column(n).to_pylist() for n in sorted(table.column_names)), strict=True),
                  key=repr)


def _shipped(cluster: StandaloneCluster) -> list[set[str]]:
    """What each executor of each application got from its driver (``kraftwerk-code``/``-deps``)."""
    return [{"-".join(p.name.split("-")[:2]) for p in executor.glob("kraftwerk-*")}
            for w in cluster.work_dirs() for executor in w.glob("app-*/*")]


def test_scan_on_the_cluster_as_the_readme_shows(cluster: StandaloneCluster, fleet: Fleet,
                                                 tmp_path: Path) -> None:
    run = _run_as_shown(_readme_block("kraftwerk pipeline scan --master spark://"), cluster, fleet, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Scanned 2 log dirs" in run.stdout
    _no_spark("scan", "--log-dirs", *map(str, fleet.log_dirs), "--out", str(tmp_path / "local"))
    spark = json.loads((tmp_path / "scan" / "summary.json").read_text())
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert spark["partitions"] == local["partitions"] and spark["totals"] == local["totals"]
    assert spark["totals"]["batches"] == sum(b.batches for b in fleet.partitions)
    assert _rows(tmp_path / "scan" / "batches") == _rows(tmp_path / "local" / "batches")
    # the executors ran what their driver shipped: the workers' Python has neither kraftwerk nor numpy
    # (start_cluster checks), and the driver's own unpacked copy is hidden from them where it can be
    shipped = _shipped(cluster)
    assert shipped and all(s == {"kraftwerk-code", "kraftwerk-deps"} for s in shipped)


def test_upconvert_through_the_printed_spark_submit_as_the_readme_shows(
        cluster: StandaloneCluster, fleet: Fleet, tmp_path: Path) -> None:
    block = _readme_block("--print-spark-submit")
    run = _run_as_shown(block, cluster, fleet, tmp_path)
    assert run.returncode == 0, run.stderr
    printed = (tmp_path / "upconvert.sh").read_text()
    assert printed.startswith(f"spark-submit --master {cluster.master_url} ")
    assert f"spark.pyspark.driver.python={sys.executable}" in printed
    _no_spark("upconvert", "--log-dirs", *map(str, fleet.log_dirs), "--out", str(tmp_path / "local"))
    spark_files = {p.relative_to(tmp_path / "v2"): p.read_bytes() for p in (tmp_path / "v2").rglob("*")
                   if p.is_file()}
    local_files = {p.relative_to(tmp_path / "local"): p.read_bytes() for p in (tmp_path / "local").rglob("*")
                   if p.is_file()}
    assert spark_files == local_files
    converted = [p for p in spark_files if p.suffix == ".log"]
    assert converted and f"Converted {len(converted)} segments in" in run.stdout


def test_a_log_dir_the_executors_cannot_read_fails_in_one_line(cluster: StandaloneCluster,
                                                               tmp_path: Path) -> None:
    if cluster.hidden is None:
        pytest.skip("no mount namespaces here (not root): cannot hide a directory from the workers")
    hidden = build_fleet(cluster.hidden / "fleet", log_dirs=1, partitions_per_dir=1)
    run = subprocess.run([KRAFTWERK, "pipeline", "scan", "--master", cluster.master_url, "--conf",
                          f"spark.pyspark.python={cluster.python}", "--conf", "spark.task.maxFailures=1",
                          "--log-dirs", str(hidden.log_dirs[0]), "--out", str(tmp_path / "scan")],
                         env=cluster.driver_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 1 and run.stdout == ""
    last = run.stderr.splitlines()[-1]
    assert re.fullmatch(rf"executor on host {re.escape(socket.gethostname())} cannot read "
                        rf"{re.escape(str(hidden.log_dirs[0]))}/[^ ]+\.log: No such file or directory "
                        r"\(the driver sees it; it must be at the same path on every executor\)", last)
    assert not [line for line in run.stderr.splitlines() if line.startswith(("\tat ", "Traceback"))]


def test_readiness_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """The readiness job's grouped Arrow functions run on executors that have neither kraftwerk nor
    pandas (only what the driver ships), and report what one process reports."""
    from tests.readiness.generator import fleet_on_tmpfs

    with fleet_on_tmpfs(12) as fleet:
        args = ["pipeline", "readiness", "--metadata-dirs", str(fleet.root / "metadata"), "--log-dirs",
                *map(str, fleet.log_dirs), "--target", "4.3"]
        run = subprocess.run([KRAFTWERK, *args, "--out", str(tmp_path / "spark"),
                              "--master", cluster.master_url,
                              "--conf", f"spark.pyspark.python={cluster.python}"],
                             env=cluster.driver_env(), capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        subprocess.run([KRAFTWERK, *args, "--out", str(tmp_path / "local"), "--no-spark"], check=True,
                       capture_output=True)
        spark = json.loads((tmp_path / "spark" / "summary.json").read_text())
        assert spark == json.loads((tmp_path / "local" / "summary.json").read_text())
        assert {(c["clusterId"], c["status"]) for c in spark["clusters"]} == {
            (b.cluster_id, b.status) for b in fleet.clusters}
