"""``pipeline zk-readiness``: the fleet's readiness table on Spark equals the single-process table."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kraftwerk.cli.main import main
from tests.migration.layout import fleet

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

CLUSTERS = 200


def run(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--output", "json"])
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, frozenset[str]]]:
    root = tmp_path_factory.mktemp("dumps")
    expected = {}
    for i, cluster in enumerate(fleet(CLUSTERS)):
        path = root / f"dc{i % 2}" / f"{cluster.name}.jsonl"  # two directories, as two data centres
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(cluster.lines) + "\n")
        expected[str(path)] = cluster.blockers
    (root / "dc1" / "README.txt").write_text("not a dump")
    return [str(root / "dc0"), str(root / "dc1")], expected


def test_spark_table_equals_the_single_process_table(
        spark: SparkSession, dumps: tuple[list[str], dict[str, frozenset[str]]], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    dirs, expected = dumps
    code, on_spark = run("pipeline", "zk-readiness", "--dumps", *dirs, "--out", str(tmp_path / "spark"))
    local_code, local = run("pipeline", "zk-readiness", "--dumps", *dirs, "--out", str(tmp_path / "local"),
                            "--no-spark")
    assert code == local_code == 1  # some clusters are not ready
    assert on_spark["clusters"] == local["clusters"] == CLUSTERS
    assert on_spark["table"] == local["table"]
    spark_rows = pq.read_table(str(tmp_path / "spark" / "readiness")).sort_by("dump").to_pylist()
    local_rows = pq.read_table(str(tmp_path / "local" / "readiness")).sort_by("dump").to_pylist()
    assert spark_rows == local_rows == local["table"]
    assert json.loads((tmp_path / "spark" / "readiness.json").read_text())["table"] == local["table"]
    # the blockers are the ones each cluster was generated with
    got = {r["dump"]: frozenset(b.split(":", 1)[0] for b in r["blockers"]) for r in local["table"]}
    assert got == expected
    assert sum(r["ready"] for r in local["table"]) == sum(1 for b in expected.values() if not b)
    assert all(r["estimated_records"] > 0 for r in local["table"] if r["error"] is None)
